package config

import "github.com/mailroom/mailroom/daemon/a2a/cardsig"

// CardSigner is the signer of every agent's card, read from
// card_signing_key_file; nil when it is not set. A key that does not
// read, does not parse or cannot sign cards (another curve, RSA under
// 2048 bits) is refused, naming the key, the file and what was expected:
// Validate calls it at start, so a daemon does not serve cards no one
// can verify.
func (c Config) CardSigner() (*cardsig.Signer, error) {
	if c.CardSigningKeyFile == "" {
		return nil, nil
	}
	return cardsig.LoadSigner("card_signing_key_file", c.CardSigningKeyFile)
}

// BearerTokens reports whether the daemon takes bearer tokens: a tokens
// entry with a token (or its hash), rather than one that only maps a
// client certificate, or an OIDC issuer's tokens (sent as bearer tokens,
// and so declared as one beside the issuer's scheme, for the clients that
// attach credentials only to an HTTP bearer scheme). The cards declare
// the bearer scheme only then.
func (c Config) BearerTokens() bool {
	if c.OIDCIssuer != "" {
		return true
	}
	for _, t := range c.Tokens {
		if t.Token != "" || t.SHA256 != "" {
			return true
		}
	}
	return false
}
