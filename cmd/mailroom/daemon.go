package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/mailroom/mailroom/daemon"
	"github.com/mailroom/mailroom/daemon/config"
)

const daemonSummary = "run the mailbox daemon until SIGINT or SIGTERM (SIGHUP reloads its TLS certificate)"

func runDaemon(ctx context.Context, e *env, args []string) error {
	// The flags win over the file, yet one of them names the file. So the
	// command line is parsed twice: first into a Config thrown away, which
	// refuses a bad flag (before any file is read, as a usage error) and
	// finds --config; then, in loadDaemonConfig, over the Config the file
	// and the environment made, last, so the flags win with nothing copied.
	probe := config.DefaultFor(e.getenv)
	fs, configPath := daemonFlags(e, &probe)
	if _, err := parseExact(fs, args); err != nil {
		return err
	}
	if e.environ != nil {
		if err := config.CheckEnv(e.environ()); err != nil {
			return &usageError{msg: err.Error()}
		}
	}
	cfg, err := loadDaemonConfig(e, *configPath, args)
	if err != nil {
		return err
	}
	logger := newLogger(e.stderr, cfg)
	tuneGC(e.getenv)
	tuneProcs(e.getenv, cfg.Store == config.StoreLog)
	d, err := daemon.OpenContext(ctx, cfg, logger)
	if err != nil {
		return err
	}
	// Before the line below: whoever reads it may send SIGHUP at once.
	defer reloadOnHangup(d)()
	// One stable, format-independent line on stdout so scripts and tests can
	// find the port when they asked for port 0.
	fmt.Fprintf(e.stdout, "mailroom daemon listening on %s\n", d.Addr())
	go releaseReplayMemory()
	return d.Run(ctx)
}

// reloadOnHangup reloads the daemon's TLS certificate on every SIGHUP,
// as certbot's and cert-manager's hooks ask, until the returned stop. Only
// the daemon verb takes SIGHUP: the other verbs keep its default, which
// ends them with their terminal.
func reloadOnHangup(d *daemon.Daemon) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-hup:
				_ = d.Reload() // the daemon logs how it went
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(hup)
		close(done)
	}
}

// daemonFlags is the daemon verb's flag set, every key bound to its field
// in cfg, and where --config is parsed to.
func daemonFlags(e *env, cfg *config.Config) (*verbFlags, *string) {
	fs := newFlagSet(e, verbHelp{
		verb:    "daemon",
		summary: daemonSummary,
		usage:   "[--config FILE] [flags]",
		example: "mailroom daemon --config /etc/mailroom.yaml --addr 127.0.0.1:7717 --log-level debug",
	})
	path := fs.String("config", "", "YAML config file (keys as the flags below, with _ for -)")
	cfg.AddFlags(fs.FlagSet)
	return fs, path
}

// loadDaemonConfig applies defaults < the file at path < the environment <
// the flags in args (parsed once already: they parse again) and validates
// the result. Every problem is a usage error naming the key.
func loadDaemonConfig(e *env, path string, args []string) (config.Config, error) {
	cfg := config.DefaultFor(e.getenv)
	if path != "" {
		var err error
		if cfg, err = config.LoadOver(cfg, path); err != nil {
			return cfg, &usageError{msg: err.Error()}
		}
	}
	if err := config.ApplyEnv(&cfg, e.getenv); err != nil {
		return cfg, &usageError{msg: err.Error()}
	}
	fs, _ := daemonFlags(e, &cfg)
	if _, err := parseExact(fs, args); err != nil {
		return cfg, err
	}
	if err := cfg.Validate(); err != nil {
		return cfg, &usageError{msg: "invalid configuration: " + err.Error()}
	}
	return cfg, nil
}

func newLogger(w io.Writer, cfg config.Config) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.Level()}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
