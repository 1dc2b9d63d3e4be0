// Package daemon wires the mailbox's concrete parts: the log store, the
// engine and the HTTP API. It is the only place that knows all three.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/mailroom/mailroom/daemon/notify"

	"github.com/mailroom/mailroom/internal/webhook"

	"github.com/mailroom/mailroom/daemon/a2a"
	"github.com/mailroom/mailroom/daemon/a2a/remote"
	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/daemon/covenant"
	"github.com/mailroom/mailroom/daemon/engine"
	"github.com/mailroom/mailroom/daemon/httpapi"
	"github.com/mailroom/mailroom/daemon/outbound"
	"github.com/mailroom/mailroom/daemon/store"
	"github.com/mailroom/mailroom/daemon/store/logstore"
	"github.com/mailroom/mailroom/daemon/store/pgstore"
	"github.com/mailroom/mailroom/internal/metrics"
	"github.com/mailroom/mailroom/internal/served"
	"github.com/mailroom/mailroom/mailbox"
	"github.com/mailroom/mailroom/mcpface"
)

// Daemon is a mailbox ready to serve: an open log, a replayed engine and a
// bound listener. Run serves it until its context ends.
type Daemon struct {
	cfg    config.Config
	log    *slog.Logger
	engine *engine.Engine
	ln     net.Listener
	srv    *http.Server
	ticks  TickSource
	// mcp is the MCP face at /mcp (nil unless mcp_http); its sessions
	// are ended at shutdown.
	mcp *mcpface.HTTPHandler

	// mu guards closing and fresh. Once closing is set, Run starts no
	// scheduler and new connections are closed as they come.
	mu      sync.Mutex
	closing bool
	// fresh holds the connections that have not sent a request yet (see
	// trackConn).
	fresh map[net.Conn]struct{}
	// stopScan ends the retry-stale scheduler; scans is its goroutine,
	// waited for before the engine closes.
	stopScan chan struct{}
	scans    sync.WaitGroup
	// dispatcher delivers the tasks of remote agents while the instance
	// leads; stopDispatch ends it, before the engine closes.
	dispatcher   *outbound.Dispatcher
	stopDispatch context.CancelFunc
	// notifier delivers the push notifications of the outbox while the
	// instance leads; stopDispatch ends it too.
	notifier *notify.Notifier
	// stopOnce makes the shutdown happen once, whoever asks first (Run
	// when its context ends, or Close); stopErr is what it returned.
	stopOnce sync.Once
	stopErr  error
}

// TickSource makes the ticks the retry-stale scheduler scans on, one per
// interval, and a func that stops them. The default is a time.Ticker.
type TickSource func(interval time.Duration) (ticks <-chan time.Time, stop func())

// Option replaces one of the daemon's real parts, for tests and for callers
// that embed it.
type Option func(*options)

type options struct {
	ln       net.Listener
	now      func() time.Time
	ticks    TickSource
	outbound func(*outbound.Options)
	notify   func(*notify.Options)
}

// WithListener serves on ln instead of listening on cfg.Addr, which should
// then name ln's address (it is what the exposure check and the logs see).
// The daemon closes ln when it stops, or when Open fails.
func WithListener(ln net.Listener) Option { return func(o *options) { o.ln = ln } }

// WithClock is the mailbox's clock: the time events are stamped with, and
// so the age of every lease.
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// WithRetryStaleTicks drives the retry-stale scheduler (when
// cfg.RetryStaleInterval turns it on) from ticks instead of a ticker.
func WithRetryStaleTicks(ticks TickSource) Option { return func(o *options) { o.ticks = ticks } }

// WithOutbound changes the remote dispatcher's options (its backoffs,
// probe interval, HTTP client) after the daemon set them from cfg.
func WithOutbound(change func(*outbound.Options)) Option {
	return func(o *options) { o.outbound = change }
}

// WithNotifier changes the push notifier's options (its backoffs,
// attempts, HTTP client) after the daemon set them from cfg.
func WithNotifier(change func(*notify.Options)) Option {
	return func(o *options) { o.notify = change }
}

// Open opens the data directory, replays the log and binds the listener, so
// Addr is known before anything is served. Nothing is served until Run.
func Open(cfg config.Config, logger *slog.Logger, opts ...Option) (*Daemon, error) {
	return OpenContext(context.Background(), cfg, logger, opts...)
}

