// Package auth binds bearer tokens to principals and their capabilities.
// Tokens are kept only as SHA-256 hashes and compared in constant time; a
// token never appears in an error, a log line or a metric.
package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/mailroom/mailroom/mailbox"
)

// Capabilities. Send and respond take a suffix: the recipient a principal
// may send to, or the sender it may answer; "*" means any.
const (
	CapSendPrefix    = "a2a.send."
	CapRecv          = "a2a.recv"
	CapRespondPrefix = "a2a.respond."
	CapDrain         = "a2a.drain"
	CapRead          = "a2a.read"
	CapRequeue       = "a2a.repair.requeue"
	CapForceError    = "a2a.repair.force_error"
	CapCompact       = "a2a.compact"
	// CapRegister registers and deregisters agents' A2A cards.
	CapRegister = "a2a.register"
	CapAdmin    = "a2a.admin"
)

// Token is one configured access entry: who it speaks for and what it may
// do. Exactly one of Token (the secret itself, for quick local setups),
// SHA256 (its hex hash, what `mailroom token new` prints), or, for a
// client certificate, SPIFFEID, DNS or CN (cert.go), or, for an OIDC
// token, OIDCSubject (oidc.go) is set.
type Token struct {
	Principal string `yaml:"principal"`
	Token     string `yaml:"token,omitempty"`
	SHA256    string `yaml:"sha256,omitempty"`
	SPIFFEID  string `yaml:"spiffe_id,omitempty"`
	DNS       string `yaml:"dns,omitempty"`
	CN        string `yaml:"cn,omitempty"`
	// OIDCSubject names the value of an OIDC token's principal claim
	// (oidc.go).
	OIDCSubject string   `yaml:"oidc_subject,omitempty"`
	Caps        []string `yaml:"caps"`
	Revoked     bool     `yaml:"revoked,omitempty"`
}

// ValidateCap checks one capability name.
func ValidateCap(c string) error {
	switch c {
	case CapRecv, CapDrain, CapRead, CapRequeue, CapForceError, CapCompact, CapRegister, CapAdmin:
		return nil
	}
	for _, p := range []string{CapSendPrefix, CapRespondPrefix} {
		if rest, ok := strings.CutPrefix(c, p); ok {
			if rest == "*" || mailbox.ValidateAgentID("cap", rest) == nil {
				return nil
			}
		}
	}
	return fmt.Errorf("unknown capability %q: expected a2a.send.<recipient|*>, a2a.recv, a2a.respond.<sender|*>, a2a.drain, a2a.read, a2a.repair.requeue, a2a.repair.force_error, a2a.compact, a2a.register or a2a.admin", c)
}

// Identity is an authenticated caller.
type Identity struct {
	Principal string
	caps      map[string]bool
}

// Can reports whether the identity holds capability c (or its wildcard, or admin).
func (id Identity) Can(c string) bool {
	if id.caps[CapAdmin] || id.caps[c] {
		return true
	}
	for _, p := range []string{CapSendPrefix, CapRespondPrefix} {
		if strings.HasPrefix(c, p) && id.caps[p+"*"] {
			return true
		}
	}
	return false
}

// Admin reports whether the identity may act on others' behalf.
func (id Identity) Admin() bool { return id.caps[CapAdmin] }

type entry struct {
	hash    [sha256.Size]byte
	id      Identity
	revoked bool
}

// Authenticator checks bearer tokens and client certificates against the
// configured set.
type Authenticator struct {
	entries []entry
	// certs are the entries naming a client certificate (cert.go).
	certs   []certEntry
	revoked revocations
	// revokedList is WithRevoked's, parsed by New into revoked.
	revokedList []RevokedCertificate
	// clientCAs is the pool a client certificate must chain to, asked at
	// each request because it is reloaded with the served certificate.
	clientCAs func() *x509.CertPool
	log       *slog.Logger
	now       func() time.Time
	// subjects are the entries naming an OIDC token's principal claim;
	// oidc verifies the issuer's tokens (nil without WithOIDC, which
	// sets oidcConfig).
	subjects   map[string]*oidcEntry
	oidc       *oidcIssuer
	oidcConfig *OIDCConfig
}

// Option configures an Authenticator beyond its entries.
type Option func(*Authenticator)

// WithClientCAs gives the pool client certificates are verified against
// when the handshake did not verify them (tls_client_auth: request).
func WithClientCAs(pool func() *x509.CertPool) Option {
	return func(a *Authenticator) { a.clientCAs = pool }
}

// WithLogger is told of every refused client certificate: which it was
// and why, which its 401 cannot say to an operator.
func WithLogger(l *slog.Logger) Option {
	return func(a *Authenticator) { a.log = l }
}

