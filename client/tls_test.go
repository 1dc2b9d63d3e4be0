package client_test

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/internal/testpki"
	"github.com/mailroom/mailroom/mailbox"
)

// front is a TLS server for the client's tests: it serves leaf (HTTP/2 by
// ALPN), changed by tune, and passes every request to a real plain daemon
// behind it, recording what each request came with.
type front struct {
	srv  *httptest.Server
	mu   sync.Mutex
	seen []seenRequest
}

type seenRequest struct {
	path       string
	protoMajor int
	clientCN   string
}

func startFront(t *testing.T, leaf *testpki.Leaf, daemonURL string, tune func(*tls.Config)) *front {
	t.Helper()
	f := &front{}
	target, err := url.Parse(daemonURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.FlushInterval = -1
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := seenRequest{path: r.URL.Path, protoMajor: r.ProtoMajor}
		if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
			s.clientCN = r.TLS.PeerCertificates[0].Subject.CommonName
		}
		f.mu.Lock()
		f.seen = append(f.seen, s)
		f.mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	f.srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are the point
	f.srv.EnableHTTP2 = true
	f.srv.TLS = &tls.Config{Certificates: []tls.Certificate{leaf.TLS}}
	if tune != nil {
		tune(f.srv.TLS)
	}
	f.srv.StartTLS()
	t.Cleanup(f.srv.Close)
	return f
}

// hostPort is the front's address without a scheme, as an operator gives
// the daemon's listen address.
func (f *front) hostPort() string { return strings.TrimPrefix(f.srv.URL, "https://") }

func (f *front) requests() []seenRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seenRequest(nil), f.seen...)
}

func mustTLSFiles(t *testing.T, ca, cert, key string) *tls.Config {
	t.Helper()
	cfg, err := client.TLSFiles(ca, cert, key)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestTLSCallAndStream: with the CA file, a host:port address is reached
// over https, a call and the event stream both over HTTP/2.
func TestTLSCallAndStream(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Options{})
	ca := testpki.NewCA(t, "mailroom test CA")
	f := startFront(t, ca.Issue(t, testpki.Options{}), d.URL(), nil)
	caFile := ca.WriteFile(t, t.TempDir(), "ca.pem")
	c := mustClient(t, f.hostPort(), client.WithTLS(mustTLSFiles(t, caFile, "", "")))
	if got, want := c.BaseURL(), f.srv.URL; got != want {
		t.Errorf("BaseURL() = %q, want %q: a host:port with TLS is https", got, want)
	}
	w, _ := subscribe(t, c, 0)
	if ev := w.next(t); ev.Type != mailbox.EventSnapshot {
		t.Fatalf("first event over TLS = %s, want a snapshot", ev.Type)
	}
	w.last = 0
	id := send(t, c, "a@x", "b@x", "over tls")
	ev := w.next(t)
	if ev.Type != mailbox.EventTaskSent || !ev.Concerns(id) {
		t.Fatalf("event over TLS = %s %s, want task_sent of %s", ev.Type, ev.TaskID, id)
	}
	for _, r := range f.requests() {
		if r.protoMajor != 2 {
			t.Errorf("%s came over HTTP/%d, want HTTP/2 (ALPN)", r.path, r.protoMajor)
		}
	}
	if !hasPath(f.requests(), "/a2a/events") || !hasPath(f.requests(), "/a2a/tasks") {
		t.Errorf("the front saw %v, want the send and the event stream", f.requests())
	}
}

func hasPath(rs []seenRequest, path string) bool {
	for _, r := range rs {
		if r.path == path {
			return true
		}
	}
	return false
}

// TestTLSClientCertificate: with --cert and --key the client presents its
// certificate to a daemon that requires one.
func TestTLSClientCertificate(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Options{})
	ca := testpki.NewCA(t, "mailroom test CA")
	f := startFront(t, ca.Issue(t, testpki.Options{}), d.URL(), func(c *tls.Config) {
		c.ClientAuth, c.ClientCAs = tls.RequireAndVerifyClientCert, ca.Pool()
	})
	dir := t.TempDir()
	certFile, keyFile := ca.Issue(t, testpki.Options{CN: "worker-1", URIs: []string{"spiffe://example.org/worker"}, Client: true}).WriteFiles(t, dir, "worker")
	c := mustClient(t, f.srv.URL, client.WithTLS(mustTLSFiles(t, ca.WriteFile(t, dir, "ca.pem"), certFile, keyFile)))
	if _, err := c.Status(t.Context()); err != nil {
		t.Fatalf("Status with a client certificate: %v", err)
	}
	rs := f.requests()
	if len(rs) == 0 || rs[0].clientCN != "worker-1" {
		t.Fatalf("the daemon saw %+v, want the client certificate of worker-1", rs)
	}
}

