package daemon_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/daemon/store/pgstore/pgtest"
	"github.com/mailroom/mailroom/internal/testlog"
	"github.com/mailroom/mailroom/mailbox"
	"github.com/mailroom/mailroom/mcpface/facetest"
)

// bearerTransport sends every request with a bearer token, as a remote MCP
// host configured with the daemon's token does.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func mcpOver(t *testing.T, url, token string, o facetest.Session) *mcp.ClientSession {
	t.Helper()
	return facetest.ClientSession(t, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearerTransport{token}}}, o)
}

func withMCP(c *config.Config) { c.MCPHTTP = true }

// mcpDaemon is the MCP suite's Factory here: a daemon serving /mcp,
// requiring the suite's tokens.
func mcpDaemon(t *testing.T, grants []facetest.Grant) facetest.Target {
	var tokens []auth.Token
	for _, g := range grants {
		tokens = append(tokens, auth.Token{Principal: g.Principal, SHA256: g.SHA256(), Caps: g.Caps})
	}
	return daemontest.Start(t, daemontest.Options{Tokens: tokens, Config: withMCP})
}

// TestMCPOverHTTP runs the MCP face's suite against the daemon's own /mcp
// route over streamable HTTP, each session with its principal's token.
func TestMCPOverHTTP(t *testing.T) {
	facetest.Run(t, func(t *testing.T, d *facetest.Daemon, token string, o facetest.Session) *mcp.ClientSession {
		t.Helper()
		return mcpOver(t, d.URL()+"/mcp", token, o)
	}, mcpDaemon)
}

// initialize is a raw MCP initialize request, as a host's first POST.
const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

func post(t *testing.T, url, token, session, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := (&http.Client{Transport: bearerTransport{token}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// TestMCPOverHTTPAccess: /mcp is behind the daemon's tokens; a session
// answers only its own token; without tokens the session names its agent
// in the query; and the route is off unless configured.
func TestMCPOverHTTPAccess(t *testing.T) {
	d := facetest.StartDaemon(t, mcpDaemon)
	url := d.URL() + "/mcp"
	resp, body := post(t, url, "", "", initialize)
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, `"code":"unauthorized"`) {
		t.Errorf("initialize without a token = %d %s, want 401 unauthorized", resp.StatusCode, body)
	}
	resp, body = post(t, url, "mr_not-a-token", "", initialize)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("initialize with an unknown token = %d %s, want 401", resp.StatusCode, body)
	}
	resp, body = post(t, url, d.Tokens[facetest.Planner], "", initialize)
	session := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || session == "" {
		t.Fatalf("initialize = %d %s (session %q), want 200 and a session", resp.StatusCode, body, session)
	}
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	resp, body = post(t, url, d.Tokens[facetest.Coder], session, list)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("the planner's session with the coder's token = %d %s, want 404", resp.StatusCode, body)
	}

	// Behind a reverse proxy on the same machine, requests reach the
	// loopback address under the proxy's host name: served with tokens.
	proxied := func(d interface{ URL() string }, token, query string) int {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, d.URL()+"/mcp"+query, strings.NewReader(initialize))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = "mailroom.example:443"
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := (&http.Client{Transport: bearerTransport{token}}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := proxied(d, d.Tokens[facetest.Planner], ""); got != http.StatusOK {
		t.Errorf("initialize under another host name, with tokens = %d, want 200", got)
	}

	// Without tokens the agent is named in the query.
	open := daemontest.Start(t, daemontest.Options{Config: withMCP})
	if got := proxied(open, "", "?agent=planner@local"); got != http.StatusForbidden {
		t.Errorf("initialize under another host name, without tokens = %d, want 403 (a rebinding page could send it)", got)
	}
	resp, body = post(t, open.URL()+"/mcp", "", "", initialize)
	var refusal struct {
		Code, Message string
	}
	if err := json.Unmarshal([]byte(body), &refusal); err != nil || resp.StatusCode != http.StatusBadRequest || !strings.Contains(refusal.Message, "?agent=") {
		t.Errorf("initialize without tokens or agent = %d %s, want 400 naming ?agent=", resp.StatusCode, body)
	}
	s := mcpOver(t, open.URL()+"/mcp?agent=planner@local", "", facetest.Session{})
	var sent struct {
		TaskID string `json:"task_id"`
	}
	facetest.Call(t, s, "send_task", map[string]any{"to": "coder@local", "intent": "over HTTP"}, &sent)
	var got struct {
		Sender string `json:"sender"`
	}
	facetest.Call(t, s, "get_task", map[string]any{"task_id": sent.TaskID}, &got)
	if got.Sender != "planner@local" {
		t.Errorf("the task's sender = %q, want planner@local", got.Sender)
	}

	off := daemontest.Start(t, daemontest.Options{})
	if resp, body := post(t, off.URL()+"/mcp", "", "", initialize); resp.StatusCode != http.StatusNotFound {
		t.Errorf("/mcp without mcp_http = %d %s, want 404", resp.StatusCode, body)
	}
}

// TestMCPSessionsEndWithTheDaemon: an open MCP session (whose client
// holds a stream open) does not hold the daemon's shutdown up until its
// deadline.
func TestMCPSessionsEndWithTheDaemon(t *testing.T) {
	logs := &testlog.Buffer{}
	d := daemontest.Start(t, daemontest.Options{Logger: logs.Logger(), Config: func(c *config.Config) {
		withMCP(c)
		c.ShutdownTimeout = time.Minute
	}})
	s := mcpOver(t, d.URL()+"/mcp?agent=planner@local", "", facetest.Session{})
	facetest.Call(t, s, "send_task", map[string]any{"to": "coder@local", "intent": "before the stop"}, nil)
	d.Stop()
	if strings.Contains(logs.String(), "shutdown deadline") {
		t.Errorf("the shutdown waited for its deadline:\n%s", logs)
	}
}

// TestMCPListenEndsWithTheDaemon: a 2026-07-28 subscription, a stateless
// request whose stream stays open, does not hold the daemon's shutdown up
// until its deadline either.
func TestMCPListenEndsWithTheDaemon(t *testing.T) {
	logs := &testlog.Buffer{}
	d := daemontest.Start(t, daemontest.Options{Logger: logs.Logger(), Config: func(c *config.Config) {
		withMCP(c)
		c.ShutdownTimeout = time.Minute
	}})
	acks := make(chan struct{}, 1)
	s := mcpOver(t, d.URL()+"/mcp?agent=planner@local", "", facetest.Session{Acked: func() { acks <- struct{}{} }})
	if v := s.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("protocol %s, want 2026-07-28", v)
	}
	var sent struct {
		TaskID string `json:"task_id"`
	}
	facetest.Call(t, s, "send_task", map[string]any{"to": "coder@local", "intent": "watched at the stop"}, &sent)
	if err := s.Subscribe(t.Context(), &mcp.SubscribeParams{URI: "mailroom://tasks/" + sent.TaskID}); err != nil {
		t.Fatal(err)
	}
	<-acks // the listen stream is open
	d.Stop()
	if strings.Contains(logs.String(), "shutdown deadline") {
		t.Errorf("the shutdown waited for its deadline:\n%s", logs)
	}
}

