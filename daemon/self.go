package daemon

import (
	"bytes"
	"crypto/tls"
	"errors"
	"net"
	"net/http"

	"github.com/mailroom/mailroom/internal/tlsreload"
)

// The MCP face is a client of the daemon's own API, at the address the
// daemon listens on. With TLS that client must trust the daemon, whose
// certificate may name a host other than the listen address and come from
// a CA the process does not hold: so it trusts exactly the certificate the
// daemon serves, the one certs holds at the handshake.

// selfTransport is a transport to the daemon itself that accepts only the
// certificate certs serves.
func selfTransport(certs *tlsreload.Reloader) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.ForceAttemptHTTP2 = true
	t.TLSClientConfig = &tls.Config{
		MinVersion: tls.VersionTLS12,
		// The chain is not verified against a pool: the one certificate
		// it may be is known, and compared whole below.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 || !bytes.Equal(cs.PeerCertificates[0].Raw, certs.Leaf().Raw) {
				return errors.New("the daemon's own address served a certificate other than the daemon's")
			}
			return nil
		},
	}
	return t
}

// loopbackOf is addr as a client on the same machine dials it: a listen
// address on every interface (0.0.0.0, ::) is reached on loopback.
func loopbackOf(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		if ip.To4() != nil {
			host = "127.0.0.1"
		} else {
			host = "::1"
		}
	}
	return net.JoinHostPort(host, port)
}
