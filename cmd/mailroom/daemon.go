package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/mailroom/mailroom/config"
	"github.com/mailroom/mailroom/daemon"
)

const daemonSummary = "run the mailbox daemon until SIGINT or SIGTERM"

// flagSetting is one config flag as given, applied after the file and the
// environment so flags win.
type flagSetting struct{ key, value string }

func runDaemon(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, verbHelp{
		verb:    "daemon",
		summary: daemonSummary,
		usage:   "[--config FILE] [flags]",
		example: "mailroom daemon --config /etc/mailroom.yaml --addr 127.0.0.1:7717 --log-level debug",
	})
	configPath := fs.String("config", "", "YAML config file (keys as the flags below, with _ for -)")
	var settings []flagSetting
	defaults := config.DefaultFor(e.getenv)
	for _, k := range config.Keys() {
		if k.FileOnly {
			continue // tokens: secrets stay out of argv
		}
		def, _ := config.Value(defaults, k.Name)
		fs.Func(k.Flag(), fmt.Sprintf("%s (env %s, default %q)", k.Usage, k.Env, def), func(v string) error {
			// Parse now so a bad flag is reported as a flag error; apply
			// later, after the file and the environment.
			scratch := config.DefaultFor(e.getenv)
			if err := config.Set(&scratch, k.Name, v); err != nil {
				return err
			}
			settings = append(settings, flagSetting{k.Name, v})
			return nil
		})
	}
	if _, err := parseExact(fs, args); err != nil {
		return err
	}
	cfg, err := loadDaemonConfig(*configPath, settings, e.getenv)
	if err != nil {
		return err
	}
	logger := newLogger(e.stderr, cfg)
	d, err := daemon.Open(cfg, logger)
	if err != nil {
		return err
	}
	// One stable, format-independent line on stdout so scripts and tests can
	// find the port when they asked for port 0.
	fmt.Fprintf(e.stdout, "mailroom daemon listening on %s\n", d.Addr())

	served := make(chan error, 1)
	go func() { served <- d.Serve() }()
	var serveErr error
	select {
	case <-ctx.Done():
		logger.Info("shutting down", "timeout", cfg.ShutdownTimeout)
	case serveErr = <-served:
		served = nil
	}
	// Shut down either way: the log must be flushed and closed even when the
	// listener failed.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownTimeout)
	defer cancel()
	shutErr := d.Shutdown(sctx)
	if served != nil {
		serveErr = <-served
	}
	return errors.Join(serveErr, shutErr)
}

// loadDaemonConfig applies defaults < file < environment < flags and
// validates the result. Every problem is a usage error naming the key.
func loadDaemonConfig(path string, settings []flagSetting, getenv func(string) string) (config.Config, error) {
	cfg := config.DefaultFor(getenv)
	if path != "" {
		var err error
		if cfg, err = config.LoadOver(cfg, path); err != nil {
			return cfg, &usageError{msg: err.Error()}
		}
	}
	if err := config.ApplyEnv(&cfg, getenv); err != nil {
		return cfg, &usageError{msg: err.Error()}
	}
	for _, s := range settings {
		if err := config.Set(&cfg, s.key, s.value); err != nil {
			return cfg, &usageError{msg: "flag: " + err.Error()}
		}
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
