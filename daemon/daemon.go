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
	"time"

	"github.com/mailroom/mailroom/config"
	"github.com/mailroom/mailroom/daemon/engine"
	"github.com/mailroom/mailroom/daemon/httpapi"
	"github.com/mailroom/mailroom/daemon/store/logstore"
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
	st, err := logstore.Open(cfg.DataDir, logstore.Options{Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("opening the mailbox log in %s: %w", cfg.DataDir, err)
	}
	eng, err := engine.Open(st, engine.Options{
		Logger:              logger,
		SubscriberBuffer:    cfg.SSEBuffer,
		AutoCompactFactor:   cfg.CompactFactor,
		AutoCompactMinBytes: cfg.CompactMinBytes,
		RetainDone:          cfg.RetainDone,
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
	api := httpapi.New(eng, httpapi.Options{Logger: logger, HeartbeatInterval: cfg.SSEHeartbeat, WriteTimeout: cfg.SSEWriteTimeout})
	d := &Daemon{cfg: cfg, log: logger, store: st, engine: eng, ln: ln, served: make(chan struct{}),
		srv: &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}}
	return d, nil
}

// Addr is the address the daemon listens on (host:port), with the real port
// when the configuration asked for port 0.
func (d *Daemon) Addr() string { return d.ln.Addr().String() }

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