// OpenContext is Open, which stops waiting when ctx ends: with store
// postgres, an instance waits in Open until it leads.
func OpenContext(ctx context.Context, cfg config.Config, logger *slog.Logger, opts ...Option) (*Daemon, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	closeLn := func() {
		if o.ln != nil {
			o.ln.Close()
		}
	}
	if err := cfg.Validate(); err != nil {
		closeLn()
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	authn, err := auth.New(cfg.Tokens)
	if err != nil {
		closeLn()
		return nil, err
	}
	if cfg.Store == config.StorePostgres && o.ln == nil {
		// Bound first, so the address other instances are told (the
		// default advertise_url) has the real port.
		if o.ln, err = net.Listen("tcp", cfg.Addr); err != nil {
			return nil, fmt.Errorf("listening on %s: %w", cfg.Addr, err)
		}
	}
	allow, err := webhook.ParseAllow(cfg.PushAllowHosts)
	if err != nil {
		closeLn()
		return nil, fmt.Errorf("push_allow_hosts: %w", err)
	}
	hooks := webhook.NewPolicy(allow)
	st, err := openStore(ctx, cfg, logger, o.ln)
	if err != nil {
		closeLn()
		return nil, err
	}
	eng, err := engine.Open(st, engine.Options{
		Logger:              logger,
		Now:                 o.now,
		SubscriberBuffer:    cfg.SSEBuffer,
		AutoCompactFactor:   cfg.CompactFactor,
		AutoCompactMinBytes: cfg.CompactMinBytes,
		RetainDone:          cfg.RetainDone,
		ResultCacheMax:      cfg.ResultCacheMax,
		ResultCacheAge:      cfg.ResultCacheAge,
		AuditMax:            cfg.AuditMax,
		MaxTurns:            cfg.MaxTurns,
		MaxTurnsBytes:       int(cfg.MaxTurnsBytes),
		CheckPushURL: func(field string, u *url.URL) error {
			if err := hooks.Check(field, u); err != nil {
				return mailbox.Invalidf(field, "%s", err.Error())
			}
			return nil
		},
		CheckRemoteURL: func(field string, u *url.URL) error {
			if err := hooks.CheckSelf(field, u, "a remote agent", "the daemon would deliver the agent's tasks to itself, holding its slots while it waits on itself"); err != nil {
				return mailbox.Invalidf(field, "%s", err.Error())
			}
			return nil
		},
	})
	if err != nil {
		st.Close()
		closeLn()
		return nil, err
	}
	ln := o.ln
	if ln == nil {
		if ln, err = net.Listen("tcp", cfg.Addr); err != nil {
			eng.Close()
			return nil, fmt.Errorf("listening on %s: %w", cfg.Addr, err)
		}
	}
	// Webhooks never name the daemon itself: where it listens, and where
	// it says it is.
	hooks.Self(ln.Addr().String())
	if cfg.AdvertiseURL != "" {
		hooks.Self(cfg.AdvertiseURL)
	}
	dispatcher := outbound.New(eng, eng.Remote(), outboundOptions(cfg, logger, hooks, o.outbound))
	nopts := notify.Options{Logger: logger, Policy: hooks, MaxAttempts: cfg.PushMaxAttempts, RetryMax: cfg.PushRetryMax,
		Bounds: &mailbox.OutboxBounds{PerReceiver: cfg.PushOutboxPerReceiver, Total: cfg.PushOutboxMax, DeadRetention: cfg.PushDeadRetention}}
	if o.notify != nil {
		o.notify(&nopts)
	}
	notifier := notify.New(eng, eng.Push(), nopts)
	if len(cfg.Remotes) > 0 {
		agents := make([]string, len(cfg.Remotes))
		for i, r := range cfg.Remotes {
			agents[i] = r.Agent
		}
		// The agents only: the credentials are never logged.
		logger.Info("remote agent credentials configured", "agents", agents)
	}
	apiOpts := httpapi.Options{Logger: logger, HeartbeatInterval: cfg.SSEHeartbeat, WriteTimeout: cfg.SSEWriteTimeout, BatchMax: cfg.BatchMax,
		Metrics: []metrics.Source{eng, st, dispatcher, notifier}}
	// Every request the daemon serves, whichever face serves it, is
	// counted for /metrics by one middleware around the whole handler.
	requests := served.New(served.ByPath(served.Paths{A2A: a2a.Prefix, Covenant: covenant.Prefix, MCP: mcpface.Path, Events: httpapi.EventsPath}), httpapi.RouteOf)
	apiOpts.Metrics = append(apiOpts.Metrics, requests)
	if ps, ok := st.(store.Standing); ok {
		self, kind := ps.Advertise(), cfg.Store
		apiOpts.Store = func() *httpapi.StoreStatus {
			r := ps.Role()
			role := "follower"
			if r.Leader {
				role = "leader"
			}
			return &httpapi.StoreStatus{Kind: kind, Role: role, Epoch: r.Epoch, Leader: r.Holder, LeaderURL: r.LeaderURL, Self: self, Behind: ps.Behind()}
		}
	}
	if authn.Enabled() {
		apiOpts.Authorizer = httpapi.TokenAuthorizer(authn)
		logger.Info("bearer tokens required", "tokens", len(cfg.Tokens))
	} else {
		// config.Validate has already refused a non-loopback address.
		logger.Warn("no tokens configured: serving loopback only, without authentication", "addr", cfg.Addr)
	}
	guarded := auth.Guard(eng)
	edgeOpts := a2a.Options{Logger: logger, BlockingTimeout: cfg.A2ABlockingTimeout, HeartbeatInterval: cfg.SSEHeartbeat, WriteTimeout: cfg.SSEWriteTimeout,
		CardSecurityRequirements: cfg.A2ACardSecurityRequirements, Now: o.now}
	covenantOpts := covenant.Options{Logger: logger}
	if apiOpts.Authorizer != nil {
		az := apiOpts.Authorizer
		edgeOpts.Authenticate = func(r *http.Request) (context.Context, error) { return az.Authorize(r, a2a.Prefix) }
		covenantOpts.Authenticate = func(r *http.Request) (context.Context, error) { return az.Authorize(r, covenant.Prefix) }
	}
	// Every agent's A2A server lives under /agents/; the rest is the
	// native API.
	root := http.NewServeMux()
	root.Handle(a2a.Prefix, a2a.New(guarded, eng, edgeOpts))
	// Covenant's dialect of the native routes (issue 20).
	root.Handle(covenant.Prefix, covenant.New(guarded, covenantOpts))
	root.Handle("/", httpapi.New(guarded, apiOpts))
	var mcpHandler *mcpface.HTTPHandler
	if cfg.MCPHTTP {
		// The MCP face over streamable HTTP (issue 28): a client of this
		// daemon's own API with each caller's token, so the guard above
		// decides its every call.
		mcpOpts := mcpface.HTTPOptions{Logger: logger}
		if apiOpts.Authorizer != nil {
			az := apiOpts.Authorizer
			mcpOpts.Authenticate = func(r *http.Request) error { _, err := az.Authorize(r, mcpface.Path); return err }
			mcpOpts.AnyHost = true
		}
		mcpHandler = mcpface.NewHTTPHandler(ln.Addr().String(), mcpOpts)
		root.Handle(mcpface.Path, mcpHandler)
		logger.Info("serving MCP over streamable HTTP", "path", mcpface.Path)
	}
	stopScan := make(chan struct{})
	var handler http.Handler = root
	if cfg.Store == config.StorePostgres {
		handler = newForwarder(root, eng, logger, stopScan)
	}
	handler = agentPathsAsIs(handler) // /agents/x//rpc is served, not redirected: agentpaths.go
	handler = requests.Wrap(handler)  // outermost: a follower's forwarded requests count too
	ticks := o.ticks
	if ticks == nil {
		ticks = tickerSource
	}
	d := &Daemon{cfg: cfg, log: logger, engine: eng, ln: ln, ticks: ticks, stopScan: stopScan, fresh: map[net.Conn]struct{}{}, dispatcher: dispatcher, mcp: mcpHandler, notifier: notifier,
		srv: &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}}
	d.srv.ConnState = d.trackConn
	return d, nil
}

