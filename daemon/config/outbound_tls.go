package config

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/mailroom/mailroom/internal/certfile"
)

// The TLS the daemon speaks when it calls out: to a remote agent (its
// remotes entry's ca_file, cert_file and key_file) and to push webhook
// receivers (push_ca_file, push_cert_file, push_key_file, or the fields
// of a push_receivers entry for the host it names). The files are
// read at start, and their errors name the key, the path and what was
// expected; a wrong file refuses the start rather than the first
// delivery, where the operator is not looking. A client certificate is
// read again when its files change.

// clientFiles are the files of one outbound TLS, named as their keys.
type clientFiles struct {
	ca, cert, key             string
	caName, certName, keyName string
	// addToSystem adds the CA file to the system's CAs instead of
	// replacing them: push_ca_file serves every receiver, some of them
	// public.
	addToSystem bool
}

// TLSConfig is the TLS this remote is called with, or nil when the entry
// sets none (the system's CAs, no client certificate). i is the entry's
// place in remotes, for messages.
func (r RemoteCredential) TLSConfig(i int) (*tls.Config, error) {
	name := fmt.Sprintf("remotes[%d]", i)
	if r.Agent != "" {
		name += " (" + r.Agent + ")"
	}
	return clientFiles{ca: r.CAFile, cert: r.CertFile, key: r.KeyFile,
		caName: name + ".ca_file", certName: name + ".cert_file", keyName: name + ".key_file"}.load()
}

// PushTLSConfig is the TLS push notifications are posted with, or nil
// when push_ca_file, push_cert_file and push_key_file are all empty.
func (c Config) PushTLSConfig() (*tls.Config, error) {
	return clientFiles{ca: c.PushCAFile, cert: c.PushCertFile, key: c.PushKeyFile,
		caName: "push_ca_file", certName: "push_cert_file", keyName: "push_key_file", addToSystem: true}.load()
}

func (f clientFiles) load() (*tls.Config, error) {
	if f.ca == "" && f.cert == "" && f.key == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if f.ca != "" {
		pool, err := f.pool()
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	switch {
	case f.cert != "" && f.key == "":
		return nil, fmt.Errorf("%s: empty, expected the PEM private key of %s %q (set both or neither)", f.keyName, f.certName, f.cert)
	case f.key != "" && f.cert == "":
		return nil, fmt.Errorf("%s: empty, expected the PEM client certificate of %s %q (set both or neither)", f.certName, f.keyName, f.key)
	case f.cert != "":
		// Read again at the next handshake once its files change
		// (SPIRE, cert-manager).
		pair, err := certfile.New(f.cert, f.key, f.pair)
		if err != nil {
			return nil, err
		}
		cfg.GetClientCertificate = pair.GetClientCertificate
	}
	return cfg, nil
}

// pool reads the CA file, refusing one without a certificate or with one
// that does not parse (x509.CertPool's AppendCertsFromPEM would skip it
// and say nothing).
func (f clientFiles) pool() (*x509.CertPool, error) {
	const want = "a PEM file holding the certificates of the CAs that sign the server's certificate"
	raw, err := os.ReadFile(f.ca)
	if err != nil {
		return nil, fmt.Errorf("%s: got %q: cannot read it (%v); expected %s", f.caName, f.ca, unwrapPathError(err), want)
	}
	certs, err := pemCerts(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: got %q: %v; expected %s", f.caName, f.ca, err, want)
	}
	pool := x509.NewCertPool()
	if f.addToSystem {
		if sys, err := x509.SystemCertPool(); err == nil {
			pool = sys
		}
	}
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

// pair reads the client certificate and its key. One that has expired or
// is not valid yet is refused: the server would refuse it with an alert
// that says less.
func (f clientFiles) pair() (tls.Certificate, error) {
	const want = "a PEM file holding the client certificate the daemon presents, then its chain"
	certPEM, err := os.ReadFile(f.cert)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%s: got %q: cannot read it (%v); expected %s", f.certName, f.cert, unwrapPathError(err), want)
	}
	certs, err := pemCerts(certPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%s: got %q: %v; expected %s", f.certName, f.cert, err, want)
	}
	now := time.Now()
	if leaf := certs[0]; now.After(leaf.NotAfter) || now.Before(leaf.NotBefore) {
		return tls.Certificate{}, fmt.Errorf("%s: got %q: the certificate is valid from %s to %s, not now; expected a current one",
			f.certName, f.cert, leaf.NotBefore.UTC().Format(time.RFC3339), leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	keyPEM, err := os.ReadFile(f.key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%s: got %q: cannot read it (%v); expected a PEM file holding the private key of %s", f.keyName, f.key, unwrapPathError(err), f.certName)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%s: got %q: %v; expected a PEM file holding the private key of the certificate in %s", f.keyName, f.key, err, f.certName)
	}
	return pair, nil
}

// pemCerts parses every CERTIFICATE block of a PEM file.
func pemCerts(raw []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	other := ""
	for rest := raw; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			other = b.Type
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d does not parse (%v)", len(certs)+1, err)
		}
		certs = append(certs, c)
	}
	switch {
	case len(certs) > 0:
		return certs, nil
	case other != "":
		return nil, fmt.Errorf("it holds a %s, not a certificate", other)
	}
	return nil, errors.New("no PEM certificate in it")
}

// unwrapPathError drops the path an *os.PathError repeats: the message
// names the file already, quoted.
func unwrapPathError(err error) error {
	if pe, ok := errors.AsType[*os.PathError](err); ok {
		return pe.Err
	}
	return err
}
