// Package daemontest runs a real mailroom daemon for tests: the daemon's own
// wiring (config, auth, daemon.Open, Daemon.Run) on 127.0.0.1 and a data
// directory, served on a real socket. It can drop every client connection,
// restart on the same directory and port, and read the whole state as any
// client would.
package daemontest

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailroom/mailroom/daemon"
	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/internal/sse/ssetest"
	"github.com/mailroom/mailroom/internal/testpki"
	"github.com/mailroom/mailroom/mailbox"
)

// Options say how the daemon differs from the default configuration. The
// zero value is a daemon without tokens on a fresh temporary directory.
type Options struct {
	// Tokens are config.Tokens: with any, every request needs one.
	Tokens []auth.Token
	// Dir is the data directory; "" means a new t.TempDir().
	Dir string
	// Config changes anything else in the configuration. Addr and DataDir
	// are the helper's and are set after it.
	Config func(*config.Config)
	// Now is the mailbox's clock (daemon.WithClock); nil is time.Now.
	Now func() time.Time
	// RetryStaleTicks, when set, drives the retry-stale scheduler instead
	// of a ticker: each value sent is one scan. The scheduler runs only when
	// Config sets RetryStaleInterval.
	RetryStaleTicks <-chan time.Time
	// Logger gets the daemon's log; nil discards it.
	Logger *slog.Logger
	// Daemon are more options for daemon.Open (daemon.WithOutbound, ...).
	Daemon []daemon.Option
	// TLS serves HTTPS with a certificate for 127.0.0.1, ::1 and
	// localhost from a CA of the test's own (Daemon.CA): URL is then
	// https://, and Client trusts the CA.
	TLS bool
	// CA, with TLS, issues the daemon's certificate instead of a CA of
	// its own: instances that must trust each other share one.
	CA *testpki.CA
}

// Daemon is a daemon running for one test.
type Daemon struct {
	// Dir is the data directory; it outlives restarts.
	Dir string
	// With Options.TLS: the test's CA (issue client certificates with
	// it), the daemon's certificate, and the files the daemon was given
	// (tls_cert_file, tls_key_file; replace them to rotate) and the
	// CA's (what a --ca-file names).
	CA                        *testpki.CA
	Cert                      *testpki.Leaf
	CertFile, KeyFile, CAFile string
	// helper reads state for the helper's own methods.
	helper *http.Client

	t    testing.TB
	opts Options
	addr string // host:port, kept across restarts

	mu  sync.Mutex
	cur *instance // nil while stopped
}

// instance is one run of the daemon, from Open to the end of Run.
type instance struct {
	ln     *listener
	cancel context.CancelFunc
	done   chan error // Run's result
}

// Start runs a daemon on 127.0.0.1:0 through daemon.Open and Daemon.Run. It
// is stopped when the test ends, and the test fails if it does not stop
// cleanly.
func Start(t testing.TB, opts Options) *Daemon {
	t.Helper()
	d := &Daemon{t: t, opts: opts, Dir: opts.Dir, addr: "127.0.0.1:0", helper: helperClient}
	if d.Dir == "" {
		d.Dir = t.TempDir()
	}
	if opts.TLS {
		d.issueTLS()
	}
	d.cur = d.launch(d.addr)
	d.addr = d.cur.ln.Addr().String()
	t.Cleanup(d.Stop)
	return d
}

