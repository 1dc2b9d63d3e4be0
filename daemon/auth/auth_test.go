package auth

import (
	"errors"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/mailbox"
)

func TestAuthenticate(t *testing.T) {
	tok, hash, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	a, err := New([]Token{
		{Principal: "planner@local", SHA256: hash, Caps: []string{"a2a.send.*", CapDrain}},
		{Principal: "old", Token: "revoked-secret", Caps: []string{CapRead}, Revoked: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		header, want string // want: principal or error substring
		ok           bool
	}{
		{"Bearer " + tok, "planner@local", true},
		{"", "missing", false},
		{"Basic abc", "malformed", false},
		{"Bearer ", "malformed", false},
		{"Bearer nope", "unknown token", false},
		{"Bearer revoked-secret", "revoked", false},
	}
	for _, tc := range tests {
		id, err := a.Authenticate(tc.header)
		if tc.ok {
			if err != nil || id.Principal != tc.want {
				t.Errorf("Authenticate(%q) = %v, %v", tc.header, id.Principal, err)
			}
			continue
		}
		if !errors.Is(err, mailbox.ErrUnauthorized) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Authenticate(%q) = %v, want unauthorized %q", tc.header, err, tc.want)
		}
		if strings.Contains(err.Error(), tok) {
			t.Errorf("error leaks the token: %v", err)
		}
	}
}

func TestCan(t *testing.T) {
	a, _ := New([]Token{
		{Principal: "p", Token: "t1", Caps: []string{"a2a.send.worker@local", "a2a.respond.*"}},
		{Principal: "root", Token: "t2", Caps: []string{CapAdmin}},
	})
	p, _ := a.Authenticate("Bearer t1")
	root, _ := a.Authenticate("Bearer t2")
	tests := []struct {
		id   Identity
		cap  string
		want bool
	}{
		{p, "a2a.send.worker@local", true},
		{p, "a2a.send.other@local", false},
		{p, "a2a.respond.anyone", true},
		{p, CapRead, false},
		{root, CapRequeue, true},
		{root, "a2a.send.x", true},
	}
	for _, tc := range tests {
		if got := tc.id.Can(tc.cap); got != tc.want {
			t.Errorf("%s.Can(%s) = %v, want %v", tc.id.Principal, tc.cap, got, tc.want)
		}
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	tests := []struct {
		tokens []Token
		want   string
	}{
		{[]Token{{Principal: "", Token: "x", Caps: []string{CapRead}}}, "tokens[0].principal"},
		{[]Token{{Principal: "p", Caps: []string{CapRead}}}, "expected token or sha256"},
		{[]Token{{Principal: "p", SHA256: "abc", Caps: []string{CapRead}}}, "64 hex digits"},
		{[]Token{{Principal: "p", Token: "x"}}, "tokens[0].caps: empty"},
		{[]Token{{Principal: "p", Token: "x", Caps: []string{"a2a.fly"}}}, `tokens[0].caps[0]: unknown capability "a2a.fly"`},
		{[]Token{{Principal: "p", Token: "x", Caps: []string{CapRead}}, {Principal: "q", Token: "x", Caps: []string{CapRead}}}, "configured twice"},
	}
	for _, tc := range tests {
		_, err := New(tc.tokens)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want %q", tc.tokens, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), `"x"`) {
			t.Errorf("error leaks a token: %v", err)
		}
	}
}

// Operators' names are principals too: a configuration that started the
// daemon before agent ids were narrowed to lowercase ASCII keeps starting it.
func TestPrincipalsMayBeOperatorNames(t *testing.T) {
	for _, p := range []string{"Alice", "oncall-EU", "ops@Example.com"} {
		if _, err := New([]Token{{Principal: p, Token: "secret-" + p, Caps: []string{CapRequeue}}}); err != nil {
			t.Errorf("principal %q refused: %v", p, err)
		}
	}
	if _, err := New([]Token{{Principal: "Alice Ops", Token: "x", Caps: []string{CapRead}}}); err == nil || !strings.Contains(err.Error(), "tokens[0].principal") {
		t.Errorf("a principal with a space: %v, want a refusal naming tokens[0].principal", err)
	}
}
