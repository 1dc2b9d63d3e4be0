package cardsig_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-jose/go-jose/v4"

	"github.com/mailroom/mailroom/daemon/a2a/cardsig"
)

func ecKey(t *testing.T, curve elliptic.Curve) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(curve, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func newSigner(t *testing.T, key crypto.Signer) *cardsig.Signer {
	t.Helper()
	s, err := cardsig.NewSigner(key)
	if err != nil {
		t.Fatalf("NewSigner(%T): %v", key, err)
	}
	return s
}

// signed returns card with sig added to its signatures.
func signed(t *testing.T, card string, sigs ...cardsig.Signature) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(card), &m); err != nil {
		t.Fatal(err)
	}
	m["signatures"] = sigs
	b, err := json.MarshalIndent(m, "", "  ") // another spacing and order than the signer saw
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const card = `{"name":"Coder","url":"https://mailroom.example/agents/coder@local/","skills":[{"id":"code","name":"Code <Go> & more"}],"capabilities":{"streaming":true}}`

// A card signed by each kind of key verifies with the signer's JWKS,
// whatever spacing and member order it is served in; the kid is the
// key's RFC 7638 thumbprint.
func TestSignedCardVerifies(t *testing.T) {
	_, ed, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		key  crypto.Signer
		alg  string
	}{{"P-256", ecKey(t, elliptic.P256()), "ES256"}, {"Ed25519", ed, "EdDSA"}, {"RSA 2048", rsaKey, "RS256"}} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSigner(t, tc.key)
			sig, err := s.Sign([]byte(card))
			if err != nil {
				t.Fatal(err)
			}
			header, err := base64.RawURLEncoding.DecodeString(sig.Protected)
			if err != nil {
				t.Fatal(err)
			}
			var h map[string]any
			if err := json.Unmarshal(header, &h); err != nil || h["alg"] != tc.alg || h["kid"] != s.KeyID() {
				t.Errorf("protected header %s; want alg %s and kid %s", header, tc.alg, s.KeyID())
			}
			jwk := s.JWKS().Keys[0]
			thumb, _ := jwk.Thumbprint(crypto.SHA256)
			if s.KeyID() != base64.RawURLEncoding.EncodeToString(thumb) || !jwk.IsPublic() {
				t.Errorf("kid %s, public %v; want the public key's RFC 7638 thumbprint", s.KeyID(), jwk.IsPublic())
			}
			if err := cardsig.Verify(signed(t, card, sig), s.JWKS()); err != nil {
				t.Errorf("Verify of the card as signed: %v", err)
			}
			// The same card, however spaced, is signed the same, so that
			// it is served with the same ETag.
			again, err := s.Sign(signed(t, card))
			if err != nil || again.Protected != sig.Protected || again.Signature != sig.Signature {
				t.Errorf("the same card signed again: %+v %v; want %+v", again, err, sig)
			}
		})
	}
}

// Canonical is RFC 8785's form without the signatures: the same for any
// spacing or member order.
func TestCanonical(t *testing.T) {
	got, err := cardsig.Canonical([]byte(`{ "b": [1, "é"], "a": {"z": true, "y": null}, "signatures": [{"protected":"x","signature":"y"}] }`))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":{"y":null,"z":true},"b":[1,"é"]}`; string(got) != want {
		t.Errorf("Canonical = %s, want %s", got, want)
	}
	if _, err := cardsig.Canonical([]byte(`[1]`)); err == nil {
		t.Error("Canonical of an array: no error, want one")
	}
}

