package notify

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"strconv"
)

// tlsRemedy says, after Go's own words for a failed TLS handshake with a
// receiver, which of the daemon's keys an operator sets: "" when err is
// no TLS failure, or one without a key to name.
func tlsRemedy(err error) string {
	if ue, ok := errors.AsType[x509.UnknownAuthorityError](err); ok {
		issuer := "an authority"
		if ue.Cert != nil && ue.Cert.Issuer.CommonName != "" {
			issuer = strconv.Quote(ue.Cert.Issuer.CommonName)
		}
		return "the receiver's certificate is signed by " + issuer + ", which the daemon does not trust: add its CA to push_ca_file"
	}
	op, ok := errors.AsType[*net.OpError](err)
	if !ok || op.Op != "remote error" || op.Err == nil {
		return ""
	}
	switch op.Err.Error() {
	case tls.AlertError(116).Error(): // certificate required
		return "the receiver requires a client certificate and the daemon gave none: set push_cert_file and push_key_file"
	case tls.AlertError(48).Error(), tls.AlertError(42).Error(), tls.AlertError(45).Error(): // unknown ca, bad certificate, expired
		return "the receiver refused the daemon's client certificate (push_cert_file)"
	}
	return ""
}
