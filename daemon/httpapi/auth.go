package httpapi

import (
	"context"
	"net/http"

	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/mailbox"
)

// TokenAuthorizer authenticates every request but /healthz by its bearer
// token and checks the capabilities a route needs regardless of its body.
// Checks that depend on the body (whose tasks, which sender) are made by the
// handlers with auth.IdentityFrom.
func TokenAuthorizer(a *auth.Authenticator) Authorizer { return tokenAuthorizer{a} }

type tokenAuthorizer struct{ a *auth.Authenticator }

// readRoutes only read the mailbox.
var readRoutes = map[string]bool{
	RouteRecentTasks: true, RouteRecentResults: true, RouteQueue: true, RouteEvents: true,
	RouteAudit: true, RouteMetrics: true,
}

func (t tokenAuthorizer) Authorize(r *http.Request, route string) (context.Context, error) {
	if route == RouteHealth {
		return r.Context(), nil
	}
	id, err := t.a.Authenticate(r.Header.Get("Authorization"))
	if err != nil {
		return nil, err
	}
	switch {
	case readRoutes[route]:
		err = id.CheckRead()
	case route == RouteCompact:
		err = id.CheckCompact()
	}
	if err != nil {
		return auth.WithIdentity(r.Context(), id), err
	}
	return auth.WithIdentity(r.Context(), id), nil
}

// deniedError reports whether err is an authentication or authorization
// refusal, which metrics count and the log records with the principal.
func deniedError(err error) bool {
	c := mailbox.ErrorCode(err)
	return c == mailbox.CodeUnauthorized || c == mailbox.CodeForbidden
}
