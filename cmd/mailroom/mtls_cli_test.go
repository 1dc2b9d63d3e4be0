package main

import (
	"strings"
	"testing"

	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/internal/testpki"
)

// TestCLIWithAClientCertificate: against a daemon that requires client
// certificates, the CLI with --cert and --key is the principal its
// certificate maps to, with no token; without them the handshake is
// refused and the CLI says so in one line.
func TestCLIWithAClientCertificate(t *testing.T) {
	t.Parallel()
	ca := testpki.NewCA(t, "mailroom test CA")
	dir := t.TempDir()
	caFile := ca.WriteFile(t, dir, "clients.crt")
	certFile, keyFile := ca.Issue(t, testpki.Options{URIs: []string{"spiffe://example.org/billing"}, Client: true}).WriteFiles(t, dir, "billing")
	d := daemontest.Start(t, daemontest.Options{TLS: true, CA: ca,
		Tokens: []auth.Token{{Principal: "billing", SPIFFEID: "spiffe://example.org/billing", Caps: []string{"a2a.send.*", auth.CapRead}}},
		Config: func(c *config.Config) { c.TLSClientCAFile, c.TLSClientAuth = caFile, "require" }})

	// A send from billing is taken only from billing (or an admin).
	mustCLI(t, d.URL(), "send", "--from", "billing", "--to", "worker", "--intent", "over mTLS", "--ca-file", d.CAFile, "--cert", certFile, "--key", keyFile)
	o := cli(t, d.URL(), "send", "--from", "someone-else", "--to", "worker", "--intent", "x", "--ca-file", d.CAFile, "--cert", certFile, "--key", keyFile)
	if o.code == exitOK || !strings.Contains(o.stderr, "billing") {
		t.Errorf("send from another sender with billing's certificate: exit %d, stderr %q; want a refusal naming billing", o.code, o.stderr)
	}
	o = cli(t, d.URL(), "status", "--ca-file", d.CAFile)
	if o.code != exitFailure || strings.Count(o.stderr, "\n") != 1 || !strings.Contains(o.stderr, "certificate") {
		t.Errorf("status without a client certificate: exit %d, stderr %q; want %d and one line about the certificate", o.code, o.stderr, exitFailure)
	}
}
