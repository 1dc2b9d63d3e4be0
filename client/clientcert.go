package client

import (
	"crypto/tls"
	"os"
	"sync"
	"time"
)

// clientCert is a client certificate kept as current as its files: SPIRE
// rotates an X.509-SVID every hour or so, cert-manager and certbot
// replace files in place, and a console or `mailroom mcp` outlives them.
// Each handshake the daemon asks for a certificate in (a new connection:
// connections are kept alive, so rarely) looks at the files' size and
// modification time and reads them again when either changed. A rotation
// caught half-written, or one that does not parse, keeps the certificate
// read before; the next handshake tries again.
type clientCert struct {
	certFile, keyFile string

	mu    sync.Mutex
	cert  tls.Certificate
	stamp [2]fileStamp // of certFile, keyFile when cert was read
}

// fileStamp is what says a file changed without reading it.
type fileStamp struct {
	size int64
	mod  time.Time
}

func stampOf(path string) fileStamp {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{size: fi.Size(), mod: fi.ModTime()}
}

// newClientCert reads the files once: their mistakes are the caller's to
// hear at start (TLSFiles' errors), not at the first handshake.
func newClientCert(certFile, keyFile string) (*clientCert, error) {
	cc := &clientCert{certFile: certFile, keyFile: keyFile}
	stamp := [2]fileStamp{stampOf(certFile), stampOf(keyFile)}
	cert, err := readKeyPair(certFile, keyFile, time.Now())
	if err != nil {
		return nil, err
	}
	cc.cert, cc.stamp = cert, stamp
	return cc, nil
}

// current is the certificate to present, read again when its files
// changed.
func (cc *clientCert) current() tls.Certificate {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	stamp := [2]fileStamp{stampOf(cc.certFile), stampOf(cc.keyFile)}
	if stamp == cc.stamp {
		return cc.cert
	}
	if cert, err := readKeyPair(cc.certFile, cc.keyFile, time.Now()); err == nil {
		cc.cert, cc.stamp = cert, stamp
	}
	return cc.cert
}
