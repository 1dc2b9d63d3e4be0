package daemon_test

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/internal/testpki"
	"github.com/mailroom/mailroom/mailbox"
)

// syncBuffer is a log the daemon writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// mtlsClient is a client of d presenting leaf (none when nil).
func mtlsClient(d *daemontest.Daemon, leaf *testpki.Leaf) *http.Client {
	t := d.Transport()
	if leaf != nil {
		// Sent whatever CAs the daemon names, as curl and most clients
		// do (Go's would keep another CA's certificate to itself).
		t.TLSClientConfig.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &leaf.TLS, nil }
	}
	return &http.Client{Transport: t, Timeout: 30 * time.Second}
}

// mtlsGet is r's status and body; a failed request (a refused handshake)
// is its error.
func mtlsGet(c *http.Client, url, token string) (int, string, http.Header, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, "", nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header, nil
}

// mtlsPKI is a CA, the certificates its tests present, and another CA.
type mtlsPKI struct {
	ca, other                          *testpki.CA
	spiffe, dns, cn, unmapped, expired *testpki.Leaf
	bySerial, byFingerprint, foreign   *testpki.Leaf
}

func newMTLSPKI(t *testing.T) mtlsPKI {
	ca := testpki.NewCA(t, "mailroom test CA")
	other := testpki.NewCA(t, "another CA")
	client := func(o testpki.Options) *testpki.Leaf { o.Client = true; return ca.Issue(t, o) }
	return mtlsPKI{ca: ca, other: other,
		spiffe:        client(testpki.Options{CN: "ignored", URIs: []string{"spiffe://example.org/billing"}}),
		dns:           client(testpki.Options{CN: "ignored too", DNS: []string{"Worker.Prod.Example"}}),
		cn:            client(testpki.Options{CN: "reporter"}),
		unmapped:      client(testpki.Options{CN: "stranger", DNS: []string{"worker.prod.example.evil"}, URIs: []string{"spiffe://example.org/billing/extra"}}),
		expired:       client(testpki.Options{CN: "reporter", NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-24 * time.Hour)}),
		bySerial:      client(testpki.Options{CN: "reporter"}),
		byFingerprint: client(testpki.Options{CN: "reporter"}),
		foreign:       other.Issue(t, testpki.Options{CN: "reporter", Client: true}),
	}
}

// startMTLS starts a daemon asking for client certificates of p.ca in
// mode, with a certificate entry for each kind of name and a token.
func startMTLS(t *testing.T, p mtlsPKI, mode string, log io.Writer) *daemontest.Daemon {
	caFile := p.ca.WriteFile(t, t.TempDir(), "clients.crt")
	fp := sha256.Sum256(p.byFingerprint.Cert.Raw)
	return daemontest.Start(t, daemontest.Options{TLS: true, CA: p.ca,
		Logger: slog.New(slog.NewTextHandler(log, nil)),
		Tokens: []auth.Token{
			{Principal: "billing", SPIFFEID: "spiffe://example.org/billing", Caps: []string{auth.CapRead}},
			{Principal: "worker", DNS: "worker.prod.example", Caps: []string{auth.CapRecv}},
			{Principal: "reporter", CN: "reporter", Caps: []string{auth.CapRead, "a2a.send.*"}},
			{Principal: "operator", Token: "op-secret", Caps: []string{auth.CapRead}},
		},
		Config: func(c *config.Config) {
			c.TLSClientCAFile, c.TLSClientAuth = caFile, mode
			c.RevokedCertificates = []auth.RevokedCertificate{
				{Serial: fmt.Sprintf("%X", p.bySerial.Cert.SerialNumber)},
				{SHA256: strings.ToUpper(fmt.Sprintf("%x", fp[:]))},
			}
		}})
}

func whoami(t *testing.T, c *http.Client, d *daemontest.Daemon, token string) (int, mailbox.WhoAmI, string) {
	t.Helper()
	code, body, _, err := mtlsGet(c, d.URL()+"/a2a/whoami", token)
	if err != nil {
		t.Fatalf("GET /a2a/whoami: %v", err)
	}
	var w mailbox.WhoAmI
	if code == http.StatusOK {
		if err := json.Unmarshal([]byte(body), &w); err != nil {
			t.Fatalf("whoami body %s: %v", body, err)
		}
	}
	return code, w, body
}

// A client certificate is its principal by its SPIFFE ID, a DNS SAN or
// its CN, each matched exactly, and may do what that entry's
// capabilities allow and no more.
func TestClientCertificatesMapToPrincipals(t *testing.T) {
	p := newMTLSPKI(t)
	d := startMTLS(t, p, "request", io.Discard)
	for _, tc := range []struct {
		name      string
		leaf      *testpki.Leaf
		principal string
		queue     int // GET /a2a/queue needs a2a.read
	}{
		{"spiffe id", p.spiffe, "billing", http.StatusOK},
		{"dns san, any case", p.dns, "worker", http.StatusForbidden},
		{"subject cn", p.cn, "reporter", http.StatusOK},
	} {
		c := mtlsClient(d, tc.leaf)
		code, w, body := whoami(t, c, d, "")
		if code != http.StatusOK || w.Principal != tc.principal {
			t.Errorf("%s: whoami = %d %s, want 200 as %s", tc.name, code, body, tc.principal)
		}
		code, body, _, err := mtlsGet(c, d.URL()+"/a2a/queue", "")
		if err != nil || code != tc.queue {
			t.Errorf("%s: GET /a2a/queue = %d %s %v, want %d", tc.name, code, body, err, tc.queue)
		}
		if tc.queue == http.StatusForbidden && !strings.Contains(body, auth.CapRead) {
			t.Errorf("%s: 403 body %s does not name %s", tc.name, body, auth.CapRead)
		}
	}
}

