package daemon

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/a2a"
	"github.com/mailroom/mailroom/daemon/a2a/wire"
	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/daemon/covenant"
	"github.com/mailroom/mailroom/daemon/engine"
	"github.com/mailroom/mailroom/daemon/httpapi"
	"github.com/mailroom/mailroom/daemon/store"
	"github.com/mailroom/mailroom/internal/metrics"
	"github.com/mailroom/mailroom/internal/served"
	"github.com/mailroom/mailroom/internal/tlsreload"
	"github.com/mailroom/mailroom/mcpface"
)

// edges are the faces the daemon serves over one engine: the native API,
// every agent's A2A server, Covenant's dialect and, with mcp_http, the
// MCP face; in front of them, on a shared store, the forwarder, and
// around them all the count of every request served.
type edges struct {
	cfg   config.Config
	log   *slog.Logger
	now   func() time.Time
	eng   *engine.Engine
	authn *auth.Authenticator
	ln    net.Listener
	// stop ends the forwarder's watch of the lead.
	stop <-chan struct{}
	// metrics are the parts' figures /metrics shows, besides the
	// requests served.
	metrics []metrics.Source
	// standing is the instance's part in a shared store, for /healthz;
	// nil on a store of its own.
	standing func() *httpapi.StoreStatus
	// notes are the dispatcher's notes the A2A edge shows.
	notes *wire.DeliveryNotes
	// tls is the certificate the daemon serves (nil without TLS): its
	// expiry is on /metrics.
	tls *tlsreload.Reloader
	// cluster is how a follower reaches the leader (store postgres).
	cluster cluster
}

// handler is the daemon's whole handler, and its MCP face (nil without
// mcp_http), whose sessions the shutdown ends.
func (e edges) handler() (http.Handler, *mcpface.HTTPHandler) {
	apiOpts := httpapi.Options{Logger: e.log, HeartbeatInterval: e.cfg.SSEHeartbeat, WriteTimeout: e.cfg.SSEWriteTimeout, BatchMax: e.cfg.BatchMax,
		Metrics: e.metrics, Store: e.standing}
	// Every request the daemon serves, whichever face serves it, is
	// counted for /metrics by one middleware around the whole handler.
	requests := served.New(served.ByPath(served.Paths{A2A: a2a.Prefix, Covenant: covenant.Prefix, MCP: mcpface.Path, Events: httpapi.EventsPath}), httpapi.RouteOf)
	apiOpts.Metrics = append(apiOpts.Metrics, requests)
	if e.tls != nil {
		apiOpts.Metrics = append(apiOpts.Metrics, e.tls) // the certificate's expiry
	}
	if e.authn.Enabled() {
		apiOpts.Authorizer = e.cluster.trusting(httpapi.TokenAuthorizer(e.authn)) // cluster.go: a follower asserts its callers
		e.log.Info("bearer tokens required", "tokens", len(e.cfg.Tokens))
	} else {
		// config.Validate has already refused a non-loopback address.
		e.log.Warn("no tokens configured: serving loopback only, without authentication", "addr", e.cfg.Addr)
	}
	guarded := auth.Guard(e.eng)
	edgeOpts := a2a.Options{Logger: e.log, BlockingTimeout: e.cfg.A2ABlockingTimeout, HeartbeatInterval: e.cfg.SSEHeartbeat, WriteTimeout: e.cfg.SSEWriteTimeout,
		CardSecurityRequirements: e.cfg.A2ACardSecurityRequirements, Now: e.now, Notes: e.notes, HTTPS: e.cfg.TLSTerminatedByProxy}
	// Open's Validate read the key a moment ago; one that fails now (the
	// file removed since) leaves the cards unsigned, said loudly.
	if signer, err := e.cfg.CardSigner(); err != nil {
		e.log.Error("agents' cards are served unsigned", "err", err)
	} else {
		edgeOpts.Card.Signer = signer
	}
	// The schemes every card declares are the ones in force.
	edgeOpts.Card.MutualTLS, edgeOpts.Card.NoBearer = e.cfg.ClientAuth(), !e.cfg.BearerTokens()
	edgeOpts.Card.OIDCIssuer = e.cfg.OIDCIssuer
	covenantOpts := covenant.Options{Logger: e.log}
	if apiOpts.Authorizer != nil {
		az := apiOpts.Authorizer
		edgeOpts.Authenticate = func(r *http.Request) (context.Context, error) { return az.Authorize(r, a2a.Prefix) }
		covenantOpts.Authenticate = func(r *http.Request) (context.Context, error) { return az.Authorize(r, covenant.Prefix) }
	}
	// Every agent's A2A server lives under /agents/; the rest is the
	// native API.
	root := http.NewServeMux()
	root.Handle(a2a.Prefix, a2a.New(guarded, e.eng, edgeOpts))
	// Covenant's dialect of the native routes (issue 20).
	root.Handle(covenant.Prefix, covenant.New(guarded, covenantOpts))
	root.Handle("/", httpapi.New(guarded, apiOpts))
	self := &selfAPI{log: e.log}
	mcpHandler := e.mcp(root, apiOpts.Authorizer, self)
	var handler http.Handler = root
	if e.cfg.Store == config.StorePostgres {
		handler = newForwarder(root, e.eng, e.log, e.stop, e.cluster.authenticating(apiOpts.Authorizer))
	}
	handler = agentPathsAsIs(handler) // /agents/x//rpc is served, not redirected: agentpaths.go
	handler = requests.Wrap(handler)  // outermost: a follower's forwarded requests count too
	self.handler = handler            // the MCP face's calls are served as any client's
	return handler, mcpHandler
}

