package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/mailroom/mailroom/mailbox"
)

// OIDC bearer tokens (workload identity tokens: a cloud's, Kubernetes'
// projected service account tokens, SPIFFE JWT-SVIDs, any OpenID Connect
// issuer's), verified by go-oidc against the issuer's discovery document
// and key set, never by JOSE of our own.

// MaxOIDCTokenBytes bounds a bearer token taken to the issuer's keys:
// workload tokens are one or two KiB, and a token is parsed (base64 and
// JSON) before its signature says whether it is worth anything.
const MaxOIDCTokenBytes = 8 << 10

// DefaultOIDCRefresh is how often at most the issuer's discovery document
// or key set is fetched again: a rotation is seen within it, and a caller
// inventing key ids costs the issuer one fetch per interval.
const DefaultOIDCRefresh = 30 * time.Second

// OIDCConfig says whose tokens are accepted and how one becomes an
// identity.
type OIDCConfig struct {
	// Issuer is the issuer's URL, exactly as its tokens' iss says it;
	// its discovery document is at Issuer/.well-known/openid-configuration.
	Issuer string
	// Audience must be among a token's aud.
	Audience string
	// PrincipalClaim names the claim whose value is the caller ("sub"
	// when empty): the principal of the tokens entry whose oidc_subject
	// it is, or else itself, which must then be an agent id.
	PrincipalClaim string
	// CapsClaim, when set, names a claim listing capabilities the token
	// grants (beside its entry's).
	CapsClaim string
	// Client fetches the discovery document and the key set (its
	// transport holds the CAs the issuer is verified with).
	Client *http.Client
	// MinRefresh bounds fetches (DefaultOIDCRefresh when 0).
	MinRefresh time.Duration
}

// WithOIDC accepts the issuer's tokens beside the static ones.
func WithOIDC(c OIDCConfig) Option {
	return func(a *Authenticator) { a.oidcConfig = &c }
}

// oidcIssuer verifies tokens of one issuer. Its verifier is made at the
// first token, not at start: an issuer that is down must not stop the
// daemon, only refuse its own tokens while it is.
type oidcIssuer struct {
	cfg      OIDCConfig
	now      func() time.Time
	subjects map[string]*oidcEntry
	log      *slog.Logger

	mu       sync.Mutex
	verifier *oidc.IDTokenVerifier
	tried    time.Time // the last discovery that failed
	err      error
}

type oidcEntry struct {
	id      Identity
	revoked bool
}

func newOIDCIssuer(c OIDCConfig, now func() time.Time, subjects map[string]*oidcEntry, log *slog.Logger) *oidcIssuer {
	if c.PrincipalClaim == "" {
		c.PrincipalClaim = "sub"
	}
	if c.MinRefresh <= 0 {
		c.MinRefresh = DefaultOIDCRefresh
	}
	if c.Client == nil {
		c.Client = http.DefaultClient
	}
	return &oidcIssuer{cfg: c, now: now, subjects: subjects, log: log}
}

// verifierFor discovers the issuer once, and again after a failure no
// more than once per MinRefresh.
func (o *oidcIssuer) verifierFor(ctx context.Context) (*oidc.IDTokenVerifier, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.verifier != nil {
		return o.verifier, nil
	}
	if !o.tried.IsZero() && o.now().Sub(o.tried) < o.cfg.MinRefresh {
		return nil, o.err
	}
	ctx, cancel := context.WithTimeout(oidc.ClientContext(ctx, o.cfg.Client), 10*time.Second)
	defer cancel()
	p, err := oidc.NewProvider(ctx, o.cfg.Issuer)
	var meta struct {
		JWKSURL string   `json:"jwks_uri"`
		Algs    []string `json:"id_token_signing_alg_values_supported"`
	}
	if err == nil {
		err = p.Claims(&meta)
	}
	if err == nil && meta.JWKSURL == "" {
		err = errors.New("its discovery document has no jwks_uri")
	}
	if err != nil {
		o.tried, o.err = o.now(), fmt.Errorf("the issuer's discovery document could not be read (%v)", err)
		return nil, o.err
	}
	keys := &jwks{url: meta.JWKSURL, client: o.cfg.Client, minRefresh: o.cfg.MinRefresh, now: o.now}
	o.verifier = oidc.NewVerifier(o.cfg.Issuer, keys, &oidc.Config{ClientID: o.cfg.Audience, SupportedSigningAlgs: acceptedAlgs(meta.Algs), Now: o.now})
	return o.verifier, nil
}

// acceptedAlgs are the asymmetric algorithms the issuer says it signs
// with, or every asymmetric one when it does not say.
func acceptedAlgs(declared []string) []string {
	var out []string
	for _, a := range signingAlgs {
		if len(declared) == 0 || slices.Contains(declared, string(a)) {
			out = append(out, string(a))
		}
	}
	if len(out) == 0 {
		// The issuer signs only with algorithms refused here (HS256,
		// none): "RS256" accepts nothing it signs, which is the point.
		out = []string{oidc.RS256}
	}
	return out
}