// Every certificate the daemon must not take is a 401 whose log line
// names the certificate and the reason, never a 5xx.
func TestClientCertificatesRefused(t *testing.T) {
	p := newMTLSPKI(t)
	var log syncBuffer
	d := startMTLS(t, p, "request", &log)
	for _, tc := range []struct {
		name   string
		leaf   *testpki.Leaf
		reason string
	}{
		{"unmapped (names that only contain a mapped one)", p.unmapped, "maps to no principal"},
		{"expired", p.expired, "expired"},
		{"another CA's", p.foreign, "unknown authority"},
		{"revoked by serial", p.bySerial, "revoked by its serial"},
		{"revoked by fingerprint", p.byFingerprint, "revoked by its SHA-256 fingerprint"},
	} {
		code, _, body := whoami(t, mtlsClient(d, tc.leaf), d, "")
		if code != http.StatusUnauthorized || !strings.Contains(body, tc.reason) {
			t.Errorf("%s: whoami = %d %s, want 401 saying %q", tc.name, code, body, tc.reason)
		}
		serial := fmt.Sprintf("%x", tc.leaf.Cert.SerialNumber)
		if !logHas(log.String(), "client certificate refused", tc.reason, serial) {
			t.Errorf("%s: no log line names serial %s and %q:\n%s", tc.name, serial, tc.reason, log.String())
		}
		// A token does not rescue a certificate that fails: it is an
		// attack or a client about to break.
		if code, _, body := whoami(t, mtlsClient(d, tc.leaf), d, "op-secret"); tc.leaf != p.unmapped && code != http.StatusUnauthorized {
			t.Errorf("%s with a token: whoami = %d %s, want 401", tc.name, code, body)
		}
	}
}

func logHas(log string, parts ...string) bool {
	for line := range strings.Lines(log) {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			return true
		}
	}
	return false
}

// With request, a client without a certificate still gets in by token;
// with one and a token, the token decides whom it is (request.go says why).
func TestClientCertificateRequestTakesTokens(t *testing.T) {
	p := newMTLSPKI(t)
	d := startMTLS(t, p, "request", io.Discard)
	code, w, body := whoami(t, mtlsClient(d, nil), d, "op-secret")
	if code != http.StatusOK || w.Principal != "operator" {
		t.Errorf("token only: whoami = %d %s, want 200 as operator", code, body)
	}
	code, _, hdr, err := mtlsGet(mtlsClient(d, nil), d.URL()+"/a2a/whoami", "")
	if err != nil || code != http.StatusUnauthorized || !strings.HasPrefix(hdr.Get("WWW-Authenticate"), "Bearer") {
		t.Errorf("nothing: whoami = %d %v (WWW-Authenticate %q), want 401 with a Bearer challenge", code, err, hdr.Get("WWW-Authenticate"))
	}
	code, w, body = whoami(t, mtlsClient(d, p.unmapped), d, "op-secret")
	if code != http.StatusOK || w.Principal != "operator" {
		t.Errorf("an unmapped certificate and a token: whoami = %d %s, want 200 as operator", code, body)
	}
	code, w, body = whoami(t, mtlsClient(d, p.spiffe), d, "op-secret")
	if code != http.StatusOK || w.Principal != "operator" {
		t.Errorf("a mapped certificate and a token: whoami = %d %s, want 200 as operator (the token's)", code, body)
	}
}

// With require, the handshake refuses a client without a certificate of
// the CA, before any HTTP; a good one is mapped as with request.
func TestClientCertificateRequire(t *testing.T) {
	p := newMTLSPKI(t)
	d := startMTLS(t, p, "require", io.Discard)
	for _, tc := range []struct {
		name string
		leaf *testpki.Leaf
	}{{"no certificate", nil}, {"another CA's", p.foreign}, {"expired", p.expired}} {
		if _, _, _, err := mtlsGet(mtlsClient(d, tc.leaf), d.URL()+"/a2a/whoami", "op-secret"); err == nil {
			t.Errorf("%s: the request was served, want the handshake refused", tc.name)
		}
	}
	code, w, body := whoami(t, mtlsClient(d, p.spiffe), d, "")
	if code != http.StatusOK || w.Principal != "billing" {
		t.Errorf("spiffe id: whoami = %d %s, want 200 as billing", code, body)
	}
	code, _, body = whoami(t, mtlsClient(d, p.bySerial), d, "")
	if code != http.StatusUnauthorized || !strings.Contains(body, "revoked") {
		t.Errorf("revoked: whoami = %d %s, want 401 revoked", code, body)
	}
}