// A card changed after it was signed, a card signed by another key, a
// card without signatures, and a card whose signature names an algorithm
// its key does not sign with (none; HMAC keyed with the public key, the
// classic confusion) are all refused, each with its own error.
func TestVerifyRefuses(t *testing.T) {
	s := newSigner(t, ecKey(t, elliptic.P256()))
	other := newSigner(t, ecKey(t, elliptic.P256()))
	sig, err := s.Sign([]byte(card))
	if err != nil {
		t.Fatal(err)
	}
	otherSig, err := other.Sign([]byte(card))
	if err != nil {
		t.Fatal(err)
	}
	tampered := strings.Replace(string(signed(t, card, sig)), `"Coder"`, `"Codex"`, 1)
	// An HS256 signature keyed with the public key's JSON, under the
	// trusted kid: a verifier taking the alg from the token would accept it.
	pub, _ := json.Marshal(s.JWKS().Keys[0])
	hs, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: jose.JSONWebKey{Key: pub, KeyID: s.KeyID()}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := cardsig.Canonical([]byte(card))
	hsJWS, err := hs.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	hsCompact, _ := hsJWS.DetachedCompactSerialize()
	hsProtected, hsSig, _ := strings.Cut(hsCompact, "..")
	none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","kid":"` + s.KeyID() + `"}`))
	for _, tc := range []struct {
		name string
		card []byte
		want error
	}{
		{"tampered", []byte(tampered), cardsig.ErrBadSignature},
		{"another key", signed(t, card, otherSig), cardsig.ErrUntrusted},
		{"unsigned", []byte(card), cardsig.ErrUnsigned},
		{"empty signatures", signed(t, card), cardsig.ErrUnsigned},
		{"alg none", signed(t, card, cardsig.Signature{Protected: none, Signature: ""}), cardsig.ErrBadSignature},
		{"HS256 with the public key", signed(t, card, cardsig.Signature{Protected: hsProtected, Signature: hsSig}), cardsig.ErrBadSignature},
		{"signature of another card", signed(t, `{"name":"Other"}`, sig), cardsig.ErrBadSignature},
	} {
		err := cardsig.Verify(tc.card, s.JWKS())
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: Verify = %v, want %v", tc.name, err, tc.want)
		}
	}
	// One good signature beside one by an unknown key verifies.
	if err := cardsig.Verify(signed(t, card, otherSig, sig), s.JWKS()); err != nil {
		t.Errorf("a good signature beside another key's: %v", err)
	}
}

// A JWKS of trusted keys must name each key and hold public keys only.
func TestParseKeySet(t *testing.T) {
	s := newSigner(t, ecKey(t, elliptic.P256()))
	good, _ := json.Marshal(s.JWKS())
	if set, err := cardsig.ParseKeySet(good); err != nil || len(set.Keys) != 1 {
		t.Fatalf("ParseKeySet of a signer's JWKS: %v", err)
	}
	private, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: ecKey(t, elliptic.P256()), KeyID: "k"}}})
	secret, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: []byte("0123456789abcdef0123456789abcdef"), KeyID: "k", Algorithm: "HS256"}}})
	noKid := strings.Replace(string(good), `"kid"`, `"x-kid"`, 1)
	for _, tc := range []struct{ name, data, want string }{
		{"not JSON", "nope", "not a JWKS"},
		{"no keys", `{"keys":[]}`, "without keys"},
		{"a private key", string(private), "not a public key"},
		{"a symmetric key", string(secret), "not a public key"},
		{"no kid", noKid, "has no kid"},
	} {
		if _, err := cardsig.ParseKeySet([]byte(tc.data)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: ParseKeySet = %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
}

// LoadSigner takes PKCS #8, SEC 1 and PKCS #1 files of a key that signs
// cards, and refuses the rest naming the key, the file and what it
// expected.
func TestLoadSigner(t *testing.T) {
	dir := t.TempDir()
	write := func(name, typ string, der []byte) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pkcs8 := func(k any) []byte {
		t.Helper()
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return der
	}
	sec1, err := x509.MarshalECPrivateKey(ecKey(t, elliptic.P256()))
	if err != nil {
		t.Fatal(err)
	}
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	for _, p := range []string{write("p256.pem", "PRIVATE KEY", pkcs8(ecKey(t, elliptic.P256()))), write("sec1.pem", "EC PRIVATE KEY", sec1), write("ed.pem", "PRIVATE KEY", pkcs8(ed))} {
		if _, err := cardsig.LoadSigner("card_signing_key_file", p); err != nil {
			t.Errorf("LoadSigner(%s): %v", filepath.Base(p), err)
		}
	}
	for _, tc := range []struct{ name, path, want string }{
		{"missing", filepath.Join(dir, "none.pem"), "cannot be read"},
		{"P-384", write("p384.pem", "PRIVATE KEY", pkcs8(ecKey(t, elliptic.P384()))), "ECDSA key on P-384"},
		{"RSA 1024", write("rsa1024.pem", "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(small)), "RSA key of 1024 bits"},
		{"a certificate only", write("cert.pem", "CERTIFICATE", []byte("x")), "no PEM private key"},
		{"garbage", write("bad.pem", "PRIVATE KEY", []byte("garbage")), "does not parse"},
	} {
		_, err := cardsig.LoadSigner("card_signing_key_file", tc.path)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "card_signing_key_file: ") ||
			!strings.Contains(err.Error(), tc.path) || !strings.Contains(err.Error(), "expected "+cardsig.Expected) {
			t.Errorf("%s: LoadSigner = %v; want an error naming the key, %s, saying %q and what was expected", tc.name, err, tc.path, tc.want)
		}
	}
}
