// Package tlsreload serves a certificate from the files an operator names
// and follows them as they are replaced in place, as cert-manager and
// certbot do: a handshake always gets the certificate last loaded whole,
// a reload that fails keeps it, and connections already open are never
// touched (only new handshakes see a new certificate).
//
// Changes are found by polling the files' identity, size and modification
// time: a file watcher would be a dependency, and a rename over the file
// (the way both tools rotate) defeats the simple ones.
package tlsreload

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mailroom/mailroom/internal/metrics"
)

// DefaultInterval is how often Watch looks at the files: a rotation is
// picked up within seconds, and two stats every few seconds cost nothing.
const DefaultInterval = 5 * time.Second

// Files name the certificate chain and its key, and what messages call
// each (the configuration keys, so an operator reads the key to fix).
type Files struct {
	Cert, Key         string
	CertName, KeyName string
	// ClientCA, when set, is a PEM bundle of the CAs whose client
	// certificates the server asks for (clientca.go), reloaded with the
	// rest; ClientAuth says how it asks.
	ClientCA     string
	ClientCAName string
	ClientAuth   tls.ClientAuthType
}

func (f Files) names() (cert, key string) {
	cert, key = f.CertName, f.KeyName
	if cert == "" {
		cert = "certificate file"
	}
	if key == "" {
		key = "key file"
	}
	return cert, key
}

// Reloader holds the served certificate and replaces it when its files
// change or Reload is called.
type Reloader struct {
	files Files
	log   *slog.Logger
	cur   atomic.Pointer[tls.Certificate]
	// clientCAs is the pool of files.ClientCA last loaded whole, and
	// withCAs the server's TLS asking for certificates of it (nil
	// without a client CA file).
	clientCAs atomic.Pointer[x509.CertPool]
	withCAs   atomic.Pointer[tls.Config]

	// mu makes reloads one at a time (Watch's and a SIGHUP's), and guards
	// seen: the files as they were at the last look.
	mu   sync.Mutex
	seen [3]os.FileInfo
}

// New loads the files, or says which one is wrong and how. logger (nil:
// discarded) is told of every reload.
func New(files Files, logger *slog.Logger) (*Reloader, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	r := &Reloader{files: files, log: logger}
	r.seen = r.stat()
	cert, err := Load(files)
	if err != nil {
		return nil, err
	}
	pool, err := LoadClientCAs(files)
	if err != nil {
		return nil, err
	}
	r.store(cert, pool)
	return r, nil
}

// store serves cert, and pool's client CAs when there is a pool.
func (r *Reloader) store(cert *tls.Certificate, pool *x509.CertPool) {
	r.cur.Store(cert)
	if pool != nil {
		r.clientCAs.Store(pool)
		r.withCAs.Store(r.clientAuthConfig(pool))
	}
}

// Load reads and checks a certificate chain and its key. Its errors name
// the file's key and path and say what was expected.
func Load(files Files) (*tls.Certificate, error) {
	certName, keyName := files.names()
	certPEM, err := os.ReadFile(files.Cert)
	if err != nil {
		return nil, fmt.Errorf("%s: got %q: cannot read it (%v); expected a PEM file holding the server's certificate chain", certName, files.Cert, unwrapPath(err))
	}
	if err := checkChain(certPEM); err != nil {
		return nil, fmt.Errorf("%s: got %q: %v; expected a PEM file holding the server's certificate chain, its own certificate first", certName, files.Cert, err)
	}
	keyPEM, err := os.ReadFile(files.Key)
	if err != nil {
		return nil, fmt.Errorf("%s: got %q: cannot read it (%v); expected a PEM file holding the private key of %s", keyName, files.Key, unwrapPath(err), certName)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%s: got %q: %v; expected a PEM file holding the private key of the certificate in %s", keyName, files.Key, err, certName)
	}
	return &cert, nil
}

// unwrapPath drops the path from an *os.PathError: the message names it
// already, quoted.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// GetCertificate is tls.Config's: the certificate last loaded whole.
func (r *Reloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return r.cur.Load(), nil
}

// Leaf is the served certificate itself (the first of its chain).
func (r *Reloader) Leaf() *x509.Certificate { return r.cur.Load().Leaf }

// Reload loads the files again, whether or not they changed (SIGHUP). On
// success new handshakes get the new certificate and the log says which
// it is; on failure the served one stays and the log says why. The error
// is returned too.
func (r *Reloader) Reload() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = r.stat()
	return r.reloadLocked("reload asked")
}

// Watch reloads whenever either file changes, looking every interval
// (DefaultInterval when 0), until ctx ends.
func (r *Reloader) Watch(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = DefaultInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.reloadIfChanged()
		}
	}
}

func (r *Reloader) reloadIfChanged() {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.stat()
	if same(now[0], r.seen[0]) && same(now[1], r.seen[1]) && same(now[2], r.seen[2]) {
		return
	}
	// Taken as seen even if the reload fails: a half-written file is
	// tried again when it changes again, not logged every interval.
	r.seen = now
	r.reloadLocked("the certificate files changed")
}

func (r *Reloader) reloadLocked(why string) error {
	cert, err := Load(r.files)
	var pool *x509.CertPool
	if err == nil {
		// Both or neither: a new certificate with the old CAs (or the
		// reverse) is a pair nobody wrote.
		pool, err = LoadClientCAs(r.files)
	}
	if err != nil {
		old := r.cur.Load().Leaf
		r.log.Error("TLS certificate not reloaded; still serving the one loaded before", "why", why, "err", err,
			"serial", old.SerialNumber.String(), "not_after", old.NotAfter)
		return err
	}
	r.store(cert, pool)
	r.log.Info("TLS certificate reloaded", append([]any{"why", why}, Describe(cert.Leaf)...)...)
	return nil
}

// Describe is what the log says of a served certificate: whom it names,
// its serial and when it expires.
func Describe(c *x509.Certificate) []any {
	var names []string
	names = append(names, c.DNSNames...)
	for _, ip := range c.IPAddresses {
		names = append(names, ip.String())
	}
	for _, u := range c.URIs {
		names = append(names, u.String())
	}
	return []any{"subject", c.Subject.String(), "sans", names, "serial", c.SerialNumber.String(), "not_after", c.NotAfter}
}

// stat is the files as they are now; nil for one that cannot be read.
func (r *Reloader) stat() [3]os.FileInfo {
	var out [3]os.FileInfo
	for i, p := range []string{r.files.Cert, r.files.Key, r.files.ClientCA} {
		if p == "" {
			continue
		}
		if fi, err := os.Stat(p); err == nil {
			out[i] = fi
		}
	}
	return out
}

// same reports whether a file looks unchanged: the same file (a rename
// over it makes another), its size and modification time.
func same(a, b os.FileInfo) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

// WriteMetrics writes the served certificate's expiry, so an alert can
// fire before it lapses when a rotation failed unnoticed.
func (r *Reloader) WriteMetrics(w *metrics.Writer) {
	w.Gauge("mailroom_tls_cert_expiry_seconds", "when the served TLS certificate expires (Unix seconds)",
		float64(r.Leaf().NotAfter.Unix()))
}