// New validates the configured entries. Their messages name tokens[i],
// never a secret.
func New(tokens []Token, opts ...Option) (*Authenticator, error) {
	a := &Authenticator{log: slog.New(slog.DiscardHandler), now: time.Now, subjects: map[string]*oidcEntry{}}
	for _, o := range opts {
		o(a)
	}
	var err error
	if a.revoked, err = parseRevoked(a.revokedList); err != nil {
		return nil, err
	}
	for i, t := range tokens {
		key := fmt.Sprintf("tokens[%d]", i)
		if err := mailbox.ValidatePrincipal(key+".principal", t.Principal); err != nil {
			return nil, fmt.Errorf("%s.principal: got %q, expected a principal such as planner@local or an operator name", key, t.Principal)
		}
		if err := checkOneName(key, t); err != nil {
			return nil, err
		}
		switch {
		case isCertEntry(t):
			err = a.addCert(key, t)
		case t.OIDCSubject != "":
			err = a.addSubject(key, t)
		default:
			err = a.addToken(key, t)
		}
		if err != nil {
			return nil, err
		}
	}
	if a.oidcConfig != nil {
		a.oidc = newOIDCIssuer(*a.oidcConfig, a.now, a.subjects, a.log)
	}
	return a, nil
}

// checkOneName refuses an entry naming its caller twice (which would it
// be?) or not at all.
func checkOneName(key string, t Token) error {
	var set []string
	for _, f := range []struct{ name, v string }{{"token", t.Token}, {"sha256", t.SHA256}, {"spiffe_id", t.SPIFFEID}, {"dns", t.DNS}, {"cn", t.CN}, {"oidc_subject", t.OIDCSubject}} {
		if f.v != "" {
			set = append(set, f.name)
		}
	}
	switch {
	case len(set) == 0:
		return fmt.Errorf("%s: expected token or sha256, or one of spiffe_id, dns and cn for a client certificate, or oidc_subject for an OIDC token", key)
	case len(set) == 2 && set[0] == "token" && set[1] == "sha256":
		return fmt.Errorf("%s: both token and sha256 are set; keep only sha256", key)
	case len(set) > 1:
		return fmt.Errorf("%s: %s are set; expected exactly one of token, sha256, spiffe_id, dns, cn and oidc_subject", key, strings.Join(set, " and "))
	}
	return nil
}

// addToken adds an entry of a bearer token, given or by its hash.
func (a *Authenticator) addToken(key string, t Token) error {
	var e entry
	if t.Token != "" {
		e.hash = sha256.Sum256([]byte(t.Token))
	} else {
		b, err := hex.DecodeString(t.SHA256)
		if err != nil || len(b) != sha256.Size {
			return fmt.Errorf("%s.sha256: expected 64 hex digits (the output of 'mailroom token new')", key)
		}
		copy(e.hash[:], b)
	}
	id, err := identityOf(key, t)
	if err != nil {
		return err
	}
	e.id = id
	e.revoked = t.Revoked
	for _, other := range a.entries {
		if other.hash == e.hash {
			return fmt.Errorf("%s: the same token is configured twice", key)
		}
	}
	a.entries = append(a.entries, e)
	return nil
}

// addSubject adds an entry mapping an OIDC token's principal claim to a
// principal and capabilities (oidc.go).
func (a *Authenticator) addSubject(key string, t Token) error {
	id, err := identityOf(key, t)
	if err != nil {
		return err
	}
	if a.subjects[t.OIDCSubject] != nil {
		return fmt.Errorf("%s.oidc_subject: got %q, already mapped by an entry before it", key, t.OIDCSubject)
	}
	a.subjects[t.OIDCSubject] = &oidcEntry{id: id, revoked: t.Revoked}
	return nil
}

// identityOf is an entry's principal and capabilities, checked.
func identityOf(key string, t Token) (Identity, error) {
	if len(t.Caps) == 0 {
		return Identity{}, fmt.Errorf("%s.caps: empty, expected at least one capability", key)
	}
	id := Identity{Principal: t.Principal, caps: map[string]bool{}}
	for j, c := range t.Caps {
		if err := ValidateCap(c); err != nil {
			return Identity{}, fmt.Errorf("%s.caps[%d]: %v", key, j, err)
		}
		id.caps[c] = true
	}
	return id, nil
}