// outboundOptions are the dispatcher's options: the remotes' credentials
// from cfg, then what the caller changes.
func outboundOptions(cfg config.Config, logger *slog.Logger, hooks *webhook.Policy, change func(*outbound.Options)) outbound.Options {
	o := outbound.Options{Logger: logger, Auth: map[string]remote.Auth{}, ResendMax: cfg.RemoteResendMax,
		CheckURL: func(u *url.URL) error {
			return hooks.CheckSelf("remote.url", u, "a remote agent", "the daemon would deliver the agent's tasks to itself")
		}}
	if cfg.RemoteResendMax == 0 {
		o.ResendMax = -1 // 0 in the configuration: never sent again
	}
	for _, r := range cfg.Remotes {
		o.Auth[r.Agent] = remote.Auth{Bearer: r.Bearer, Header: r.Header, Value: r.Value}
	}
	if change != nil {
		change(&o)
	}
	return o
}

// mailboxStore is what the daemon needs of a store: the engine's contract
// and its figures for /metrics.
type mailboxStore interface {
	store.Store
	metrics.Source
}

// openStore opens the store cfg names and logs which one the instance
// runs on, so an operator who meant the shared database sees at once when
// it runs on a local log instead.
func openStore(ctx context.Context, cfg config.Config, logger *slog.Logger, ln net.Listener) (mailboxStore, error) {
	if cfg.Store != config.StorePostgres {
		st, err := logstore.Open(cfg.DataDir, logstore.Options{Logger: logger})
		if err != nil {
			return nil, fmt.Errorf("opening the mailbox log in %s: %w", cfg.DataDir, err)
		}
		logger.Info("mailbox store: the local log", "store", config.StoreLog, "data_dir", cfg.DataDir)
		// A mailbox on tmpfs acknowledges writes that a reboot takes
		// back. That is fine for a demo or a benchmark of the CPU, and
		// a disaster when somebody meant a real disk, so say it where
		// operators look.
		if fs, volatile, err := logstore.Filesystem(cfg.DataDir); err == nil && volatile {
			logger.Warn("the data dir is on "+fs+", kept in memory only: every acknowledged event is lost when the machine restarts",
				"data_dir", cfg.DataDir, "filesystem", fs)
		}
		return st, nil
	}
	advertise := cfg.AdvertiseURL
	if advertise == "" {
		addr := cfg.Addr
		if ln != nil {
			addr = ln.Addr().String()
		}
		advertise = "http://" + addr
	}
	st, err := pgstore.Open(ctx, pgstore.Options{
		URL: cfg.PostgresURL, Schema: cfg.PostgresSchema, Advertise: advertise, Logger: logger,
		SessionTimeout: cfg.PostgresSessionTimeout, CampaignInterval: cfg.PostgresCampaignInterval,
	})
	if err != nil {
		return nil, err
	}
	r := st.Role()
	logger.Info("mailbox store: PostgreSQL (shared; this instance follows until it wins the lead)", "store", config.StorePostgres,
		"postgres_url", pgstore.Redact(cfg.PostgresURL), "schema", cfg.PostgresSchema, "advertise_url", advertise,
		"leader", r.Holder, "leader_url", r.LeaderURL, "epoch", r.Epoch)
	return st, nil
}