// TestTLSFailures: each mistake an operator makes gets its own one line,
// naming the daemon's address and what to do, and counts as unreachable.
func TestTLSFailures(t *testing.T) {
	t.Parallel()
	ca := testpki.NewCA(t, "mailroom test CA")
	other := testpki.NewCA(t, "another CA")
	dir := t.TempDir()
	caFile := ca.WriteFile(t, dir, "ca.pem")
	otherFile := other.WriteFile(t, dir, "other.pem")
	good := ca.Issue(t, testpki.Options{})
	plain := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(plain.Close)
	tests := []struct {
		name     string
		leaf     *testpki.Leaf // nil: the plain server
		tune     func(*tls.Config)
		addr     func(f *front) string
		caFile   string
		certFrom *testpki.CA // issues the client a certificate
		problem  client.TLSProblem
		want     []string
	}{
		{name: "no CA file", leaf: good, problem: client.UnknownAuthority,
			want: []string{`its certificate is signed by "mailroom test CA", an authority this client does not trust; give the CA with --ca-file or MAILROOM_CA_FILE`}},
		{name: "another CA's file", leaf: good, caFile: otherFile, problem: client.UnknownAuthority,
			want: []string{"an authority this client does not trust", "(the one given did not)"}},
		{name: "wrong name", leaf: ca.Issue(t, testpki.Options{DNS: []string{"mail.example"}}), caFile: caFile, problem: client.NameMismatch,
			want: []string{"its certificate is for mail.example, not 127.0.0.1; address the daemon by one of those names"}},
		{name: "expired", leaf: ca.Issue(t, testpki.Options{NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-24 * time.Hour)}),
			caFile: caFile, problem: client.CertExpired, want: []string{"its certificate expired on ", " UTC; renew the daemon's certificate"}},
		{name: "not yet valid", leaf: ca.Issue(t, testpki.Options{NotBefore: time.Now().Add(2 * time.Hour)}),
			caFile: caFile, problem: client.CertExpired, want: []string{"its certificate is not valid until ", "check the clocks"}},
		{name: "client certificate required", leaf: good, caFile: caFile, problem: client.ClientCertRequired,
			tune: func(c *tls.Config) { c.ClientAuth, c.ClientCAs = tls.RequireAndVerifyClientCert, ca.Pool() },
			want: []string{"it asks for a client certificate and this client gave none; give one with --cert and --key"}},
		{name: "client certificate required, TLS 1.2", leaf: good, caFile: caFile, problem: client.ClientCertRequired,
			tune: func(c *tls.Config) {
				c.ClientAuth, c.ClientCAs, c.MaxVersion = tls.RequireAndVerifyClientCert, ca.Pool(), tls.VersionTLS12
			},
			want: []string{"it asks for a client certificate and this client gave none"}},
		{name: "client certificate of another CA", leaf: good, caFile: caFile, problem: client.ClientCertRefused,
			tune:     func(c *tls.Config) { c.ClientAuth, c.ClientCAs = tls.RequireAndVerifyClientCert, ca.Pool() },
			certFrom: other, want: []string{`it accepts client certificates signed by "mailroom test CA", and this client's is signed by "another CA"; give a certificate from the CA in the daemon's tls_client_ca_file`}},
		{name: "http to a TLS port", leaf: good, problem: client.PlainToTLS,
			addr: func(f *front) string { return "http://" + f.hostPort() },
			want: []string{"it serves TLS and this client spoke plain HTTP; address it as https://127.0.0.1:"}},
		{name: "https to a plain port", caFile: caFile, problem: client.TLSToPlain,
			addr: func(*front) string { return strings.Replace(plain.URL, "http://", "https://", 1) },
			want: []string{"it answers plain HTTP, not TLS; address it as http://127.0.0.1:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var f *front
			addr := strings.TrimPrefix(plain.URL, "http://")
			if tt.leaf != nil {
				f = startFront(t, tt.leaf, "http://127.0.0.1:1", tt.tune)
				addr = f.srv.URL
			}
			if tt.addr != nil {
				addr = tt.addr(f)
			}
			var opts []client.Option
			var certFile, keyFile string
			if tt.certFrom != nil {
				certFile, keyFile = tt.certFrom.Issue(t, testpki.Options{CN: "stranger", Client: true}).WriteFiles(t, t.TempDir(), "client")
			}
			if tt.caFile != "" {
				opts = append(opts, client.WithTLS(mustTLSFiles(t, tt.caFile, certFile, keyFile)))
			}
			c := mustClient(t, addr, opts...)
			_, err := c.Status(t.Context())
			checkTLSFailure(t, err, addr, tt.problem, tt.want)
			// The event stream says the same, for the console's header.
			w, _ := subscribe(t, c, 0)
			if s := <-w.states; s.Live {
				t.Fatalf("the event stream went live: %+v", s)
			} else {
				checkTLSFailure(t, s.Err, addr, tt.problem, tt.want)
			}
		})
	}
}