// AssertedIdentity is the identity another instance of the cluster
// authenticated and vouched for (daemon/cluster.go): principal with caps,
// each checked as an access entry's are. No caps is an identity that may
// do only what needs none (an OIDC caller's token may carry none, which an
// access entry may not).
func AssertedIdentity(principal string, caps []string) (Identity, error) {
	if err := mailbox.ValidatePrincipal("principal", principal); err != nil {
		return Identity{}, err
	}
	id := Identity{Principal: principal, caps: map[string]bool{}}
	for j, c := range caps {
		if err := ValidateCap(c); err != nil {
			return Identity{}, fmt.Errorf("caps[%d]: %v", j, err)
		}
		id.caps[c] = true
	}
	return id, nil
}

// Enabled reports whether any token, client certificate or OIDC issuer is
// configured;
// without one the daemon serves loopback only and does not authenticate.
func (a *Authenticator) Enabled() bool {
	return a != nil && (len(a.entries) > 0 || len(a.certs) > 0 || a.oidc != nil)
}

// Challenge is the WWW-Authenticate header of a 401 (RFC 6750, section
// 3): the Bearer scheme and the daemon's realm, and error="invalid_token"
// when the request carried an Authorization header (authorization), which
// was refused. Every route that answers 401 sends it, so a client learns
// the scheme it should retry with.
func Challenge(authorization string) string {
	if authorization == "" {
		return `Bearer realm="mailroom"`
	}
	return `Bearer realm="mailroom", error="invalid_token"`
}

// Authenticate checks an Authorization header value. Every configured hash
// is compared, in constant time, so timing does not tell which matched.
// A token that matches none and is shaped as a JWT is the OIDC issuer's
// to judge, when one is configured.
func (a *Authenticator) Authenticate(header string) (Identity, error) {
	return a.bearer(context.Background(), header)
}

func (a *Authenticator) bearer(ctx context.Context, header string) (Identity, error) {
	tok, ok := strings.CutPrefix(header, "Bearer ")
	if header == "" {
		return Identity{}, mailbox.Errorf(mailbox.CodeUnauthorized, "Authorization: missing; expected \"Bearer <token>\" (see 'mailroom token new')")
	}
	tok = strings.TrimSpace(tok)
	if !ok || tok == "" || strings.ContainsAny(tok, " \t") {
		return Identity{}, mailbox.Errorf(mailbox.CodeUnauthorized, "Authorization: malformed; expected \"Bearer <token>\"")
	}
	h := sha256.Sum256([]byte(tok))
	match := -1
	for i := range a.entries {
		if subtle.ConstantTimeCompare(h[:], a.entries[i].hash[:]) == 1 {
			match = i
		}
	}
	if match < 0 && a.oidc != nil && looksLikeJWT(tok) {
		return a.oidc.authenticate(ctx, tok)
	}
	if match < 0 {
		return Identity{}, mailbox.Errorf(mailbox.CodeUnauthorized, "Authorization: unknown token")
	}
	if a.entries[match].revoked {
		return Identity{}, mailbox.Errorf(mailbox.CodeUnauthorized, "Authorization: this token was revoked")
	}
	return a.entries[match].id, nil
}

// Forbidden is the 403 for an identity lacking capability c.
func Forbidden(id Identity, c, doing string) error {
	return &mailbox.Error{Code: mailbox.CodeForbidden,
		Message: fmt.Sprintf("%s may not %s: needs capability %s", id.Principal, doing, c),
		Details: &mailbox.ErrorDetails{Capability: c}}
}

// NewToken returns a fresh random token and its hex SHA-256 hash.
func NewToken() (token, hash string, err error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", "", err
	}
	token = "mr_" + base64.RawURLEncoding.EncodeToString(b)
	h := sha256.Sum256([]byte(token))
	return token, hex.EncodeToString(h[:]), nil
}

// Capabilities lists the identity's capabilities, sorted.
func (id Identity) Capabilities() []string {
	out := make([]string, 0, len(id.caps))
	for c := range id.caps {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// Unauthenticated is the identity of every caller when no tokens are
// configured: the daemon then listens on loopback only and trusts it, so
// it may do everything, under no principal.
func Unauthenticated() Identity { return unauthenticated }

// unauthenticated is shared: an identity is never changed once made, and
// every request of a daemon without tokens asks for it.
var unauthenticated = Identity{caps: map[string]bool{CapAdmin: true}}

type identityKey struct{}

// WithIdentity returns a context carrying the caller's identity (and its
// principal, for the service's audit trail).
func WithIdentity(ctx context.Context, id Identity) context.Context {
	return mailbox.WithPrincipal(context.WithValue(ctx, identityKey{}, id), id.Principal)
}

// IdentityFrom returns the caller's identity; without one (no tokens
// configured) the caller is Unauthenticated.
func IdentityFrom(ctx context.Context) Identity {
	if id, ok := ctx.Value(identityKey{}).(Identity); ok {
		return id
	}
	return Unauthenticated()
}
