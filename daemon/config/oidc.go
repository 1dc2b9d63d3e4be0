package config

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/mailroom/mailroom/daemon/auth"
)

// OIDC bearer tokens: oidc_issuer and the keys beside it. Which token is
// which principal, and with what capabilities, is said by the token's
// claims and by tokens entries with oidc_subject: see daemon/auth/oidc.go
// and docs/access-control.md.

// validIssuer takes an https URL (the issuer's discovery document and
// keys must not be fetched in clear: whoever could change them could
// sign any token) or nothing.
func validIssuer(s string) bool {
	if s == "" {
		return true
	}
	u, err := url.Parse(s)
	return err == nil && u.Scheme == "https" && u.Host != "" && u.RawQuery == "" && u.Fragment == ""
}

// OIDC is the issuer whose tokens the daemon accepts, nil without
// oidc_issuer. Its errors name the key that is wrong: the other oidc_*
// keys without an issuer, an issuer without an audience, an oidc_subject
// entry without an issuer, or a CA file that does not read.
func (c Config) OIDC() (*auth.OIDCConfig, error) {
	if c.OIDCIssuer == "" {
		for _, k := range []struct{ name, v string }{{"oidc_audience", c.OIDCAudience}, {"oidc_principal_claim", c.OIDCPrincipalClaim},
			{"oidc_caps_claim", c.OIDCCapsClaim}, {"oidc_ca_file", c.OIDCCAFile}, {"oidc_refresh_interval", durationText(c.OIDCRefreshInterval)}} {
			if k.v != "" {
				return nil, fmt.Errorf("%s: got %q without oidc_issuer; set oidc_issuer to the issuer whose tokens the daemon accepts, or remove %s", k.name, k.v, k.name)
			}
		}
		for i, t := range c.Tokens {
			if t.OIDCSubject != "" {
				return nil, fmt.Errorf("tokens[%d].oidc_subject: got %q without oidc_issuer; set oidc_issuer, or remove the entry", i, t.OIDCSubject)
			}
		}
		return nil, nil
	}
	if c.OIDCAudience == "" {
		return nil, fmt.Errorf("oidc_audience: empty with oidc_issuer %q; expected the audience the daemon's tokens are issued for (their aud claim), so that a token meant for another service is refused", c.OIDCIssuer)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	if c.OIDCCAFile != "" {
		pool, err := readCAs("oidc_ca_file", c.OIDCCAFile)
		if err != nil {
			return nil, err
		}
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		client.Transport = t
	}
	return &auth.OIDCConfig{Issuer: c.OIDCIssuer, Audience: c.OIDCAudience, PrincipalClaim: c.OIDCPrincipalClaim,
		CapsClaim: c.OIDCCapsClaim, Client: client, MinRefresh: c.OIDCRefreshInterval}, nil
}

// readCAs reads a PEM bundle of CA certificates named by key.
func readCAs(key, path string) (*x509.CertPool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: got %q: cannot read it (%v); expected a PEM file holding CA certificates", key, path, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("%s: got %q: it holds no PEM certificate that parses; expected a PEM file holding CA certificates", key, path)
	}
	return pool, nil
}

// durationText is d as a key's value, "" for 0 (unset).
func durationText(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}
