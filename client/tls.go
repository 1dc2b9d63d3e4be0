package client

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mailroom/mailroom/internal/certfile"
)

// WithTLS speaks TLS to the daemon with cfg: its RootCAs say which
// authorities may vouch for the daemon (nil: the system's), its
// Certificates or GetClientCertificate what this client presents when the
// daemon asks (mTLS). TLSFiles builds one from the CLI's files.
//
// An address without a scheme (host:port) is reached over https when TLS
// is given, over http otherwise; an address with a scheme is reached as it
// says, so http://... with TLS options stays plain (a MAILROOM_CA_FILE set
// for every command does not break the one addressing a local plain
// daemon).
//
// The client's own transport (no WithHTTPClient) is Go's default one with
// cfg, HTTP/2 by ALPN when the daemon offers it; event streams share it. With
// WithHTTPClient the http.Client is used as it is: its transport must carry
// cfg itself (New refuses an *http.Transport without a TLSClientConfig), and
// cfg here only picks the scheme and words failures.
func WithTLS(cfg *tls.Config) Option { return func(c *Client) { c.tls = cfg } }

// transportFor is the http.Client a client with TLS options uses: the
// caller's, checked, or Go's default transport carrying cfg.
func (c *Client) transportFor(hc *http.Client, cfg *tls.Config) (*http.Client, error) {
	if hc == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = c.noticeCertRequest(cfg)
		return &http.Client{Transport: t}, nil
	}
	if t, ok := hc.Transport.(*http.Transport); hc.Transport == nil || ok && t.TLSClientConfig == nil {
		return nil, errors.New("client: WithTLS and WithHTTPClient: the http.Client's transport has no TLSClientConfig; give it the same *tls.Config")
	}
	return hc, nil
}

// noticeCertRequest returns a copy of cfg that remembers the daemon asked
// for a client certificate, and whether it accepts this client's, to word a
// refusal that follows: over TLS 1.2 a daemon that requires one refuses
// none with a bare "handshake failure", and over TLS 1.3 with HTTP/2 the
// transport keeps the daemon's alert to itself. It picks among
// cfg.Certificates as crypto/tls would, and presents what
// cfg.GetClientCertificate returns as it is.
func (c *Client) noticeCertRequest(cfg *tls.Config) *tls.Config {
	get, certs := cfg.GetClientCertificate, cfg.Certificates
	cfg = cfg.Clone()
	cfg.GetClientCertificate = func(cri *tls.CertificateRequestInfo) (*tls.Certificate, error) {
		c.askedForCert.Store(true)
		if get != nil {
			cert, err := get(cri)
			if err == nil && cert != nil && len(cert.Certificate) > 0 && cri.SupportsCertificate(cert) != nil {
				c.noteNotAccepted(*cert, cri)
			}
			return cert, err
		}
		for i := range certs {
			if cri.SupportsCertificate(&certs[i]) == nil {
				return &certs[i], nil
			}
		}
		if len(certs) > 0 {
			c.noteNotAccepted(certs[0], cri)
		}
		return &tls.Certificate{}, nil
	}
	return cfg
}

func (c *Client) noteNotAccepted(cert tls.Certificate, cri *tls.CertificateRequestInfo) {
	why := notAccepted(cert, cri.AcceptableCAs)
	c.certNotAccepted.Store(&why)
}

// notAccepted says why the daemon will not take this client's certificate:
// it names the authorities it accepts, and the certificate's is another.
func notAccepted(cert tls.Certificate, acceptable [][]byte) string {
	var names []string
	for _, der := range acceptable {
		var rdn pkix.RDNSequence
		if _, err := asn1.Unmarshal(der, &rdn); err != nil {
			continue
		}
		var n pkix.Name
		n.FillFromRDNSequence(&rdn)
		names = append(names, strconv.Quote(n.CommonName))
	}
	issuer := "another authority"
	if leaf, err := x509.ParseCertificate(cert.Certificate[0]); err == nil {
		issuer = strconv.Quote(leaf.Issuer.CommonName)
	}
	if len(names) == 0 {
		return "it refuses this client's certificate, signed by " + issuer
	}
	return "it accepts client certificates signed by " + strings.Join(names, ", ") + ", and this client's is signed by " + issuer
}

// TLSFile names one of the files TLSFiles reads, for the caller to word
// (the CLI names its flags).
type TLSFile int

// The files of a client's TLS.
const (
	FileCA   TLSFile = iota // the CA bundle the daemon's certificate must chain to
	FileCert                // the client certificate (its chain), for mTLS
	FileKey                 // the client certificate's private key
)

func (f TLSFile) String() string {
	switch f {
	case FileCA:
		return "CA file"
	case FileCert:
		return "client certificate file"
	default:
		return "client key file"
	}
}

// TLSFileError says which file of a client's TLS was wrong, where it is
// and what was wrong with it.
type TLSFileError struct {
	File TLSFile
	Path string // "" when the file is missing altogether
	Err  error
}

func (e *TLSFileError) Error() string {
	if e.Path == "" {
		return e.File.String() + ": " + e.Err.Error()
	}
	return e.File.String() + " " + strconv.Quote(e.Path) + ": " + e.Err.Error()
}

func (e *TLSFileError) Unwrap() error { return e.Err }

