package mailbox

import (
	"encoding/json"
	"strings"
	"testing"
)

// A remote that must serve a signed card is registered with the keys
// that sign it, a JWKS URL (https, or http on loopback) or the keys
// themselves, and only then: every refusal names its field.
func TestNormalizeRemoteCardKeys(t *testing.T) {
	const jwks = `{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"k1","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}`
	remote := func(require bool, url, keys string) *RemoteSpec {
		return &RemoteSpec{URL: "https://agent.example/", RequireSignedCard: require, CardJWKSURL: url, CardJWKS: keys}
	}
	for _, r := range []*RemoteSpec{
		remote(false, "", ""),
		remote(true, "https://agent.example/.well-known/jwks.json", ""),
		remote(true, " http://127.0.0.1:8080/jwks.json ", ""),
		remote(true, "http://[::1]:8080/jwks.json", ""),
		remote(true, "", jwks),
	} {
		c, err := NormalizeCard(AgentCard{Remote: r})
		if err != nil {
			t.Errorf("%+v: %v, want accepted", *r, err)
			continue
		}
		if strings.TrimSpace(c.Remote.CardJWKSURL) != c.Remote.CardJWKSURL {
			t.Errorf("card_jwks_url %q, want it trimmed", c.Remote.CardJWKSURL)
		}
	}
	for _, tt := range []struct {
		r    *RemoteSpec
		want string
	}{
		{remote(false, "https://agent.example/jwks.json", ""), "remote.require_signed_card: got false with the card's keys given"},
		{remote(false, "", jwks), "remote.require_signed_card: got false"},
		{remote(true, "", ""), "remote.card_jwks_url: got \"\" and no card_jwks"},
		{remote(true, "https://agent.example/jwks.json", jwks), "remote.card_jwks: given beside card_jwks_url"},
		{remote(true, "http://agent.example/jwks.json", ""), "remote.card_jwks_url: got \"http://agent.example/jwks.json\", expected https (http only on loopback)"},
		{remote(true, "https://user:pw@agent.example/jwks.json", ""), "expected an absolute https URL without credentials"},
		{remote(true, "", `{"keys":[]}`), "remote.card_jwks: is not a JWKS with keys"},
		{remote(true, "", "not json"), "remote.card_jwks: is not a JWKS with keys"},
		{remote(true, "", `{"keys":[{"kty":"`+strings.Repeat("x", MaxCardJWKSBytes)+`"}]}`), "expected a JWKS of at most 16384 bytes"},
	} {
		if _, err := NormalizeCard(AgentCard{Remote: tt.r}); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v, want an error containing %q", *tt.r, err, tt.want)
		}
	}
}

// The keys travel in the log with the registration, and a registration
// without them reads and writes as before (the fields are left out).
func TestRemoteCardKeysInTheLog(t *testing.T) {
	plain, _ := json.Marshal(RemoteSpec{URL: "https://agent.example/", Binding: BindingAuto, Concurrency: 4})
	if want := `{"url":"https://agent.example/","binding":"auto","concurrency":4}`; string(plain) != want {
		t.Errorf("a remote without keys encodes as %s, want %s", plain, want)
	}
	in := RemoteSpec{URL: "https://agent.example/", Binding: BindingAuto, Concurrency: 4, RequireSignedCard: true, CardJWKSURL: "https://agent.example/jwks.json"}
	b, _ := json.Marshal(in)
	var out RemoteSpec
	if err := json.Unmarshal(b, &out); err != nil || out != in {
		t.Errorf("%s read back as %+v (%v), want %+v", b, out, err, in)
	}
}
