package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/internal/testpki"
)

// TestTLSFilesAreCheckedAtStart: tls_cert_file and tls_key_file are both
// set or neither, and each must read and parse; a refusal names the key,
// the path and what was wrong.
func TestTLSFilesAreCheckedAtStart(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, "test CA")
	cert, key := ca.Issue(t, testpki.Options{}).WriteFiles(t, dir, "server")
	otherCert, _ := ca.Issue(t, testpki.Options{}).WriteFiles(t, dir, "other")
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	garbage := write("garbage.pem", "not PEM at all\n")
	badDER := write("bad.crt", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
	missing := filepath.Join(dir, "missing.crt")
	tests := []struct {
		name      string
		cert, key string
		want      []string // in the error; none: accepted
	}{
		{"neither", "", "", nil},
		{"both", cert, key, nil},
		{"cert without key", cert, "", []string{"tls_key_file: empty", cert, "both or neither"}},
		{"key without cert", "", key, []string{"tls_cert_file: empty", key, "both or neither"}},
		{"missing cert", missing, key, []string{`tls_cert_file: got "` + missing + `"`, "cannot read it", "no such file"}},
		{"missing key", cert, missing, []string{`tls_key_file: got "` + missing + `"`, "cannot read it"}},
		{"cert not PEM", garbage, key, []string{`tls_cert_file: got "` + garbage + `"`, "no PEM CERTIFICATE block"}},
		{"key given as cert", key, cert, []string{`tls_cert_file: got "` + key + `"`, `PEM "PRIVATE KEY" block, not a CERTIFICATE`}},
		{"cert does not parse", badDER, key, []string{`tls_cert_file: got "` + badDER + `"`, "certificate 1 of the chain does not parse"}},
		{"key not PEM", cert, garbage, []string{`tls_key_file: got "` + garbage + `"`, "private key of the certificate in tls_cert_file"}},
		{"key of another cert", otherCert, key, []string{`tls_key_file: got "` + key + `"`, "does not match"}},
	}
	for _, tt := range tests {
		c := base()
		c.TLSCertFile, c.TLSKeyFile = tt.cert, tt.key
		err := c.Validate()
		if len(tt.want) == 0 {
			if err != nil {
				t.Errorf("%s: Validate = %v, want nil", tt.name, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: Validate = nil, want a refusal", tt.name)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: Validate = %q, want it to contain %q", tt.name, err, w)
			}
		}
	}
}

// TestBeyondLoopbackTokensNeedTLS: tokens beyond loopback are refused in
// clear text, naming addr and the keys that would allow it, unless the
// daemon serves TLS or a proxy in front of it ends TLS. Loopback is as
// before.
func TestBeyondLoopbackTokensNeedTLS(t *testing.T) {
	dir := t.TempDir()
	cert, key := testpki.NewCA(t, "test CA").Issue(t, testpki.Options{}).WriteFiles(t, dir, "server")
	token := []auth.Token{{Principal: "ops", SHA256: strings.Repeat("0f", 32), Caps: []string{"a2a.admin"}}}
	tests := []struct {
		addr  string
		tls   bool
		proxy bool
		ok    bool
	}{
		{"127.0.0.1:7717", false, false, true},
		{"[::1]:7717", false, false, true},
		{"localhost:7717", false, false, true},
		{"0.0.0.0:7717", false, false, false},
		{":7717", false, false, false},
		{"192.168.1.10:7717", false, false, false},
		{"0.0.0.0:7717", true, false, true},
		{"0.0.0.0:7717", false, true, true},
		{"192.168.1.10:7717", true, true, true},
	}
	for _, tt := range tests {
		c := base()
		c.Addr, c.Tokens, c.TLSTerminatedByProxy = tt.addr, token, tt.proxy
		if tt.tls {
			c.TLSCertFile, c.TLSKeyFile = cert, key
		}
		err := c.Validate()
		if tt.ok {
			if err != nil {
				t.Errorf("Validate(addr %q, tls %v, proxy %v) = %v, want nil", tt.addr, tt.tls, tt.proxy, err)
			}
			continue
		}
		want := `addr: got "` + tt.addr + `": refusing to listen beyond loopback without TLS, where the tokens would cross the network in clear; set tls_cert_file and tls_key_file, or tls_terminated_by_proxy: true if a proxy in front of the daemon ends TLS, or listen on 127.0.0.1`
		if err == nil || err.Error() != want {
			t.Errorf("Validate(addr %q, tokens, no TLS) = %v, want %q", tt.addr, err, want)
		}
	}
}

// TestHTTPS: the URLs the daemon writes say https when it serves TLS or a
// proxy ends TLS in front of it.
func TestHTTPS(t *testing.T) {
	c := base()
	if c.TLS() || c.HTTPS() {
		t.Errorf("the default config: TLS() %v, HTTPS() %v, want neither", c.TLS(), c.HTTPS())
	}
	c.TLSTerminatedByProxy = true
	if c.TLS() || !c.HTTPS() {
		t.Errorf("behind a proxy: TLS() %v, HTTPS() %v, want HTTPS only", c.TLS(), c.HTTPS())
	}
	c.TLSTerminatedByProxy, c.TLSCertFile = false, "/x.crt"
	if !c.TLS() || !c.HTTPS() {
		t.Errorf("with tls_cert_file: TLS() %v, HTTPS() %v, want both", c.TLS(), c.HTTPS())
	}
}

// TestClientTLSVariablesAreLetThrough: the CLI's TLS variables, set in a
// shell that also starts a daemon, are not taken for misspelt keys.
func TestClientTLSVariablesAreLetThrough(t *testing.T) {
	env := []string{"MAILROOM_CA_FILE=/ca.crt", "MAILROOM_CERT_FILE=/c.crt", "MAILROOM_KEY_FILE=/c.key", "MAILROOM_TLS_CERT_FILE=/s.crt", "MAILROOM_TLS_KEY_FILE=/s.key", "MAILROOM_TLS_TERMINATED_BY_PROXY=true"}
	if err := CheckEnv(env); err != nil {
		t.Errorf("CheckEnv(%v) = %v, want nil", env, err)
	}
	if err := CheckEnv([]string{"MAILROOM_TLS_CERT=/s.crt"}); err == nil || !strings.Contains(err.Error(), "did you mean MAILROOM_TLS_CERT_FILE?") {
		t.Errorf("CheckEnv(MAILROOM_TLS_CERT) = %v, want the closest key", err)
	}
}
