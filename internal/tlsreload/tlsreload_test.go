package tlsreload

import (
	"bytes"
	"crypto/tls"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/mailroom/mailroom/internal/testpki"
)

// logBuffer is a log a test reads back.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// replace writes body to a temporary file beside path and renames it
// over path, as cert-manager and certbot do.
func replace(t *testing.T, path string, body []byte) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, body, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func served(t *testing.T, r *Reloader) string {
	t.Helper()
	c, err := r.GetCertificate(&tls.ClientHelloInfo{})
	if err != nil {
		t.Fatal(err)
	}
	return c.Leaf.SerialNumber.String()
}

// TestReloadFollowsTheFilesAndKeepsTheLastGoodOne: a change of the files
// is picked up at the next look, a broken pair keeps the served
// certificate and logs why, and a later good one is taken.
func TestReloadFollowsTheFilesAndKeepsTheLastGoodOne(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, "test CA")
	first := ca.Issue(t, testpki.Options{CN: "first"})
	certFile, keyFile := first.WriteFiles(t, dir, "server")
	var logs logBuffer
	r, err := New(Files{Cert: certFile, Key: keyFile, CertName: "tls_cert_file", KeyName: "tls_key_file"}, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	r.reloadIfChanged()
	if got, want := served(t, r), first.Cert.SerialNumber.String(); got != want {
		t.Fatalf("served %s, want the first certificate %s", got, want)
	}
	if strings.Contains(logs.String(), "reloaded") {
		t.Errorf("a look at unchanged files reloaded:\n%s", logs.String())
	}

	second := ca.Issue(t, testpki.Options{CN: "second", DNS: []string{"mailroom.example"}})
	replace(t, keyFile, second.KeyPEM)
	replace(t, certFile, second.CertPEM)
	r.reloadIfChanged()
	if got, want := served(t, r), second.Cert.SerialNumber.String(); got != want {
		t.Errorf("after a rotation served %s, want the second certificate %s", got, want)
	}
	if l := logs.String(); !strings.Contains(l, "TLS certificate reloaded") || !strings.Contains(l, "CN=second") || !strings.Contains(l, "mailroom.example") || !strings.Contains(l, "not_after=") {
		t.Errorf("the reload's log does not say the subject, SANs and expiry:\n%s", l)
	}

	// A key that is not the certificate's: the second stays served.
	third := ca.Issue(t, testpki.Options{CN: "third"})
	replace(t, certFile, third.CertPEM)
	r.reloadIfChanged()
	if got, want := served(t, r), second.Cert.SerialNumber.String(); got != want {
		t.Errorf("after a broken rotation served %s, want the second certificate kept %s", got, want)
	}
	if l := logs.String(); !strings.Contains(l, "level=ERROR") || !strings.Contains(l, "not reloaded") || !strings.Contains(l, "does not match") {
		t.Errorf("the failed reload is not logged at error level with its reason:\n%s", l)
	}
	// Reload (SIGHUP) says the same, and returns it.
	if err := r.Reload(); err == nil || !strings.Contains(err.Error(), "tls_key_file") {
		t.Errorf("Reload of a mismatched pair = %v, want an error naming tls_key_file", err)
	}
	// The key follows: the third is served.
	replace(t, keyFile, third.KeyPEM)
	r.reloadIfChanged()
	if got, want := served(t, r), third.Cert.SerialNumber.String(); got != want {
		t.Errorf("once the key followed served %s, want the third %s", got, want)
	}
}

// TestReloadOfAHalfWrittenFile: a file cut short is refused and the
// served certificate kept.
func TestReloadOfAHalfWrittenFile(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, "test CA")
	first := ca.Issue(t, testpki.Options{})
	certFile, keyFile := first.WriteFiles(t, dir, "server")
	r, err := New(Files{Cert: certFile, Key: keyFile}, nil)
	if err != nil {
		t.Fatal(err)
	}
	second := ca.Issue(t, testpki.Options{})
	if err := os.WriteFile(certFile, second.CertPEM[:len(second.CertPEM)/3], 0o600); err != nil {
		t.Fatal(err)
	}
	if err := r.Reload(); err == nil {
		t.Error("Reload of a half-written certificate = nil, want an error")
	}
	if got, want := served(t, r), first.Cert.SerialNumber.String(); got != want {
		t.Errorf("served %s, want the first kept %s", got, want)
	}
}

func TestServerConfigOffersOnlyAEADAtTLS12(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := testpki.NewCA(t, "test CA").Issue(t, testpki.Options{}).WriteFiles(t, dir, "s")
	r, err := New(Files{Cert: certFile, Key: keyFile}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := r.ServerConfig()
	if cfg.MinVersion != tls.VersionTLS12 {
		t.Errorf("MinVersion %x, want TLS 1.2", cfg.MinVersion)
	}
	for _, id := range cfg.CipherSuites {
		name := tls.CipherSuiteName(id)
		if !strings.HasPrefix(name, "TLS_ECDHE_") || !(strings.Contains(name, "_GCM_") || strings.Contains(name, "CHACHA20_POLY1305")) {
			t.Errorf("suite %s is not ECDHE with an AEAD cipher", name)
		}
	}
	if strings.Join(cfg.NextProtos, ",") != "h2,http/1.1" {
		t.Errorf("NextProtos %v, want h2 and http/1.1", cfg.NextProtos)
	}
}
