package client

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"
)

// TLSProblem is what went wrong between this client and the daemon's TLS.
type TLSProblem int

// The problems a TLSError tells apart, each a mistake an operator makes
// and fixes differently.
const (
	// UnknownAuthority: the daemon's certificate is signed by an
	// authority this client does not trust.
	UnknownAuthority TLSProblem = iota + 1
	// NameMismatch: the daemon's certificate is for other names than the
	// address's host.
	NameMismatch
	// CertExpired: a certificate of the daemon's chain expired, or is not
	// valid yet.
	CertExpired
	// CertRefused: the daemon's certificate was refused for another
	// reason (not a server certificate, a CA that may not sign, ...).
	CertRefused
	// ClientCertRequired: the daemon asks for a client certificate and
	// this client has none.
	ClientCertRequired
	// ClientCertRefused: the daemon refused this client's certificate.
	ClientCertRefused
	// PlainToTLS: this client spoke plain HTTP to a daemon that serves TLS.
	PlainToTLS
	// TLSToPlain: this client spoke TLS to a daemon that serves plain HTTP.
	TLSToPlain
	// NoCommonTLS: the two sides share no TLS version or suite.
	NoCommonTLS
)

// TLSError says why TLS with the daemon failed: Detail what failed, in an
// operator's words ("its certificate is for a.example, not b.example"),
// Remedy what to do about it, worded for mailroom's own commands (their
// flags and MAILROOM_* variables). It comes wrapped in the
// *UnreachableError that names the daemon's address, so
// errors.Is(err, ErrUnreachable) holds and the whole message is one line.
type TLSError struct {
	Problem        TLSProblem
	Detail, Remedy string
	Err            error
}

func (e *TLSError) Error() string {
	if e.Remedy == "" {
		return e.Detail
	}
	return e.Detail + "; " + e.Remedy
}

func (e *TLSError) Unwrap() error { return e.Err }

// The TLS alerts a daemon sends about this client's certificate (RFC 8446
// section 6; crypto/tls keeps its names unexported).
const (
	alertHandshakeFailure   tls.AlertError = 40
	alertBadCertificate     tls.AlertError = 42
	alertCertificateExpired tls.AlertError = 45
	alertUnknownCA          tls.AlertError = 48
	alertProtocolVersion    tls.AlertError = 70
	alertInsufficientSec    tls.AlertError = 71
	alertCertificateNeeded  tls.AlertError = 116
)

// tlsFailure words a transport error that is a TLS failure, or returns
// nil for any other.
func (c *Client) tlsFailure(err error) *TLSError {
	if te, ok := errors.AsType[*TLSError](err); ok {
		return te
	}
	if he, ok := errors.AsType[x509.HostnameError](err); ok {
		return &TLSError{Problem: NameMismatch, Err: err,
			Detail: "its certificate is for " + namesOf(he.Certificate) + ", not " + he.Host,
			Remedy: "address the daemon by one of those names, or give it a certificate for " + he.Host}
	}
	if ue, ok := errors.AsType[x509.UnknownAuthorityError](err); ok {
		return c.unknownAuthority(ue, err)
	}
	if ie, ok := errors.AsType[x509.CertificateInvalidError](err); ok {
		return certInvalid(ie, err)
	}
	if _, ok := errors.AsType[*tls.CertificateVerificationError](err); ok {
		return &TLSError{Problem: CertRefused, Err: err, Detail: "its certificate is refused: " + err.Error()}
	}
	if re, ok := errors.AsType[tls.RecordHeaderError](err); ok {
		return c.notTLS(re.RecordHeader[:], re.Msg, err)
	}
	if errors.Is(err, http.ErrSchemeMismatch) {
		return c.notTLS([]byte("HTTP/"), "", err)
	}
	if ae, ok := remoteAlert(err); ok {
		return c.alert(ae, err)
	}
	if c.askedForCert.Load() && closedAfterHandshake(err) {
		if !c.hasCert() || c.certNotAccepted.Load() != nil {
			return c.certRequired(err)
		}
		return &TLSError{Problem: ClientCertRefused, Err: err,
			Detail: "it closed the connection after asking for this client's certificate: it refused the certificate (" + err.Error() + ")",
			Remedy: "give a certificate from the CA in the daemon's tls_client_ca_file"}
	}
	return nil
}

