package notify

import (
	"crypto/tls"
	"net/http"
	"strings"
)

// Which client posts to which receiver: the receivers listed in
// Options.Receivers each have a transport of their own, built once (its
// connections kept alive, as the default one's), chosen by the webhook
// URL's host on every attempt; every other receiver is posted with the
// default, of Options.TLS. A redirect is followed by none of them, so a
// POST never reaches a host with another host's TLS.

// Receiver is the TLS of one receiver host that has its own (config's
// push_receivers entry).
type Receiver struct {
	// Host is the webhook URL's host (a name or an IP address) it
	// serves, on every port, matched without regard to case.
	Host string
	// TLS is what this host is verified with over https, and the client
	// certificate it is shown when it asks; nil is the system's CAs and
	// no certificate, whatever Options.TLS says.
	TLS *tls.Config
	// Entry names the entry in the configuration (push_receivers[0]):
	// a refused handshake says which of its fields to set.
	Entry string
}

// route is how one receiver is posted to: the client, and the keys a
// refused handshake's remedy names.
type route struct {
	client *http.Client
	keys   remedyKeys
}

// routes are the notifier's clients: one per receiver listed, by host
// in lower case, and the default.
type routes struct {
	byHost map[string]route
	def    route
}

// newRoutes makes the clients of o. A caller's HTTPClient posts to every
// receiver: it has its own TLS.
func newRoutes(o Options) routes {
	if o.HTTPClient != nil {
		return routes{def: route{client: o.HTTPClient, keys: pushKeys}}
	}
	rs := routes{def: route{client: newClient(o.TLS), keys: pushKeys}, byHost: map[string]route{}}
	for _, r := range o.Receivers {
		rs.byHost[strings.ToLower(r.Host)] = route{client: newClient(r.TLS), keys: entryKeys(r.Entry)}
	}
	return rs
}

// to is the route to a webhook URL's host (url.URL's Hostname).
func (rs routes) to(host string) route {
	if r, ok := rs.byHost[strings.ToLower(host)]; ok {
		return r
	}
	return rs.def
}

// newClient is a client of its own transport, following no redirect: a
// CA file or a client certificate must not change what other clients of
// the process trust.
func newClient(cfg *tls.Config) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = cfg
	return &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}
