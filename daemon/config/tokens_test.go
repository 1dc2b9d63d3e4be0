package config

import (
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/mailbox"
)

// secret is the token every bad file below carries somewhere; no error may
// ever repeat it.
const secret = "mr_DO-NOT-PRINT-4c1d9e"

func TestTokensFileErrorsNameEntryAndNeverTheSecret(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []string
	}{
		{"not a list", "tokens: " + secret + "\n", []string{"line 1", "tokens: expected a list", "a single value"}},
		{"entry not a mapping", "tokens:\n  - " + secret + "\n", []string{"line 2", "tokens[0]: expected a mapping", "a single value"}},
		{"token and hash", "tokens:\n  - principal: p\n    token: " + secret + "\n    sha256: " + strings.Repeat("ab", 32) + "\n    caps: [a2a.read]\n",
			[]string{"line 2", "tokens[0]: both token and sha256"}},
		{"neither token nor hash", "tokens:\n  - principal: p\n    caps: [a2a.read]\n", []string{"tokens[0]: expected token or sha256"}},
		{"bad hash", "tokens:\n  - principal: p\n    sha256: " + secret + "\n    caps: [a2a.read]\n", []string{"tokens[0].sha256", "64 hex digits"}},
		{"no caps", "tokens:\n  - principal: p\n    token: " + secret + "\n", []string{"tokens[0].caps: empty"}},
		{"caps not a list", "tokens:\n  - principal: p\n    token: " + secret + "\n    caps: a2a.read\n", []string{"line 4", "tokens[0].caps: expected a list"}},
		{"unknown cap in second entry", "tokens:\n  - principal: p\n    token: mr_other\n    caps: [a2a.read]\n  - principal: q\n    token: " + secret + "\n    caps: [a2a.read, a2a.fly]\n",
			[]string{"line 5", "tokens[1].caps[1]", `unknown capability "a2a.fly"`}},
		{"bad principal", "tokens:\n  - principal: two words\n    token: " + secret + "\n    caps: [a2a.read]\n", []string{"tokens[0].principal"}},
		{"same token twice", "tokens:\n  - principal: p\n    token: " + secret + "\n    caps: [a2a.read]\n  - principal: q\n    token: " + secret + "\n    caps: [a2a.read]\n",
			[]string{"line 5", "tokens[1]: the same token is configured twice"}},
		{"misspelt field", "tokens:\n  - principal: p\n    tokn: " + secret + "\n    caps: [a2a.read]\n", []string{"line 3", `tokens[0]: unknown key "tokn"`, "principal, token, sha256, caps, revoked"}},
		{"token as a list", "tokens:\n  - principal: p\n    token: [" + secret + "]\n    caps: [a2a.read]\n", []string{"tokens[0].token: expected a single value, got a list"}},
		{"token twice in one entry", "tokens:\n  - principal: p\n    token: " + secret + "\n    token: " + secret + "\n    caps: [a2a.read]\n", []string{"line 4", "tokens[0].token: set twice"}},
		{"revoked not a bool", "tokens:\n  - principal: p\n    token: " + secret + "\n    caps: [a2a.read]\n    revoked: " + secret + "\n", []string{"line 5", "tokens[0].revoked: expected true or false"}},
	}
	for _, tt := range tests {
		path := writeFile(t, tt.body)
		_, err := LoadOver(base(), path)
		if err == nil {
			t.Errorf("%s: LoadOver = nil error, want one", tt.name)
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("%s: the error repeats the token: %q", tt.name, err)
		}
		for _, w := range append(tt.want, path) {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: LoadOver error %q, want it to contain %q", tt.name, err, w)
			}
		}
	}
}

func TestTokensValidateNeverShowsTheSecret(t *testing.T) {
	c := base()
	c.Addr = "0.0.0.0:7717"
	c.TLSTerminatedByProxy = true // beyond loopback, tokens need TLS
	c.Tokens = []auth.Token{{Principal: "p", Token: secret, Caps: []string{"a2a.read"}}}
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate with a good token = %v", err)
	}
	// Any other bad key in a config holding tokens still names only itself.
	c.LogLevel = "loud"
	if err := c.Validate(); err == nil || strings.Contains(err.Error(), secret) {
		t.Errorf("Validate = %v, want an error without the token", err)
	}
	c.LogLevel = "info"
	c.Tokens = append(c.Tokens, auth.Token{Principal: "q", Token: secret, Caps: []string{"a2a.read"}})
	if err := c.Validate(); err == nil || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "tokens[1]") {
		t.Errorf("Validate with a repeated token = %v, want an error naming tokens[1] without the token", err)
	}
}