// mcp mounts the MCP face over streamable HTTP (issue 28) on root when
// mcp_http asks for it: a client of this daemon's own API (self, in
// process) with each caller's token and client certificate, so the guard
// decides its every call.
func (e edges) mcp(root *http.ServeMux, az httpapi.Authorizer, self *selfAPI) *mcpface.HTTPHandler {
	if !e.cfg.MCPHTTP {
		return nil
	}
	mcpOpts := mcpface.HTTPOptions{Logger: e.log}
	if az != nil {
		mcpOpts.Authenticate = func(r *http.Request) error { _, err := az.Authorize(r, mcpface.Path); return err }
		mcpOpts.AnyHost = true
	}
	mcpOpts.ClientFor = func(r *http.Request) []client.Option {
		return []client.Option{client.WithHTTPClient(&http.Client{Transport: self.forCaller(r)})}
	}
	h := mcpface.NewHTTPHandler(e.ln.Addr().String(), mcpOpts)
	root.Handle(mcpface.Path, h)
	e.log.Info("serving MCP over streamable HTTP", "path", mcpface.Path)
	return h
}

// standingOf is where the instance stands in a shared store, for
// /healthz; nil on a store of its own.
func standingOf(st store.Store, kind string) func() *httpapi.StoreStatus {
	ps, ok := st.(store.Standing)
	if !ok {
		return nil
	}
	self := ps.Advertise()
	return func() *httpapi.StoreStatus {
		r := ps.Role()
		role := "follower"
		if r.Leader {
			role = "leader"
		}
		return &httpapi.StoreStatus{Kind: kind, Role: role, Epoch: r.Epoch, Leader: r.Holder, LeaderURL: r.LeaderURL, Self: self, Behind: ps.Behind()}
	}
}

// newServer is the daemon's HTTP server of handler, serving certs' TLS
// when it is not nil.
func newServer(handler http.Handler, logger *slog.Logger, certs *tlsreload.Reloader) *http.Server {
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	if certs != nil {
		srv.TLSConfig = certs.ServerConfig()
		// A client certificate verified after the handshake is verified
		// once per connection (auth's connmemo.go), not per request.
		srv.ConnContext = auth.ConnContext
	}
	return srv
}
