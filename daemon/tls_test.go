package daemon_test

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/internal/sse/ssetest"
	"github.com/mailroom/mailroom/mailbox"
	"github.com/mailroom/mailroom/mcpface/facetest"
)

// http2Only fails the test for any answer that did not come over HTTP/2.
type http2Only struct {
	t    *testing.T
	next http.RoundTripper
}

func (h http2Only) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := h.next.RoundTrip(r)
	if err == nil && resp.ProtoMajor != 2 {
		h.t.Errorf("%s %s answered over %s, want HTTP/2", r.Method, r.URL.Path, resp.Proto)
	}
	return resp, err
}

// TestEveryRouteFamilyOverHTTPS: with tls_cert_file and tls_key_file the
// native API (a send, lease, result, drain cycle), /healthz, /metrics,
// the event stream, the A2A edge (its card's URLs https) and /mcp are
// served over TLS and HTTP/2.
func TestEveryRouteFamilyOverHTTPS(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Options{TLS: true, Config: withMCP})
	if !strings.HasPrefix(d.URL(), "https://") {
		t.Fatalf("URL() = %s, want https://", d.URL())
	}
	hc := &http.Client{Transport: http2Only{t, d.Transport()}}
	c := mustClient(t, d.URL(), client.WithHTTPClient(hc))
	ctx := t.Context()

	events := c.Subscribe(ctx, 0, nil)
	if ev := <-events; ev.Type != mailbox.EventSnapshot {
		t.Fatalf("the stream over HTTPS opened with %s, want the snapshot", ev.Type)
	}
	sent, err := c.Send(ctx, mailbox.Task{Sender: "p@local", Recipient: "w@local", IntentText: "over TLS"})
	if err != nil {
		t.Fatal(err)
	}
	task, lease, err := c.Lease(ctx, "w@local")
	if err != nil || task == nil || task.ID != sent.TaskID {
		t.Fatalf("Lease = %+v, %v; want task %s", task, err, sent.TaskID)
	}
	if err := c.PostResult(ctx, mailbox.Result{TaskID: task.ID, Status: "ok", LeaseID: lease.LeaseID, Content: []mailbox.Content{{Type: "text", Text: "done"}}}); err != nil {
		t.Fatal(err)
	}
	if res, err := c.Drain(ctx, "p@local"); err != nil || res == nil || res.TaskID != sent.TaskID {
		t.Fatalf("Drain = %+v, %v", res, err)
	}
	for seen := map[string]bool{}; !seen[mailbox.EventResultDrained]; {
		select {
		case ev := <-events:
			seen[ev.Type] = true
		case <-time.After(30 * time.Second):
			t.Fatal("the stream over HTTPS did not carry the cycle's events")
		}
	}

	for _, path := range []string{"/healthz", "/metrics"} {
		if st, body := get(t, hc, d.URL()+path); st != 200 {
			t.Errorf("GET %s = %d %s", path, st, body)
		}
	}
	if _, body := get(t, hc, d.URL()+"/metrics"); !strings.Contains(body, "mailroom_tls_cert_expiry_seconds ") {
		t.Errorf("/metrics has no mailroom_tls_cert_expiry_seconds:\n%s", body)
	}
	if _, err := c.RegisterAgent(ctx, "coder@local", mailbox.AgentCard{Name: "Coder", Description: "writes code", Version: "1.0.0"}); err != nil {
		t.Fatal(err)
	}
	_, card := get(t, hc, d.URL()+"/agents/coder@local/.well-known/agent-card.json")
	if want := `"url":"https://` + d.Addr() + `/agents/coder@local/"`; !strings.Contains(card, want) {
		t.Errorf("the card over HTTPS says %s, want %s", card, want)
	}
	rpc := `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"m1","parts":[{"kind":"text","text":"hi"}]},"configuration":{"blocking":false}}}`
	resp, err := hc.Post(d.URL()+"/agents/coder@local/", "application/json", strings.NewReader(rpc))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"state":"submitted"`) {
		t.Errorf("message/send over HTTPS = %d %s", resp.StatusCode, b)
	}

	// /mcp: the face calls the daemon's own API, over TLS too.
	s := facetest.ClientSession(t, &mcp.StreamableClientTransport{Endpoint: d.URL() + "/mcp?agent=p@local", HTTPClient: hc}, facetest.Session{})
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "get_task", Arguments: map[string]any{"task_id": sent.TaskID}})
	if err != nil || res.IsError {
		t.Errorf("get_task over MCP over HTTPS = %+v, %v", res, err)
	}
}

func get(t *testing.T, hc *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := hc.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestTLSRefusesWeakClients: a client offering only TLS 1.1, or only CBC
// suites at TLS 1.2, gets no handshake; a plain HTTP request gets a 400
// that says what happened.
func TestTLSRefusesWeakClients(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Options{TLS: true})
	for name, cfg := range map[string]*tls.Config{
		"TLS 1.1 only": {RootCAs: d.CA.Pool(), MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11},
		"CBC suites only": {RootCAs: d.CA.Pool(), MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{
			tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA,
			tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA}},
	} {
		conn, err := tls.Dial("tcp", d.Addr(), cfg)
		if err == nil {
			conn.Close()
			t.Errorf("%s: the handshake succeeded, want it refused", name)
		}
	}
	// A modern client gets TLS 1.3.
	conn, err := tls.Dial("tcp", d.Addr(), d.TLSConfig())
	if err != nil {
		t.Fatal(err)
	}
	if v := conn.ConnectionState().Version; v != tls.VersionTLS13 {
		t.Errorf("a modern client got version %x, want TLS 1.3", v)
	}
	conn.Close()

	plain, err := net.Dial("tcp", d.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if _, err := io.WriteString(plain, "GET /healthz HTTP/1.1\r\nHost: "+d.Addr()+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(plain), nil)
	if err != nil {
		t.Fatalf("a plain HTTP request to the TLS port: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 400 || !strings.Contains(string(b), "Client sent an HTTP request to an HTTPS server.") {
		t.Errorf("a plain HTTP request to the TLS port = %d %q, want 400 saying so", resp.StatusCode, b)
	}
}

// TestEventStreamOverHTTP2ReadsRawEvents: the stream is SSE over an
// HTTP/2 stream, read with the plain test reader.
func TestEventStreamOverHTTP2ReadsRawEvents(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Options{TLS: true})
	req, err := http.NewRequestWithContext(t.Context(), "GET", d.URL()+"/a2a/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := d.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.ProtoMajor != 2 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET /a2a/events = %s %s, want HTTP/2 text/event-stream", resp.Proto, resp.Header.Get("Content-Type"))
	}
	r := ssetest.NewReader(resp.Body)
	if _, err := r.NextEvent(); err != nil {
		t.Fatal(err)
	}
	sent := sendOne(t, d)
	ev, err := r.NextEvent()
	if err != nil {
		t.Fatal(err)
	}
	var got mailbox.Event
	if err := json.Unmarshal([]byte(ev.Data), &got); err != nil || got.Type != mailbox.EventTaskSent {
		t.Errorf("the event after the snapshot = %s (%v), want the send of %s", ev.Data, err, sent)
	}
}

// sendOne sends a task to the TLS daemon d and returns its id.
func sendOne(t *testing.T, d *daemontest.Daemon) string {
	t.Helper()
	c := mustClient(t, d.URL(), client.WithHTTPClient(d.Client()))
	sent, err := c.Send(t.Context(), mailbox.Task{Sender: "p@local", Recipient: "w@local", IntentText: "one"})
	if err != nil {
		t.Fatal(err)
	}
	return sent.TaskID
}
