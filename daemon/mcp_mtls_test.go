package daemon_test

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/internal/testpki"
	"github.com/mailroom/mailroom/mcpface"
	"github.com/mailroom/mailroom/mcpface/facetest"
)

const (
	certPlanner = "planner@local" // known by its certificate
	certCoder   = "coder@local"   // known by its certificate
)

// startMCPMTLS starts a daemon serving /mcp that asks for client
// certificates of ca in mode, knowing the planner and the coder by their
// certificates' SPIFFE IDs and a reporter by its token.
func startMCPMTLS(t *testing.T, ca *testpki.CA, mode string) *daemontest.Daemon {
	t.Helper()
	caFile := ca.WriteFile(t, t.TempDir(), "clients.crt")
	return daemontest.Start(t, daemontest.Options{TLS: true, CA: ca,
		Tokens: []auth.Token{
			{Principal: certPlanner, SPIFFEID: "spiffe://example.org/planner", Caps: []string{"a2a.send.*", "a2a.drain"}},
			{Principal: certCoder, SPIFFEID: "spiffe://example.org/coder", Caps: []string{auth.CapRecv}},
			{Principal: "reporter@local", Token: "op-secret", Caps: []string{auth.CapRead, "a2a.send.*"}},
		},
		Config: func(c *config.Config) {
			c.MCPHTTP = true
			c.TLSClientCAFile, c.TLSClientAuth = caFile, mode
		}})
}

func spiffeLeaf(t *testing.T, ca *testpki.CA, name string) *testpki.Leaf {
	return ca.Issue(t, testpki.Options{CN: "ignored", URIs: []string{"spiffe://example.org/" + name}, Client: true})
}

// mcpWith is an MCP session over d's /mcp presenting leaf (none when
// nil) and sending token (none when empty).
func mcpWith(t *testing.T, d *daemontest.Daemon, leaf *testpki.Leaf, token string) *mcp.ClientSession {
	t.Helper()
	hc := mtlsClient(d, leaf)
	if token != "" {
		hc.Transport = tokenOver{token: token, next: hc.Transport}
	}
	return facetest.ClientSession(t, &mcp.StreamableClientTransport{Endpoint: d.URL() + mcpface.Path, HTTPClient: hc}, facetest.Session{})
}

// tokenOver sends a bearer token over next.
type tokenOver struct {
	token string
	next  http.RoundTripper
}

func (o tokenOver) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+o.token)
	return o.next.RoundTrip(r)
}

// sendAndRead sends a task to the coder over s and reads it back, returning
// its sender as the mailbox has it.
func sendAndRead(t *testing.T, s *mcp.ClientSession) string {
	t.Helper()
	var sent struct {
		TaskID string `json:"task_id"`
	}
	facetest.Call(t, s, "send_task", map[string]any{"to": certCoder, "intent": "rotate the keys"}, &sent)
	var got mcpface.TaskView
	facetest.Call(t, s, "get_task", map[string]any{"task_id": sent.TaskID}, &got)
	if got.TaskID != sent.TaskID || got.Intent != "rotate the keys" {
		t.Fatalf("get_task(%s) = %+v, want the task sent", sent.TaskID, got)
	}
	return got.Sender
}

// TestMCPClientCertificateRequire: under tls_client_auth: require, a
// caller known only by its client certificate is served /mcp, and in its
// tool calls it is the certificate's principal: the face calls the
// daemon's own API in process, with the caller's verified certificate.
func TestMCPClientCertificateRequire(t *testing.T) {
	ca := testpki.NewCA(t, "mailroom test CA")
	d := startMCPMTLS(t, ca, config.ClientAuthRequire)
	planner := spiffeLeaf(t, ca, "planner")

	s := mcpWith(t, d, planner, "")
	tools, err := s.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatalf("tools/list with a client certificate: %v", err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	if !slices.Contains(names, "send_task") || !slices.Contains(names, "get_task") {
		t.Fatalf("tools/list = %v, want send_task and get_task", names)
	}
	if sender := sendAndRead(t, s); sender != certPlanner {
		t.Errorf("the task's sender = %q, want the certificate's principal %q", sender, certPlanner)
	}
	// The coder's certificate is the coder: its session leases the task
	// the planner sent.
	var leased struct {
		Tasks []struct {
			Sender string `json:"sender"`
		} `json:"tasks"`
	}
	facetest.Call(t, mcpWith(t, d, spiffeLeaf(t, ca, "coder"), ""), "lease_task", map[string]any{}, &leased)
	if len(leased.Tasks) != 1 || leased.Tasks[0].Sender != certPlanner {
		t.Errorf("lease_task as the coder = %+v, want the planner's task", leased)
	}
}

// TestMCPSessionOfAnotherCertificate: a session opened by one certificate
// answers another certificate as an unknown session, as a session of a
// token answers another token.
func TestMCPSessionOfAnotherCertificate(t *testing.T) {
	ca := testpki.NewCA(t, "mailroom test CA")
	d := startMCPMTLS(t, ca, config.ClientAuthRequire)
	post := func(leaf *testpki.Leaf, session string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, d.URL()+mcpface.Path, strings.NewReader(initialize))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := mtlsClient(d, leaf).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	resp, body := post(spiffeLeaf(t, ca, "planner"), "")
	session := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || session == "" {
		t.Fatalf("initialize with the planner's certificate = %d %s, want a session", resp.StatusCode, body)
	}
	resp, body = post(spiffeLeaf(t, ca, "coder"), session)
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(body, "no such session") {
		t.Errorf("the planner's session with the coder's certificate = %d %s, want 404 no such session", resp.StatusCode, body)
	}
}

// TestMCPTokenUnderClientCertificateRequest: under request, a token
// caller without a certificate is its token's principal in its tool calls,
// and a caller with both is its token's, as on every route.
func TestMCPTokenUnderClientCertificateRequest(t *testing.T) {
	ca := testpki.NewCA(t, "mailroom test CA")
	d := startMCPMTLS(t, ca, config.ClientAuthRequest)
	if sender := sendAndRead(t, mcpWith(t, d, nil, "op-secret")); sender != "reporter@local" {
		t.Errorf("the task's sender with a token = %q, want reporter@local", sender)
	}
	if sender := sendAndRead(t, mcpWith(t, d, spiffeLeaf(t, ca, "planner"), "op-secret")); sender != "reporter@local" {
		t.Errorf("the task's sender with a token and a certificate = %q, want the token's reporter@local", sender)
	}
}