func checkTLSFailure(t *testing.T, err error, addr string, problem client.TLSProblem, want []string) {
	t.Helper()
	te, ok := errors.AsType[*client.TLSError](err)
	if !ok {
		t.Fatalf("error %v (%T), want a *client.TLSError", err, err)
	}
	if te.Problem != problem {
		t.Errorf("problem %d, want %d (%v)", te.Problem, problem, err)
	}
	if !errors.Is(err, client.ErrUnreachable) {
		t.Errorf("errors.Is(%v, ErrUnreachable) = false, want true: the CLI exits as for a daemon it cannot reach", err)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "cannot reach mailroom daemon at "+addr+": ") || strings.Contains(msg, "\n") {
		t.Errorf("message %q, want one line naming %s", msg, addr)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("message %q, want it to say %q", msg, w)
		}
	}
}

// TestTLSFiles: each wrong file is refused naming the file, its path and
// what was expected.
func TestTLSFiles(t *testing.T) {
	t.Parallel()
	ca := testpki.NewCA(t, "mailroom test CA")
	dir := t.TempDir()
	caFile := ca.WriteFile(t, dir, "ca.pem")
	certFile, keyFile := ca.Issue(t, testpki.Options{CN: "worker-1", Client: true}).WriteFiles(t, dir, "worker")
	_, otherKey := ca.Issue(t, testpki.Options{CN: "worker-2", Client: true}).WriteFiles(t, dir, "worker2")
	expiredCert, expiredKey := ca.Issue(t, testpki.Options{CN: "old", Client: true, NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-24 * time.Hour)}).WriteFiles(t, dir, "old")
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.pem")
	empty := filepath.Join(dir, "empty.pem")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name          string
		ca, cert, key string
		file          client.TLSFile
		path          string
		want          string
	}{
		{"missing CA file", missing, "", "", client.FileCA, missing, "cannot read it: no such file or directory"},
		{"CA file holds a key", keyFile, "", "", client.FileCA, keyFile, "holds a PRIVATE KEY, not a certificate; expected the PEM certificate of the CA"},
		{"CA file empty", empty, "", "", client.FileCA, empty, "no PEM certificate in it; expected the PEM certificate of the CA"},
		{"CA file does not parse", garbage, "", "", client.FileCA, garbage, "certificate 1 does not parse"},
		{"certificate without key", caFile, certFile, "", client.FileKey, "", "missing; a client certificate needs its key"},
		{"key without certificate", caFile, "", keyFile, client.FileCert, "", "missing; a client key needs its certificate"},
		{"key of another certificate", caFile, certFile, otherKey, client.FileKey, otherKey, "private key does not match public key; expected the PEM private key of the certificate in"},
		{"expired client certificate", caFile, expiredCert, expiredKey, client.FileCert, expiredCert, `the certificate of "old" expired on `},
		{"key as certificate", caFile, keyFile, keyFile, client.FileCert, keyFile, "holds a PRIVATE KEY, not a certificate"},
	}
	for _, tt := range tests {
		_, err := client.TLSFiles(tt.ca, tt.cert, tt.key)
		fe, ok := errors.AsType[*client.TLSFileError](err)
		if !ok {
			t.Errorf("%s: TLSFiles = %v, want a *client.TLSFileError", tt.name, err)
			continue
		}
		if fe.File != tt.file || fe.Path != tt.path || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: TLSFiles = %v (file %v, path %q), want the %v %q saying %q", tt.name, err, fe.File, fe.Path, tt.file, tt.path, tt.want)
		}
	}
	if cfg, err := client.TLSFiles("", "", ""); cfg != nil || err != nil {
		t.Errorf("TLSFiles with no files = %v, %v; want no TLS options and no error", cfg, err)
	}
	cfg := mustTLSFiles(t, caFile, certFile, keyFile)
	if cfg.RootCAs == nil || cfg.GetClientCertificate == nil || cfg.MinVersion != tls.VersionTLS12 {
		t.Fatalf("TLSFiles = %+v, want the CA alone as roots, a client certificate, TLS 1.2 at least", cfg)
	}
	if cn := presented(t, cfg); cn != "worker-1" {
		t.Errorf("TLSFiles presents %q, want worker-1's certificate", cn)
	}
}

