package cardsig

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/go-jose/go-jose/v4"
)

// MinRSABits is the smallest RSA key that signs cards (NIST SP 800-57:
// 2048 bits until 2030).
const MinRSABits = 2048

// Signer signs cards with one private key. It is safe for concurrent use.
type Signer struct {
	signer jose.Signer
	public jose.JSONWebKey

	// signed keeps the signature of each card signed lately, by its
	// canonical form's digest: an ECDSA signature is new every time, and
	// the same card must be served with the same signature, or its ETag
	// would change at every read and no client could revalidate it.
	mu     sync.Mutex
	signed map[[sha256.Size]byte]Signature
}

// maxRemembered bounds the signatures a Signer keeps: more cards than a
// daemon serves, each remembered until the bound is reached and all are
// forgotten at once.
const maxRemembered = 4096

// Expected says which keys sign cards, for the errors that refuse others.
const Expected = "a PEM private key: ECDSA P-256, Ed25519, or RSA of at least 2048 bits (PKCS #8, SEC 1 or PKCS #1)"

// LoadSigner reads the PEM private key at path (the file named by the
// key called name, for the errors).
func LoadSigner(name, path string) (*Signer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: got %q, which cannot be read (%v); expected %s", name, path, unwrapPath(err), Expected)
	}
	key, err := parsePrivateKey(data)
	if err != nil {
		return nil, fmt.Errorf("%s: got %q, which %v; expected %s", name, path, err, Expected)
	}
	s, err := NewSigner(key)
	if err != nil {
		return nil, fmt.Errorf("%s: got %q, which %v; expected %s", name, path, err, Expected)
	}
	return s, nil
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// parsePrivateKey reads the first private key block of a PEM file.
func parsePrivateKey(data []byte) (crypto.Signer, error) {
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return nil, errors.New("holds no PEM private key block")
		}
		var key any
		var err error
		switch block.Type {
		case "PRIVATE KEY":
			key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
		case "EC PRIVATE KEY":
			key, err = x509.ParseECPrivateKey(block.Bytes)
		case "RSA PRIVATE KEY":
			key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
		default:
			continue // EC PARAMETERS, a certificate beside the key
		}
		if err != nil {
			return nil, fmt.Errorf("holds a %s block that does not parse: %v", block.Type, err)
		}
		s, ok := key.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("holds a %T, which cannot sign", key)
		}
		return s, nil
	}
}

// NewSigner signs with key: ES256 for P-256, EdDSA for Ed25519, RS256
// for RSA; its kid is its RFC 7638 thumbprint, so that a verifier finds
// it in the JWKS without being told.
func NewSigner(key crypto.Signer) (*Signer, error) {
	alg, err := algorithmOf(key.Public())
	if err != nil {
		return nil, err
	}
	public := jose.JSONWebKey{Key: key.Public(), Algorithm: string(alg), Use: "sig"}
	thumb, err := public.Thumbprint(crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("has no RFC 7638 thumbprint: %v", err)
	}
	public.KeyID = base64.RawURLEncoding.EncodeToString(thumb)
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: jose.JSONWebKey{Key: key, KeyID: public.KeyID}}, nil)
	if err != nil {
		return nil, fmt.Errorf("cannot sign: %v", err)
	}
	return &Signer{signer: signer, public: public, signed: map[[sha256.Size]byte]Signature{}}, nil
}

// algorithmOf is the one algorithm a public key signs cards with.
func algorithmOf(pub crypto.PublicKey) (jose.SignatureAlgorithm, error) {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() {
			return "", fmt.Errorf("holds an ECDSA key on %s", k.Curve.Params().Name)
		}
		return jose.ES256, nil
	case ed25519.PublicKey:
		return jose.EdDSA, nil
	case *rsa.PublicKey:
		if k.N.BitLen() < MinRSABits {
			return "", fmt.Errorf("holds an RSA key of %d bits", k.N.BitLen())
		}
		return jose.RS256, nil
	}
	return "", fmt.Errorf("holds a %T key", pub)
}

// KeyID is the kid of the signatures this signer makes.
func (s *Signer) KeyID() string { return s.public.KeyID }

// JWKS is the public key set that verifies this signer's signatures.
func (s *Signer) JWKS() jose.JSONWebKeySet {
	return jose.JSONWebKeySet{Keys: []jose.JSONWebKey{s.public}}
}

// Sign signs the JSON card (its signatures, if any, left out). The same
// card, in any spacing or member order, gets the same signature while it
// is remembered.
func (s *Signer) Sign(card []byte) (Signature, error) {
	payload, err := Canonical(card)
	if err != nil {
		return Signature{}, err
	}
	digest := sha256.Sum256(payload)
	s.mu.Lock()
	defer s.mu.Unlock()
	if sig, ok := s.signed[digest]; ok {
		return sig, nil
	}
	sig, err := s.sign(payload)
	if err != nil {
		return Signature{}, err
	}
	if len(s.signed) >= maxRemembered {
		clear(s.signed)
	}
	s.signed[digest] = sig
	return sig, nil
}

// sign makes a new signature of payload.
func (s *Signer) sign(payload []byte) (Signature, error) {
	jws, err := s.signer.Sign(payload)
	if err != nil {
		return Signature{}, fmt.Errorf("signing the card: %w", err)
	}
	compact, err := jws.DetachedCompactSerialize()
	if err != nil {
		return Signature{}, fmt.Errorf("signing the card: %w", err)
	}
	protected, signature, ok := strings.Cut(compact, "..")
	if !ok {
		return Signature{}, fmt.Errorf("signing the card: a detached JWS without its two dots: %q", compact)
	}
	return Signature{Protected: protected, Signature: signature}, nil
}
