// Package certfile keeps a certificate and its key as current as the files
// they are read from. SPIRE rotates an X.509-SVID every hour or so, and
// cert-manager and certbot replace files in place, while a console, an MCP
// host or the daemon's outbound hops outlive them. Each handshake that asks
// for the certificate looks at the two files' size and modification time
// and reads them again when either changed; a rotation caught half-written,
// or one that does not parse, keeps the pair read before, and the next
// handshake tries again. The client package and the daemon's outbound
// hops share it; each reads the files its own way (read), so each words
// its mistakes in its own keys or flags.
package certfile

import (
	"crypto/tls"
	"os"
	"sync"
	"time"
)

// Pair is a certificate and its key, kept as current as their files.
type Pair struct {
	certFile, keyFile string
	read              func() (tls.Certificate, error)

	mu    sync.Mutex
	cert  tls.Certificate
	stamp [2]stamp // of certFile and keyFile when cert was read
}

// stamp is what says a file changed without reading it.
type stamp struct {
	size int64
	mod  time.Time
}

func stampOf(path string) stamp {
	fi, err := os.Stat(path)
	if err != nil {
		return stamp{}
	}
	return stamp{size: fi.Size(), mod: fi.ModTime()}
}

// New reads the pair once with read, so that its mistakes are the
// caller's to hear at start, not at the first handshake.
func New(certFile, keyFile string, read func() (tls.Certificate, error)) (*Pair, error) {
	// Stamped before the read: a change during it is seen next time.
	st := [2]stamp{stampOf(certFile), stampOf(keyFile)}
	cert, err := read()
	if err != nil {
		return nil, err
	}
	return &Pair{certFile: certFile, keyFile: keyFile, read: read, cert: cert, stamp: st}, nil
}

// Current is the pair to present, read again when its files changed.
func (p *Pair) Current() tls.Certificate {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := [2]stamp{stampOf(p.certFile), stampOf(p.keyFile)}
	if st == p.stamp {
		return p.cert
	}
	if cert, err := p.read(); err == nil {
		p.cert, p.stamp = cert, st
	}
	return p.cert
}

// GetClientCertificate is tls.Config's GetClientCertificate.
func (p *Pair) GetClientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	cert := p.Current()
	return &cert, nil
}
