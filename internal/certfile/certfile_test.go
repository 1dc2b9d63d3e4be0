package certfile

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/testpki"
)

func readPair(certFile, keyFile string) func() (tls.Certificate, error) {
	return func() (tls.Certificate, error) { return tls.LoadX509KeyPair(certFile, keyFile) }
}

func serialOf(t *testing.T, c tls.Certificate) string {
	t.Helper()
	if c.Leaf != nil {
		return c.Leaf.SerialNumber.String()
	}
	t.Fatal("no leaf")
	return ""
}

// A pair follows its files: a rotation is presented at the next
// handshake, a rotation caught half-written keeps the pair read before,
// and a pair that cannot be read at start is refused then.
func TestPairFollowsItsFiles(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, "test CA")
	first := ca.Issue(t, testpki.Options{Client: true, CN: "worker"})
	certFile, keyFile := first.WriteFiles(t, dir, "client")
	p, err := New(certFile, keyFile, readPair(certFile, keyFile))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := p.GetClientCertificate(nil)
	if serialOf(t, *got) != first.Cert.SerialNumber.String() {
		t.Fatal("the pair presented is not the one on disk")
	}

	second := ca.Issue(t, testpki.Options{Client: true, CN: "worker"})
	second.WriteFiles(t, dir, "client")
	later := time.Now().Add(time.Second) // a modification time the stamp tells apart
	for _, f := range []string{certFile, keyFile} {
		if err := os.Chtimes(f, later, later); err != nil {
			t.Fatal(err)
		}
	}
	if s := serialOf(t, p.Current()); s != second.Cert.SerialNumber.String() {
		t.Errorf("after a rotation the pair presents serial %s, want the new %s", s, second.Cert.SerialNumber)
	}

	// Half-written: the certificate file cut short.
	if err := os.WriteFile(certFile, first.CertPEM[:40], 0o600); err != nil {
		t.Fatal(err)
	}
	if s := serialOf(t, p.Current()); s != second.Cert.SerialNumber.String() {
		t.Errorf("a half-written rotation replaced the pair (serial %s), want %s kept", s, second.Cert.SerialNumber)
	}

	if _, err := New(filepath.Join(dir, "missing.crt"), keyFile, readPair(filepath.Join(dir, "missing.crt"), keyFile)); err == nil {
		t.Error("a pair whose certificate file is missing was made")
	}
}
