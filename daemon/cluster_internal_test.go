package daemon

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/daemon/httpapi"
)

// An identity a follower asserts is the one the leader rebuilds: the same
// principal (any printable UTF-8) and the same capabilities, none
// included; a capability no access entry could hold, or a wrong
// credential, is not believed, and the request is authenticated as usual.
func TestAnAssertedIdentityRoundTrips(t *testing.T) {
	tokens := []auth.Token{{Principal: "fallback", Token: "fallback-token", Caps: []string{auth.CapRead}}}
	authn, err := auth.New(tokens)
	if err != nil {
		t.Fatal(err)
	}
	c := cluster{credential: clusterCredential([]byte("0123456789abcdef0123456789abcdef"))}
	leader := c.trusting(httpapi.TokenAuthorizer(authn))
	for _, caps := range [][]string{
		{auth.CapSendPrefix + "worker@pg", auth.CapRecv},
		{auth.CapAdmin},
		nil,
	} {
		for _, principal := range []string{"planner@pg", "zoë-the-operator:ü/1"} {
			asserted, err := auth.AssertedIdentity(principal, caps)
			if err != nil {
				t.Fatalf("AssertedIdentity(%q, %v): %v", principal, caps, err)
			}
			follower := c.authenticating(stubAuthorizer{asserted})
			r := httptest.NewRequest(http.MethodPost, "/a2a/tasks", nil)
			r.Header.Set("Authorization", "Bearer the-callers-token")
			r.Header.Set(HeaderPrincipal, "someone else")
			if !follower.identify(r) {
				t.Fatal("identify refused an authenticated caller")
			}
			if got := r.Header.Get("Authorization"); got != "" {
				t.Errorf("the forwarded request carries Authorization %q", got)
			}
			ctx, err := leader.Authorize(r, "/a2a/tasks")
			if err != nil {
				t.Fatalf("the leader refused the assertion of %q %v: %v", principal, caps, err)
			}
			got := auth.IdentityFrom(ctx)
			if got.Principal != principal || !slices.Equal(got.Capabilities(), asserted.Capabilities()) {
				t.Errorf("the leader rebuilt %q %v, want %q %v", got.Principal, got.Capabilities(), principal, asserted.Capabilities())
			}
		}
	}
	for name, h := range map[string][2]string{
		"a wrong credential":    {"not-the-credential", auth.CapAdmin},
		"an unknown capability": {c.credential, "a2a.everything"},
	} {
		r := httptest.NewRequest(http.MethodPost, "/a2a/tasks", nil)
		r.Header.Set(HeaderClusterCredential, h[0])
		r.Header.Set(HeaderPrincipal, "intruder")
		r.Header.Set(HeaderCapabilities, h[1])
		if _, err := leader.Authorize(r, "/a2a/tasks"); err == nil {
			t.Errorf("%s: the leader believed the assertion", name)
		}
		r.Header.Set("Authorization", "Bearer fallback-token")
		if ctx, err := leader.Authorize(r, "/a2a/tasks"); err != nil || auth.IdentityFrom(ctx).Principal != "fallback" {
			t.Errorf("%s with a token: %v, want the token's caller", name, err)
		}
	}
}

// stubAuthorizer authenticates every request as id.
type stubAuthorizer struct{ id auth.Identity }

func (s stubAuthorizer) Authorize(r *http.Request, _ string) (context.Context, error) {
	return auth.WithIdentity(r.Context(), s.id), nil
}

// A request the follower cannot authenticate is forwarded only when it
// carries no credentials (nothing to replay, and the leader's words are
// this instance's); one whose credentials were refused is kept here.
func TestAnUnauthenticatedRequestIsForwardedOnlyWithoutCredentials(t *testing.T) {
	c := cluster{credential: clusterCredential([]byte("0123456789abcdef0123456789abcdef"))}.authenticating(refusing{})
	anonymous := httptest.NewRequest(http.MethodGet, "/agents/coder@local/.well-known/agent-card.json", nil)
	anonymous.Header.Set(HeaderPrincipal, "intruder")
	if !c.identify(anonymous) {
		t.Error("a request without credentials was kept from the leader")
	}
	if got := anonymous.Header.Get(HeaderPrincipal) + anonymous.Header.Get(HeaderClusterCredential); got != "" {
		t.Errorf("the anonymous request goes with assertion headers %q", got)
	}
	badToken := httptest.NewRequest(http.MethodPost, "/a2a/tasks", nil)
	badToken.Header.Set("Authorization", "Bearer mistyped")
	if c.identify(badToken) {
		t.Error("a request whose token was refused would be forwarded with it")
	}
}

// refusing refuses every request.
type refusing struct{}

func (refusing) Authorize(*http.Request, string) (context.Context, error) {
	return nil, auth.Forbidden(auth.Identity{}, auth.CapAdmin, "anything")
}
