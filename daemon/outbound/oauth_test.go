package outbound_test

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/internal/testpki"
	"github.com/mailroom/mailroom/mailbox"
)

const oauthSecret = "s3cret-client-9c2e41"

// tokenEndpoint is an OAuth 2.0 token endpoint for the test: it checks
// the client's id and secret (HTTP basic or form, as the client library
// sends them), counts the tokens it issues, and gives the first one a
// life shorter than the client's margin (so it is taken as expired at
// once) and every later one an hour.
type tokenEndpoint struct {
	srv *httptest.Server
	mu  sync.Mutex
	// issued are the tokens issued, in order; scopes the scope asked
	// each time.
	issued, scopes []string
}

func startTokenEndpoint(t *testing.T, cfg *tls.Config) *tokenEndpoint {
	e := &tokenEndpoint{}
	e.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, secret, ok := r.BasicAuth()
		if !ok {
			id, secret = r.PostFormValue("client_id"), r.PostFormValue("client_secret")
		}
		w.Header().Set("Content-Type", "application/json")
		if r.PostFormValue("grant_type") != "client_credentials" || id != "mailroom" || secret != oauthSecret {
			w.WriteHeader(http.StatusUnauthorized)
			// An endpoint that echoes what it got must not put the secret in a log.
			fmt.Fprintf(w, `{"error":"invalid_client","error_description":"client authentication failed for %s"}`, secret)
			return
		}
		e.mu.Lock()
		tok := fmt.Sprintf("tok-%d", len(e.issued)+1)
		life := 3600
		if len(e.issued) == 0 {
			life = 1
		}
		e.issued = append(e.issued, tok)
		e.scopes = append(e.scopes, r.PostFormValue("scope"))
		e.mu.Unlock()
		fmt.Fprintf(w, `{"access_token":%q,"token_type":"Bearer","expires_in":%d}`, tok, life)
	}))
	serve(t, e.srv, cfg)
	return e
}

// serve starts srv over TLS with cfg, or plain HTTP when cfg is nil.
func serve(t *testing.T, srv *httptest.Server, cfg *tls.Config) {
	if cfg != nil {
		srv.TLS = cfg
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
}

func (e *tokenEndpoint) tokens() (issued, scopes []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.issued...), append([]string(nil), e.scopes...)
}

// oauthRemote is a v0.3 remote whose card declares OAuth 2.0 client
// credentials at tokenURL and a requirement of the scope tasks.write; it
// answers a request without a bearer token 401, and records the tokens.
type oauthRemote struct {
	srv  *httptest.Server
	mu   sync.Mutex
	seen []string
	// revoked are tokens it answers 401, as a remote told of a
	// revocation before the token expires.
	revoked map[string]bool
}

