package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/daemon/auth"
)

// card_signing_key_file is read at start: a key that signs cards is
// taken, and anything else refused naming the key, the file and what was
// expected, so a daemon never serves cards no one can verify.
func TestCardSigningKeyIsCheckedAtStart(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, curve elliptic.Curve) string {
		t.Helper()
		k, err := ecdsa.GenerateKey(curve, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good, p384, missing := write("p256.pem", elliptic.P256()), write("p384.pem", elliptic.P384()), filepath.Join(dir, "missing.pem")
	for _, tt := range []struct {
		name, file string
		want       []string
	}{
		{"unset", "", nil},
		{"P-256", good, nil},
		{"missing", missing, []string{`card_signing_key_file: got "` + missing + `"`, "cannot be read", "expected a PEM private key: ECDSA P-256, Ed25519, or RSA"}},
		{"P-384", p384, []string{`card_signing_key_file: got "` + p384 + `"`, "ECDSA key on P-384", "expected a PEM private key"}},
	} {
		c := base()
		c.CardSigningKeyFile = tt.file
		err := c.Validate()
		if len(tt.want) == 0 {
			if err != nil {
				t.Errorf("%s: Validate = %v, want nil", tt.name, err)
			}
			continue
		}
		for _, w := range tt.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: Validate = %v, want it to contain %q", tt.name, err, w)
			}
		}
	}
}

// The key docs/security.md says to make (## Signed cards) is one the
// daemon takes.
func TestSecurityPageCardKeyRecipe(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("openssl is not on PATH")
		}
		t.Skip("openssl is not on PATH (on CI this fails)")
	}
	page, err := os.ReadFile(filepath.Join("..", "..", "docs", "security.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(page), "## Signed cards")
	_, block, ok2 := strings.Cut(after, "```sh\n")
	script, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("docs/security.md has no sh block under ## Signed cards")
	}
	dir := t.TempDir()
	cmd := exec.Command("bash", "-e", "-c", script)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the recipe: %v\n%s", err, out)
	}
	c := base()
	c.CardSigningKeyFile = filepath.Join(dir, "card-signing.pem")
	if err := c.Validate(); err != nil {
		t.Errorf("the recipe's key: %v", err)
	}
}

// The cards declare the bearer scheme when a bearer token can get in: a
// tokens entry with a token or its hash, or an OIDC issuer's.
func TestBearerTokens(t *testing.T) {
	cert := auth.Token{Principal: "billing", SPIFFEID: "spiffe://example.org/billing", Caps: []string{auth.CapRead}}
	for _, tt := range []struct {
		name   string
		tokens []auth.Token
		issuer string
		want   bool
	}{
		{"none", nil, "", false},
		{"certificates only", []auth.Token{cert}, "", false},
		{"a token", []auth.Token{cert, {Principal: "ops", Token: "t", Caps: []string{auth.CapAdmin}}}, "", true},
		{"a hash", []auth.Token{{Principal: "ops", SHA256: strings.Repeat("0f", 32), Caps: []string{auth.CapAdmin}}}, "", true},
		{"an OIDC issuer", []auth.Token{cert}, "https://issuer.example", true},
	} {
		c := base()
		c.Tokens, c.OIDCIssuer = tt.tokens, tt.issuer
		if got := c.BearerTokens(); got != tt.want {
			t.Errorf("%s: BearerTokens = %v, want %v", tt.name, got, tt.want)
		}
	}
}
