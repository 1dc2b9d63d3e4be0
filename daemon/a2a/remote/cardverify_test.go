package remote_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-jose/go-jose/v4"

	"github.com/mailroom/mailroom/daemon/a2a/cardsig"
	"github.com/mailroom/mailroom/daemon/a2a/remote"
	"github.com/mailroom/mailroom/mailbox"
)

// serveSigned serves a v1.0 card signed with key under kid, its
// protected header pointing (jku) at a JWKS this server also serves with
// that key: a verifier that trusted the card's own pointer would accept
// any card.
func serveSigned(t *testing.T, key ed25519.PrivateKey, kid string) string {
	t.Helper()
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/jwks.json" {
			_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: key.Public(), KeyID: kid, Algorithm: "EdDSA"}}})
			return
		}
		card := map[string]any{"name": "Signed", "supportedInterfaces": []any{map[string]any{"url": srv.URL + "/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}}}
		body, _ := json.Marshal(card)
		payload, err := cardsig.Canonical(body)
		if err != nil {
			t.Error(err)
		}
		signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.EdDSA, Key: jose.JSONWebKey{Key: key, KeyID: kid}},
			(&jose.SignerOptions{}).WithHeader("jku", srv.URL+"/jwks.json"))
		if err != nil {
			t.Error(err)
			return
		}
		jws, err := signer.Sign(payload)
		if err != nil {
			t.Error(err)
			return
		}
		compact, _ := jws.DetachedCompactSerialize()
		protected, signature, _ := strings.Cut(compact, "..")
		card["signatures"] = []cardsig.Signature{{Protected: protected, Signature: signature}}
		_ = json.NewEncoder(w).Encode(card)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/"
}

func edKey(t *testing.T) ed25519.PrivateKey {
	t.Helper()
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// A remote's card verified with keys given inline (card_jwks) resolves;
// signed by a key the registration does not name it is refused with
// ErrCardNotVerified, though its protected header points (jku) at a JWKS
// holding that key: the trusted keys are the operator's, never the
// card's.
func TestResolveVerifiesCardWithRegisteredKeys(t *testing.T) {
	trustedKey := edKey(t)
	trusted, err := cardsig.NewSigner(trustedKey)
	if err != nil {
		t.Fatal(err)
	}
	keys, _ := json.Marshal(trusted.JWKS())
	good := serveSigned(t, trustedKey, trusted.KeyID())
	spec := remote.SpecOf(mailbox.RemoteSpec{URL: good, RequireSignedCard: true, CardJWKS: string(keys)})
	if _, card, err := remote.Resolve(t.Context(), nil, spec, remote.Auth{}); err != nil || card.Name != "Signed" {
		t.Fatalf("a card signed by the registered key: %+v %v", card, err)
	}

	forged := serveSigned(t, edKey(t), "attacker")
	spec.URL = forged
	_, _, err = remote.Resolve(t.Context(), nil, spec, remote.Auth{})
	if !errors.Is(err, remote.ErrCardNotVerified) || !errors.Is(err, cardsig.ErrUntrusted) || !strings.Contains(err.Error(), trusted.KeyID()) {
		t.Errorf("a card signed by another key, its jku naming that key: %v; want ErrCardNotVerified naming the trusted kid %s", err, trusted.KeyID())
	}
	// The same, signed under the trusted kid by the other key.
	spec.URL = serveSigned(t, edKey(t), trusted.KeyID())
	if _, _, err = remote.Resolve(t.Context(), nil, spec, remote.Auth{}); !errors.Is(err, cardsig.ErrBadSignature) {
		t.Errorf("a card signed by another key under the trusted kid: %v; want ErrBadSignature", err)
	}

	// Keys that are not a JWKS make the card unverifiable, said so.
	spec.URL, spec.CardJWKS = good, `{"keys":[{"kty":"oct","k":"c2VjcmV0","kid":"k"}]}`
	_, _, err = remote.Resolve(t.Context(), nil, spec, remote.Auth{})
	if !errors.Is(err, remote.ErrCardNotVerified) || !strings.Contains(err.Error(), "its keys cannot be used: card_jwks") {
		t.Errorf("a symmetric key as the card's keys: %v; want ErrCardNotVerified saying card_jwks cannot be used", err)
	}

	// Without require_signed_card a card is read as before, signed or not.
	if _, _, err := remote.Resolve(t.Context(), nil, remote.Spec{URL: forged}, remote.Auth{}); err != nil {
		t.Errorf("a signed card without require_signed_card: %v", err)
	}
}
