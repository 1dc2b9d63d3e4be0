package daemon_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/internal/testpki"
	"github.com/mailroom/mailroom/mailbox"
)

// testIssuer is an OpenID Connect issuer served by the test: discovery
// and a key set whose keys the test changes, over TLS from the test's CA.
type testIssuer struct {
	srv     *httptest.Server
	fetches atomic.Int64 // of the key set

	mu   sync.Mutex
	keys []jose.JSONWebKey // public, served
}

func startIssuer(t *testing.T, ca *testpki.CA) *testIssuer {
	t.Helper()
	is := &testIssuer{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"issuer": is.srv.URL, "jwks_uri": is.srv.URL + "/keys",
			"id_token_signing_alg_values_supported": []string{"RS256", "ES256"}})
	})
	mux.HandleFunc("GET /keys", func(w http.ResponseWriter, r *http.Request) {
		is.fetches.Add(1)
		is.mu.Lock()
		defer is.mu.Unlock()
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: is.keys})
	})
	is.srv = httptest.NewUnstartedServer(mux)
	is.srv.TLS = &tls.Config{Certificates: []tls.Certificate{ca.Issue(t, testpki.Options{}).TLS}}
	is.srv.StartTLS()
	t.Cleanup(is.srv.Close)
	return is
}

// signingKey is one of the issuer's keys.
type signingKey struct {
	kid string
	alg jose.SignatureAlgorithm
	key crypto.Signer
}

func (is *testIssuer) publish(ks ...signingKey) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.keys = nil
	for _, k := range ks {
		is.keys = append(is.keys, jose.JSONWebKey{Key: k.key.Public(), KeyID: k.kid, Algorithm: string(k.alg), Use: "sig"})
	}
}

// sign makes a token with claims, by go-jose.
func sign(t *testing.T, k signingKey, claims map[string]any) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: k.alg, Key: k.key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", k.kid))
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := json.Marshal(claims)
	jws, err := s.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func newRSAKey(t *testing.T, kid string) signingKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return signingKey{kid, jose.RS256, k}
}

func newECKey(t *testing.T, kid string) signingKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return signingKey{kid, jose.ES256, k}
}

type oidcSetup struct {
	d      *daemontest.Daemon
	issuer *testIssuer
	rsa    signingKey
	log    *syncBuffer
}

// startOIDC starts an issuer and a TLS daemon accepting its tokens for
// audience "mailroom", capabilities from the "mailroom_caps" claim or a
// tokens entry.
func startOIDC(t *testing.T, refresh time.Duration) oidcSetup {
	ca := testpki.NewCA(t, "mailroom test CA")
	is := startIssuer(t, ca)
	k := newRSAKey(t, "rsa-1")
	is.publish(k)
	caFile := ca.WriteFile(t, t.TempDir(), "issuer-ca.crt")
	var log syncBuffer
	d := daemontest.Start(t, daemontest.Options{TLS: true, CA: ca, Logger: slog.New(slog.NewTextHandler(&log, nil)),
		Tokens: []auth.Token{
			{Principal: "billing", OIDCSubject: "system:serviceaccount:prod:billing", Caps: []string{"a2a.send.*", auth.CapDrain}},
			{Principal: "operator", Token: "op-secret", Caps: []string{auth.CapAdmin}},
		},
		Config: func(c *config.Config) {
			c.OIDCIssuer, c.OIDCAudience, c.OIDCCAFile = is.srv.URL, "mailroom", caFile
			c.OIDCCapsClaim, c.OIDCRefreshInterval = "mailroom_caps", refresh
		}})
	return oidcSetup{d: d, issuer: is, rsa: k, log: &log}
}

