package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"golang.org/x/term"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/tui"
)

const consoleSummary = "watch the mailbox live and repair stuck leases in the terminal"

func runConsole(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, verbHelp{
		verb:    "console",
		summary: consoleSummary,
		usage:   "[--addr ADDR] [--token T] [--ca-file CA] [--cert C --key K] [--read-only] [--stale-after 5m] [--export-dir DIR]",
		example: "mailroom console --addr 127.0.0.1:7717 --stale-after 2m\nmailroom console --read-only   # watch only: no repair keys\nmailroom console --export-dir ~/incidents   # where Ctrl-S and J save panes",
	})
	cf := addClientFlags(fs, e)
	readOnly := fs.Bool("read-only", false, "remove every key that changes the mailbox (R, E)")
	staleAfter := fs.Duration("stale-after", tui.DefaultStaleAfter, "highlight leases held longer than this")
	exportDir := fs.String("export-dir", e.getenv("MAILROOM_EXPORT_DIR"), "the directory Ctrl-S and J save panes in (env MAILROOM_EXPORT_DIR; default: the current directory)")
	if _, err := parseExact(fs, args); err != nil {
		return err
	}
	if *staleAfter <= 0 {
		return usagef("--stale-after: got %s, expected a positive duration such as 5m", *staleAfter)
	}
	if *exportDir != "" {
		// Said now, not at the first save in the middle of an incident.
		abs, err := filepath.Abs(*exportDir)
		if err != nil {
			return usagef("--export-dir: got %q: %v", *exportDir, err)
		}
		if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
			return usagef("--export-dir: got %q, expected an existing directory to save panes in", *exportDir)
		}
		*exportDir = abs
	}
	// The console, once it is built, says on its flash line that the client
	// is retrying a request: lines on stderr would tear its screen.
	var con atomic.Pointer[tui.Console]
	cf.notice = func(reason string) {
		if t := con.Load(); t != nil {
			t.Retrying(reason)
		}
	}
	c, err := cf.client(e)
	if err != nil {
		return err
	}
	if err := e.needTerminal("mailroom console needs a terminal; for a one-shot view run 'mailroom status'"); err != nil {
		return err
	}
	principal, err := whoAmI(ctx, c, cf.timeout)
	if err != nil {
		return err
	}
	t := tui.New(c, tui.Options{Addr: cf.addr, ReadOnly: *readOnly, StaleAfter: *staleAfter, Principal: principal, Screen: e.screen, ExportDir: *exportDir})
	con.Store(t)
	return t.Run(ctx)
}

// whoAmI is the principal the console acts as, for its header. A daemon
// that cannot be reached yet is no reason not to start: the console shows
// it reconnecting. A daemon that refuses the token is: the console could
// never show anything; so is TLS that fails (an authority this console
// does not trust, a name mismatch, a certificate it asks for): its one
// line says what to give.
func whoAmI(ctx context.Context, c *client.Client, timeout time.Duration) (string, error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	who, err := c.WhoAmI(ctx)
	if _, tlsFailed := errors.AsType[*client.TLSError](err); errors.Is(err, client.ErrUnreachable) && !tlsFailed {
		return "", nil
	}
	return who.Principal, err
}

// needTerminal refuses, saying why, to start a screen without a terminal
// to draw it on: tcell would fail with a system call's words, or draw into
// a pipe. A screen the caller supplied (tests) is always there.
func (e *env) needTerminal(why string) error {
	if e.screen != nil {
		return nil
	}
	out, ok := e.stdout.(*os.File)
	if ok && term.IsTerminal(int(out.Fd())) && term.IsTerminal(int(os.Stdin.Fd())) {
		return nil
	}
	return &lineError{msg: why}
}