// closedAfterHandshake reports an error of a connection the daemon closed
// right after the handshake: how a refusal of this client's certificate
// reaches an HTTP/2 request (its transport keeps the alert to itself) or
// one written before the alert arrived.
func closedAfterHandshake(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		strings.Contains(err.Error(), "http2: client conn could not be established")
}

func (c *Client) hasCert() bool {
	return c.tls != nil && (len(c.tls.Certificates) > 0 || c.tls.GetClientCertificate != nil)
}

func (c *Client) certRequired(err error) *TLSError {
	if why := c.certNotAccepted.Load(); why != nil {
		return &TLSError{Problem: ClientCertRefused, Err: err, Detail: *why,
			Remedy: "give a certificate from the CA in the daemon's tls_client_ca_file"}
	}
	return &TLSError{Problem: ClientCertRequired, Err: err,
		Detail: "it asks for a client certificate and this client gave none",
		Remedy: "give one with --cert and --key (or MAILROOM_CERT_FILE and MAILROOM_KEY_FILE)"}
}

// remoteAlert is the alert the daemon ended the handshake with. crypto/tls
// returns it as a *net.OpError "remote error" around a type of its own
// (tls.AlertError only over QUIC), so it is read back by its text, which
// tls.AlertError spells the same way.
func remoteAlert(err error) (tls.AlertError, bool) {
	oe, ok := errors.AsType[*net.OpError](err)
	if !ok || oe.Op != "remote error" || oe.Err == nil {
		return 0, false
	}
	if ae, ok := errors.AsType[tls.AlertError](oe.Err); ok {
		return ae, true
	}
	text := oe.Err.Error()
	for n := range 256 {
		if tls.AlertError(n).Error() == text {
			return tls.AlertError(n), true
		}
	}
	return 0, false
}

func (c *Client) unknownAuthority(ue x509.UnknownAuthorityError, err error) *TLSError {
	detail := "its certificate is signed by an authority this client does not trust"
	if ue.Cert != nil && ue.Cert.Issuer.CommonName != "" {
		detail = "its certificate is signed by " + `"` + ue.Cert.Issuer.CommonName + `"` + ", an authority this client does not trust"
	}
	remedy := "give the CA with --ca-file or MAILROOM_CA_FILE"
	if c.tls != nil && c.tls.RootCAs != nil {
		remedy = "give the CA that signed it with --ca-file or MAILROOM_CA_FILE (the one given did not)"
	}
	return &TLSError{Problem: UnknownAuthority, Detail: detail, Remedy: remedy, Err: err}
}

// certInvalid words a certificate of the daemon's chain refused by its
// dates or its use.
func certInvalid(ie x509.CertificateInvalidError, err error) *TLSError {
	whose := "its certificate"
	if ie.Cert != nil && ie.Cert.IsCA {
		whose = "the certificate of its authority " + subjectOf(ie.Cert)
	}
	if ie.Reason != x509.Expired || ie.Cert == nil {
		return &TLSError{Problem: CertRefused, Err: err, Detail: whose + " is refused: " + ie.Error()}
	}
	if time.Now().Before(ie.Cert.NotBefore) {
		return &TLSError{Problem: CertExpired, Err: err,
			Detail: whose + " is not valid until " + when(ie.Cert.NotBefore),
			Remedy: "check the clocks of this machine and the daemon's"}
	}
	return &TLSError{Problem: CertExpired, Err: err,
		Detail: whose + " expired on " + when(ie.Cert.NotAfter),
		Remedy: "renew the daemon's certificate (it reloads it without a restart)"}
}

