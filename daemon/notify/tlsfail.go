package notify

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"strconv"
)

// remedyKeys are the keys a refused handshake's remedy tells the
// operator to set: the push_* keys for a receiver not listed, the fields
// of its push_receivers entry for one that is.
type remedyKeys struct {
	ca, cert, key string
}

// pushKeys are the keys of every receiver without an entry of its own.
var pushKeys = remedyKeys{ca: "push_ca_file", cert: "push_cert_file", key: "push_key_file"}

// entryKeys are the fields of the push_receivers entry called entry.
func entryKeys(entry string) remedyKeys {
	return remedyKeys{ca: entry + ".ca_file", cert: entry + ".cert_file", key: entry + ".key_file"}
}

// tlsRemedy says, after Go's own words for a failed TLS handshake with a
// receiver, which of the daemon's keys an operator sets: "" when err is
// no TLS failure, or one without a key to name.
func tlsRemedy(err error, k remedyKeys) string {
	if ue, ok := errors.AsType[x509.UnknownAuthorityError](err); ok {
		issuer := "an authority"
		if ue.Cert != nil && ue.Cert.Issuer.CommonName != "" {
			issuer = strconv.Quote(ue.Cert.Issuer.CommonName)
		}
		return "the receiver's certificate is signed by " + issuer + ", which the daemon does not trust: add its CA to " + k.ca
	}
	op, ok := errors.AsType[*net.OpError](err)
	if !ok || op.Op != "remote error" || op.Err == nil {
		return ""
	}
	switch op.Err.Error() {
	case tls.AlertError(116).Error(): // certificate required
		return "the receiver requires a client certificate and the daemon gave none: set " + k.cert + " and " + k.key
	case tls.AlertError(48).Error(), tls.AlertError(42).Error(), tls.AlertError(45).Error(): // unknown ca, bad certificate, expired
		return "the receiver refused the daemon's client certificate (" + k.cert + ")"
	}
	return ""
}