// TLSFiles builds a client's TLS from PEM files: caFile, the authorities
// the daemon's certificate must chain to, and certFile and keyFile, the
// certificate (with its chain) and key this client presents when the
// daemon asks for one. Each may be "": no CA file trusts the system's
// authorities; certFile and keyFile go together, both or neither. All three
// "" returns nil and no error: no TLS options at all.
//
// The CA file replaces the system's authorities, it is not added to them,
// as curl's --cacert, etcdctl's --cacert and PostgreSQL's sslrootcert do:
// an operator who names the CA that signs the daemon's certificate means
// that CA alone may vouch for it, not any public CA that would issue a
// certificate for the same name.
//
// A client certificate that has expired, or is not valid yet, is refused
// here: the daemon would refuse it with a handshake alert that says less.
// Once its files change it is read again at the next handshake
// (clientcert.go), so a long-lived client follows its rotation.
func TLSFiles(caFile, certFile, keyFile string) (*tls.Config, error) {
	if caFile == "" && certFile == "" && keyFile == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pool, err := readCAFile(caFile)
		if err != nil {
			return nil, &TLSFileError{File: FileCA, Path: caFile, Err: err}
		}
		cfg.RootCAs = pool
	}
	switch {
	case certFile != "" && keyFile == "":
		return nil, &TLSFileError{File: FileKey, Err: errors.New("missing; a client certificate needs its key")}
	case keyFile != "" && certFile == "":
		return nil, &TLSFileError{File: FileCert, Err: errors.New("missing; a client key needs its certificate")}
	case certFile != "":
		// Read again at the next handshake once its files change: a
		// console or `mailroom mcp` outlives a rotation.
		pair, err := certfile.New(certFile, keyFile, func() (tls.Certificate, error) { return readKeyPair(certFile, keyFile, time.Now()) })
		if err != nil {
			return nil, err
		}
		cfg.GetClientCertificate = pair.GetClientCertificate
	}
	return cfg, nil
}

// readCAFile reads a bundle of PEM certificates, refusing a file without
// one or with one that does not parse (x509.CertPool's AppendCertsFromPEM
// would skip it and say nothing).
func readCAFile(path string) (*x509.CertPool, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read it: %w", unwrapPath(err))
	}
	certs, err := parseCerts(raw, "the PEM certificate of the CA that signed the daemon's certificate")
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

// parseCerts parses every CERTIFICATE block of a PEM file; expected says
// what the file should hold, for the error of one that holds none.
func parseCerts(raw []byte, expected string) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	var other string
	for rest := raw; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			other = b.Type
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d does not parse: %w", len(certs)+1, err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		if other != "" {
			return nil, fmt.Errorf("holds a %s, not a certificate; expected %s (-----BEGIN CERTIFICATE-----)", other, expected)
		}
		return nil, fmt.Errorf("no PEM certificate in it; expected %s (-----BEGIN CERTIFICATE-----)", expected)
	}
	return certs, nil
}

// readKeyPair reads a client certificate and its key, each file's
// mistakes named by that file.
func readKeyPair(certFile, keyFile string, now time.Time) (tls.Certificate, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return tls.Certificate{}, &TLSFileError{File: FileCert, Path: certFile, Err: fmt.Errorf("cannot read it: %w", unwrapPath(err))}
	}
	certs, err := parseCerts(certPEM, "the client's PEM certificate, then its chain")
	if err != nil {
		return tls.Certificate{}, &TLSFileError{File: FileCert, Path: certFile, Err: err}
	}
	leaf := certs[0]
	switch {
	case now.After(leaf.NotAfter):
		return tls.Certificate{}, &TLSFileError{File: FileCert, Path: certFile,
			Err: fmt.Errorf("the certificate of %s expired on %s; expected a current one", subjectOf(leaf), when(leaf.NotAfter))}
	case now.Before(leaf.NotBefore):
		return tls.Certificate{}, &TLSFileError{File: FileCert, Path: certFile,
			Err: fmt.Errorf("the certificate of %s is not valid until %s; expected a current one (check this machine's clock)", subjectOf(leaf), when(leaf.NotBefore))}
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return tls.Certificate{}, &TLSFileError{File: FileKey, Path: keyFile, Err: fmt.Errorf("cannot read it: %w", unwrapPath(err))}
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, &TLSFileError{File: FileKey, Path: keyFile,
			Err: fmt.Errorf("%v; expected the PEM private key of the certificate in %q", err, certFile)}
	}
	return pair, nil
}

// unwrapPath drops the path an *os.PathError repeats: the message names
// the file already.
func unwrapPath(err error) error {
	if pe, ok := errors.AsType[*os.PathError](err); ok {
		return pe.Err
	}
	return err
}

// when is a certificate's date as the messages print it.
func when(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") }

// subjectOf names a certificate by what an operator would recognize: its
// subject's common name, else its first name.
func subjectOf(c *x509.Certificate) string {
	switch {
	case c.Subject.CommonName != "":
		return strconv.Quote(c.Subject.CommonName)
	case len(c.URIs) > 0:
		return c.URIs[0].String()
	case len(c.DNSNames) > 0:
		return c.DNSNames[0]
	}
	return "serial " + c.SerialNumber.String()
}
