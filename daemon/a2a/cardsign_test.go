package a2a_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/asn1"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-jose/go-jose/v4"
	"github.com/gowebpki/jcs"

	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/daemon/daemontest"
)

// writeSigningKey writes a new P-256 private key, PKCS #8 PEM, for
// card_signing_key_file.
func writeSigningKey(t *testing.T) string {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "card-signing.pem")
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// get reads url, returning its status, headers and body.
func get(t *testing.T, url string, header ...string) (int, http.Header, []byte) {
	t.Helper()
	req := mustRequest(t, "GET", url)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// signedCard is what a verifier holds: the card's one signature, and the
// bytes it is over, computed here from the card as read (RFC 8785 by
// gowebpki/jcs, not the daemon's cardsig).
type signedCard struct {
	protected, signature string
	payload              []byte
}

func readSignedCard(t *testing.T, body []byte) signedCard {
	t.Helper()
	var card map[string]json.RawMessage
	if err := json.Unmarshal(body, &card); err != nil {
		t.Fatalf("the card: %v\n%s", err, body)
	}
	var sigs []struct {
		Protected string `json:"protected"`
		Signature string `json:"signature"`
	}
	if err := json.Unmarshal(card["signatures"], &sigs); err != nil || len(sigs) != 1 {
		t.Fatalf("the card's signatures: %s (%v); want one", card["signatures"], err)
	}
	delete(card, "signatures")
	raw, err := json.Marshal(card)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := jcs.Transform(raw)
	if err != nil {
		t.Fatal(err)
	}
	return signedCard{sigs[0].Protected, sigs[0].Signature, payload}
}

// With card_signing_key_file the daemon signs every card, and the card
// verifies with the keys it serves at .well-known/jwks.json, checked by
// implementations other than the one that signs: go-jose given the
// served JWKS, and openssl given the public key and the JWS signing
// input. A card changed after it was signed fails both.
func TestSignedCardVerifiesIndependently(t *testing.T) {
	keyFile := writeSigningKey(t)
	it := newInterop(t, daemontest.Options{Config: func(c *config.Config) { c.CardSigningKeyFile = keyFile }})
	base := it.register("coder@local")
	status, h, body := get(t, base+".well-known/agent-card.json")
	if status != 200 {
		t.Fatalf("card: %d %s", status, body)
	}
	sc := readSignedCard(t, body)
	status, jh, jwksBody := get(t, base+".well-known/jwks.json")
	var set jose.JSONWebKeySet
	if status != 200 || json.Unmarshal(jwksBody, &set) != nil || len(set.Keys) != 1 || !set.Keys[0].IsPublic() {
		t.Fatalf("jwks: %d %s; want one public key", status, jwksBody)
	}
	header, _ := base64.RawURLEncoding.DecodeString(sc.protected)
	var ph struct{ Alg, Kid, Jku string }
	if err := json.Unmarshal(header, &ph); err != nil || ph.Alg != "ES256" || ph.Kid != set.Keys[0].KeyID {
		t.Fatalf("protected header %s; want alg ES256 and the JWKS key's kid %s", header, set.Keys[0].KeyID)
	}

	// go-jose, from the served JWKS.
	jws, err := jose.ParseDetached(sc.protected+".."+sc.signature, sc.payload, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		t.Fatal(err)
	}
	if err := jws.DetachedVerify(sc.payload, set.Key(ph.Kid)[0]); err != nil {
		t.Errorf("go-jose: the served card does not verify with the served key: %v", err)
	}
	tampered := bytes.Replace(sc.payload, []byte(`"Coder"`), []byte(`"Codex"`), 1)
	if err := jws.DetachedVerify(tampered, set.Key(ph.Kid)[0]); err == nil {
		t.Error("go-jose: a card changed after signing verifies")
	}

	// openssl, from the public key: an ES256 signature is r||s, openssl
	// reads DER.
	openssl := lookTool(t, "openssl", "verify the signed card independently")
	dir := t.TempDir()
	pub, err := x509.MarshalPKIXPublicKey(set.Keys[0].Key)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := base64.RawURLEncoding.DecodeString(sc.signature)
	if len(raw) != 64 {
		t.Fatalf("an ES256 signature of %d bytes, want 64 (r||s)", len(raw))
	}
	der, err := asn1.Marshal(struct{ R, S *big.Int }{new(big.Int).SetBytes(raw[:32]), new(big.Int).SetBytes(raw[32:])})
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"pub.pem": pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), "sig.der": der,
		"input":    []byte(sc.protected + "." + base64.RawURLEncoding.EncodeToString(sc.payload)),
		"tampered": []byte(sc.protected + "." + base64.RawURLEncoding.EncodeToString(tampered))}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	verify := func(input string) (string, error) {
		cmd := exec.CommandContext(t.Context(), openssl, "dgst", "-sha256", "-verify", "pub.pem", "-signature", "sig.der", input)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	if out, err := verify("input"); err != nil || out != "Verified OK" {
		t.Errorf("openssl dgst -verify of the served card: %q %v; want Verified OK", out, err)
	}
	if out, err := verify("tampered"); err == nil {
		t.Errorf("openssl dgst -verify of a card changed after signing: %q; want a failure", out)
	}

	// Signed, the card stays revalidatable: the same card is served with
	// the same signature, so its ETag holds; the keys are kept and
	// revalidated as the card is.
	if _, h2, again := get(t, base+".well-known/agent-card.json"); h2.Get("ETag") != h.Get("ETag") || !bytes.Equal(again, body) {
		t.Errorf("the signed card read again: ETag %q then %q", h.Get("ETag"), h2.Get("ETag"))
	}
	if jh.Get("ETag") == "" || jh.Get("Cache-Control") != "max-age=60" || jh.Get("Content-Type") != "application/json" {
		t.Errorf("jwks headers: %v; want an ETag, max-age=60, application/json", jh)
	}
	if status, _, _ := get(t, base+".well-known/jwks.json", "If-None-Match", jh.Get("ETag")); status != 304 {
		t.Errorf("jwks with If-None-Match of its ETag: %d, want 304", status)
	}
}

// Without card_signing_key_file cards carry no signatures, and the keys'
// path says why it has none.
func TestUnsignedCardHasNoKeys(t *testing.T) {
	it := newInterop(t, daemontest.Options{})
	base := it.register("coder@local")
	if _, _, body := get(t, base+".well-known/agent-card.json"); bytes.Contains(body, []byte(`"signatures"`)) {
		t.Errorf("an unsigned daemon's card: %s; want no signatures", body)
	}
	status, _, body := get(t, base+".well-known/jwks.json")
	if status != 404 || !bytes.Contains(body, []byte("card_signing_key_file is not set")) {
		t.Errorf("jwks of an unsigned daemon: %d %s; want 404 naming card_signing_key_file", status, body)
	}
}

// lookTool finds a command a test needs, skipping without it off CI and
// failing on CI (CI=true), where it is installed.
func lookTool(t *testing.T, name, why string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not on PATH: it is needed to %s", name, why)
		}
		t.Skipf("%s is not on PATH: it is needed to %s (on CI this fails)", name, why)
	}
	return p
}