func startOAuthRemote(t *testing.T, tokenURL string, cfg *tls.Config) *oauthRemote {
	o := &oauthRemote{revoked: map[string]bool{}}
	o.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			writeJSON(w, map[string]any{"name": "OAuth Coder", "description": "wants tokens", "version": "1", "url": o.srv.URL + "/",
				"protocolVersion": "0.3.0", "preferredTransport": "JSONRPC", "capabilities": map[string]any{},
				"defaultInputModes": []string{"text/plain"}, "defaultOutputModes": []string{"text/plain"}, "skills": []any{},
				"securitySchemes": map[string]any{"idp": map[string]any{"type": "oauth2",
					"flows": map[string]any{"clientCredentials": map[string]any{"tokenUrl": tokenURL, "scopes": map[string]string{"tasks.write": "send tasks"}}}}},
				"security": []any{map[string][]string{"idp": {"tasks.write"}}}})
			return
		}
		auth := r.Header.Get("Authorization")
		o.mu.Lock()
		o.seen = append(o.seen, auth)
		revoked := o.revoked[strings.TrimPrefix(auth, "Bearer ")]
		o.mu.Unlock()
		if !strings.HasPrefix(auth, "Bearer tok-") || revoked {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Params struct {
				Message struct {
					MessageID string `json:"messageId"`
				} `json:"message"`
			} `json:"params"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		writeJSON(w, completedTask(req.ID, req.Params.Message.MessageID))
	}))
	serve(t, o.srv, cfg)
	return o
}

func (o *oauthRemote) authorizations() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.seen...)
}

// A remote whose card declares OAuth 2.0 client credentials: every call
// carries a token from the card's token URL, got with the remotes
// entry's client_id and client_secret for the scope the card requires,
// over the remote's TLS (both served by a private CA, the remotes entry's
// ca_file); a token is fetched again once it expires and reused until it
// does, or until the remote refuses it. An agent whose secret the endpoint refuses fails visibly, saying
// so, as does one whose card names a token URL that is not https; the
// secret is in no log, no listing and no error.
func TestRemoteWithOAuthClientCredentials(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, "idp CA")
	caFile := ca.WriteFile(t, dir, "ca.pem")
	served := &tls.Config{Certificates: []tls.Certificate{ca.Issue(t, testpki.Options{}).TLS}}
	e := startTokenEndpoint(t, served)
	rem := startOAuthRemote(t, e.srv.URL+"/token", served)
	plain := startOAuthRemote(t, "http://idp.example/token", nil)
	w := start(t,
		config.RemoteCredential{Agent: "coder@remote", ClientID: "mailroom", ClientSecret: oauthSecret, CAFile: caFile},
		config.RemoteCredential{Agent: "denied@remote", ClientID: "mailroom", ClientSecret: "wrong-" + oauthSecret, CAFile: caFile},
		config.RemoteCredential{Agent: "plain@remote", ClientID: "mailroom", ClientSecret: oauthSecret})
	w.register("coder@remote", rem.srv.URL, 1)
	for i := range 3 {
		id := w.send("planner@local", "coder@remote", fmt.Sprintf("task %d", i), false)
		if res := w.result("planner@local", id); res.Status != mailbox.StatusOK {
			t.Fatalf("result %+v, want ok", res)
		}
	}
	issued, scopes := e.tokens()
	seen := rem.authorizations()
	if len(issued) != 2 || len(seen) < 3 {
		t.Fatalf("issued %q for calls with %q; want tok-1 (taken as expired at once), then tok-2 kept for every later call", issued, seen)
	}
	if seen[0] != "Bearer tok-1" {
		t.Errorf("the first call carried %q, want Bearer tok-1", seen[0])
	}
	for i, a := range seen[1:] {
		if a != "Bearer tok-2" {
			t.Errorf("call %d carried %q, want the unexpired Bearer tok-2 reused", i+2, a)
		}
	}
	for _, s := range scopes {
		if s != "tasks.write" {
			t.Errorf("a token was asked for scope %q, want the card's requirement tasks.write", s)
		}
	}

	// A token the remote refuses before it expires is replaced, and the
	// call it was refused on made again with the new one.
	rem.mu.Lock()
	rem.revoked["tok-2"] = true
	rem.mu.Unlock()
	id := w.send("planner@local", "coder@remote", "after a revocation", false)
	if res := w.result("planner@local", id); res.Status != mailbox.StatusOK {
		t.Fatalf("result after the revocation %+v, want ok", res)
	}
	if issued, _ := e.tokens(); len(issued) != 3 {
		t.Fatalf("issued %q, want a third token once the remote refused tok-2", issued)
	}
	seen = rem.authorizations()
	if last := seen[len(seen)-1]; last != "Bearer tok-3" {
		t.Fatalf("the last call carried %q, want Bearer tok-3", last)
	}

	w.register("denied@remote", rem.srv.URL, 1)
	stuck := w.send("planner@local", "denied@remote", "never delivered", false)
	last := w.failingWith("denied@remote", "invalid_client", "client_id mailroom", e.srv.URL+"/token", "client_secret in the agent's remotes entry")
	t.Logf("refused: %s", last)
	if n := len(rem.authorizations()); n != len(seen) {
		t.Fatalf("the remote got %d calls after the refused agent's task %s was sent, want none: without a token nothing is sent", n-len(seen), stuck)
	}
	w.register("plain@remote", plain.srv.URL, 1)
	w.send("planner@local", "plain@remote", "never delivered either", false)
	w.failingWith("plain@remote", "http://idp.example/token is not https")
	if n := len(plain.authorizations()); n != 0 {
		t.Fatalf("the remote whose token URL is refused got %d calls, want none", n)
	}

	list, err := w.c.Agents(w.ctx)
	if err != nil {
		t.Fatal(err)
	}
	shown, _ := json.Marshal(list)
	if strings.Contains(string(shown), oauthSecret) || strings.Contains(w.logs.String(), oauthSecret) {
		t.Fatalf("the client secret shows in the agents listing or the daemon's log:\n%s\n%s", shown, w.logs)
	}
}