// authenticate verifies raw and maps it to an identity. Every refusal is
// a 401 whose challenge says invalid_token and why (RFC 6750), and is
// logged: an issuer that cannot be reached shows there first.
func (o *oidcIssuer) authenticate(ctx context.Context, raw string) (Identity, error) {
	id, err := o.verify(ctx, raw)
	var r *tokenRefusal
	if errors.As(err, &r) {
		o.log.Info("OIDC token refused", "issuer", o.cfg.Issuer, "reason", r.description)
	}
	return id, err
}

func (o *oidcIssuer) verify(ctx context.Context, raw string) (Identity, error) {
	if len(raw) > MaxOIDCTokenBytes {
		return Identity{}, invalidToken(fmt.Sprintf("the token is %d bytes, over the bound of %d", len(raw), MaxOIDCTokenBytes))
	}
	v, err := o.verifierFor(ctx)
	if err != nil {
		return Identity{}, invalidToken(err.Error())
	}
	tok, err := v.Verify(ctx, raw)
	if err != nil {
		return Identity{}, invalidToken(describeOIDC(err))
	}
	var claims map[string]any
	if err := tok.Claims(&claims); err != nil {
		return Identity{}, invalidToken("its claims do not read (" + err.Error() + ")")
	}
	return o.identity(claims)
}

// identity is the caller a verified token's claims name.
func (o *oidcIssuer) identity(claims map[string]any) (Identity, error) {
	name := o.cfg.PrincipalClaim
	v, ok := claims[name].(string)
	if !ok || v == "" {
		return Identity{}, invalidToken(fmt.Sprintf("its claim %q is missing or not a string", name))
	}
	id := Identity{Principal: v, caps: map[string]bool{}}
	if e := o.subjects[v]; e != nil {
		if e.revoked {
			return Identity{}, invalidToken(fmt.Sprintf("the tokens entry mapping oidc_subject %q to %s is revoked", v, e.id.Principal))
		}
		id.Principal = e.id.Principal
		for c := range e.id.caps {
			id.caps[c] = true
		}
	} else if mailbox.ValidateAgentID(name, v) != nil {
		return Identity{}, invalidToken(fmt.Sprintf("its claim %q is %q, not an agent id, and no tokens entry has it as oidc_subject", name, v))
	}
	if o.cfg.CapsClaim != "" {
		list, _ := claims[o.cfg.CapsClaim].([]any) // absent: no capability from it
		for _, c := range list {
			s, _ := c.(string)
			if err := ValidateCap(s); err != nil {
				return Identity{}, invalidToken(fmt.Sprintf("its claim %q: %v", o.cfg.CapsClaim, err))
			}
			id.caps[s] = true
		}
	}
	return id, nil
}

// describeOIDC words go-oidc's refusals for an operator reading a log.
func describeOIDC(err error) string {
	var expired *oidc.TokenExpiredError
	switch msg := err.Error(); {
	case errors.As(err, &expired):
		return "expired at " + expired.Expiry.UTC().Format(time.RFC3339)
	case strings.Contains(msg, "before the nbf"):
		return "not yet valid: " + strings.TrimPrefix(msg, "oidc: ")
	case strings.Contains(msg, "malformed jwt"):
		return "not a JWT signed with an accepted algorithm (" + strings.Join(algNames(), ", ") + "): " + strings.TrimPrefix(msg, "oidc: ")
	default:
		return strings.TrimPrefix(msg, "oidc: ")
	}
}

func algNames() []string {
	out := make([]string, len(signingAlgs))
	for i, a := range signingAlgs {
		out[i] = string(a)
	}
	return out
}

// tokenRefusal is a refused OIDC token: a 401 whose challenge carries its
// reason as error_description.
type tokenRefusal struct {
	err         error // a *mailbox.Error of CodeUnauthorized
	description string
}

func (e *tokenRefusal) Error() string { return e.err.Error() }
func (e *tokenRefusal) Unwrap() error { return e.err }

func invalidToken(why string) error {
	return &tokenRefusal{err: mailbox.Errorf(mailbox.CodeUnauthorized, "Authorization: OIDC token refused: %s", why), description: why}
}

// looksLikeJWT reports whether tok is shaped as a JWS in compact form:
// three base64url parts joined by dots, the last empty when it is
// unsigned (alg "none": taken to the issuer's verifier, which refuses it
// saying why). Tokens `mailroom token new` makes never are (they hold no
// dot).
func looksLikeJWT(tok string) bool {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return false
	}
	for i, p := range parts {
		if (p == "" && i < 2) || strings.Trim(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
			return false
		}
	}
	return true
}

// ChallengeFor is Challenge for a 401 answering err: a refused OIDC token
// adds its reason as error_description (RFC 6750, section 3), in the
// characters the header allows.
func ChallengeFor(authorization string, err error) string {
	c := Challenge(authorization)
	var r *tokenRefusal
	if authorization == "" || !errors.As(err, &r) {
		return c
	}
	desc := strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e || r == '"' || r == '\\' {
			return '\''
		}
		return r
	}, r.description)
	return c + `, error_description="` + desc + `"`
}