// TestMCPOnAPostgresFollower: an MCP session opened on an instance that
// does not lead stays there (its requests are not forwarded, or its
// stream would be on another instance than its session), and its tools'
// writes reach the leader through the follower's own API.
func TestMCPOnAPostgresFollower(t *testing.T) {
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url, t.Name())
	onPG := func(c *config.Config) {
		c.Store, c.PostgresURL, c.PostgresSchema = config.StorePostgres, url, schema
		c.PostgresCampaignInterval = 20 * time.Millisecond
		c.MCPHTTP = true
	}
	a := daemontest.Start(t, daemontest.Options{Config: onPG})
	waitRole(t, a.URL(), "leader")
	b := daemontest.Start(t, daemontest.Options{Config: onPG})
	waitRole(t, b.URL(), "follower")

	updates := make(chan string, 16)
	sender := mcpOver(t, b.URL()+"/mcp?agent=planner@pg", "", facetest.Session{Protocol: facetest.Legacy, Updated: func(uri string) { updates <- uri }})
	worker := mcpOver(t, b.URL()+"/mcp?agent=worker@pg", "", facetest.Session{})
	var sent struct {
		TaskID string `json:"task_id"`
	}
	facetest.Call(t, sender, "send_task", map[string]any{"to": "worker@pg", "intent": "through the follower's MCP"}, &sent)
	if rec := findTask(a.State(t), sent.TaskID); rec == nil || rec.State != mailbox.TaskQueued {
		t.Fatalf("the leader holds %+v, want the task queued", rec)
	}
	// The session's notifications come on the stream its client holds
	// open with the instance that has the session.
	uri := "mailroom://tasks/" + sent.TaskID
	if err := sender.Subscribe(t.Context(), &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	var leased struct {
		Tasks []struct {
			TaskID  string `json:"task_id"`
			LeaseID string `json:"lease_id"`
		} `json:"tasks"`
	}
	facetest.Call(t, worker, "lease_task", map[string]any{}, &leased)
	if len(leased.Tasks) != 1 || leased.Tasks[0].TaskID != sent.TaskID {
		t.Fatalf("lease_task on the follower = %+v, want %s", leased, sent.TaskID)
	}
	if got := <-updates; got != uri {
		t.Fatalf("updated %s, want %s", got, uri)
	}
	facetest.Call(t, worker, "post_result", map[string]any{"task_id": sent.TaskID, "lease_id": leased.Tasks[0].LeaseID, "status": "ok", "text": "done"}, nil)
	var drained struct {
		Results []struct {
			TaskID string `json:"task_id"`
		} `json:"results"`
	}
	facetest.Call(t, sender, "drain_results", map[string]any{}, &drained)
	if len(drained.Results) != 1 || drained.Results[0].TaskID != sent.TaskID {
		t.Fatalf("drain_results on the follower = %+v, want %s", drained, sent.TaskID)
	}
}

