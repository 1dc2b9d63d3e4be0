package daemontest

import (
	"crypto/tls"
	"net/http"
	"time"

	"github.com/mailroom/mailroom/internal/testpki"
)

// issueTLS makes the test's CA and the daemon's certificate, and writes
// their files in a directory of their own (not the data directory, which
// the daemon owns).
func (d *Daemon) issueTLS() {
	d.t.Helper()
	dir := d.t.TempDir()
	d.CA = d.opts.CA
	if d.CA == nil {
		d.CA = testpki.NewCA(d.t, "mailroom test CA")
	}
	d.Cert = d.CA.Issue(d.t, testpki.Options{CN: "mailroom daemon"})
	d.CertFile, d.KeyFile = d.Cert.WriteFiles(d.t, dir, "daemon")
	d.CAFile = d.CA.WriteFile(d.t, dir, "ca.crt")
	d.helper = &http.Client{Transport: d.Transport(), Timeout: 30 * time.Second}
	d.helper.Transport.(*http.Transport).DisableKeepAlives = true
}

// TLSConfig is a client's TLS trusting the daemon's CA (nil without
// Options.TLS).
func (d *Daemon) TLSConfig() *tls.Config {
	if d.CA == nil {
		return nil
	}
	return &tls.Config{RootCAs: d.CA.Pool(), MinVersion: tls.VersionTLS12}
}

// Transport is a transport to the daemon: trusting its CA with
// Options.TLS, HTTP/2 when the daemon offers it.
func (d *Daemon) Transport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = d.TLSConfig()
	t.ForceAttemptHTTP2 = true
	return t
}

// Client is an HTTP client of the daemon (see Transport), for the test's
// own requests.
func (d *Daemon) Client() *http.Client { return &http.Client{Transport: d.Transport()} }
