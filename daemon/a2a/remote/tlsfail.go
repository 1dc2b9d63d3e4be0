package remote

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"strconv"
	"strings"
)

// tlsRemedy says, after Go's own words for a failed TLS handshake with a
// remote, what an operator changes: most often a key of the agent's
// remotes entry in the daemon's config file. "" when err is no TLS
// failure, or one without a remedy to name.
func tlsRemedy(err error) string {
	if ue, ok := errors.AsType[x509.UnknownAuthorityError](err); ok {
		issuer := "an authority"
		if ue.Cert != nil && ue.Cert.Issuer.CommonName != "" {
			issuer = strconv.Quote(ue.Cert.Issuer.CommonName)
		}
		return "the remote's certificate is signed by " + issuer + ", which the daemon does not trust: set ca_file in the agent's remotes entry to the CA that signs it"
	}
	if he, ok := errors.AsType[x509.HostnameError](err); ok {
		return "the remote's certificate is not for " + he.Host + ": register the agent at one of the names its certificate is for, or give the remote a certificate for " + he.Host
	}
	if ie, ok := errors.AsType[x509.CertificateInvalidError](err); ok && ie.Reason == x509.Expired {
		return "a certificate of the remote's chain has expired or is not valid yet: the remote renews it (or check this machine's clock)"
	}
	op, ok := errors.AsType[*net.OpError](err)
	if !ok || op.Op != "remote error" || op.Err == nil {
		return ""
	}
	switch alert := op.Err.Error(); {
	case alert == tls.AlertError(116).Error(): // certificate required
		return "the remote requires a client certificate and the daemon gave none: set cert_file and key_file in the agent's remotes entry"
	case alert == tls.AlertError(48).Error(), alert == tls.AlertError(42).Error(), alert == tls.AlertError(45).Error(): // unknown ca, bad certificate, expired
		return "the remote refused the daemon's client certificate (cert_file in the agent's remotes entry): it wants one from a CA it trusts, current"
	case strings.Contains(alert, "handshake failure"):
		return "the remote ended the handshake: it may require a client certificate (cert_file and key_file in the agent's remotes entry)"
	}
	return ""
}
