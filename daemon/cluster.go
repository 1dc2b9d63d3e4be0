package daemon

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/mailroom/mailroom/daemon/a2a"
	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/daemon/covenant"
	"github.com/mailroom/mailroom/daemon/httpapi"
)

// The headers a follower asserts its caller's identity to the leader
// with (docs/security.md, "Between instances"): the cluster's credential,
// and the principal and capabilities the follower authenticated the
// caller as. The leader believes them only with the credential.
const (
	HeaderClusterCredential = "Mailroom-Cluster-Credential"
	HeaderPrincipal         = "Mailroom-Principal"
	HeaderCapabilities      = "Mailroom-Capabilities"
)

// cluster is what an instance of a shared mailbox needs to forward writes
// to the leader safely (docs/security.md, hop 3): the TLS it verifies the
// leader's certificate with, and the credential it authenticates to the
// leader with in place of its callers' tokens.
//
// Why a shared secret and an asserted identity rather than the caller's
// token or an instance certificate: every instance has the same access
// file, so the follower can authenticate the caller (by token, client
// certificate or OIDC token, which the leader could not see: the TLS
// connection is the follower's) exactly as the leader would, and the
// leader's guard then authorizes the same identity. The caller's token
// never crosses the hop, and a secret file is what every deployment tool
// can hand each instance; a certificate per instance would also need a
// CA willing to issue client certificates.
type cluster struct {
	// tls is cluster_ca_file's CAs; nil is Go's defaults (the system's).
	tls *tls.Config
	// credential is what the follower sends and the leader expects: an
	// HMAC of cluster_secret_file's secret, so the secret itself never
	// crosses the network and may hold any bytes. Empty without the key:
	// the follower then forwards the caller's own credentials, as before
	// the key existed.
	credential string
	// authorize authenticates a caller of this instance (the routes' own
	// authorizer, cluster-trusting); nil without tokens.
	authorize httpapi.Authorizer
}

// clusterOf reads the cluster's files cfg names. config.Validate read
// them a moment before and refused the start if they were wrong; should
// they fail now (removed since), the instance fails closed and says so:
// it trusts no leader's certificate, or sends a credential no leader
// accepts, rather than fall back to the system's CAs or callers' tokens.
func clusterOf(cfg config.Config, logger *slog.Logger) cluster {
	var c cluster
	t, err := cfg.ClusterTLS()
	if err != nil {
		logger.Error("no leader's certificate will be trusted: writes sent to this instance while it follows are refused", "err", err)
		t = &tls.Config{RootCAs: x509.NewCertPool(), MinVersion: tls.VersionTLS12}
	}
	c.tls = t
	secret, err := cfg.ClusterSecret()
	if err != nil {
		logger.Error("the cluster's secret cannot be read: the leader will refuse the writes this instance forwards", "err", err)
		secret = make([]byte, config.MinClusterSecret)
		_, _ = rand.Read(secret)
	}
	if secret != nil {
		c.credential = clusterCredential(secret)
	} else if cfg.Store == config.StorePostgres && len(cfg.Tokens) > 0 {
		logger.Warn("without cluster_secret_file a follower forwards each caller's credentials to the leader as the caller sent them; set it (the same file on every instance) so they never leave the instance they were sent to")
	}
	return c
}

// clusterCredential is the credential of secret on the wire.
func clusterCredential(secret []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("mailroom cluster credential v1"))
	return hex.EncodeToString(m.Sum(nil))
}

// trusting is az, which also believes the identity an instance of the
// cluster asserts with the cluster's credential; az itself without a
// credential or without authentication (no tokens: nothing to assert).
func (c cluster) trusting(az httpapi.Authorizer) httpapi.Authorizer {
	if c.credential == "" || az == nil {
		return az
	}
	return clusterAuthorizer{next: az, credential: []byte(c.credential)}
}

// authenticating is c with the authorizer its forwarder authenticates
// callers with before it asserts their identity.
func (c cluster) authenticating(az httpapi.Authorizer) cluster {
	c.authorize = az
	return c
}