// TestMCPOverHTTPProtocols: /mcp offers 2026-07-28 (statelessly: a face
// per request, as the SDK serves it) beside the session protocols up to
// 2025-11-25, so a client asking for either gets it, and a refused
// resources/subscribe is a JSON-RPC error with a code a host can act on.
func TestMCPOverHTTPProtocols(t *testing.T) {
	d := facetest.StartDaemon(t, mcpDaemon)
	planner := d.Tokens[facetest.Planner]
	for _, c := range []struct{ ask, want string }{{"", "2026-07-28"}, {"2026-07-28", "2026-07-28"}, {"2025-11-25", "2025-11-25"}, {"2025-06-18", "2025-06-18"}} {
		s := mcpOver(t, d.URL()+"/mcp", planner, facetest.Session{Protocol: c.ask})
		if got := s.InitializeResult().ProtocolVersion; got != c.want {
			t.Errorf("a client asking for %q got protocol %s, want %s", c.ask, got, c.want)
		}
		var sent struct {
			TaskID string `json:"task_id"`
		}
		facetest.Call(t, s, "send_task", map[string]any{"to": facetest.Coder, "intent": "over " + c.want}, &sent)
		var got struct {
			Sender string `json:"sender"`
		}
		facetest.Call(t, s, "get_task", map[string]any{"task_id": sent.TaskID}, &got)
		if got.Sender != facetest.Planner {
			t.Errorf("%s: the task's sender = %q, want %s", c.want, got.Sender, facetest.Planner)
		}
	}

	// A stateless request is answered without a session.
	discover := `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
	resp, body := do(t, "POST", d.URL()+"/mcp", planner, discover, map[string]string{"Accept": "application/json, text/event-stream", "Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"})
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") != "" || !strings.Contains(body, `"2026-07-28"`) {
		t.Errorf("server/discover at 2026-07-28 = %d (session %q) %s, want 200 listing 2026-07-28 and no session", resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), body)
	}

	// A body over the SDK's bound is refused before it is read whole.
	resp, body = do(t, "POST", d.URL()+"/mcp", planner, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"`+strings.Repeat("x", mcp.DefaultMaxRequestBodyBytes)+`"}}`,
		map[string]string{"Accept": "application/json, text/event-stream"})
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(body, "request body") {
		t.Errorf("a body over %d bytes = %d %s, want 413 naming the request body", mcp.DefaultMaxRequestBodyBytes, resp.StatusCode, body)
	}
	// Without a token, nothing is read: 401.
	resp, _ = do(t, "POST", d.URL()+"/mcp", "", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, map[string]string{"Accept": "application/json, text/event-stream"})
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("/mcp without a token = %d, want 401", resp.StatusCode)
	}

	// Refused subscriptions.
	sender := mcpOver(t, d.URL()+"/mcp", planner, facetest.Session{Protocol: facetest.Legacy})
	var sent struct {
		TaskID string `json:"task_id"`
	}
	facetest.Call(t, sender, "send_task", map[string]any{"to": facetest.Coder, "intent": "not the coder's to watch"}, &sent)
	coder := mcpOver(t, d.URL()+"/mcp", d.Tokens[facetest.Coder], facetest.Session{Protocol: facetest.Legacy})
	for _, c := range []struct {
		s         *mcp.ClientSession
		uri, what string
		code      int64
	}{
		{coder, "mailroom://tasks/" + sent.TaskID, "another's task without a2a.read", jsonrpc.CodeInvalidParams},
		{sender, "mailroom://agents/coder@local/card", "a card", jsonrpc.CodeInvalidParams},
		{sender, "mailroom://tasks/6f9619ff-8b86-4d11-b42d-00c04fc964ff", "an unknown task", jsonrpc.CodeInvalidParams},
	} {
		err := c.s.Subscribe(t.Context(), &mcp.SubscribeParams{URI: c.uri})
		var je *jsonrpc.Error
		if !errors.As(err, &je) || je.Code != c.code {
			t.Errorf("subscribing to %s: %v (%T), want JSON-RPC error %d", c.what, err, err, c.code)
		}
	}
}
