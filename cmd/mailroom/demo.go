package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/cmd/mailroom/internal/demo"
	"github.com/mailroom/mailroom/daemon"
	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/tui"
)

const demoSummary = "try mailroom: a daemon with synthetic agents, and the live console on it"

// demoStaleAfter is short so that crashed workers' leases turn stale
// within the first minute of a demo.
const demoStaleAfter = 20 * time.Second

func runDemo(ctx context.Context, e *env, args []string) (err error) {
	fs := newFlagSet(e, verbHelp{
		verb:    "demo",
		summary: demoSummary,
		usage:   "[--data DIR] [--headless] [--seed N] [--stale-after 20s]",
		example: "mailroom demo\nmailroom demo --headless   # then 'mailroom console --addr ...' in another terminal",
	})
	dataDir := fs.String("data", "", "keep the demo's log in DIR (default: a temporary directory, removed at exit)")
	headless := fs.Bool("headless", false, "run the daemon and the agents without the console, until SIGINT or SIGTERM")
	seed := fs.Int64("seed", 1, "seed of the agents' choices, so runs look alike")
	staleAfter := fs.Duration("stale-after", demoStaleAfter, "the console highlights leases held longer than this")
	if _, err := parseExact(fs, args); err != nil {
		return err
	}
	if *staleAfter <= 0 {
		return usagef("--stale-after: got %s, expected a positive duration such as 20s", *staleAfter)
	}
	if !*headless {
		if err := e.needTerminal("mailroom demo needs a terminal for its console; without one run 'mailroom demo --headless'"); err != nil {
			return err
		}
	}
	ws, err := openWorkspace(*dataDir)
	if err != nil {
		return err
	}
	// Said last, after the console has given the terminal back.
	defer func() { err = errors.Join(err, ws.close(e)) }()

	// The console owns the terminal, so nothing may log to it: the daemon
	// and the agents write to a file instead.
	logger := slog.New(slog.NewTextHandler(ws.log, &slog.HandlerOptions{Level: slog.LevelInfo}))
	cfg := config.DefaultFor(e.getenv)
	tuneGC(e.getenv)
	tuneProcs(e.getenv, true)
	// No tokens: the demo listens on loopback only, and its agents and
	// console send none.
	cfg.DataDir, cfg.Addr = ws.dataDir, "127.0.0.1:0"
	d, err := daemon.Open(cfg, logger)
	if err != nil {
		return err
	}
	// The daemon stops last, after the agents and the console: not when ctx
	// ends, which is what stops them.
	daemonCtx, stopDaemon := context.WithCancel(context.WithoutCancel(ctx))
	defer stopDaemon()
	ran := make(chan error, 1)
	go func() { ran <- d.Run(daemonCtx) }()

	agentsCtx, stopAgents := context.WithCancel(ctx)
	defer stopAgents()
	agents := make(chan error, 1)
	go func() {
		agents <- demo.Run(agentsCtx, demo.Options{Addr: d.Addr(), Seed: *seed, Logger: logger.With("component", "demo agents")})
	}()

	var runErr error
	if *headless {
		ran, runErr = waitHeadless(ctx, e, d, ws, *staleAfter, ran)
	} else {
		runErr = demoConsole(ctx, e, d, *staleAfter)
	}

	// Agents first, so none of them is mid-request when the daemon goes.
	stopAgents()
	agentsErr := <-agents
	stopDaemon()
	var daemonErr error
	if ran != nil {
		daemonErr = <-ran
	}
	return errors.Join(runErr, agentsErr, daemonErr)
}

// waitHeadless says where the demo's daemon is and waits for ctx to end
// or the daemon to stop serving; ran is nil once the daemon's end is read.
func waitHeadless(ctx context.Context, e *env, d *daemon.Daemon, ws *workspace, staleAfter time.Duration, ran chan error) (chan error, error) {
	url := "http://" + d.Addr()
	fmt.Fprintf(e.stdout, "mailroom demo: daemon on %s — run 'mailroom console --addr %s --stale-after %s' in another terminal\n", url, url, staleAfter)
	fmt.Fprintf(e.stdout, "mailroom demo: data in %s, daemon log in %s; SIGINT or SIGTERM (Ctrl-C) stops\n", ws.dataDir, ws.logPath)
	select {
	case <-ctx.Done():
		return ran, nil
	case err := <-ran:
		if err == nil {
			err = errors.New("the daemon stopped serving")
		}
		return nil, err
	}
}

// demoConsole runs the console on the demo's daemon until ctx ends or the
// operator quits.
func demoConsole(ctx context.Context, e *env, d *daemon.Daemon, staleAfter time.Duration) error {
	c, err := client.New(d.Addr())
	if err != nil {
		return err
	}
	return tui.New(c, tui.Options{Addr: d.Addr(), StaleAfter: staleAfter, Screen: e.screen}).Run(ctx)
}

// workspace is where a demo keeps its data and its log.
type workspace struct {
	dataDir string
	logPath string
	log     *os.File
	// tempData is removed at exit; the log beside it is kept, so a demo
	// that went wrong can still be looked into.
	tempData string
}

// openWorkspace uses dir when given; otherwise a fresh temporary directory
// holding data/ (removed at exit) and demo.log (kept).
func openWorkspace(dir string) (*workspace, error) {
	ws := &workspace{dataDir: dir}
	if dir == "" {
		root, err := os.MkdirTemp("", "mailroom-demo-")
		if err != nil {
			return nil, fmt.Errorf("creating the demo's temporary directory: %w", err)
		}
		ws.dataDir, ws.tempData = filepath.Join(root, "data"), filepath.Join(root, "data")
		ws.logPath = filepath.Join(root, "demo.log")
	} else {
		ws.logPath = filepath.Join(dir, "demo.log")
	}
	if err := os.MkdirAll(ws.dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("--data: %w", err)
	}
	f, err := os.OpenFile(ws.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the demo's log: %w", err)
	}
	ws.log = f
	return ws, nil
}

// close removes temporary data and says where the log is.
func (ws *workspace) close(e *env) error {
	err := ws.log.Close()
	if ws.tempData != "" {
		err = errors.Join(err, os.RemoveAll(ws.tempData))
	}
	fmt.Fprintf(e.stdout, "mailroom demo: stopped; daemon log in %s\n", ws.logPath)
	return err
}
