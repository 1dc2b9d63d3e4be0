package tlsreload

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
)

// LoadClientCAs reads files.ClientCA, the CAs whose client certificates
// the server accepts; nil (and no error) when there is none. Its errors
// name the key and the path and say what was expected.
func LoadClientCAs(files Files) (*x509.CertPool, error) {
	if files.ClientCA == "" {
		return nil, nil
	}
	name := files.ClientCAName
	if name == "" {
		name = "client CA file"
	}
	data, err := os.ReadFile(files.ClientCA)
	if err != nil {
		return nil, fmt.Errorf("%s: got %q: cannot read it (%v); expected a PEM file holding the CA certificates client certificates are issued by", name, files.ClientCA, unwrapPath(err))
	}
	pool := x509.NewCertPool()
	n := 0
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("%s: got %q: it holds a PEM %q block; expected only CERTIFICATE blocks (the CAs client certificates are issued by)", name, files.ClientCA, b.Type)
		}
		n++
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: got %q: certificate %d does not parse (%v); expected PEM CA certificates", name, files.ClientCA, n, err)
		}
		pool.AddCert(c)
	}
	if n == 0 {
		return nil, fmt.Errorf("%s: got %q: it holds no PEM CERTIFICATE block; expected the CA certificates client certificates are issued by", name, files.ClientCA)
	}
	return pool, nil
}

// ClientCAs is the pool of client CAs last loaded whole (nil without a
// client CA file): what a certificate not verified at the handshake
// (tls_client_auth: request) is verified against.
func (r *Reloader) ClientCAs() *x509.CertPool { return r.clientCAs.Load() }

// clientAuthConfig is the server's TLS asking for client certificates of
// pool. With tls.RequestClientCert the handshake takes any certificate,
// and the authenticator verifies it, so that a bad one is a 401 with a
// reason; with tls.RequireAndVerifyClientCert the handshake refuses a
// client without a valid one before any HTTP is read.
func (r *Reloader) clientAuthConfig(pool *x509.CertPool) *tls.Config {
	c := r.baseConfig()
	c.ClientCAs = pool
	c.ClientAuth = r.files.ClientAuth
	return c
}
