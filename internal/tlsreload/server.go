package tlsreload

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
)

// suites12 are the only suites offered at TLS 1.2: ECDHE key exchange
// (forward secrecy) with an AEAD cipher. Go's defaults still include
// ECDHE with CBC, which TLS scanners flag. TLS 1.3's suites are Go's and
// not configurable; all of them are AEAD.
var suites12 = []uint16{
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
}

// ServerConfig is the daemon's TLS: TLS 1.2 at least, AEAD suites only,
// HTTP/2 or HTTP/1.1 by ALPN, the certificate from r at every handshake.
// Go's servers never renegotiate.
func (r *Reloader) ServerConfig() *tls.Config {
	c := r.baseConfig()
	if r.files.ClientCA != "" {
		// The CAs a client certificate must chain to change with their
		// file, and a tls.Config's ClientCAs cannot: each handshake
		// takes the config made when they were last loaded.
		c.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) { return r.withCAs.Load(), nil }
	}
	return c
}

func (r *Reloader) baseConfig() *tls.Config {
	return &tls.Config{
		MinVersion:     tls.VersionTLS12,
		CipherSuites:   suites12,
		NextProtos:     []string{"h2", "http/1.1"},
		GetCertificate: r.GetCertificate,
	}
}

// checkChain checks that pemBytes is a chain of certificates that parse:
// tls.X509KeyPair would say only "failed to find any PEM data" of a file
// that holds a key, or nothing of a chain's later certificates.
func checkChain(pemBytes []byte) error {
	n := 0
	for rest := pemBytes; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			if n == 0 {
				return fmt.Errorf("it begins with a PEM %q block, not a CERTIFICATE", b.Type)
			}
			continue
		}
		n++
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			return fmt.Errorf("certificate %d of the chain does not parse (%v)", n, err)
		}
	}
	if n == 0 {
		return errors.New("it holds no PEM CERTIFICATE block")
	}
	return nil
}
