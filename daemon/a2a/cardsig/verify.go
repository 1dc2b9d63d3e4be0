package cardsig

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-jose/go-jose/v4"
)

// MaxSignatures bounds the signatures a card may carry that a verifier
// tries, so a card cannot make it try keys without end.
const MaxSignatures = 8

// Errors of Verify, for a caller that tells them apart; each error Verify
// returns wraps one and says more.
var (
	// ErrUnsigned: the card carries no signature.
	ErrUnsigned = errors.New("the card is not signed")
	// ErrUntrusted: no signature names (kid) a trusted key.
	ErrUntrusted = errors.New("the card is not signed by a trusted key")
	// ErrBadSignature: a signature by a trusted key does not verify (the
	// card changed after it was signed, or the signature is not one).
	ErrBadSignature = errors.New("the card's signature does not verify")
)

// ParseKeySet reads a JWKS (RFC 7517 section 5): the keys a verifier
// trusts. Keys without a kid cannot be chosen by a signature, and private
// or symmetric keys have no place in it: both are refused.
func ParseKeySet(data []byte) (jose.JSONWebKeySet, error) {
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(data, &set); err != nil {
		return set, fmt.Errorf("not a JWKS ({\"keys\": [...]}): %v", err)
	}
	if len(set.Keys) == 0 {
		return set, errors.New("a JWKS without keys")
	}
	for i, k := range set.Keys {
		switch {
		case k.KeyID == "":
			return set, fmt.Errorf("keys[%d] has no kid", i)
		case !k.IsPublic():
			return set, fmt.Errorf("keys[%d] (kid %q) is not a public key", i, k.KeyID)
		}
	}
	return set, nil
}

// Verify reports whether the JSON card carries a signature, by a key of
// trusted named by its kid, that verifies over its canonical form. The
// algorithm is the key's, never the token's alone: a signature whose alg
// its key does not sign with (none, HMAC with a public key) is refused.
func Verify(card []byte, trusted jose.JSONWebKeySet) error {
	var signed struct {
		Signatures []Signature `json:"signatures"`
	}
	if err := json.Unmarshal(card, &signed); err != nil {
		return fmt.Errorf("%w: its signatures do not read: %v", ErrBadSignature, err)
	}
	if len(signed.Signatures) == 0 {
		return fmt.Errorf("%w: it has no signatures", ErrUnsigned)
	}
	payload, err := Canonical(card)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBadSignature, err)
	}
	var kids []string
	var bad error
	for i, sig := range signed.Signatures {
		if i == MaxSignatures {
			break
		}
		kid, err := keyIDOf(sig.Protected)
		if err != nil {
			bad = fmt.Errorf("%w: signatures[%d]: %v", ErrBadSignature, i, err)
			continue
		}
		keys := trusted.Key(kid)
		if len(keys) == 0 {
			kids = append(kids, strconv.Quote(kid))
			continue
		}
		for _, key := range keys {
			if err := verifyOne(sig, payload, key); err != nil {
				bad = fmt.Errorf("%w: signatures[%d] (kid %q): %v", ErrBadSignature, i, kid, err)
				continue
			}
			return nil
		}
	}
	if bad != nil {
		return bad
	}
	return fmt.Errorf("%w: it is signed by kid %s, and the trusted keys are %s", ErrUntrusted, strings.Join(kids, ", "), keyIDs(trusted))
}

// verifyOne checks one signature over payload with key, by an algorithm
// the key signs with.
func verifyOne(sig Signature, payload []byte, key jose.JSONWebKey) error {
	jws, err := jose.ParseDetached(sig.Protected+".."+sig.Signature, payload, algorithmsOf(key))
	if err != nil {
		return err
	}
	return jws.DetachedVerify(payload, key)
}

// keyIDOf reads the kid of a protected header.
func keyIDOf(protected string) (string, error) {
	raw, err := base64.RawURLEncoding.DecodeString(protected)
	if err != nil {
		return "", fmt.Errorf("the protected header is not base64url: %v", err)
	}
	var h struct {
		Kid string `json:"kid"`
	}
	if err := json.Unmarshal(raw, &h); err != nil {
		return "", fmt.Errorf("the protected header is not a JSON object: %v", err)
	}
	if h.Kid == "" {
		return "", errors.New("the protected header has no kid")
	}
	return h.Kid, nil
}

// algorithmsOf are the algorithms a trusted key verifies: its own alg
// when the JWKS says one, else those of its type.
func algorithmsOf(k jose.JSONWebKey) []jose.SignatureAlgorithm {
	if k.Algorithm != "" {
		return []jose.SignatureAlgorithm{jose.SignatureAlgorithm(k.Algorithm)}
	}
	switch pub := k.Key.(type) {
	case *ecdsa.PublicKey:
		switch pub.Curve.Params().BitSize {
		case 256:
			return []jose.SignatureAlgorithm{jose.ES256}
		case 384:
			return []jose.SignatureAlgorithm{jose.ES384}
		case 521:
			return []jose.SignatureAlgorithm{jose.ES512}
		}
	case ed25519.PublicKey:
		return []jose.SignatureAlgorithm{jose.EdDSA}
	case *rsa.PublicKey:
		return []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512}
	}
	// A key of no signing type verifies nothing; go-jose refuses an
	// empty list.
	return []jose.SignatureAlgorithm{"none-accepted"}
}

func keyIDs(set jose.JSONWebKeySet) string {
	if len(set.Keys) == 0 {
		return "none"
	}
	ids := make([]string, len(set.Keys))
	for i, k := range set.Keys {
		ids[i] = strconv.Quote(k.KeyID)
	}
	return strings.Join(ids, ", ")
}
