package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/mailroom/mailroom/daemon"
	"github.com/mailroom/mailroom/daemon/config"
)

const daemonSummary = "run the mailbox daemon until SIGINT or SIGTERM"

func runDaemon(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, verbHelp{
		verb:    "daemon",
		summary: daemonSummary,
		usage:   "[--config FILE] [flags]",
		example: "mailroom daemon --config /etc/mailroom.yaml --addr 127.0.0.1:7717 --log-level debug",
	})
	configPath := fs.String("config", "", "YAML config file (keys as the flags below, with _ for -)")
	// The keys as the command line gives them, each checked as it is parsed
	// so a bad one is a flag error; they are applied after the file and the
	// environment, so flags win.
	given := config.DefaultFor(e.getenv)
	given.AddFlags(fs.FlagSet)
	if _, err := parseExact(fs, args); err != nil {
		return err
	}
	if e.environ != nil {
		if err := config.CheckEnv(e.environ()); err != nil {
			return &usageError{msg: err.Error()}
		}
	}
	cfg, err := loadDaemonConfig(*configPath, given, fs.FlagSet, e.getenv)
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
	// One stable, format-independent line on stdout so scripts and tests can
	// find the port when they asked for port 0.
	fmt.Fprintf(e.stdout, "mailroom daemon listening on %s\n", d.Addr())
	go releaseReplayMemory()
	return d.Run(ctx)
}

// loadDaemonConfig applies defaults < file < environment < the keys given on
// cmdline (bound to given by AddFlags) and validates the result. Every
// problem is a usage error naming the key.
func loadDaemonConfig(path string, given config.Config, cmdline *flag.FlagSet, getenv func(string) string) (config.Config, error) {
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
	config.ApplyFlags(&cfg, given, cmdline)
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
