package a2a_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strings"
	"testing"

	a2apkg "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient/agentcard"

	"github.com/mailroom/mailroom/daemon/a2a"
	"github.com/mailroom/mailroom/daemon/a2a/cardsig"
	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/internal/remotetest"
	"github.com/mailroom/mailroom/internal/testpki"
	"github.com/mailroom/mailroom/mailbox"
)

// cardOnly is a service that knows one registered agent and nothing
// else: enough to serve its card.
type cardOnly struct {
	a2a.Service
	reg mailbox.RegisteredAgent
}

func (c cardOnly) Registered(context.Context, string) (mailbox.RegisteredAgent, error) {
	return c.reg, nil
}

// serveCard serves coder@local's card from an edge with opts, and
// nothing else; it returns the agent's base URL.
func serveCard(t *testing.T, opts a2a.Options) string {
	t.Helper()
	svc := cardOnly{reg: mailbox.RegisteredAgent{Agent: "coder@local", Card: mailbox.AgentCard{Name: "Coder", Description: "writes code"}}}
	edge := a2a.New(svc, nil, opts)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.URL.Path, "/.well-known/") {
			http.Error(w, "only the card is served here", http.StatusServiceUnavailable)
			return
		}
		edge.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/agents/coder@local/"
}

func letIn(r *http.Request) (context.Context, error) { return r.Context(), nil }

// The card declares the ways in that are in force, each in both
// generations' shapes, and the security requirements as alternatives:
// a2a-go v0.3.3 reads each scheme as its own type, and v2.3.1 (the
// interop driver) resolves the card, signed or not, and lists them all.
func TestCardDeclaresSchemesInForce(t *testing.T) {
	const issuer = "https://issuer.example/realms/agents"
	signer, err := cardsig.LoadSigner("card_signing_key_file", writeSigningKey(t))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		opts     a2a.Options
		schemes  map[string]string // name -> the v0.3 type a2a-go v0.3.3 reads
		security []string          // the alternatives, in order
	}{
		{"no authentication", a2a.Options{}, nil, nil},
		{"tokens", a2a.Options{Authenticate: letIn},
			map[string]string{"bearer": "a2a.HTTPAuthSecurityScheme"}, []string{"bearer"}},
		{"tokens, OIDC and client certificates asked for, signed", a2a.Options{Authenticate: letIn, Card: a2a.CardOptions{MutualTLS: a2a.MutualTLSRequest, OIDCIssuer: issuer, Signer: signer}},
			map[string]string{"bearer": "a2a.HTTPAuthSecurityScheme", "oidc": "a2a.OpenIDConnectSecurityScheme", "mtls": "a2a.MutualTLSSecurityScheme"},
			[]string{"bearer", "oidc", "mtls"}},
		{"client certificates required", a2a.Options{Authenticate: letIn, Card: a2a.CardOptions{MutualTLS: a2a.MutualTLSRequire}},
			map[string]string{"bearer": "a2a.HTTPAuthSecurityScheme", "mtls": "a2a.MutualTLSSecurityScheme"}, []string{"mtls"}},
		{"certificates only", a2a.Options{Authenticate: letIn, Card: a2a.CardOptions{MutualTLS: a2a.MutualTLSRequest, NoBearer: true}},
			map[string]string{"mtls": "a2a.MutualTLSSecurityScheme"}, []string{"mtls"}},
	}
	driver := buildA2AGoV2(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := serveCard(t, tt.opts)
			card, err := agentcard.NewResolver(http.DefaultClient).Resolve(t.Context(), base)
			if err != nil {
				t.Fatalf("a2a-go v0.3.3 resolving the card: %v", err)
			}
			got := map[string]string{}
			for name, s := range card.SecuritySchemes {
				got[string(name)] = typeName(s)
			}
			if len(got) != len(tt.schemes) {
				t.Errorf("schemes %v, want %v", got, tt.schemes)
			}
			for name, typ := range tt.schemes {
				if got[name] != typ {
					t.Errorf("scheme %s read as %q, want %s", name, got[name], typ)
				}
			}
			if oidc, ok := card.SecuritySchemes["oidc"].(a2apkg.OpenIDConnectSecurityScheme); ok && oidc.OpenIDConnectURL != issuer+"/.well-known/openid-configuration" {
				t.Errorf("the OIDC scheme's URL %q, want the issuer's discovery URL", oidc.OpenIDConnectURL)
			}
			var alternatives []string
			for _, req := range card.Security {
				for name := range req {
					alternatives = append(alternatives, string(name))
				}
				if len(req) != 1 {
					t.Errorf("a requirement of %d schemes, want each alternative one: %v", len(req), req)
				}
			}
			if !slices.Equal(alternatives, tt.security) {
				t.Errorf("security %v, want %v", alternatives, tt.security)
			}
			if len(tt.schemes) < 2 {
				return
			}
			line := firstLine(t, driver, "-base", base, "-bindings", "JSONRPC")
			var r struct{ Scenario, Outcome, Detail string }
			if err := json.Unmarshal([]byte(line), &r); err != nil || r.Scenario != "card" || r.Outcome != "OK" {
				t.Fatalf("a2a-go v2.3.1 resolving the card: %s", line)
			}
			for name := range tt.schemes {
				if !strings.Contains(r.Detail, name) {
					t.Errorf("a2a-go v2.3.1 read %q, want scheme %s among them", r.Detail, name)
				}
			}
		})
	}
}

