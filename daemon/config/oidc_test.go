package config

import (
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/internal/testpki"
)

// TestOIDCKeysAreCheckedAtStart: an issuer is an https URL with an
// audience; the other oidc_* keys and oidc_subject entries need an
// issuer; the CA file must read. Each refusal names its key.
func TestOIDCKeysAreCheckedAtStart(t *testing.T) {
	caFile := testpki.NewCA(t, "issuer CA").WriteFile(t, t.TempDir(), "ca.crt")
	subject := []auth.Token{{Principal: "billing", OIDCSubject: "sa:billing", Caps: []string{"a2a.read"}}}
	tests := []struct {
		name string
		set  func(*Config)
		want []string // none: accepted
	}{
		{"none", func(*Config) {}, nil},
		{"issuer and audience", func(c *Config) { c.OIDCIssuer, c.OIDCAudience = "https://issuer.example", "mailroom" }, nil},
		{"everything", func(c *Config) {
			c.OIDCIssuer, c.OIDCAudience, c.OIDCPrincipalClaim, c.OIDCCapsClaim, c.OIDCCAFile = "https://issuer.example/tenant", "mailroom", "email", "caps", caFile
			c.OIDCRefreshInterval, c.Tokens = time.Minute, subject
		}, nil},
		{"plain http issuer", func(c *Config) { c.OIDCIssuer, c.OIDCAudience = "http://issuer.example", "mailroom" }, []string{"oidc_issuer", "http://issuer.example", "https://"}},
		{"issuer without audience", func(c *Config) { c.OIDCIssuer = "https://issuer.example" }, []string{"oidc_audience: empty", "https://issuer.example"}},
		{"audience without issuer", func(c *Config) { c.OIDCAudience = "mailroom" }, []string{"oidc_audience", "without oidc_issuer"}},
		{"refresh without issuer", func(c *Config) { c.OIDCRefreshInterval = time.Minute }, []string{"oidc_refresh_interval", "without oidc_issuer"}},
		{"subject entry without issuer", func(c *Config) { c.Tokens = subject }, []string{"tokens[0].oidc_subject", "without oidc_issuer"}},
		{"CA file missing", func(c *Config) {
			c.OIDCIssuer, c.OIDCAudience, c.OIDCCAFile = "https://issuer.example", "mailroom", "/nonexistent/ca.crt"
		}, []string{`oidc_ca_file: got "/nonexistent/ca.crt"`, "cannot read it"}},
	}
	for _, tt := range tests {
		c := base()
		tt.set(&c)
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

// With an issuer and no tokens the daemon may listen beyond loopback
// (with TLS): its callers are authenticated by the issuer's tokens.
func TestOIDCAloneAuthenticatesBeyondLoopback(t *testing.T) {
	dir := t.TempDir()
	cert, key := testpki.NewCA(t, "test CA").Issue(t, testpki.Options{}).WriteFiles(t, dir, "server")
	c := base()
	c.Addr, c.TLSCertFile, c.TLSKeyFile = "0.0.0.0:7717", cert, key
	c.OIDCIssuer, c.OIDCAudience = "https://issuer.example", "mailroom"
	if err := c.Validate(); err != nil {
		t.Errorf("Validate = %v, want nil", err)
	}
}

func TestOIDCSubjectEntryFromTheFile(t *testing.T) {
	body := "oidc_issuer: https://issuer.example\noidc_audience: mailroom\ntokens:\n  - principal: billing\n    oidc_subject: system:serviceaccount:prod:billing\n    caps: [a2a.read]\n  - principal: other\n    oidc_subject: system:serviceaccount:prod:billing\n    caps: [a2a.read]\n"
	_, err := LoadOver(base(), writeFile(t, body))
	if err == nil || !strings.Contains(err.Error(), "line 7") || !strings.Contains(err.Error(), "tokens[1].oidc_subject") || !strings.Contains(err.Error(), "already mapped") {
		t.Errorf("LoadOver = %v, want the second entry refused on its line", err)
	}
	c, err := LoadOver(base(), writeFile(t, strings.SplitAfter(body, "[a2a.read]\n")[0]))
	if err != nil || len(c.Tokens) != 1 || c.Tokens[0].OIDCSubject != "system:serviceaccount:prod:billing" {
		t.Fatalf("LoadOver = %+v, %v", c.Tokens, err)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate = %v", err)
	}
}
