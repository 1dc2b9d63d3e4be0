package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/httpapi"
	"github.com/mailroom/mailroom/internal/sse/ssetest"
	"github.com/mailroom/mailroom/internal/testpki"
	"github.com/mailroom/mailroom/mailbox"
)

// procTLS is how an end-to-end suite's real daemons serve and how its
// clients reach them. The zero value is plain HTTP. newProcTLS serves TLS
// with a certificate for 127.0.0.1 from a CA of the test's own, written to
// files the binary is given as an operator gives them (tls_cert_file,
// tls_key_file), and the clients trust that CA alone, over HTTP/2 as the
// mailroom clients negotiate it.
type procTLS struct {
	ca                        *testpki.CA
	certFile, keyFile, caFile string
	shared                    *http.Transport // trusting ca: the suite's clients share it
}

func newProcTLS(t *testing.T) procTLS {
	t.Helper()
	dir := t.TempDir()
	ca := testpki.NewCA(t, "end-to-end test CA")
	cert, key := ca.Issue(t, testpki.Options{CN: "mailroom daemon"}).WriteFiles(t, dir, "daemon")
	h := procTLS{ca: ca, certFile: cert, keyFile: key, caFile: ca.WriteFile(t, dir, "ca.crt")}
	h.shared = h.secure(&http.Transport{})
	t.Cleanup(h.shared.CloseIdleConnections)
	return h
}

// flags are the daemon's flags that serve TLS (none over plain HTTP).
func (h procTLS) flags() []string {
	if h.ca == nil {
		return nil
	}
	return []string{"--tls-cert-file", h.certFile, "--tls-key-file", h.keyFile}
}

// pushFlags are the daemon's flags that trust the receivers h serves
// (none over plain HTTP): push_ca_file, the test's CA, as an operator
// trusts a private CA's receivers.
func (h procTLS) pushFlags() []string {
	if h.ca == nil {
		return nil
	}
	return []string{"--push-ca-file", h.caFile}
}

// serve starts a server of the test's own (a push receiver) on
// 127.0.0.1:0: over TLS with a certificate of the CA, plainly otherwise.
func (h procTLS) serve(t *testing.T, handler http.Handler) *httptest.Server {
	t.Helper()
	if h.ca == nil {
		return httptest.NewServer(handler)
	}
	srv := httptest.NewUnstartedServer(handler)
	// A kill -9 cuts handshakes under way: the fault, not a finding; a
	// handshake that fails for another reason shows in what the server
	// did not receive.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{h.ca.Issue(t, testpki.Options{CN: "push receiver"}).TLS}, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	return srv
}

// url is the base URL of the daemon listening on addr.
func (h procTLS) url(addr string) string {
	if h.ca == nil {
		return "http://" + addr
	}
	return "https://" + addr
}

// secure makes t trust the test's CA, HTTP/2 by ALPN; over plain HTTP it
// leaves t as it is. It returns t.
func (h procTLS) secure(t *http.Transport) *http.Transport {
	if h.ca != nil {
		t.TLSClientConfig = &tls.Config{RootCAs: h.ca.Pool(), MinVersion: tls.VersionTLS12}
		t.ForceAttemptHTTP2 = true
	}
	return t
}

// transport is the suite's transport to the daemons: Go's default over
// plain HTTP, one trusting the CA over TLS.
func (h procTLS) transport() http.RoundTripper {
	if h.ca == nil {
		return http.DefaultTransport
	}
	return h.shared
}

// clientOptions are what a mailroom client of the daemon needs beside
// its address: an HTTP client trusting the CA over TLS, nothing over
// plain HTTP (the client's own default).
func (h procTLS) clientOptions() []client.Option {
	if h.ca == nil {
		return nil
	}
	return []client.Option{client.WithHTTPClient(&http.Client{Transport: h.shared})}
}

// startProcTLS is startProc serving as hop says.
func startProcTLS(t *testing.T, dir string, hop procTLS, extra ...string) *proc {
	t.Helper()
	p := startProc(t, dir, append(hop.flags(), extra...)...)
	p.hop = hop
	return p
}

// url is p's base URL.
func (p *proc) url() string { return p.hop.url(p.addr) }

// client is a mailroom client of p.
func (p *proc) client(t *testing.T) *client.Client {
	t.Helper()
	c, err := client.New(p.url(), p.hop.clientOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// health is p's GET /healthz.
func (p *proc) health() (httpapi.HealthResponse, error) {
	return healthAt(&http.Client{Timeout: 2 * time.Second, Transport: p.hop.transport()}, p.url())
}

func healthAt(c *http.Client, base string) (httpapi.HealthResponse, error) {
	var h httpapi.HealthResponse
	resp, err := c.Get(base + "/healthz")
	if err != nil {
		return h, err
	}
	defer resp.Body.Close()
	return h, json.NewDecoder(resp.Body).Decode(&h)
}

// snapshot is the whole state p streams first on GET /a2a/events.
func (p *proc) snapshot(t *testing.T) *mailbox.Snapshot {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url()+"/a2a/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: p.hop.transport()}).Do(req)
	if err != nil {
		t.Fatalf("GET /a2a/events on %s: %v", p.url(), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /a2a/events on %s: %s", p.url(), resp.Status)
	}
	first, err := ssetest.NewReader(resp.Body).NextEvent()
	if err != nil {
		t.Fatalf("GET /a2a/events on %s ended before its snapshot: %v", p.url(), err)
	}
	var ev mailbox.Event
	if err := json.Unmarshal([]byte(first.Data), &ev); err != nil || ev.Type != mailbox.EventSnapshot || ev.Snapshot == nil {
		t.Fatalf("the first event of GET /a2a/events on %s: %v, type %q; want a snapshot", p.url(), err, ev.Type)
	}
	return ev.Snapshot
}