func (s oidcSetup) claims(sub string, extra map[string]any) map[string]any {
	now := time.Now()
	c := map[string]any{"iss": s.issuer.srv.URL, "aud": "mailroom", "sub": sub, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
	for k, v := range extra {
		c[k] = v
	}
	return c
}

// An OIDC token's caller does a real cycle with the capabilities its
// token maps to: billing (a tokens entry) sends to worker, worker (an
// agent id with capabilities in its claim) leases and answers, billing
// drains; a capability neither grants is 403.
func TestOIDCTokensSendAndLease(t *testing.T) {
	s := startOIDC(t, time.Nanosecond)
	ctx := context.Background()
	as := func(tok string) *client.Client {
		c, err := client.New(s.d.Addr(), client.WithTLS(s.d.TLSConfig()), client.WithToken(tok))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	billing := as(sign(t, s.rsa, s.claims("system:serviceaccount:prod:billing", nil)))
	worker := as(sign(t, s.rsa, s.claims("worker", map[string]any{"mailroom_caps": []string{auth.CapRecv, "a2a.respond.*"}})))
	if w, err := billing.WhoAmI(ctx); err != nil || w.Principal != "billing" {
		t.Fatalf("billing whoami = %+v, %v", w, err)
	}
	queued, err := billing.Send(ctx, mailbox.Task{Sender: "billing", Recipient: "worker", IntentText: "reconcile"})
	if err != nil {
		t.Fatalf("send as billing: %v", err)
	}
	task, lease, err := worker.Lease(ctx, "worker")
	if err != nil || task == nil || task.ID != queued.TaskID {
		t.Fatalf("lease as worker = %v, %v, want task %s", task, err, queued.TaskID)
	}
	if err := worker.PostResult(ctx, mailbox.Result{TaskID: task.ID, Status: "ok", LeaseID: lease.LeaseID, Content: []mailbox.Content{{Type: "text", Text: "done"}}}); err != nil {
		t.Fatalf("result as worker: %v", err)
	}
	if r, err := billing.Drain(ctx, "billing"); err != nil || r == nil || r.TaskID != task.ID {
		t.Fatalf("drain as billing = %v, %v", r, err)
	}
	if _, err := worker.Send(ctx, mailbox.Task{Sender: "worker", Recipient: "billing", IntentText: "x"}); mailbox.ErrorCode(err) != mailbox.CodeForbidden {
		t.Errorf("send as worker (no a2a.send) = %v, want forbidden", err)
	}
	// Static tokens keep working beside OIDC.
	if w, err := as("op-secret").WhoAmI(ctx); err != nil || w.Principal != "operator" {
		t.Errorf("static token whoami = %+v, %v", w, err)
	}
}

// Every token the daemon must not take is a 401 with an invalid_token
// challenge saying why, never a 5xx.
func TestOIDCTokensRefused(t *testing.T) {
	s := startOIDC(t, time.Nanosecond)
	hour := time.Hour
	other := newRSAKey(t, "rsa-1") // the same kid, another key: a forgery
	pubDER, err := x509.MarshalPKIXPublicKey(s.rsa.key.Public())
	if err != nil {
		t.Fatal(err)
	}
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	b64 := base64.RawURLEncoding.EncodeToString
	for _, tc := range []struct {
		name, token, reason string
	}{
		{"expired", sign(t, s.rsa, s.claims("worker", map[string]any{"exp": time.Now().Add(-hour).Unix()})), "expired"},
		{"not yet valid", sign(t, s.rsa, s.claims("worker", map[string]any{"nbf": time.Now().Add(hour).Unix()})), "not yet valid"},
		{"wrong issuer", sign(t, s.rsa, s.claims("worker", map[string]any{"iss": "https://elsewhere.example"})), "different provider"},
		{"wrong audience", sign(t, s.rsa, s.claims("worker", map[string]any{"aud": "another-service"})), "audience"},
		{"alg none", b64([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + b64(mustJSON(s.claims("worker", nil))) + ".", "accepted algorithm"},
		{"HMAC with the public key as secret", signHMAC(t, "rsa-1", pubPEM, s.claims("worker", nil)), "accepted algorithm"},
		{"another key under a known kid", sign(t, other, s.claims("worker", nil)), "verif"},
		{"unknown kid after a refresh", sign(t, newECKey(t, "never-published"), s.claims("worker", nil)), "never-published"},
		{"over the size bound", sign(t, s.rsa, s.claims("worker", map[string]any{"pad": strings.Repeat("x", auth.MaxOIDCTokenBytes)})), "over the bound of 8192"},
		{"principal claim missing", sign(t, s.rsa, s.claims("", nil)), "is missing or not a string"},
		{"principal not an agent id", sign(t, s.rsa, s.claims("two words", nil)), "not an agent id"},
		{"unknown capability in the claim", sign(t, s.rsa, s.claims("worker", map[string]any{"mailroom_caps": []string{"a2a.fly"}})), "unknown capability"},
	} {
		code, body, hdr, err := mtlsGet(s.d.Client(), s.d.URL()+"/a2a/whoami", tc.token)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		challenge := hdr.Get("WWW-Authenticate")
		if code != http.StatusUnauthorized || !strings.Contains(challenge, `error="invalid_token"`) ||
			!strings.Contains(challenge, "error_description=") || !strings.Contains(body, tc.reason) {
			t.Errorf("%s: whoami = %d %s (WWW-Authenticate %s), want 401 invalid_token saying %q", tc.name, code, body, challenge, tc.reason)
		}
	}
	if !logHas(s.log.String(), "OIDC token refused", "expired") {
		t.Errorf("no log line of the refusals:\n%s", s.log.String())
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// signHMAC signs claims with HS256 and secret, by go-jose: the classic
// attack of a verifier that takes the algorithm from the token.
func signHMAC(t *testing.T, kid string, secret []byte, claims map[string]any) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: secret}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", kid))
	if err != nil {
		t.Fatal(err)
	}
	jws, err := s.Sign(mustJSON(claims))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// A key rotated in mid-test: a token of the new key is taken once the
// key set has been fetched again, and the old key's tokens no longer
// are. With a long refresh interval, a token of an unknown key fetches
// nothing more until it has passed.
func TestOIDCKeyRotation(t *testing.T) {
	s := startOIDC(t, time.Nanosecond)
	whoamiAs := func(tok string) (int, string) {
		code, body, _, err := mtlsGet(s.d.Client(), s.d.URL()+"/a2a/whoami", tok)
		if err != nil {
			t.Fatal(err)
		}
		return code, body
	}
	if code, body := whoamiAs(sign(t, s.rsa, s.claims("worker", nil))); code != http.StatusOK {
		t.Fatalf("before rotation: %d %s", code, body)
	}
	rotated := newECKey(t, "ec-2")
	s.issuer.publish(rotated)
	if code, body := whoamiAs(sign(t, rotated, s.claims("worker", nil))); code != http.StatusOK {
		t.Errorf("a token of the new key: %d %s, want 200 after the key set is fetched again", code, body)
	}
	if code, body := whoamiAs(sign(t, s.rsa, s.claims("worker", nil))); code != http.StatusUnauthorized {
		t.Errorf("a token of the retired key: %d %s, want 401", code, body)
	}

	bounded := startOIDC(t, time.Hour)
	if code, _, _, _ := mtlsGet(bounded.d.Client(), bounded.d.URL()+"/a2a/whoami", sign(t, bounded.rsa, bounded.claims("worker", nil))); code != http.StatusOK {
		t.Fatalf("bounded: first token %d", code)
	}
	before := bounded.issuer.fetches.Load()
	for i := range 5 {
		tok := sign(t, newECKey(t, "made-up-"+string(rune('a'+i))), bounded.claims("worker", nil))
		code, body, _, _ := mtlsGet(bounded.d.Client(), bounded.d.URL()+"/a2a/whoami", tok)
		if code != http.StatusUnauthorized || !strings.Contains(body, "at most once per 1h0m0s") {
			t.Errorf("made-up kid %d: %d %s, want 401 naming the bound", i, code, body)
		}
	}
	if after := bounded.issuer.fetches.Load(); after != before {
		t.Errorf("the key set was fetched %d more times for made-up kids, want none within the interval", after-before)
	}
}

// An issuer that cannot be reached refuses its own tokens with a 401
// saying so, never a 5xx; static tokens are untouched.
func TestOIDCIssuerDown(t *testing.T) {
	s := startOIDC(t, time.Nanosecond)
	tok := sign(t, s.rsa, s.claims("worker", nil))
	s.issuer.srv.Close() // before the daemon ever read its discovery document
	code, body, hdr, err := mtlsGet(s.d.Client(), s.d.URL()+"/a2a/whoami", tok)
	if err != nil || code != http.StatusUnauthorized || !strings.Contains(body, "discovery document could not be read") ||
		!strings.Contains(hdr.Get("WWW-Authenticate"), `error="invalid_token"`) {
		t.Errorf("issuer down: whoami = %d %s %v (WWW-Authenticate %q), want 401 saying the issuer could not be read", code, body, err, hdr.Get("WWW-Authenticate"))
	}
	if code, body, _, err := mtlsGet(s.d.Client(), s.d.URL()+"/a2a/whoami", "op-secret"); err != nil || code != http.StatusOK {
		t.Errorf("static token while the issuer is down: %d %s %v", code, body, err)
	}
	if !logHas(s.log.String(), "OIDC token refused", "discovery document") {
		t.Errorf("no log line says the issuer could not be read:\n%s", s.log.String())
	}
}
