package auth

import (
	"context"
	"crypto/x509"
	"net"
	"sync"
	"time"
)

// Under tls_client_auth: request the handshake does not verify a client
// certificate (so that a bad one is a 401 with a reason, not a handshake
// failure), and clientCert verifies it. A connection is kept alive across
// many requests (and HTTP/2 multiplexes them), and its certificate cannot
// change: verifying its chain again on every request would be a
// signature check or two per request on the daemon's request path. So
// an acceptance is kept with the connection, for as long as it holds:
// while the pool it was reached against is the one served, and until the
// first certificate of the chain it was verified through expires. A
// refusal is not kept: it is rare, and the next request checks again.

type connMemoKey struct{}

// connMemo is one connection's acceptance of its client certificate.
type connMemo struct {
	mu    sync.Mutex
	pool  *x509.CertPool // the pool it was accepted against; nil: not yet
	until time.Time      // when the accepted chain stops being valid
}

// ConnContext is http.Server's ConnContext for a daemon that asks for
// client certificates: it gives each connection the place its acceptance
// is kept in.
func ConnContext(ctx context.Context, _ net.Conn) context.Context {
	return context.WithValue(ctx, connMemoKey{}, &connMemo{})
}

// verifyOnce is nil when the connection of ctx had its certificate
// accepted against pool and that still holds at now, else check's
// verdict, kept when it accepts. Without a connection's memo (an
// in-process request), check decides every time.
func verifyOnce(ctx context.Context, pool *x509.CertPool, now time.Time, check func() (until time.Time, err error)) error {
	m, _ := ctx.Value(connMemoKey{}).(*connMemo)
	if m == nil {
		_, err := check()
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pool == pool && now.Before(m.until) {
		return nil
	}
	until, err := check()
	if err == nil {
		m.pool, m.until = pool, until
	}
	return err
}
