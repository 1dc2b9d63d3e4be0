package remote

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-jose/go-jose/v4"

	"github.com/mailroom/mailroom/daemon/a2a/cardsig"
	"github.com/mailroom/mailroom/mailbox"
)

// ErrCardNotVerified: the remote must serve a signed card
// (require_signed_card) and the card it served does not verify against
// the keys it was registered with, or those keys could not be read. The
// dispatcher delivers nothing to it until a card verifies.
var ErrCardNotVerified = errors.New("the remote's card does not verify")

// SpecOf is how the daemon calls the remote a registration names.
func SpecOf(r mailbox.RemoteSpec) Spec {
	return Spec{URL: r.URL, Binding: r.Binding, RequireSignedCard: r.RequireSignedCard, CardJWKSURL: r.CardJWKSURL, CardJWKS: r.CardJWKS}
}

// verifyCard checks the card read at cardURL against the keys the spec
// names, read anew at every resolve so that a key the remote rotates in
// (or revokes) is seen with its next card.
func (c *Client) verifyCard(ctx context.Context, spec Spec, cardURL string, body []byte) error {
	keys, err := c.cardKeys(ctx, spec)
	if err == nil {
		err = cardsig.Verify(body, keys)
	}
	if err == nil {
		return nil
	}
	what := "its keys cannot be used: "
	if errors.Is(err, cardsig.ErrUnsigned) || errors.Is(err, cardsig.ErrUntrusted) || errors.Is(err, cardsig.ErrBadSignature) {
		what = ""
	}
	return &Error{Kind: Unusable, Op: "verify card", cause: fmt.Errorf("%w: %w", ErrCardNotVerified, err),
		Message: "the card at " + redactURL(cardURL) + " must be signed (require_signed_card) and does not verify: " + what + c.auth.scrub(err.Error()) +
			"; nothing is delivered to the agent until its card verifies"}
}

// cardKeys are the keys the remote's card is verified with: the
// registration's own, or those published at its card_jwks_url (read
// without the remote's credentials, which are for the remote's calls).
func (c *Client) cardKeys(ctx context.Context, spec Spec) (jose.JSONWebKeySet, error) {
	if spec.CardJWKS != "" {
		set, err := cardsig.ParseKeySet([]byte(spec.CardJWKS))
		if err != nil {
			return set, fmt.Errorf("card_jwks: %w", err)
		}
		return set, nil
	}
	if spec.CardJWKSURL == "" {
		return jose.JSONWebKeySet{}, errors.New("no keys are registered to verify it with (card_jwks_url or card_jwks)")
	}
	keysClient := &Client{hc: c.hc, auth: &Auth{}}
	body, err := keysClient.get(ctx, "GET card keys", spec.CardJWKSURL)
	if err != nil {
		return jose.JSONWebKeySet{}, fmt.Errorf("card_jwks_url: %w", err)
	}
	set, err := cardsig.ParseKeySet(body)
	if err != nil {
		return set, fmt.Errorf("card_jwks_url %s: %w", redactURL(spec.CardJWKSURL), err)
	}
	return set, nil
}
