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

	"github.com/mailroom/mailroom/daemon/notify"

	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/daemon/engine"
	"github.com/mailroom/mailroom/daemon/outbound"
	"github.com/mailroom/mailroom/internal/tlsreload"
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
	// tls serves the certificate of tls_cert_file, reloaded as it
	// changes (nil without TLS); certPoll is how often its files are
	// looked at.
	tls      *tlsreload.Reloader
	certPoll time.Duration

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
	certPoll time.Duration
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

// WithCertPollInterval looks at the TLS certificate files this often
// for a change (tlsreload.DefaultInterval by default).
func WithCertPollInterval(d time.Duration) Option { return func(o *options) { o.certPoll = d } }

// Open opens the data directory, replays the log and binds the listener, so
// Addr is known before anything is served. Nothing is served until Run.
func Open(cfg config.Config, logger *slog.Logger, opts ...Option) (*Daemon, error) {
	return OpenContext(context.Background(), cfg, logger, opts...)
}

// tickSource is the retry-stale scheduler's ticks: the caller's, else a
// ticker's.
func (o options) tickSource() TickSource {
	if o.ticks != nil {
		return o.ticks
	}
	return tickerSource
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
		if d.tls != nil {
			d.scans.Go(func() { d.tls.Watch(dctx, d.certPoll) })
		}
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
	d.log.Info("mailroom daemon listening", "addr", d.Addr(), "data_dir", d.cfg.DataDir, "tls", d.tls != nil)
	var err error
	if d.tls != nil {
		// ServeTLS, not Serve over a TLS listener: it sets up HTTP/2 by
		// ALPN, and answers a plain HTTP request with a 400 that says so.
		err = d.srv.ServeTLS(d.ln, "", "")
	} else {
		err = d.srv.Serve(d.ln)
	}
	if !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Reload loads the TLS certificate files again (on SIGHUP): new
// handshakes get the new certificate, connections already open keep
// theirs. A reload that fails keeps the served certificate and is logged;
// its error is returned too. Without TLS there is nothing to reload.
func (d *Daemon) Reload() error {
	if d.tls == nil {
		d.log.Info("nothing to reload: the daemon serves no TLS certificate (tls_cert_file)")
		return nil
	}
	return d.tls.Reload()
}

// URL is the daemon's base URL: https:// when it serves TLS, and the
// address it listens on.
func (d *Daemon) URL() string {
	if d.tls != nil {
		return "https://" + d.Addr()
	}
	return "http://" + d.Addr()
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
			// Only the instance that leads a shared mailbox scans. This
			// is a tick's work asking whether it leads, not a worker
			// polling for the lead (those run in terms of the engine's
			// WhileLeading): a follower takes its ticks and lets them
			// pass, so a tick source that is a channel never blocks.
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
