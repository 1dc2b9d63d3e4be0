package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/internal/testpki"
)

// TestClientAuthIsCheckedAtStart: a client certificate mode needs the
// daemon's own TLS and a CA file that parses, and a CA file needs a mode;
// each refusal names the keys.
func TestClientAuthIsCheckedAtStart(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, "test CA")
	cert, key := ca.Issue(t, testpki.Options{}).WriteFiles(t, dir, "server")
	caFile := ca.WriteFile(t, dir, "clients.crt")
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not PEM\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name           string
		tls            bool
		mode, clientCA string
		want           []string // none: accepted
	}{
		{"none", true, "", "", nil},
		{"none spelt out", true, "none", "", nil},
		{"request", true, "request", caFile, nil},
		{"require", true, "require", caFile, nil},
		{"request without TLS", false, "request", caFile, []string{"tls_client_auth", `"request"`, "without tls_cert_file"}},
		{"require without CA file", true, "require", "", []string{"tls_client_auth", "without tls_client_ca_file"}},
		{"CA file without a mode", true, "", caFile, []string{"tls_client_ca_file", caFile, "tls_client_auth"}},
		{"CA file not PEM", true, "request", garbage, []string{`tls_client_ca_file: got "` + garbage + `"`, "no PEM CERTIFICATE block"}},
		{"CA file is a key", true, "request", key, []string{`tls_client_ca_file: got "` + key + `"`, `"PRIVATE KEY"`}},
		{"unknown mode", true, "optional", caFile, []string{"tls_client_auth", `"optional"`, "request"}},
	}
	for _, tt := range tests {
		c := base()
		if tt.tls {
			c.TLSCertFile, c.TLSKeyFile = cert, key
		}
		c.TLSClientAuth, c.TLSClientCAFile = tt.mode, tt.clientCA
		err := c.Validate()
		switch {
		case len(tt.want) == 0 && err != nil:
			t.Errorf("%s: Validate = %v, want nil", tt.name, err)
		case len(tt.want) > 0 && err == nil:
			t.Errorf("%s: Validate = nil, want a refusal", tt.name)
		case err != nil:
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s: Validate = %q, want it to say %q", tt.name, err, w)
				}
			}
		}
	}
}

func TestCertificateEntriesAndRevocationsFromTheFile(t *testing.T) {
	body := `tokens:
  - principal: billing
    spiffe_id: spiffe://example.org/billing
    caps: [a2a.read]
  - principal: worker
    dns: worker.prod.example
    caps: [a2a.recv]
  - principal: reporter
    cn: reporter
    caps: [a2a.read]
revoked_certificates:
  - serial: "3F:2A:00:01"
  - sha256: ` + strings.Repeat("AB:", 31) + `AB
`
	c, err := LoadOver(base(), writeFile(t, body))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate = %v", err)
	}
	want := []auth.Token{
		{Principal: "billing", SPIFFEID: "spiffe://example.org/billing", Caps: []string{"a2a.read"}},
		{Principal: "worker", DNS: "worker.prod.example", Caps: []string{"a2a.recv"}},
		{Principal: "reporter", CN: "reporter", Caps: []string{"a2a.read"}},
	}
	for i, w := range want {
		g := c.Tokens[i]
		if g.Principal != w.Principal || g.SPIFFEID != w.SPIFFEID || g.DNS != w.DNS || g.CN != w.CN || strings.Join(g.Caps, ",") != strings.Join(w.Caps, ",") {
			t.Errorf("tokens[%d] = %+v, want %+v", i, g, w)
		}
	}
	if len(c.RevokedCertificates) != 2 || c.RevokedCertificates[0].Serial != "3F:2A:00:01" {
		t.Errorf("revoked_certificates = %+v", c.RevokedCertificates)
	}
}

func TestCertificateEntryErrorsNameTheLine(t *testing.T) {
	tests := []struct {
		name, body string
		want       []string
	}{
		{"two names", "tokens:\n  - principal: p\n    dns: a.example\n    cn: a\n    caps: [a2a.read]\n", []string{"line 2", "tokens[0]: dns and cn are set", "exactly one of"}},
		{"not a spiffe id", "tokens:\n  - principal: p\n    spiffe_id: https://example.org/p\n    caps: [a2a.read]\n", []string{"line 2", "tokens[0].spiffe_id", "spiffe://"}},
		{"wildcard dns", "tokens:\n  - principal: p\n    dns: '*.example'\n    caps: [a2a.read]\n", []string{"tokens[0].dns", "no wildcards"}},
		{"same cn twice", "tokens:\n  - principal: p\n    cn: a\n    caps: [a2a.read]\n  - principal: q\n    cn: a\n    caps: [a2a.read]\n", []string{"line 5", "tokens[1].cn", "already mapped"}},
		{"no caps", "tokens:\n  - principal: p\n    cn: a\n", []string{"tokens[0].caps: empty"}},
		{"revoked not a list", "revoked_certificates: 3f\n", []string{"line 1", "revoked_certificates: expected a list"}},
		{"revoked both", "revoked_certificates:\n  - serial: 3f\n    sha256: ab\n", []string{"line 2", "revoked_certificates[0]: expected exactly one of serial and sha256"}},
		{"revoked bad serial", "revoked_certificates:\n  - serial: 3f\n  - serial: xyz\n", []string{"line 3", "revoked_certificates[1].serial", "in hex"}},
		{"revoked short fingerprint", "revoked_certificates:\n  - sha256: abcd\n", []string{"revoked_certificates[0].sha256", "64 hex digits"}},
		{"revoked unknown key", "revoked_certificates:\n  - serail: 3f\n", []string{"line 2", `unknown key "serail"`, "serial, sha256"}},
	}
	for _, tt := range tests {
		path := writeFile(t, tt.body)
		_, err := LoadOver(base(), path)
		if err == nil {
			t.Errorf("%s: LoadOver = nil error, want one", tt.name)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", tt.name, err, w)
			}
		}
	}
}
