package outbound

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	a2aremote "github.com/mailroom/mailroom/daemon/a2a/remote"
)

// How the dispatcher reaches one remote agent: over the TLS its remotes
// entry names (its own transport, so its CA and client certificate are
// its alone), with the OAuth 2.0 token its card asks for when the entry
// holds client credentials. A remote agent's client is made once per
// dispatcher and kept across its loops (a term, a re-registration), so
// its connections and its token outlive them.

// OAuthClient is a remote agent's OAuth 2.0 client credentials (its
// remotes entry's client_id and client_secret). String hides the secret.
type OAuthClient struct {
	ID, Secret string
}

// String names the client, never its secret.
func (c OAuthClient) String() string { return "client_id " + c.ID + " with client_secret [redacted]" }

// GoString hides the secret from %#v too.
func (c OAuthClient) GoString() string { return "outbound.OAuthClient{" + c.String() + "}" }

// remoteClient is one remote agent's way out: the http.Client its calls
// go through and, with client credentials, the tokens they carry.
type remoteClient struct {
	hc    *http.Client
	oauth *tokenTransport // nil without client credentials
}

// clientFor is agent's remoteClient, made on first use.
func (d *Dispatcher) clientFor(agent string) *remoteClient {
	d.mu.Lock()
	defer d.mu.Unlock()
	if rc, ok := d.clients[agent]; ok {
		return rc
	}
	rc := &remoteClient{hc: d.o.HTTPClient}
	if cfg := d.o.TLS[agent]; cfg != nil {
		rc.hc = withTLS(d.o.HTTPClient, cfg)
	}
	if creds, ok := d.o.OAuth[agent]; ok {
		rc.oauth = &tokenTransport{agent: agent, creds: creds, base: rc.hc, callTimeout: d.o.CallTimeout}
		rc.hc = &http.Client{Transport: rc.oauth, CheckRedirect: rc.hc.CheckRedirect, Jar: rc.hc.Jar, Timeout: rc.hc.Timeout}
	}
	d.clients[agent] = rc
	return rc
}

// withTLS is hc with a transport of its own speaking cfg. A client whose
// transport is not an *http.Transport (a test's) is kept as it is.
func withTLS(hc *http.Client, cfg *tls.Config) *http.Client {
	base := http.DefaultTransport
	if hc.Transport != nil {
		base = hc.Transport
	}
	tr, ok := base.(*http.Transport)
	if !ok {
		return hc
	}
	tr = tr.Clone()
	tr.TLSClientConfig = cfg
	// A TLSClientConfig of one's own turns HTTP/2 off unless asked for.
	tr.ForceAttemptHTTP2 = true
	out := *hc
	out.Transport = tr
	return &out
}

// resolved takes what the remote's card says of OAuth: the flow whose
// token every later call carries.
func (rc *remoteClient) resolved(card a2aremote.Card) {
	if rc.oauth != nil {
		rc.oauth.use(card.OAuth)
	}
}

// tokenTransport puts a token from the remote's token URL on every
// request, got with the client credentials and kept until it expires
// (oauth2's ReuseTokenSource), or until the remote refuses it. Until the
// card is read it adds none: the card says where tokens come from.
type tokenTransport struct {
	agent       string
	creds       OAuthClient
	base        *http.Client
	callTimeout time.Duration

	mu   sync.Mutex
	flow *a2aremote.OAuthFlow
	src  oauth2.TokenSource
	// refused says why the card's flow is not used (a token URL that is
	// not https), "" when it is.
	refused string
}

// use switches to flow (nil: the card declares none); the same flow keeps
// its source, and so its token.
func (t *tokenTransport) use(flow *a2aremote.OAuthFlow) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if sameFlow(t.flow, flow) {
		return
	}
	t.flow, t.src, t.refused = flow, nil, ""
	if flow == nil {
		return
	}
	if why := tokenURLRefused(flow.TokenURL); why != "" {
		t.refused = why
		return
	}
	t.src = t.newSource(flow)
}

// newSource is a source of tokens for flow, with no token yet.
func (t *tokenTransport) newSource(flow *a2aremote.OAuthFlow) oauth2.TokenSource {
	cc := clientcredentials.Config{ClientID: t.creds.ID, ClientSecret: t.creds.Secret, TokenURL: flow.TokenURL, Scopes: flow.Scopes}
	// The token endpoint is called with the remote's TLS, bounded as a
	// call to the remote is.
	hc := *t.base
	if hc.Timeout == 0 {
		hc.Timeout = t.callTimeout
	}
	return cc.TokenSource(context.WithValue(context.Background(), oauth2.HTTPClient, &hc))
}