func typeName(v any) string {
	switch v.(type) {
	case a2apkg.HTTPAuthSecurityScheme:
		return "a2a.HTTPAuthSecurityScheme"
	case a2apkg.OpenIDConnectSecurityScheme:
		return "a2a.OpenIDConnectSecurityScheme"
	case a2apkg.MutualTLSSecurityScheme:
		return "a2a.MutualTLSSecurityScheme"
	}
	return "another type"
}

// firstLine runs a command and returns the first line it prints, then
// ends it: the driver goes on to scenarios a card alone cannot answer.
func firstLine(t *testing.T, name string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), name, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("%s printed no line: %v", name, err)
	}
	return line
}

// @a2a-js/sdk 0.3.14 and 1.3.0 resolve a signed card that declares every
// scheme, and node's crypto verifies its signature from the served keys
// (interop/node/cards). Without node or the packages the test skips,
// except on CI (CI=true), where it fails.
func TestJSSDKReadsSignedCardWithSchemes(t *testing.T) {
	node, dir := remotetest.Node(t, "the @a2a-js/sdk card tests", "a2a-v03", "a2a-v1")
	signer, err := cardsig.LoadSigner("card_signing_key_file", writeSigningKey(t))
	if err != nil {
		t.Fatal(err)
	}
	base := serveCard(t, a2a.Options{Authenticate: letIn,
		Card: a2a.CardOptions{Signer: signer, MutualTLS: a2a.MutualTLSRequest, OIDCIssuer: "https://issuer.example"}})
	remotetest.NodeTests(t, node, dir, "cards", "MAILROOM_CARD_BASE="+base, "MAILROOM_CARD_JWKS="+base+a2a.JWKSPath)
}

// The daemon's cards declare what its configuration puts in force: with
// tokens and tls_client_auth request, bearer or a client certificate;
// with certificate entries only and tls_client_auth require, mutual TLS
// alone.
func TestDaemonCardDeclaresItsSchemes(t *testing.T) {
	billing := auth.Token{Principal: "billing", SPIFFEID: "spiffe://example.org/billing", Caps: []string{auth.CapAdmin}}
	for _, tt := range []struct {
		name     string
		mode     string
		tokens   []auth.Token
		security []string
	}{
		{"tokens and certificates asked for", "request", append([]auth.Token{billing}, edgeTokens...), []string{"bearer", "mtls"}},
		{"certificates required, no tokens", "require", []auth.Token{billing}, []string{"mtls"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ca := testpki.NewCA(t, "card test CA")
			caFile := ca.WriteFile(t, t.TempDir(), "ca.crt")
			d := daemontest.Start(t, daemontest.Options{TLS: true, CA: ca, Tokens: tt.tokens, Config: func(c *config.Config) {
				c.TLSClientCAFile, c.TLSClientAuth = caFile, tt.mode
			}})
			tr := d.Transport()
			tr.TLSClientConfig.Certificates = []tls.Certificate{ca.Issue(t, testpki.Options{URIs: []string{billing.SPIFFEID}, Client: true}).TLS}
			hc := &http.Client{Transport: tr}
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPut, d.URL()+"/a2a/agents/coder@local", strings.NewReader(`{"name":"Coder","description":"writes code"}`))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("registering as billing by its certificate: %s", resp.Status)
			}
			resp, err = hc.Get(d.URL() + "/agents/coder@local/.well-known/agent-card.json")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var card struct {
				SecuritySchemes map[string]json.RawMessage `json:"securitySchemes"`
				Security        []map[string][]string      `json:"security"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&card); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, alt := range card.Security {
				for name := range alt {
					got = append(got, name)
				}
			}
			if !slices.Equal(got, tt.security) || len(card.SecuritySchemes) != len(tt.security) {
				t.Errorf("card declares %v with schemes %v; want %v", got, card.SecuritySchemes, tt.security)
			}
		})
	}
}
