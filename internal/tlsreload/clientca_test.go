package tlsreload

import (
	"crypto/tls"
	"io"
	"log/slog"
	"testing"

	"github.com/mailroom/mailroom/internal/testpki"
)

// handshake dials a server of r on loopback presenting leaf (none when
// nil) and reports whether the handshake succeeded on both sides.
func handshake(t *testing.T, r *Reloader, ca *testpki.CA, leaf *testpki.Leaf) error {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", r.ServerConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	served := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			served <- err
			return
		}
		defer c.Close()
		err = c.(*tls.Conn).Handshake()
		if err == nil {
			_, err = c.Write([]byte{1}) // the client reads it: the server took it
		}
		served <- err
	}()
	cfg := &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", MinVersion: tls.VersionTLS12}
	if leaf != nil {
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &leaf.TLS, nil }
	}
	c, err := tls.Dial("tcp", ln.Addr().String(), cfg)
	if err == nil {
		// TLS 1.3 ends the client's handshake before the server has
		// judged its certificate: reading is what tells.
		_, err = io.ReadFull(c, make([]byte, 1))
		c.Close()
	}
	if serr := <-served; err == nil {
		err = serr
	}
	return err
}

// TestClientCAsReloadWithTheCertificate: with require, the handshake
// takes only a certificate of the client CA file as last loaded whole; a
// new file is taken on reload, and one that does not parse keeps the CAs
// served before.
func TestClientCAsReloadWithTheCertificate(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, "server CA")
	first, second := testpki.NewCA(t, "first client CA"), testpki.NewCA(t, "second client CA")
	cert, key := ca.Issue(t, testpki.Options{}).WriteFiles(t, dir, "server")
	caFile := first.WriteFile(t, dir, "clients.crt")
	r, err := New(Files{Cert: cert, Key: key, ClientCA: caFile, ClientCAName: "tls_client_ca_file", ClientAuth: tls.RequireAndVerifyClientCert},
		slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ofFirst := first.Issue(t, testpki.Options{CN: "a", Client: true})
	ofSecond := second.Issue(t, testpki.Options{CN: "b", Client: true})
	if err := handshake(t, r, ca, ofFirst); err != nil {
		t.Errorf("first CA's client: %v, want a handshake", err)
	}
	for name, leaf := range map[string]*testpki.Leaf{"no certificate": nil, "second CA's client": ofSecond} {
		if err := handshake(t, r, ca, leaf); err == nil {
			t.Errorf("%s: handshake succeeded, want it refused", name)
		}
	}
	replace(t, caFile, second.PEM)
	if err := r.Reload(); err != nil {
		t.Fatal(err)
	}
	if err := handshake(t, r, ca, ofSecond); err != nil {
		t.Errorf("after reload, second CA's client: %v, want a handshake", err)
	}
	if err := handshake(t, r, ca, ofFirst); err == nil {
		t.Errorf("after reload, first CA's client: handshake succeeded, want it refused")
	}
	replace(t, caFile, []byte("not PEM\n"))
	if err := r.Reload(); err == nil {
		t.Errorf("Reload of a client CA file that does not parse = nil, want its error")
	}
	if err := handshake(t, r, ca, ofSecond); err != nil {
		t.Errorf("after a failed reload, second CA's client: %v, want the CAs served before", err)
	}
	if r.ClientCAs() == nil {
		t.Errorf("ClientCAs = nil, want the pool served")
	}
}

// TestClientCAFileErrors name the key, the path and what was expected.
func TestClientCAFileErrors(t *testing.T) {
	if _, err := LoadClientCAs(Files{ClientCA: "/nonexistent/ca.pem", ClientCAName: "tls_client_ca_file"}); err == nil ||
		err.Error() != `tls_client_ca_file: got "/nonexistent/ca.pem": cannot read it (no such file or directory); expected a PEM file holding the CA certificates client certificates are issued by` {
		t.Errorf("LoadClientCAs(missing) = %v", err)
	}
	if p, err := LoadClientCAs(Files{}); p != nil || err != nil {
		t.Errorf("LoadClientCAs(none) = %v, %v, want nil, nil", p, err)
	}
}
