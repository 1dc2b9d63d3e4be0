package auth

import (
	"errors"
	"strings"
	"testing"
)

// A static token and an OIDC token are told apart by shape: only three
// base64url parts joined by dots go to the issuer.
func TestLooksLikeJWT(t *testing.T) {
	for _, tc := range []struct {
		tok  string
		want bool
	}{
		{"eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ3In0.c2ln", true},
		{"eyJhbGciOiJub25lIn0.eyJzdWIiOiJ3In0.", true}, // unsigned: the verifier refuses it, saying why
		{"mr_Zm9vYmFyYmF6cXV4", false},
		{"a.b", false},
		{"a.b.c.d", false},
		{".b.c", false},
		{"a..c", false},
		{"a.b+c.d", false},
		{"a.b.c=", false},
	} {
		if got := looksLikeJWT(tc.tok); got != tc.want {
			t.Errorf("looksLikeJWT(%q) = %v, want %v", tc.tok, got, tc.want)
		}
	}
}

// The challenge of a refused OIDC token carries its reason in the
// characters RFC 6750 allows; other refusals keep their challenge.
func TestChallengeFor(t *testing.T) {
	refused := invalidToken("its claim \"sub\" is \"two words\\\"\nx\"")
	got := ChallengeFor("Bearer a.b.c", refused)
	want := `Bearer realm="mailroom", error="invalid_token", error_description="its claim 'sub' is 'two words'''x'"`
	if got != want {
		t.Errorf("ChallengeFor(refused) =\n%s\nwant\n%s", got, want)
	}
	if got := ChallengeFor("Bearer nope", errors.New("unknown token")); got != Challenge("Bearer nope") {
		t.Errorf("ChallengeFor(another error) = %s", got)
	}
	if got := ChallengeFor("", refused); got != `Bearer realm="mailroom"` {
		t.Errorf("ChallengeFor(no header) = %s", got)
	}
	if !strings.Contains(refused.Error(), "Authorization: OIDC token refused: ") {
		t.Errorf("refusal message %q", refused.Error())
	}
}