// renew replaces used, the source whose token the remote refused, with a
// new one (once: a source another call renewed already is kept), and
// returns the source to use now.
func (t *tokenTransport) renew(used oauth2.TokenSource) oauth2.TokenSource {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.src == used && t.flow != nil {
		t.src = t.newSource(t.flow)
	}
	return t.src
}

func sameFlow(a, b *a2aremote.OAuthFlow) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.TokenURL == b.TokenURL && a.Scheme == b.Scheme && strings.Join(a.Scopes, " ") == strings.Join(b.Scopes, " ")
}

// tokenURLRefused says why the client secret is not sent to u: it goes
// over https only, or to this machine (tests, a sidecar).
func tokenURLRefused(u string) string {
	p, err := url.Parse(u)
	switch {
	case err != nil || p.Host == "":
		return "the card's OAuth token URL " + strconv.Quote(u) + " is not a URL"
	case p.User != nil:
		return "the card's OAuth token URL holds credentials; expected none"
	case p.Scheme == "https":
		return ""
	case p.Scheme == "http" && loopback(p.Hostname()):
		return ""
	}
	return "the card's OAuth token URL " + p.Redacted() + " is not https: the client secret is sent over https only (or to loopback)"
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// RoundTrip sends req with a token when the card asks for one.
func (t *tokenTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.mu.Lock()
	src, flow, refused := t.src, t.flow, t.refused
	t.mu.Unlock()
	if refused != "" {
		closeBody(req)
		return nil, &tokenError{msg: "not getting an OAuth 2.0 token for " + t.agent + ": " + refused}
	}
	if src == nil {
		return t.transport().RoundTrip(req)
	}
	tok, err := src.Token()
	if err != nil {
		closeBody(req)
		return nil, t.refusal(flow, err)
	}
	out := req.Clone(req.Context())
	tok.SetAuthHeader(out)
	resp, err := t.transport().RoundTrip(out)
	if err != nil || resp.StatusCode != http.StatusUnauthorized || req.Body != nil && req.GetBody == nil {
		return resp, err
	}
	return t.again(req, resp, src, tok)
}

// again sends req once more with a new token when the remote answered
// 401 to tok, one it no longer takes (revoked before it expired, its
// issuer's keys rotated): a 401 means it did nothing. The 401 stands when
// no new token comes.
func (t *tokenTransport) again(req *http.Request, refused *http.Response, used oauth2.TokenSource, tok *oauth2.Token) (*http.Response, error) {
	src := t.renew(used)
	if src == nil {
		return refused, nil
	}
	fresh, err := src.Token()
	if err != nil || fresh.AccessToken == tok.AccessToken {
		return refused, nil
	}
	retry := req.Clone(req.Context())
	if req.GetBody != nil {
		if retry.Body, err = req.GetBody(); err != nil {
			return refused, nil
		}
	}
	refused.Body.Close()
	fresh.SetAuthHeader(retry)
	return t.transport().RoundTrip(retry)
}

func (t *tokenTransport) transport() http.RoundTripper {
	if t.base.Transport != nil {
		return t.base.Transport
	}
	return http.DefaultTransport
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// refusal words a token endpoint's failure for the operator: its URL,
// the client id, its HTTP status and RFC 6749 error, never the secret
// (an endpoint may echo what it was sent).
func (t *tokenTransport) refusal(flow *a2aremote.OAuthFlow, err error) error {
	msg := "getting an OAuth 2.0 token for " + t.agent + " from " + flow.TokenURL + " (client_id " + t.creds.ID + "): "
	var re *oauth2.RetrieveError
	switch {
	case errors.As(err, &re):
		what := ""
		if re.Response != nil {
			what = "HTTP " + re.Response.Status
		}
		if re.ErrorCode != "" {
			what += " " + re.ErrorCode
			if re.ErrorDescription != "" {
				what += ": " + bounded(re.ErrorDescription)
			}
		}
		msg += "the token endpoint refused: " + strings.TrimSpace(what) + "; check client_id and client_secret in the agent's remotes entry"
	default:
		msg += bounded(err.Error())
	}
	if len(t.creds.Secret) >= 4 {
		msg = strings.ReplaceAll(msg, t.creds.Secret, "[redacted]")
	}
	return &tokenError{msg: msg}
}

func bounded(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}

// tokenError is a request that went unsent for want of a token.
type tokenError struct{ msg string }

func (e *tokenError) Error() string { return e.msg }

// Is says the request was never sent, so a send that failed so is tried
// again, never settled as one the remote may hold.
func (e *tokenError) Is(target error) bool { return target == a2aremote.ErrNotSent }
