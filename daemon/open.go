package daemon

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"time"

	"github.com/mailroom/mailroom/daemon/a2a/remote"
	"github.com/mailroom/mailroom/daemon/a2a/wire"
	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/daemon/engine"
	"github.com/mailroom/mailroom/daemon/notify"
	"github.com/mailroom/mailroom/daemon/outbound"
	"github.com/mailroom/mailroom/daemon/store"
	"github.com/mailroom/mailroom/daemon/store/logstore"
	"github.com/mailroom/mailroom/daemon/store/pgstore"
	"github.com/mailroom/mailroom/internal/metrics"
	"github.com/mailroom/mailroom/internal/tlsreload"
	"github.com/mailroom/mailroom/internal/webhook"
	"github.com/mailroom/mailroom/mailbox"
)

// OpenContext is Open, which stops waiting when ctx ends: with store
// postgres, an instance waits in Open until it leads.
//
// It goes in steps: the checks of cfg, the store, the engine over it, the
// listener, the workers and the edges. A step that fails closes what the
// steps before it opened, the last first (cleanup), and nothing else.
func OpenContext(ctx context.Context, cfg config.Config, logger *slog.Logger, opts ...Option) (_ *Daemon, err error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	var cleanup undo
	defer func() {
		if err != nil {
			cleanup.run()
		}
	}()
	cleanup.push(func() {
		// The caller's listener, or the one o.listen bound.
		if o.ln != nil {
			o.ln.Close()
		}
	})
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	certs, err := openTLS(cfg, logger)
	if err != nil {
		return nil, err
	}
	authn, err := openAuth(cfg, logger, certs)
	if err != nil {
		return nil, err
	}
	if cfg.Store == config.StorePostgres {
		// Bound first, so the address other instances are told (the
		// default advertise_url) has the real port.
		if _, err := o.listen(cfg); err != nil {
			return nil, err
		}
	}
	allow, err := webhook.ParseAllow(cfg.PushAllowHosts)
	if err != nil {
		return nil, fmt.Errorf("push_allow_hosts: %w", err)
	}
	hooks := webhook.NewPolicy(allow)
	st, err := openStore(ctx, cfg, logger, o.ln)
	if err != nil {
		return nil, err
	}
	cleanup.push(func() { st.Close() })
	eng, err := openEngine(st, cfg, logger, o.now, hooks)
	if err != nil {
		return nil, err
	}
	cleanup.replaceLast(func() { eng.Close() }) // the engine closes its store
	ln, err := o.listen(cfg)
	if err != nil {
		return nil, err
	}
	// Webhooks never name the daemon itself: where it listens, and where
	// it says it is.
	hooks.Self(ln.Addr().String())
	if cfg.AdvertiseURL != "" {
		hooks.Self(cfg.AdvertiseURL)
	}
	// The dispatcher's notes on deliveries left to the operator, which
	// the edge shows their A2A callers.
	notes := &wire.DeliveryNotes{}
	dispatcher, notifier, err := openWorkers(eng, cfg, logger, hooks, notes, o)
	if err != nil {
		return nil, err
	}
	logRemoteCredentials(cfg, logger)
	stopScan := make(chan struct{})
	e := edges{cfg: cfg, log: logger, now: o.now, eng: eng, authn: authn, ln: ln, stop: stopScan, notes: notes, tls: certs,
		metrics: []metrics.Source{eng, st, dispatcher, notifier}, standing: standingOf(st, cfg.Store), cluster: clusterOf(cfg, logger)}
	handler, mcpHandler := e.handler()
	d := &Daemon{cfg: cfg, log: logger, engine: eng, ln: ln, ticks: o.tickSource(), stopScan: stopScan, fresh: map[net.Conn]struct{}{}, dispatcher: dispatcher, mcp: mcpHandler, notifier: notifier,
		srv: newServer(handler, logger, certs), tls: certs, certPoll: o.certPoll}
	d.srv.ConnState = d.trackConn
	return d, nil
}

// listen is the listener the daemon serves on: the caller's, or one bound
// on cfg.Addr, kept in o so that a later step that fails closes it too.
func (o *options) listen(cfg config.Config) (net.Listener, error) {
	if o.ln == nil {
		ln, err := net.Listen("tcp", cfg.Addr)
		if err != nil {
			return nil, fmt.Errorf("listening on %s: %w", cfg.Addr, err)
		}
		o.ln = ln
	}
	return o.ln, nil
}

// openTLS loads the certificate the daemon serves, when cfg names one,
// and logs which it is and when it expires: an expiry is best seen the
// day the daemon starts, not the day it lapses.
func openTLS(cfg config.Config, logger *slog.Logger) (*tlsreload.Reloader, error) {
	if !cfg.TLS() {
		return nil, nil
	}
	certs, err := tlsreload.New(cfg.TLSFiles(), logger)
	if err != nil {
		return nil, err
	}
	leaf := certs.Leaf()
	logger.Info("serving TLS", tlsreload.Describe(leaf)...)
	if time.Now().After(leaf.NotAfter) {
		logger.Warn("the TLS certificate has expired: clients will refuse it", "not_after", leaf.NotAfter)
	}
	return certs, nil
}