func tickerSource(interval time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(interval)
	return t.C, t.Stop
}

// Addr is the address the daemon listens on (host:port), with the real port
// when the configuration asked for port 0.
func (d *Daemon) Addr() string { return d.ln.Addr().String() }

// DataDir is the directory holding the mailbox's log and snapshots.
func (d *Daemon) DataDir() string { return d.cfg.DataDir }

// Run serves requests and runs the retry-stale scheduler until ctx ends or
// the listener fails, then shuts down within cfg.ShutdownTimeout: the
// scheduler stopped, event streams ended (they never finish by themselves),
// connections that sent nothing closed, in-flight requests finished (cut
// off at the deadline), and the log flushed, synced and closed. It returns
// nil after a clean shutdown.
func (d *Daemon) Run(ctx context.Context) error {
	d.mu.Lock()
	if d.cfg.RetryStaleInterval > 0 && !d.closing {
		ticks, stop := d.ticks(d.cfg.RetryStaleInterval)
		d.scans.Go(func() {
			defer stop()
			d.scheduleRetryStale(ticks)
		})
	}
	if !d.closing {
		dctx, stop := context.WithCancel(context.Background())
		d.stopDispatch = stop
		d.scans.Go(func() { d.dispatcher.Run(dctx) })
		d.scans.Go(func() { d.notifier.Run(dctx) })
	}
	d.mu.Unlock()
	served := make(chan error, 1)
	go func() { served <- d.serve() }()
	var serveErr error
	select {
	case <-ctx.Done():
		d.log.Info("shutting down", "timeout", d.cfg.ShutdownTimeout)
	case serveErr = <-served:
		served = nil
	}
	// Shut down either way: the log must be flushed and closed even when
	// the listener failed.
	shutErr := d.Close()
	if served != nil {
		serveErr = <-served
	}
	return errors.Join(serveErr, shutErr)
}

