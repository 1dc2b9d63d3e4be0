package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/httpapi"
	"github.com/mailroom/mailroom/daemon/store/pgstore/pgtest"
	"github.com/mailroom/mailroom/internal/sse/ssetest"
	"github.com/mailroom/mailroom/internal/testpki"
	"github.com/mailroom/mailroom/mailbox"
)

// logWatch is a daemon's stderr that tells a waiting test of every write,
// so it waits for a log line without polling.
type logWatch struct {
	mu      sync.Mutex
	buf     strings.Builder
	changed chan struct{}
}

func newLogWatch() *logWatch { return &logWatch{changed: make(chan struct{})} }

func (w *logWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	close(w.changed)
	w.changed = make(chan struct{})
	return len(p), nil
}

func (w *logWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// waitFor waits until the log holds all of wants on one line written
// after offset from, and returns the offset past that line.
func (w *logWatch) waitFor(t *testing.T, from int, wants ...string) int {
	t.Helper()
	watchdog := time.NewTimer(30 * time.Second) // a watchdog, not synchronisation
	defer watchdog.Stop()
	for {
		w.mu.Lock()
		text, changed := w.buf.String(), w.changed
		w.mu.Unlock()
		at := from
		for line := range strings.Lines(text[from:]) {
			at += len(line)
			if containsAll(line, wants) {
				return at
			}
		}
		select {
		case <-changed:
		case <-watchdog.C:
			t.Fatalf("the daemon's log has no line with %q; its log:\n%s", wants, text)
		}
	}
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// handshakeSerial is the serial of the certificate a new connection to
// addr is served, verified against pool.
func handshakeSerial(t *testing.T, addr string, pool *tls.Config) string {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, pool)
	if err != nil {
		t.Fatalf("a new handshake with %s: %v", addr, err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

// replaceFile writes body beside path and renames it over path, as
// cert-manager and certbot do.
func replaceFile(t *testing.T, path string, body []byte) {
	t.Helper()
	if err := os.WriteFile(path+".new", body, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
}

// tlsProc is the real binary serving "mailroom daemon" with its log
// watched.
type tlsProc struct {
	cmd    *exec.Cmd
	addr   string
	logs   *logWatch
	exited chan error
}

// startTLSProc runs the daemon on dir at info level with extra flags and
// environment, and waits until it listens.
func startTLSProc(t *testing.T, dir string, environ []string, extra ...string) *tlsProc {
	t.Helper()
	cmd := exec.Command(binPath, append([]string{"daemon", "--addr", "127.0.0.1:0", "--data-dir", dir}, extra...)...)
	cmd.Env = append([]string{"HOME=" + dir, asMainEnv + "=1"}, environ...)
	w := &addrWatcher{addr: make(chan string, 1)}
	p := &tlsProc{cmd: cmd, logs: newLogWatch(), exited: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = w, p.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })
	select {
	case p.addr = <-w.addr:
	case err := <-p.exited:
		t.Fatalf("the daemon exited before listening (%v); its log:\n%s", err, p.logs)
	}
	return p
}

// TestDaemonReloadsItsCertificateOnSIGHUP runs the real binary with TLS:
// SIGHUP after a rotation serves the new certificate to new handshakes
// while an event stream opened before keeps receiving events; SIGHUP with
// a key that does not match keeps the served certificate and logs why.
func TestDaemonReloadsItsCertificateOnSIGHUP(t *testing.T) {
	t.Parallel()
	dir, certDir := t.TempDir(), t.TempDir()
	ca := testpki.NewCA(t, "test CA")
	first := ca.Issue(t, testpki.Options{CN: "first"})
	certFile, keyFile := first.WriteFiles(t, certDir, "daemon")
	p := startTLSProc(t, dir, nil, "--tls-cert-file", certFile, "--tls-key-file", keyFile)
	cmd, logs, exited, addr := p.cmd, p.logs, p.exited, p.addr
	seen := logs.waitFor(t, 0, "serving TLS", "CN=first", "not_after=")
	trust := &tls.Config{RootCAs: ca.Pool()}
	if got := handshakeSerial(t, addr, trust); got != first.Cert.SerialNumber.String() {
		t.Fatalf("served serial %s, want the first certificate's", got)
	}

	stream := &http.Client{Transport: &http.Transport{TLSClientConfig: trust.Clone(), ForceAttemptHTTP2: true}}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "https://"+addr+"/a2a/events", nil)
	resp, err := stream.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := ssetest.NewReader(resp.Body)
	if _, err := events.NextEvent(); err != nil {
		t.Fatalf("the stream's snapshot: %v", err)
	}

	second := ca.Issue(t, testpki.Options{CN: "second"})
	replaceFile(t, keyFile, second.KeyPEM)
	replaceFile(t, certFile, second.CertPEM)
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	seen = logs.waitFor(t, seen, "TLS certificate reloaded", `why="reload asked"`, "CN=second")
	if got := handshakeSerial(t, addr, trust); got != second.Cert.SerialNumber.String() {
		t.Errorf("after SIGHUP a new handshake got serial %s, want the second certificate's", got)
	}
	c, err := client.New("https://"+addr, client.WithHTTPClient(&http.Client{Transport: &http.Transport{TLSClientConfig: trust.Clone()}}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Send(ctx, mailbox.Task{Sender: "p@local", Recipient: "w@local", IntentText: "after the reload"}); err != nil {
		t.Fatalf("a send over TLS after the reload: %v", err)
	}
	ev, err := events.NextEvent()
	if err != nil || !strings.Contains(ev.Data, "after the reload") {
		t.Errorf("the stream opened before the reload: %v, %q; want the task sent after it", err, ev.Data)
	}

	// A key that does not match: the second stays served.
	third := ca.Issue(t, testpki.Options{CN: "third"})
	replaceFile(t, certFile, third.CertPEM)
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	logs.waitFor(t, seen, "level=ERROR", "TLS certificate not reloaded", "tls_key_file", "does not match")
	if got := handshakeSerial(t, addr, trust); got != second.Cert.SerialNumber.String() {
		t.Errorf("after a failed reload a new handshake got serial %s, want the second kept", got)
	}
	cancel()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-exited; err != nil {
		t.Errorf("the daemon after SIGTERM: %v; its log:\n%s", err, logs)
	}
}

// TestDaemonRefusesTokensInClearBeyondLoopback: tokens on a non-loopback
// address without TLS exit 2 naming the keys; with tls_terminated_by_proxy
// the daemon starts.
func TestDaemonRefusesTokensInClearBeyondLoopback(t *testing.T) {
	dir := t.TempDir()
	body := "addr: 0.0.0.0:0\ndata_dir: " + dir + "\ntokens:\n  - principal: ops\n    sha256: " + strings.Repeat("0f", 32) + "\n    caps: [a2a.admin]\n"
	file := filepath.Join(t.TempDir(), "mailroom.yaml")
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	o := cliEnv(t, nil, "daemon", "--config", file)
	if o.code != 2 {
		t.Errorf("daemon beyond loopback with tokens, no TLS: exit %d, want 2", o.code)
	}
	wantContains(t, "its stderr", o.stderr, `addr: got "0.0.0.0:0": refusing to listen beyond loopback without TLS`,
		"tls_cert_file", "tls_key_file", "tls_terminated_by_proxy: true")

	// Behind a proxy that ends TLS it starts (and, its context already
	// ended, stops at once).
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var stdout, stderr strings.Builder
	code := runEnv(ctx, &env{stdout: &stdout, stderr: &stderr, getenv: func(string) string { return "" }},
		[]string{"daemon", "--config", file, "--tls-terminated-by-proxy"})
	if code != 0 || !strings.Contains(stdout.String(), "mailroom daemon listening on") {
		t.Errorf("daemon with tls_terminated_by_proxy: exit %d, stdout %q, stderr %q; want it to start", code, stdout.String(), stderr.String())
	}
}

// TestDaemonRefusesBadCertificateFiles: each exits 2 with the key, the
// path and what was wrong.
func TestDaemonRefusesBadCertificateFiles(t *testing.T) {
	dir := t.TempDir()
	cert, key := testpki.NewCA(t, "test CA").Issue(t, testpki.Options{}).WriteFiles(t, dir, "daemon")
	missing := filepath.Join(dir, "missing.key")
	for _, tc := range []struct {
		args  []string
		wants []string
	}{
		{[]string{"--tls-cert-file", cert}, []string{"tls_key_file: empty", "both or neither"}},
		{[]string{"--tls-key-file", key}, []string{"tls_cert_file: empty", "both or neither"}},
		{[]string{"--tls-cert-file", cert, "--tls-key-file", missing}, []string{`tls_key_file: got "` + missing + `"`, "cannot read it"}},
		{[]string{"--tls-cert-file", key, "--tls-key-file", key}, []string{`tls_cert_file: got "` + key + `"`, "not a CERTIFICATE"}},
	} {
		o := cliEnv(t, nil, append([]string{"daemon", "--addr", "127.0.0.1:0", "--data-dir", t.TempDir()}, tc.args...)...)
		if o.code != 2 {
			t.Errorf("daemon %v: exit %d, want 2", tc.args, o.code)
		}
		wantContains(t, "daemon "+strings.Join(tc.args, " "), o.stderr, tc.wants...)
	}
}

// TestFollowerForwardsToTheLeaderOverHTTPS: two instances on one
// PostgreSQL schema, serving TLS with certificates of one CA that the
// system pool holds (SSL_CERT_FILE, as docs/security.md says): a write
// sent to the follower reaches the leader over HTTPS, verified.
func TestFollowerForwardsToTheLeaderOverHTTPS(t *testing.T) {
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url, t.Name())
	certDir := t.TempDir()
	ca := testpki.NewCA(t, "cluster CA")
	environ := []string{"SSL_CERT_FILE=" + ca.WriteFile(t, certDir, "ca.crt")}
	start := func(name string) *tlsProc {
		cert, key := ca.Issue(t, testpki.Options{CN: name}).WriteFiles(t, certDir, name)
		return startTLSProc(t, t.TempDir(), environ, "--tls-cert-file", cert, "--tls-key-file", key,
			"--store", "postgres", "--postgres-url", url, "--postgres-schema", schema, "--postgres-campaign-interval", "50ms")
	}
	a := start("a")
	a.logs.waitFor(t, 0, "leading the shared log")
	b := start("b")
	trust := &tls.Config{RootCAs: ca.Pool()}
	c, err := client.New("https://"+b.addr, client.WithHTTPClient(&http.Client{Transport: &http.Transport{TLSClientConfig: trust.Clone()}}))
	if err != nil {
		t.Fatal(err)
	}
	sent, err := c.Send(t.Context(), mailbox.Task{Sender: "p@local", Recipient: "w@local", IntentText: "through the follower"})
	if err != nil {
		t.Fatalf("a send to the follower: %v; the follower's log:\n%s", err, b.logs)
	}
	resp, err := (&http.Client{Transport: &http.Transport{TLSClientConfig: trust.Clone()}}).Get("https://" + b.addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h httpapi.HealthResponse
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil || h.Store == nil || h.Store.Role != "follower" || h.Store.LeaderURL != "https://"+a.addr {
		t.Errorf("the follower's health: %+v, %v; want it to follow https://%s", h.Store, err, a.addr)
	}
	leader, err := client.New("https://"+a.addr, client.WithHTTPClient(&http.Client{Transport: &http.Transport{TLSClientConfig: trust.Clone()}}))
	if err != nil {
		t.Fatal(err)
	}
	if rec, err := leader.Task(t.Context(), sent.TaskID); err != nil || rec.Task.IntentText != "through the follower" {
		t.Errorf("the leader's record of the task sent through the follower: %+v, %v", rec, err)
	}
}