// logRemoteCredentials says which remote agents have credentials
// configured: the agents only, the credentials are never logged.
func logRemoteCredentials(cfg config.Config, logger *slog.Logger) {
	if len(cfg.Remotes) == 0 {
		return
	}
	agents := make([]string, len(cfg.Remotes))
	for i, r := range cfg.Remotes {
		agents[i] = r.Agent
	}
	logger.Info("remote agent credentials configured", "agents", agents)
}

// undo is what OpenContext closes when a step fails: what the steps
// before it opened, the last first.
type undo []func()

func (u *undo) push(close func()) { *u = append(*u, close) }

// replaceLast replaces the last close: one that closes what it did and
// more (the engine, which closes its store).
func (u *undo) replaceLast(close func()) { (*u)[len(*u)-1] = close }

func (u undo) run() {
	for i := len(u) - 1; i >= 0; i-- {
		u[i]()
	}
}

// openEngine replays st into an engine with cfg's limits and its checks
// of the URLs the daemon will call.
func openEngine(st store.Store, cfg config.Config, logger *slog.Logger, now func() time.Time, hooks *webhook.Policy) (*engine.Engine, error) {
	return engine.Open(st, engine.Options{
		Logger:              logger,
		Now:                 now,
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
				return mailbox.Invalid(field, err.Error())
			}
			return nil
		},
		CheckRemoteURL: func(field string, u *url.URL) error {
			if err := hooks.CheckSelf(field, u, "a remote agent", "the daemon would deliver the agent's tasks to itself, holding its slots while it waits on itself"); err != nil {
				return mailbox.Invalid(field, err.Error())
			}
			return nil
		},
	})
}

// openWorkers makes the dispatcher and the notifier with their options.
func openWorkers(eng *engine.Engine, cfg config.Config, logger *slog.Logger, hooks *webhook.Policy, notes *wire.DeliveryNotes, o options) (*outbound.Dispatcher, *notify.Notifier, error) {
	out, err := outboundOptions(cfg, logger, hooks, notes, o.outbound)
	if err != nil {
		return nil, nil, err
	}
	push, err := notifierOptions(cfg, logger, hooks, o.notify)
	if err != nil {
		return nil, nil, err
	}
	return outbound.New(eng, eng.Remote(), out), notify.New(eng, eng.Push(), push), nil
}

// outboundOptions are the dispatcher's options: the remotes' credentials
// and TLS from cfg, then what the caller changes.
func outboundOptions(cfg config.Config, logger *slog.Logger, hooks *webhook.Policy, notes *wire.DeliveryNotes, change func(*outbound.Options)) (outbound.Options, error) {
	o := outbound.Options{Logger: logger, Auth: map[string]remote.Auth{}, TLS: map[string]*tls.Config{}, OAuth: map[string]outbound.OAuthClient{},
		ResendMax: cfg.RemoteResendMax, Notes: notes,
		CheckURL: func(u *url.URL) error {
			return hooks.CheckSelf("remote.url", u, "a remote agent", "the daemon would deliver the agent's tasks to itself")
		}}
	if cfg.RemoteResendMax == 0 {
		o.ResendMax = -1 // 0 in the configuration: never sent again
	}
	for i, r := range cfg.Remotes {
		o.Auth[r.Agent] = remote.Auth{Bearer: r.Bearer, Header: r.Header, Value: r.Value}
		tc, err := r.TLSConfig(i)
		if err != nil {
			return o, err
		}
		if tc != nil {
			o.TLS[r.Agent] = tc
		}
		if r.ClientID != "" {
			o.OAuth[r.Agent] = outbound.OAuthClient{ID: r.ClientID, Secret: r.ClientSecret}
		}
	}
	if change != nil {
		change(&o)
	}
	return o, nil
}

// notifierOptions are the notifier's options: its attempts, the outbox's
// bounds and the receivers' TLS from cfg (the push_* keys, and each
// push_receivers entry's own), then what the caller changes.
func notifierOptions(cfg config.Config, logger *slog.Logger, hooks *webhook.Policy, change func(*notify.Options)) (notify.Options, error) {
	tc, err := cfg.PushTLSConfig()
	if err != nil {
		return notify.Options{}, err
	}
	o := notify.Options{Logger: logger, Policy: hooks, MaxAttempts: cfg.PushMaxAttempts, RetryMax: cfg.PushRetryMax, TLS: tc,
		Bounds: &mailbox.OutboxBounds{PerReceiver: cfg.PushOutboxPerReceiver, Total: cfg.PushOutboxMax, DeadRetention: cfg.PushDeadRetention}}
	for i, r := range cfg.PushReceivers {
		rc, err := r.TLSConfig(i)
		if err != nil {
			return notify.Options{}, err
		}
		o.Receivers = append(o.Receivers, notify.Receiver{Host: r.Host, TLS: rc, Entry: config.PushReceiverName(i)})
	}
	if change != nil {
		change(&o)
	}
	return o, nil
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
		if cfg.HTTPS() {
			advertise = "https://" + addr
		}
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