// launch opens the daemon on a listener bound to addr and runs it.
func (d *Daemon) launch(addr string) *instance {
	d.t.Helper()
	// Go listens with SO_REUSEADDR, so a restart can bind the port the
	// previous run just released.
	inner, err := net.Listen("tcp", addr)
	if err != nil {
		d.t.Fatalf("listening on %s: %v", addr, err)
	}
	ln := &listener{Listener: inner, conns: map[*conn]struct{}{}}
	cfg := config.DefaultFor(func(string) string { return "" })
	cfg.Tokens = d.opts.Tokens
	if d.opts.Config != nil {
		d.opts.Config(&cfg)
	}
	cfg.Addr, cfg.DataDir = ln.Addr().String(), d.Dir
	if d.CertFile != "" {
		cfg.TLSCertFile, cfg.TLSKeyFile = d.CertFile, d.KeyFile
	}
	opts := []daemon.Option{daemon.WithListener(ln)}
	if d.opts.Now != nil {
		opts = append(opts, daemon.WithClock(d.opts.Now))
	}
	if ticks := d.opts.RetryStaleTicks; ticks != nil {
		opts = append(opts, daemon.WithRetryStaleTicks(func(time.Duration) (<-chan time.Time, func()) { return ticks, func() {} }))
	}
	opts = append(opts, d.opts.Daemon...)
	dm, err := daemon.Open(cfg, d.opts.Logger, opts...)
	if err != nil {
		d.t.Fatalf("daemon.Open on %s: %v", d.Dir, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	in := &instance{ln: ln, cancel: cancel, done: make(chan error, 1)}
	go func() { in.done <- dm.Run(ctx) }()
	return in
}

// stop ends Run and waits for it.
func (in *instance) stop(t testing.TB) {
	t.Helper()
	in.cancel()
	if err := <-in.done; err != nil {
		t.Errorf("daemon.Run: %v", err)
	}
}

// Addr is host:port, as the daemon's listen address is written.
func (d *Daemon) Addr() string { return d.addr }

// URL is the daemon's base URL: https:// with Options.TLS.
func (d *Daemon) URL() string {
	if d.CA != nil {
		return "https://" + d.addr
	}
	return "http://" + d.addr
}

// DropConnections closes every client connection abruptly, as a network
// failure would; the daemon keeps running.
func (d *Daemon) DropConnections() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cur != nil {
		d.cur.ln.dropAll()
	}
}

// Stop shuts the daemon down as SIGTERM would: event streams ended, the
// requests in flight finished, the log synced and closed. It is
// idempotent.
func (d *Daemon) Stop() {
	d.t.Helper()
	d.mu.Lock()
	in := d.cur
	d.cur = nil
	d.mu.Unlock()
	if in != nil {
		in.stop(d.t)
	}
}

// Restart stops the daemon (if it runs) and starts it again on the same
// directory and port, replaying its log.
func (d *Daemon) Restart() {
	d.t.Helper()
	d.Stop()
	in := d.launch(d.addr)
	d.mu.Lock()
	d.cur = in
	d.mu.Unlock()
}

// Offline stops the daemon and runs it on the same directory at another
// address for the length of fn, so that whatever fn does there is missed
// by every client of Addr; then it serves at Addr again.
func (d *Daemon) Offline(fn func(addr string)) {
	d.t.Helper()
	d.Stop()
	elsewhere := d.launch("127.0.0.1:0")
	fn(elsewhere.ln.Addr().String())
	elsewhere.stop(d.t)
	d.Restart()
}

// helperClient is the helper's own: it shares no keep-alive connection
// with the test's clients, so reading state never disturbs theirs.
var helperClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}

// State is the daemon's whole state as a client sees it: the snapshot that
// opens GET /a2a/events. The daemon must run without tokens.
func (d *Daemon) State(t testing.TB) *mailbox.Snapshot {
	t.Helper()
	snap, _ := readSnapshot(t, d.helper, d.URL())
	return snap
}

// ReadSnapshot reads the event that opens GET /a2a/events at baseURL (a
// snapshot of the whole state) with the plain test reader (ssetest) and
// encoding/json, as any client would, and returns it with the raw data of
// the event. It
// serves daemons that daemontest did not start too (the real binary).
func ReadSnapshot(t testing.TB, baseURL string) (*mailbox.Snapshot, []byte) {
	t.Helper()
	return readSnapshot(t, helperClient, baseURL)
}

func readSnapshot(t testing.TB, hc *http.Client, baseURL string) (*mailbox.Snapshot, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", baseURL+"/a2a/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("GET /a2a/events: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET /a2a/events = %d %s", resp.StatusCode, b)
	}
	b, err := ssetest.NewReader(resp.Body).NextEvent()
	if err != nil {
		t.Fatalf("GET /a2a/events ended before its snapshot: %v", err)
	}
	data := []byte(b.Data)
	var ev mailbox.Event
	if err := json.Unmarshal(data, &ev); err != nil {
		t.Fatalf("the first event of GET /a2a/events does not decode with encoding/json: %v", err)
	}
	if ev.Type != mailbox.EventSnapshot || ev.Snapshot == nil {
		t.Fatalf("the first event of GET /a2a/events is %q, want a snapshot", ev.Type)
	}
	return ev.Snapshot, data
}

// Metric is the value of one sample of GET /metrics, named as it is
// written there (with its labels, if any). The daemon must run without
// tokens.
func (d *Daemon) Metric(t testing.TB, name string) float64 {
	t.Helper()
	resp, err := d.helper.Get(d.URL() + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics = %d %s (%v)", resp.StatusCode, b, err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("metric %s: %v", name, err)
			}
			return f
		}
	}
	t.Fatalf("GET /metrics has no sample %s:\n%s", name, b)
	return 0
}

// listener remembers the connections it accepted until they close, so
// they can be dropped.
type listener struct {
	net.Listener
	mu    sync.Mutex
	conns map[*conn]struct{}
}

func (l *listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc := &conn{Conn: c, l: l}
	l.mu.Lock()
	l.conns[tc] = struct{}{}
	l.mu.Unlock()
	return tc, nil
}

func (l *listener) dropAll() {
	l.mu.Lock()
	conns := make([]*conn, 0, len(l.conns))
	for c := range l.conns {
		conns = append(conns, c)
	}
	l.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

type conn struct {
	net.Conn
	l *listener
}

func (c *conn) Close() error {
	c.l.mu.Lock()
	delete(c.l.conns, c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}

// CloseWrite lets the server half-close as it would a bare TCP
// connection, so an answer written before closing reaches the client.
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
