package daemon_test

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon"
	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/daemon/httpapi"
	"github.com/mailroom/mailroom/daemon/store/pgstore/pgtest"
	"github.com/mailroom/mailroom/internal/sse/ssetest"
	"github.com/mailroom/mailroom/internal/testpki"
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

// logLines is a daemon's log that tells a waiting test of every write.
type logLines struct {
	mu      sync.Mutex
	buf     strings.Builder
	changed chan struct{}
}

func newLogLines() *logLines { return &logLines{changed: make(chan struct{})} }

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	close(l.changed)
	l.changed = make(chan struct{})
	return len(p), nil
}

// waitFor waits for a line holding every one of wants written past
// offset from, and returns the offset past it.
func (l *logLines) waitFor(t *testing.T, from int, wants ...string) int {
	t.Helper()
	watchdog := time.NewTimer(30 * time.Second) // a watchdog, not synchronisation
	defer watchdog.Stop()
	for {
		l.mu.Lock()
		text, changed := l.buf.String(), l.changed
		l.mu.Unlock()
		at := from
	lines:
		for line := range strings.Lines(text[from:]) {
			at += len(line)
			for _, w := range wants {
				if !strings.Contains(line, w) {
					continue lines
				}
			}
			return at
		}
		select {
		case <-changed:
		case <-watchdog.C:
			t.Fatalf("the log has no line with %q:\n%s", wants, text)
		}
	}
}

// TestCertificateFilesReplacedAreServed: files renamed over the served
// ones (as cert-manager does) are picked up without a signal; new
// handshakes get the new serial while an event stream opened before keeps
// its connection and its events; a broken pair keeps the served one.
func TestCertificateFilesReplacedAreServed(t *testing.T) {
	t.Parallel()
	logs := newLogLines()
	d := daemontest.Start(t, daemontest.Options{TLS: true, Logger: slog.New(slog.NewTextHandler(logs, nil)),
		Daemon: []daemon.Option{daemon.WithCertPollInterval(10 * time.Millisecond)}})
	serial := func() string {
		t.Helper()
		conn, err := tls.Dial("tcp", d.Addr(), d.TLSConfig())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	req, err := http.NewRequestWithContext(t.Context(), "GET", d.URL()+"/a2a/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := d.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := ssetest.NewReader(resp.Body)
	if _, err := events.NextEvent(); err != nil {
		t.Fatal(err)
	}
	seen := logs.waitFor(t, 0, "serving TLS", d.Cert.Cert.SerialNumber.String())

	next := d.CA.Issue(t, testpki.Options{CN: "rotated"})
	rename(t, d.KeyFile, next.KeyPEM)
	rename(t, d.CertFile, next.CertPEM)
	seen = logs.waitFor(t, seen, "TLS certificate reloaded", "the certificate files changed", next.Cert.SerialNumber.String())
	if got := serial(); got != next.Cert.SerialNumber.String() {
		t.Errorf("after the rotation a new handshake got %s, want %s", got, next.Cert.SerialNumber)
	}
	sent := sendOne(t, d)
	if ev, err := events.NextEvent(); err != nil || !strings.Contains(ev.Data, sent) {
		t.Errorf("the stream opened before the rotation: %v %q, want the send of %s", err, ev.Data, sent)
	}
	if resp.TLS.PeerCertificates[0].SerialNumber.String() != d.Cert.Cert.SerialNumber.String() {
		t.Error("the stream's connection is not the one opened before the rotation")
	}

	// A key that does not match the certificate: the rotated one stays.
	rename(t, d.KeyFile, d.Cert.KeyPEM)
	logs.waitFor(t, seen, "level=ERROR", "TLS certificate not reloaded", "does not match")
	if got := serial(); got != next.Cert.SerialNumber.String() {
		t.Errorf("after a broken rotation a new handshake got %s, want %s kept", got, next.Cert.SerialNumber)
	}
}

func rename(t *testing.T, path string, body []byte) {
	t.Helper()
	if err := os.WriteFile(path+".new", body, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
}

// TestTLSTerminatedByProxyWritesHTTPS: behind a proxy that ends TLS the
// daemon serves plain HTTP, and its cards' URLs say https.
func TestTLSTerminatedByProxyWritesHTTPS(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Options{Config: func(c *config.Config) { c.TLSTerminatedByProxy = true }})
	c := mustClient(t, d.URL())
	if _, err := c.RegisterAgent(t.Context(), "coder@local", mailbox.AgentCard{Name: "Coder", Description: "writes code", Version: "1.0.0"}); err != nil {
		t.Fatal(err)
	}
	_, card := get(t, http.DefaultClient, d.URL()+"/agents/coder@local/.well-known/agent-card.json")
	if want := `"url":"https://` + d.Addr() + `/agents/coder@local/"`; !strings.Contains(card, want) {
		t.Errorf("the card behind a TLS proxy says %s, want %s", card, want)
	}
}

// TestAdvertiseURLIsHTTPSWithTLS: on a shared store the address other
// instances are told defaults to https:// when the daemon serves TLS.
func TestAdvertiseURLIsHTTPSWithTLS(t *testing.T) {
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url, t.Name())
	d := daemontest.Start(t, daemontest.Options{TLS: true, Config: func(c *config.Config) {
		c.Store, c.PostgresURL, c.PostgresSchema = config.StorePostgres, url, schema
	}})
	_, body := get(t, d.Client(), d.URL()+"/healthz")
	var h httpapi.HealthResponse
	if err := json.Unmarshal([]byte(body), &h); err != nil {
		t.Fatal(err)
	}
	if h.Store == nil || h.Store.Self != d.URL() || !strings.HasPrefix(h.Store.Self, "https://") {
		t.Errorf("/healthz over HTTPS: %+v, want the instance at %s", h.Store, d.URL())
	}
}

// TestDaemontestReadsATLSDaemon: the helper's own reads (State, Metric)
// reach a TLS daemon, and /metrics has the served certificate's expiry.
func TestDaemontestReadsATLSDaemon(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Options{TLS: true})
	sent := sendOne(t, d)
	if snap := d.State(t); len(snap.Tasks) != 1 || snap.Tasks[0].Task.ID != sent {
		t.Errorf("State over TLS: %d tasks, want the one sent (%s)", len(snap.Tasks), sent)
	}
	if got, want := d.Metric(t, "mailroom_tls_cert_expiry_seconds"), float64(d.Cert.Cert.NotAfter.Unix()); got != want {
		t.Errorf("mailroom_tls_cert_expiry_seconds = %v, want %v", got, want)
	}
}