func TestTokensEmptyList(t *testing.T) {
	for _, body := range []string{"tokens: []\n", "tokens:\n# - principal: p\n"} {
		c, err := LoadOver(base(), writeFile(t, body))
		if err != nil || len(c.Tokens) != 0 {
			t.Errorf("LoadOver(%q) = %v, %d tokens; want no tokens and no error", body, err, len(c.Tokens))
		}
	}
}

func TestListenBeyondLoopbackNeedsTokens(t *testing.T) {
	token := []auth.Token{{Principal: "ops", SHA256: strings.Repeat("0f", 32), Caps: []string{"a2a.admin"}}}
	tests := []struct {
		addr   string
		tokens []auth.Token
		ok     bool
	}{
		{"127.0.0.1:7717", nil, true},
		{"127.0.0.1:0", nil, true},
		{"127.1.2.3:7717", nil, true},
		{"[::1]:7717", nil, true},
		{"localhost:7717", nil, true},
		{"LocalHost:7717", nil, true},
		{"0.0.0.0:7717", nil, false},
		{":7717", nil, false},
		{"[::]:7717", nil, false},
		{"192.168.1.10:7717", nil, false},
		{"mailroom.internal:7717", nil, false},
		{"0.0.0.0:7717", token, true},
		{":7717", token, true},
		{"192.168.1.10:7717", token, true},
	}
	for _, tt := range tests {
		c := base()
		c.Addr, c.Tokens = tt.addr, tt.tokens
		// Beyond loopback tokens also need TLS (TestBeyondLoopbackTokensNeedTLS).
		c.TLSTerminatedByProxy = true
		err := c.Validate()
		if tt.ok {
			if err != nil {
				t.Errorf("Validate(addr %q, %d tokens) = %v, want nil", tt.addr, len(tt.tokens), err)
			}
			continue
		}
		want := `addr: got "` + tt.addr + `": refusing to listen beyond loopback without tokens; configure tokens (see 'mailroom token new') or listen on 127.0.0.1`
		if err == nil || err.Error() != want {
			t.Errorf("Validate(addr %q, no tokens) = %v, want %q", tt.addr, err, want)
		}
	}
}

// TestExposureIsCheckedOnTheWholeFile: the file may name addr before
// tokens, so loading must not judge addr alone.
func TestExposureIsCheckedOnTheWholeFile(t *testing.T) {
	body := "addr: 0.0.0.0:7717\ntls_terminated_by_proxy: true\ntokens:\n  - principal: ops\n    sha256: " + strings.Repeat("0f", 32) + "\n    caps: [a2a.admin]\n"
	c, err := LoadOver(base(), writeFile(t, body))
	if err != nil {
		t.Fatalf("LoadOver: %v", err)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate = %v, want nil with tokens configured", err)
	}
	bare, err := LoadOver(base(), writeFile(t, "addr: 0.0.0.0:7717\n"))
	if err != nil {
		t.Fatalf("LoadOver: %v", err)
	}
	if err := bare.Validate(); err == nil || !strings.Contains(err.Error(), "addr") {
		t.Errorf("Validate without tokens = %v, want the loopback refusal", err)
	}
}

func TestRetryPolicy(t *testing.T) {
	c := base()
	if got, want := c.RetryPolicy(), (mailbox.RetryPolicy{Enabled: true, MinLeaseAgeMs: 300000, MaxAttempts: 3, MaxRequeues: 10, ScanLimit: 100}); got != want {
		t.Errorf("default RetryPolicy() = %+v, want %+v", got, want)
	}
	c.RetryStaleMinLeaseAge, c.RetryStaleMaxAttempts, c.RetryStaleMaxRequeues, c.RetryStaleScanLimit = 1500*time.Millisecond, 7, 0, 10000
	got := c.RetryPolicy()
	if got != (mailbox.RetryPolicy{Enabled: true, MinLeaseAgeMs: 1500, MaxAttempts: 7, MaxRequeues: 0, ScanLimit: 10000}) {
		t.Errorf("RetryPolicy() = %+v", got)
	}
	if err := got.Validate(); err != nil {
		t.Errorf("a valid config's RetryPolicy().Validate() = %v", err)
	}
}
