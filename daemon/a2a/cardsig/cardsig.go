// Package cardsig signs agent cards and verifies them, as the A2A
// specification's AgentCardSignature says: a JWS (RFC 7515) with a
// detached payload, the payload being the RFC 8785 (JCS) canonical form
// of the card with its signatures left out, and the protected header
// carrying alg and kid.
//
// The JOSE work is go-jose's and the canonical form gowebpki/jcs's: this
// package only says which bytes are signed, which key signs them, and
// which keys a verifier trusts. A verifier's keys come from where the
// operator says (a JWKS URL or the keys themselves), never from the card:
// a jku or jwk header a card carries is not read.
package cardsig

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gowebpki/jcs"
)

// Signature is one entry of a card's signatures (AgentCardSignature).
type Signature struct {
	// Protected is the base64url protected header: {"alg":...,"kid":...}.
	Protected string `json:"protected"`
	// Signature is the base64url signature over
	// base64url(Protected) "." base64url(Canonical(card)).
	Signature string `json:"signature"`
	// Header is the unprotected header, which this package neither
	// writes nor trusts.
	Header map[string]any `json:"header,omitempty"`
}

// Field is the card's member holding its signatures.
const Field = "signatures"

// Canonical is the RFC 8785 canonical form of the JSON card with its
// signatures left out: the bytes every signature of it is over, whoever
// computes them, from whatever spacing and member order the card was
// served in.
func Canonical(card []byte) ([]byte, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(card, &members); err != nil || members == nil {
		return nil, errors.New("the card is not a JSON object")
	}
	delete(members, Field)
	raw, err := json.Marshal(members)
	if err != nil {
		return nil, fmt.Errorf("the card cannot be encoded again: %w", err)
	}
	out, err := jcs.Transform(raw)
	if err != nil {
		return nil, fmt.Errorf("the card has no canonical form (RFC 8785): %w", err)
	}
	return out, nil
}
