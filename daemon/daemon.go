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
	"sync"
	"time"

	"github.com/mailroom/mailroom/config"
	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/daemon/engine"
	"github.com/mailroom/mailroom/daemon/httpapi"
	"github.com/mailroom/mailroom/daemon/store/logstore"
	"github.com/mailroom/mailroom/mailbox"
)

// Daemon is a running mailbox: an open log, a replayed engine and a bound
// listener.
type Daemon struct {
	cfg    config.Config
	log    *slog.Logger
	store  *logstore.Store
	engine *engine.Engine
	ln     net.Listener
	srv    *http.Server
	served chan struct{}
	// stopScan ends the retry-stale scheduler; scanDone says it has.
	stopScan chan struct{}
	stopOnce sync.Once
	scanDone chan struct{}
}

// Open opens the data directory, replays the log and binds the listener.
// Nothing is served until Serve.
func Open(cfg config.Config, logger *slog.Logger) (*Daemon, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	authn, err := auth.New(cfg.Tokens)
	if err != nil {
		return nil, err
	}
	st, err := logstore.Open(cfg.DataDir, logstore.Options{Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("opening the mailbox log in %s: %w", cfg.DataDir, err)
	}
	// A mailbox on tmpfs acknowledges writes that a reboot takes back. That
	// is fine for a demo or a benchmark of the CPU, and a disaster when
	// somebody meant a real disk, so say it where operators look.
	if fs, volatile, err := logstore.Filesystem(cfg.DataDir); err == nil && volatile {
		logger.Warn("the data dir is on "+fs+", kept in memory only: every acknowledged event is lost when the machine restarts",
			"data_dir", cfg.DataDir, "filesystem", fs)
	}
	eng, err := engine.Open(st, engine.Options{
		Logger:              logger,
		SubscriberBuffer:    cfg.SSEBuffer,
		AutoCompactFactor:   cfg.CompactFactor,
		AutoCompactMinBytes: cfg.CompactMinBytes,
		RetainDone:          cfg.RetainDone,
		ResultCacheMax:      cfg.ResultCacheMax,
		ResultCacheAge:      cfg.ResultCacheAge,
		AuditMax:            cfg.AuditMax,
	})
	if err != nil {
		st.Close()
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		eng.Close()
		return nil, fmt.Errorf("listening on %s: %w", cfg.Addr, err)
	}
	apiOpts := httpapi.Options{Logger: logger, HeartbeatInterval: cfg.SSEHeartbeat, WriteTimeout: cfg.SSEWriteTimeout}
	if authn.Enabled() {
		apiOpts.Authorizer = httpapi.TokenAuthorizer(authn)
		logger.Info("bearer tokens required", "tokens", len(cfg.Tokens))
	} else {
		// config.Validate has already refused a non-loopback address.
		logger.Warn("no tokens configured: serving loopback only, without authentication", "addr", cfg.Addr)
	}
	api := httpapi.New(auth.Guard(eng), apiOpts)
	d := &Daemon{cfg: cfg, log: logger, store: st, engine: eng, ln: ln, served: make(chan struct{}), stopScan: make(chan struct{}), scanDone: make(chan struct{}),
		srv: &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}}
	if cfg.RetryStaleInterval > 0 {
		go d.scheduleRetryStale()
	} else {
		close(d.scanDone)
	}
	return d, nil
}

// Addr is the address the daemon listens on (host:port), with the real port
// when the configuration asked for port 0.
func (d *Daemon) Addr() string { return d.ln.Addr().String() }

// DataDir is the directory holding the mailbox's log and snapshots.
func (d *Daemon) DataDir() string { return d.cfg.DataDir }

// Engine is the running mailbox, for in-process callers (the demo, tests).
func (d *Daemon) Engine() *engine.Engine { return d.engine }

// Serve answers requests until Shutdown; it returns nil after a clean one.
func (d *Daemon) Serve() error {
	defer close(d.served)
	d.log.Info("mailroom daemon listening", "addr", d.Addr(), "data_dir", d.cfg.DataDir)

	if err := d.srv.Serve(d.ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Shutdown stops accepting connections, lets in-flight requests finish
// (event streams are ended first, they never finish by themselves), then
// flushes, syncs and closes the log. It is safe to call without Serve.
func (d *Daemon) Shutdown(ctx context.Context) error {
	d.stopOnce.Do(func() { close(d.stopScan) })
	<-d.scanDone
	d.engine.EndSubscriptions()
	err := d.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		d.log.Warn("requests still running at the shutdown deadline; closing them", "err", err)
		d.srv.Close()
	}
	if cerr := d.engine.Close(); cerr != nil {
		return fmt.Errorf("closing the mailbox log: %w", cerr)
	}
	d.log.Info("mailroom daemon stopped; log synced and closed", "data_dir", d.cfg.DataDir)
	return nil
}

// scheduleRetryStale runs the enabled retry-stale scan every interval. Each
// requeue it makes is a repair event, audited under the scheduler's name.
func (d *Daemon) scheduleRetryStale() {
	defer close(d.scanDone)
	p := d.cfg.RetryPolicy()
	d.log.Info("retry-stale scheduler on", "interval", d.cfg.RetryStaleInterval, "min_lease_age_ms", p.MinLeaseAgeMs,
		"max_attempts", p.MaxAttempts, "max_requeues", p.MaxRequeues, "scan_limit", p.ScanLimit)
	t := time.NewTicker(d.cfg.RetryStaleInterval)
	defer t.Stop()
	for {
		select {
		case <-d.stopScan:
			return
		case <-t.C:
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