// TestTLSWithHTTPClient: a caller's http.Client must carry the TLS itself;
// one that does not is refused rather than silently trusting the system.
func TestTLSWithHTTPClient(t *testing.T) {
	t.Parallel()
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if _, err := client.New("127.0.0.1:7717", client.WithTLS(cfg), client.WithHTTPClient(&http.Client{})); err == nil || !strings.Contains(err.Error(), "TLSClientConfig") {
		t.Errorf("New with TLS and a plain http.Client = %v, want a refusal naming TLSClientConfig", err)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
	c, err := client.New("127.0.0.1:7717", client.WithTLS(cfg), client.WithHTTPClient(hc))
	if err != nil || c.BaseURL() != "https://127.0.0.1:7717" {
		t.Errorf("New with TLS and a TLS http.Client = %v, %v; want https://127.0.0.1:7717", c, err)
	}
	c, err = client.New("http://127.0.0.1:7717", client.WithTLS(cfg))
	if err != nil || c.BaseURL() != "http://127.0.0.1:7717" {
		t.Errorf("New(http://...) with TLS = %v, %v; want it plain as the address says", c, err)
	}
}

// presented is the common name of the client certificate cfg presents.
func presented(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	cert, err := cfg.GetClientCertificate(&tls.CertificateRequestInfo{})
	if err != nil || cert == nil || len(cert.Certificate) == 0 {
		t.Fatalf("GetClientCertificate = %v, %v; want a certificate", cert, err)
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return leaf.Subject.CommonName
}

// TestTLSClientCertificateRotates: a client certificate replaced in its
// files (as SPIRE or cert-manager rotate them) is presented at the next
// handshake; one caught half-written keeps the last good one.
func TestTLSClientCertificateRotates(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Options{})
	ca := testpki.NewCA(t, "mailroom test CA")
	f := startFront(t, ca.Issue(t, testpki.Options{}), d.URL(), func(c *tls.Config) {
		c.ClientAuth, c.ClientCAs = tls.RequireAndVerifyClientCert, ca.Pool()
	})
	dir := t.TempDir()
	certFile, keyFile := ca.Issue(t, testpki.Options{CN: "svid-1", Client: true}).WriteFiles(t, dir, "svid")
	cfg := mustTLSFiles(t, ca.WriteFile(t, dir, "ca.pem"), certFile, keyFile)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
	c := mustClient(t, f.srv.URL, client.WithTLS(cfg), client.WithHTTPClient(hc))
	status := func() string {
		t.Helper()
		hc.CloseIdleConnections() // the next call handshakes anew
		if _, err := c.Status(t.Context()); err != nil {
			t.Fatalf("Status: %v", err)
		}
		rs := f.requests()
		return rs[len(rs)-1].clientCN
	}
	if cn := status(); cn != "svid-1" {
		t.Fatalf("presented %q, want svid-1", cn)
	}
	// Written beside and renamed over, as a rotation does.
	next := ca.Issue(t, testpki.Options{CN: "svid-2", Client: true})
	tmpCert, tmpKey := next.WriteFiles(t, dir, "next")
	for _, mv := range [][2]string{{tmpKey, keyFile}, {tmpCert, certFile}} {
		if err := os.Rename(mv[0], mv[1]); err != nil {
			t.Fatal(err)
		}
	}
	if cn := status(); cn != "svid-2" {
		t.Fatalf("after the rotation presented %q, want svid-2", cn)
	}
	if err := os.WriteFile(certFile, next.CertPEM[:len(next.CertPEM)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	if cn := status(); cn != "svid-2" {
		t.Errorf("with a half-written certificate presented %q, want svid-2 still", cn)
	}
}
