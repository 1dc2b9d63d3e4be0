package daemon_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/mailbox"
)

// A client that joins the card's base URL (ending in a slash) with a path
// beginning with one asks for /agents/{agent}//...; most A2A clients do not
// follow redirects, so the daemon serves those paths rather than
// redirecting to their clean form. Paths elsewhere keep the mux's
// behaviour.
func TestAgentPathsWithDoubledSlashesAreServedNotRedirected(t *testing.T) {
	d := daemontest.Start(t, daemontest.Options{Config: func(c *config.Config) { c.A2ABlockingTimeout = 50 * time.Millisecond }})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	c, err := client.New(d.Addr())
	if err != nil {
		t.Fatal(err)
	}
	card := mailbox.AgentCard{Name: "Coder", Description: "writes code", Version: "1.0.0"}
	for _, agent := range []string{"coder@local", "team/coder@local"} {
		if _, err := c.RegisterAgent(ctx, agent, card); err != nil {
			t.Fatal(err)
		}
	}
	noRedirects := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	call := func(method, path string, header map[string]string, body string) (int, string) {
		t.Helper()
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, err := http.NewRequestWithContext(ctx, method, d.URL()+path, rd)
		if err != nil {
			t.Fatal(err)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := noRedirects.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	v10 := map[string]string{"A2A-Version": "1.0"}
	for _, tc := range []struct {
		method, path string
		header       map[string]string
		body         string
		want         string // in the answer
	}{
		{"GET", "/agents/coder@local//.well-known/agent-card.json", nil, "", `"name":"Coder"`},
		{"GET", "/agents/coder@local//.well-known/agent.json", nil, "", `"url":"http://` + d.Addr() + `/agents/coder@local/"`},
		{"GET", "/agents/coder@local/./.well-known/agent.json", nil, "", `"name":"Coder"`},
		{"POST", "/agents/coder@local//message:send", v10, `{"message":{"role":"ROLE_USER","messageId":"m1","parts":[{"text":"hi"}]},"configuration":{"returnImmediately":true}}`, `"TASK_STATE_SUBMITTED"`},
		{"POST", "/agents/coder@local//", nil, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"m2","parts":[{"kind":"text","text":"hi"}]},"configuration":{"blocking":false}}}`, `"state":"submitted"`},
		{"POST", "/agents/coder@local//rpc", nil, `{"jsonrpc":"2.0","id":"r1","method":"tasks/send","params":{"id":"t1","message":{"role":"user","parts":[{"type":"text","text":"hi","data":null}],"metadata":{}}}}`, `"state":"submitted"`},
		{"POST", "/agents/coder@local///rpc", nil, `{"jsonrpc":"2.0","id":"r2","method":"tasks/get","params":{"id":"t1"}}`, `"id":"t1"`},
		{"GET", "/agents/coder@local//tasks/" + "00000000-0000-4000-8000-000000000000", v10, "", `TASK_NOT_FOUND`},
		{"GET", "/agents/team%2Fcoder@local//.well-known/agent-card.json", nil, "", `"url":"http://` + d.Addr() + `/agents/team%2Fcoder@local/"`},
	} {
		st, body := call(tc.method, tc.path, tc.header, tc.body)
		want := 200
		if strings.Contains(tc.want, "NOT_FOUND") {
			want = 404 // an answer of the edge, not a redirect
		}
		if st != want || !strings.Contains(body, tc.want) {
			t.Errorf("%s %s = %d %s, want %d with %s", tc.method, tc.path, st, body, want, tc.want)
		}
	}
	// Elsewhere the mux's behaviour is kept: a native path with a doubled
	// slash, one under /agents/ that cleans to a native path, and one that
	// names no route are still only redirected.
	for _, path := range []string{"/a2a//queue", "/agents/../a2a/queue", "/nowhere//x"} {
		if st, body := call("GET", path, nil, ""); st < 300 || st > 399 {
			t.Errorf("GET %s = %d %s, want the mux's redirect", path, st, body)
		}
	}
}
