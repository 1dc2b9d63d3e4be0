package httpapi

import (
	"context"
	"net/http"

	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/mailbox"
)

// TokenAuthorizer authenticates every request but /healthz by its bearer
// token or its client certificate (auth.AuthenticateRequest) and puts the caller's identity in the request's context. What the
// caller may do is decided by the service's guard (auth.Guard), the one
// place the policy lives; only /metrics, which is this layer's own route
// and no mailbox call, is checked here.
func TokenAuthorizer(a *auth.Authenticator) Authorizer { return tokenAuthorizer{a} }

type tokenAuthorizer struct{ a *auth.Authenticator }

func (t tokenAuthorizer) Authorize(r *http.Request, route string) (context.Context, error) {
	if route == RouteHealth {
		return r.Context(), nil
	}
	id, err := t.a.AuthenticateRequest(r)
	if err != nil {
		return nil, err
	}
	ctx := auth.WithIdentity(r.Context(), id)
	if route == RouteMetrics {
		return ctx, id.CheckRead()
	}
	return ctx, nil
}

// deniedError reports whether err is an authentication or authorization
// refusal, which metrics count and the log records with the principal.
func deniedError(err error) bool {
	c := mailbox.ErrorCode(err)
	return c == mailbox.CodeUnauthorized || c == mailbox.CodeForbidden
}
