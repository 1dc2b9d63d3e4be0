package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-jose/go-jose/v4"
)

// signingAlgs are the only algorithms an OIDC token may be signed with:
// asymmetric ones, whose verification key is public. "none" and the HMAC
// algorithms are not among them, so a token that names them does not
// parse, and a public key can never be used as an HMAC secret.
var signingAlgs = []jose.SignatureAlgorithm{
	oidc.RS256, oidc.RS384, oidc.RS512, oidc.ES256, oidc.ES384, oidc.ES512,
	oidc.PS256, oidc.PS384, oidc.PS512, oidc.EdDSA,
}

// maxJWKSBytes bounds the issuer's key set as read: a few keys take a few
// KiB.
const maxJWKSBytes = 1 << 20

// jwks is the issuer's key set (its jwks_uri), fetched when a token names
// a key it does not hold. go-oidc's RemoteKeySet does the same but fetches
// again for every such token, one after the other: a caller sending
// tokens with made-up key ids would have the daemon fetch the issuer's
// keys as fast as it sends them. Here a fetch happens at most once per
// minRefresh; a token of a key still unknown in between is refused.
type jwks struct {
	url        string
	client     *http.Client
	minRefresh time.Duration
	now        func() time.Time

	mu   sync.RWMutex
	keys []jose.JSONWebKey

	// fetching makes fetches one at a time; last is when the last began.
	fetching sync.Mutex
	last     time.Time
}

// VerifySignature is oidc.KeySet's: the payload of a token signed by one
// of the issuer's keys. go-oidc's verifier has already refused an
// algorithm outside the accepted ones before it asks.
func (k *jwks) VerifySignature(ctx context.Context, raw string) ([]byte, error) {
	jws, err := jose.ParseSignedCompact(raw, signingAlgs)
	if err != nil {
		return nil, err
	}
	if len(jws.Signatures) != 1 {
		return nil, errors.New("expected one signature")
	}
	kid := jws.Signatures[0].Header.KeyID
	k.mu.RLock()
	keys := k.keys
	k.mu.RUnlock()
	if payload, ok := verifyWith(jws, keys, kid); ok {
		return payload, nil
	}
	keys, err = k.refresh(ctx)
	if err != nil {
		return nil, err
	}
	if payload, ok := verifyWith(jws, keys, kid); ok {
		return payload, nil
	}
	return nil, fmt.Errorf("no key of the issuer's key set (fetched again) verifies it (kid %q)", kid)
}

// verifyWith tries the keys named kid (every key when the token names
// none). A key that declares its algorithm is used only with that one:
// the algorithm comes from the key, never from the token alone.
func verifyWith(jws *jose.JSONWebSignature, keys []jose.JSONWebKey, kid string) ([]byte, bool) {
	alg := jws.Signatures[0].Header.Algorithm
	for i := range keys {
		key := &keys[i]
		if (kid != "" && key.KeyID != kid) || (key.Algorithm != "" && key.Algorithm != alg) || (key.Use != "" && key.Use != "sig") {
			continue
		}
		if payload, err := jws.Verify(key); err == nil {
			return payload, true
		}
	}
	return nil, false
}

// refresh fetches the key set unless it was fetched less than minRefresh
// ago, and returns the keys held after.
func (k *jwks) refresh(ctx context.Context) ([]jose.JSONWebKey, error) {
	k.fetching.Lock()
	defer k.fetching.Unlock()
	if since := k.now().Sub(k.last); !k.last.IsZero() && since < k.minRefresh {
		return nil, fmt.Errorf("it names a key the issuer's key set did not hold %s ago, and the set is fetched at most once per %s", since.Round(time.Millisecond), k.minRefresh)
	}
	k.last = k.now()
	keys, err := k.fetch(ctx)
	if err != nil {
		return nil, fmt.Errorf("the issuer's key set could not be fetched from %s (%v)", k.url, err)
	}
	k.mu.Lock()
	k.keys = keys
	k.mu.Unlock()
	return keys, nil
}

func (k *jwks) fetch(ctx context.Context) ([]jose.JSONWebKey, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := k.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("answered %s", resp.Status)
	}
	var set jose.JSONWebKeySet
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxJWKSBytes)).Decode(&set); err != nil {
		return nil, fmt.Errorf("not a JSON Web Key Set: %v", err)
	}
	var public []jose.JSONWebKey
	for _, key := range set.Keys {
		// A private or symmetric key in the set is the issuer's mistake;
		// it verifies nothing here.
		if key.Valid() && key.IsPublic() {
			public = append(public, key)
		}
	}
	return public, nil
}