// notTLS words an answer that is not TLS: a plain HTTP daemon answers a
// TLS hello with an HTTP error, whose first bytes are "HTTP/" (Go's
// transport says so with http.ErrSchemeMismatch).
func (c *Client) notTLS(header []byte, msg string, err error) *TLSError {
	plain := "http://" + c.base.Host + c.base.Path
	if bytes.Equal(header, []byte("HTTP/")) {
		return &TLSError{Problem: TLSToPlain, Err: err,
			Detail: "it answers plain HTTP, not TLS",
			Remedy: "address it as " + plain + " without --ca-file, --cert and --key, or give the daemon tls_cert_file and tls_key_file"}
	}
	return &TLSError{Problem: TLSToPlain, Err: err, Detail: "it does not speak TLS (" + msg + ")"}
}

// alert words the daemon's refusal of the handshake: most often of this
// client's certificate, or of none.
func (c *Client) alert(ae tls.AlertError, err error) *TLSError {
	hasCert := c.hasCert()
	// Over TLS 1.2 a daemon that requires a certificate answers none with
	// a bare handshake failure; this client knows it was asked for one.
	noCert := !hasCert && (ae == alertBadCertificate || ae == alertHandshakeFailure && c.askedForCert.Load())
	switch {
	case ae == alertCertificateNeeded || noCert:
		return c.certRequired(err)
	case ae == alertCertificateExpired:
		return &TLSError{Problem: ClientCertRefused, Err: err,
			Detail: "it refused this client's certificate as expired", Remedy: "renew it"}
	case ae == alertUnknownCA:
		detail := "it does not trust the authority that signed this client's certificate"
		if why := c.certNotAccepted.Load(); why != nil {
			detail = *why // names the authorities it does trust
		}
		return &TLSError{Problem: ClientCertRefused, Err: err, Detail: detail,
			Remedy: "give a certificate from the CA in the daemon's tls_client_ca_file"}
	case ae == alertBadCertificate:
		return &TLSError{Problem: ClientCertRefused, Err: err, Detail: "it refused this client's certificate (" + ae.Error() + ")"}
	case ae == alertProtocolVersion || ae == alertHandshakeFailure || ae == alertInsufficientSec:
		return &TLSError{Problem: NoCommonTLS, Err: err,
			Detail: "it shares no TLS version or cipher suite with this client (" + ae.Error() + ")",
			Remedy: "both sides need TLS 1.2 or later"}
	}
	return nil
}

// plainToTLSAnswer is how Go's HTTP server (the daemon's) answers a plain
// HTTP request on its TLS port, with a 400.
var plainToTLSAnswer = []byte("Client sent an HTTP request to an HTTPS server.")

// plainToTLS is the TLSError of a 400 whose body says a plain request
// reached a TLS port, or nil.
func (c *Client) plainToTLS(resp *http.Response, raw []byte) *TLSError {
	if resp.StatusCode != http.StatusBadRequest || c.base.Scheme != "http" || !bytes.HasPrefix(raw, plainToTLSAnswer) {
		return nil
	}
	return &TLSError{Problem: PlainToTLS,
		Detail: "it serves TLS and this client spoke plain HTTP",
		Remedy: "address it as https://" + c.base.Host + c.base.Path + " (with --ca-file when a private CA signed its certificate)"}
}

// namesOf lists the names a certificate is for, as a name mismatch says
// them.
func namesOf(cert *x509.Certificate) string {
	if cert == nil {
		return "other names"
	}
	var names []string
	names = append(names, cert.DNSNames...)
	for _, ip := range cert.IPAddresses {
		names = append(names, net.IP.String(ip))
	}
	if len(names) == 0 && cert.Subject.CommonName != "" {
		names = append(names, cert.Subject.CommonName+" (a common name only, which Go no longer matches)")
	}
	if len(names) == 0 {
		return "no name"
	}
	return strings.Join(names, ", ")
}
