package daemon

import (
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/mailroom/mailroom/daemon/a2a"
)

// agentPathsAsIs serves a path under /agents/ that http.ServeMux would
// only redirect to its clean form (a doubled slash, a dot segment) as that
// clean form, directly. A2A clients join the card's base URL, which ends
// in a slash, with paths that begin with one (`/agents/x//message:send`,
// `/agents/x//rpc`), and most of them do not follow redirects, least of
// all for a POST. Only paths that clean to a path under /agents/ are
// served so, which is where the redirect would have led: the native
// routes, and anything that cleans to them, keep the mux's behaviour.
func agentPathsAsIs(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.EscapedPath()
		if r.Method != http.MethodConnect && strings.HasPrefix(p, a2a.Prefix) {
			if c := cleanPath(p); c != p && strings.HasPrefix(c, a2a.Prefix) {
				if unescaped, err := url.PathUnescape(c); err == nil {
					u := *r.URL
					u.Path, u.RawPath = unescaped, c
					r2 := *r
					r2.URL = &u
					r = &r2
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// cleanPath is the path http.ServeMux redirects p to: path.Clean, keeping
// a trailing slash.
func cleanPath(p string) string {
	np := path.Clean(p)
	if strings.HasSuffix(p, "/") && np != "/" {
		np += "/"
	}
	return np
}