func (d *Daemon) serve() error {
	d.log.Info("mailroom daemon listening", "addr", d.Addr(), "data_dir", d.cfg.DataDir)
	if err := d.srv.Serve(d.ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Close shuts the daemon down as Run does when its context ends, and
// releases a daemon that was opened but never run. It is safe to call
// more than once, and from another goroutine while Run runs (Run then
// returns); every call returns the one shutdown's error.
func (d *Daemon) Close() error {
	d.stopOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), d.cfg.ShutdownTimeout)
		defer cancel()
		d.stopErr = d.shutdown(ctx)
	})
	return d.stopErr
}

func (d *Daemon) shutdown(ctx context.Context) error {
	d.mu.Lock()
	d.closing = true
	close(d.stopScan)
	if d.stopDispatch != nil {
		d.stopDispatch()
	}
	for c := range d.fresh {
		c.Close()
	}
	clear(d.fresh)
	d.mu.Unlock()
	d.scans.Wait()
	d.engine.EndSubscriptions()
	if d.mcp != nil {
		// MCP sessions hold streams open, as event streams do.
		d.mcp.Close()
	}
	err := d.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		d.log.Warn("requests still running at the shutdown deadline; closing them", "err", err)
		d.srv.Close()
	}
	// A daemon that never served still holds its listener.
	d.ln.Close()
	if cerr := d.engine.Close(); cerr != nil {
		return fmt.Errorf("closing the mailbox log: %w", cerr)
	}
	d.log.Info("mailroom daemon stopped; log synced and closed", "data_dir", d.cfg.DataDir)
	return nil
}

// trackConn remembers the connections that have not sent a request yet,
// so the shutdown can close them, and closes those that arrive once it has
// begun. They carry nothing to finish, but http.Server.Shutdown counts a
// new connection as busy for its first 5 seconds: one that a client dialed
// and left unused (a cancelled request's dial goes to its idle pool) would
// hold every stop for that long.
func (d *Daemon) trackConn(c net.Conn, state http.ConnState) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case state != http.StateNew:
		delete(d.fresh, c)
	case d.closing:
		c.Close()
	default:
		d.fresh[c] = struct{}{}
	}
}

// scheduleRetryStale runs the enabled retry-stale scan on every tick. Each
// requeue it makes is a repair event, audited under the scheduler's name.
func (d *Daemon) scheduleRetryStale(ticks <-chan time.Time) {
	p := d.cfg.RetryPolicy()
	d.log.Info("retry-stale scheduler on", "interval", d.cfg.RetryStaleInterval, "min_lease_age_ms", p.MinLeaseAgeMs,
		"max_attempts", p.MaxAttempts, "max_requeues", p.MaxRequeues, "scan_limit", p.ScanLimit)
	for {
		select {
		case <-d.stopScan:
			return
		case <-ticks:
		}
		if !d.engine.Leading() {
			// Only the instance that leads a shared mailbox scans.
			continue
		}
		ctx := mailbox.WithPrincipal(context.Background(), engine.RetryStalePrincipal)
		rep, err := d.engine.RetryStale(ctx, p)
		if err != nil {
			d.log.Error("scheduled retry-stale scan failed", "err", err)
			continue
		}
		if len(rep.Requeued) > 0 {
			d.log.Info("scheduled retry-stale scan", "considered", rep.Considered, "requeued", len(rep.Requeued), "skipped", len(rep.Skipped))
		}
	}
}