// identify readies r to be forwarded: with the cluster's credential, its
// caller authenticated here and asserted to the leader, its own
// credentials removed; without, as it came. Either way a client cannot
// assert an identity of its own through this instance. A request with no
// credentials at all goes as it came too: there is nothing to replay, and
// the leader serves it (the card, Covenant's health) or refuses it in the
// same words as this instance would. It reports false when credentials
// the request carries are refused: r is then served here, by routes that
// refuse it in their own words, so a token that failed here (mistyped,
// revoked) never crosses the network either.
func (c cluster) identify(r *http.Request) bool {
	for _, h := range []string{HeaderClusterCredential, HeaderPrincipal, HeaderCapabilities} {
		r.Header.Del(h)
	}
	if c.credential == "" || c.authorize == nil {
		return true
	}
	ctx, err := c.authorize.Authorize(r, routeFamily(r))
	if err != nil {
		anonymous := r.Header.Get("Authorization") == "" && (r.TLS == nil || len(r.TLS.PeerCertificates) == 0)
		return anonymous
	}
	id := auth.IdentityFrom(ctx)
	r.Header.Del("Authorization")
	r.Header.Set(HeaderClusterCredential, c.credential)
	r.Header.Set(HeaderPrincipal, url.PathEscape(id.Principal)) // a principal may hold any printable UTF-8
	r.Header.Set(HeaderCapabilities, strings.Join(id.Capabilities(), " "))
	return true
}

// routeFamily is the route r is authenticated as, as each face names it.
func routeFamily(r *http.Request) string {
	switch {
	case strings.HasPrefix(r.URL.Path, a2a.Prefix):
		return a2a.Prefix
	case strings.HasPrefix(r.URL.Path, covenant.Prefix):
		return covenant.Prefix
	}
	return r.URL.Path
}

// clusterAuthorizer authenticates a request carrying the cluster's
// credential as the identity it asserts, and every other as next does.
type clusterAuthorizer struct {
	next       httpapi.Authorizer
	credential []byte
}

func (a clusterAuthorizer) Authorize(r *http.Request, route string) (context.Context, error) {
	if route == httpapi.RouteHealth {
		return a.next.Authorize(r, route)
	}
	id, ok := a.asserted(r)
	if !ok {
		return a.next.Authorize(r, route)
	}
	ctx := auth.WithIdentity(r.Context(), id)
	if route == httpapi.RouteMetrics {
		return ctx, id.CheckRead()
	}
	return ctx, nil
}

// asserted is the identity r's headers assert, when r carries the
// cluster's credential (compared in constant time) and the identity is
// one an access entry could hold.
func (a clusterAuthorizer) asserted(r *http.Request) (auth.Identity, bool) {
	got := r.Header.Get(HeaderClusterCredential)
	if got == "" || subtle.ConstantTimeCompare([]byte(got), a.credential) != 1 {
		return auth.Identity{}, false
	}
	principal, err := url.PathUnescape(r.Header.Get(HeaderPrincipal))
	if err != nil {
		return auth.Identity{}, false
	}
	id, err := auth.AssertedIdentity(principal, strings.Fields(r.Header.Get(HeaderCapabilities)))
	return id, err == nil
}

// clientTLS is the TLS the forwarder reaches the leader with: the
// cluster's, and without a client certificate of its own one that notes
// in asked when a leader asks for one. A leader that requires it ends
// the connection after the handshake (TLS 1.3), which HTTP/2 reports as
// a connection it could not establish, without the reason.
func (c cluster) clientTLS(asked *atomic.Bool) *tls.Config {
	t := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.tls != nil {
		t = c.tls.Clone()
	}
	if len(t.Certificates) == 0 && t.GetClientCertificate == nil {
		t.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			asked.Store(true)
			return &tls.Certificate{}, nil // none: the handshake goes on without one
		}
	}
	return t
}

// certHint is what a failed forward adds when the leader asked for a
// client certificate this instance does not have.
func certHint(asked bool) string {
	if !asked {
		return ""
	}
	return "; the leader asks for a client certificate and this instance has none: if its tls_client_auth is require, set cluster_cert_file and cluster_key_file to a client certificate of a CA in its tls_client_ca_file"
}

// leaderRefused says, when err is the leader's certificate refused in the
// handshake, what went wrong and what to set; "" otherwise. The
// handshake comes before the request is written: the write certainly
// did not take effect.
func leaderRefused(err error) string {
	v, ok := errors.AsType[*tls.CertificateVerificationError](err)
	if !ok {
		return ""
	}
	return "presented a certificate this instance cannot verify (" + v.Err.Error() + "); the write was not sent to it: " +
		"set cluster_ca_file to the CA that issued the instances' certificates, and advertise_url to a name the leader's certificate holds"
}
