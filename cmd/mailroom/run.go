package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/gdamore/tcell/v2"
)

// Exit codes: usage errors are the caller's to fix, everything else
// (daemon refusals, an unreachable daemon, I/O) is a runtime failure.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// env is what a command may touch of the outside world; tests supply their
// own so commands run in-process.
type env struct {
	stdout, stderr io.Writer
	// stdin is what a verb reads with "-" for a file; nil is os.Stdin.
	stdin  io.Reader
	getenv func(string) string
	// environ lists the environment as os.Environ does, for the checks
	// that need every variable (unknown MAILROOM_* names); nil skips them.
	environ func() []string
	// screen is the terminal the console draws on; nil opens the real one.
	screen tcell.Screen
}

// command is one verb. Each builds its own flag.FlagSet inside run, so a verb
// is self-contained: its flags, help and output live in one function.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, e *env, args []string) error
}

func commands() []command {
	return []command{
		{"daemon", daemonSummary, runDaemon},
		{"send", sendSummary, runSend},
		{"lease", leaseSummary, runLease},
		{"result", resultSummary, runResult},
		{"reply", replySummary, runReply},
		{"status", statusSummary, runStatus},
		{"requeue", requeueSummary, runRequeue},
		{"force-error", forceErrorSummary, runForceError},
		{"move", moveSummary, runMove},
		{"cancel", cancelSummary, runCancel},
		{"hand-over", handOverSummary, runHandOver},
		{"compact", compactSummary, runCompact},
		{"log", logSummary, runLog},
		{"bench", benchSummary, runBench},
		{"retry-stale", retryStaleSummary, runRetryStale},
		{"audit", auditSummary, runAudit},
		{"push", pushSummary, runPush},
		{"agent", agentSummary, runAgent},
		{"mcp", mcpSummary, runMCP},
		{"console", consoleSummary, runConsole},
		{"demo", demoSummary, runDemo},
		{"token", tokenSummary, runToken},
		{"version", versionSummary, runVersion},
	}
}

// run is the whole program minus the process: it returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	return runEnv(ctx, &env{stdout: stdout, stderr: stderr, getenv: getenv}, args)
}

// runEnv is run with the whole outside world supplied, terminal included.
func runEnv(ctx context.Context, e *env, args []string) int {
	stdout, stderr := e.stdout, e.stderr
	if len(args) == 0 {
		printTopUsage(stderr)
		return exitUsage
	}
	verb, rest := args[0], args[1:]
	switch verb {
	case "-version", "--version":
		verb = "version"
	case "-h", "-help", "--help", "help":
		if verb == "help" && len(rest) > 0 {
			// "mailroom help send" is "mailroom send --help".
			verb, rest = rest[0], []string{"--help"}
			break
		}
		printTopUsage(stdout)
		return exitOK
	}
	for _, c := range commands() {
		if c.name == verb {
			return report(e, c.name, c.run(ctx, e, rest))
		}
	}
	fmt.Fprintf(stderr, "mailroom: unknown command %q\nrun 'mailroom --help' for the list of commands\n", verb)
	return exitUsage
}

func printTopUsage(w io.Writer) {
	fmt.Fprint(w, `mailroom: a durable agent-to-agent task mailbox (daemon and CLI)

Usage: mailroom <command> [flags] [arguments]

Commands:
`)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, c := range commands() {
		fmt.Fprintf(tw, "  %s\t%s\n", c.name, c.summary)
	}
	tw.Flush()
	fmt.Fprint(w, `
Client commands talk to the daemon at --addr (env MAILROOM_ADDR, default
127.0.0.1:7717) and send --token (env MAILROOM_TOKEN) when one is set. A
daemon that serves TLS is https://HOST:PORT, with --ca-file (env
MAILROOM_CA_FILE) when a private CA signed its certificate, and --cert and
--key (MAILROOM_CERT_FILE, MAILROOM_KEY_FILE) when it asks for a client's.
Exit codes: 0 success, 1 the daemon refused or could not be reached, 2 usage.

Run 'mailroom <command> --help' for a command's flags and an example.
`)
}

// usageError is a mistake in the command line; it exits 2 and points at the
// verb's help.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// verbError names the verb an error belongs to when it is not the top-level
// command (result post, result next).
type verbError struct {
	verb string
	err  error
}

func (e *verbError) Error() string { return e.err.Error() }
func (e *verbError) Unwrap() error { return e.err }

// lineError is a failure whose message is the whole line to print, naming
// the command itself ("mailroom console needs a terminal; ...").
type lineError struct{ msg string }

func (e *lineError) Error() string { return e.msg }

// errHelpShown means the verb printed its help as asked: exit 0.
var errHelpShown = errors.New("help shown")

// report prints err the one way the CLI prints errors and picks the exit code.
func report(e *env, verb string, err error) int {
	if err == nil || errors.Is(err, errHelpShown) {
		return exitOK
	}
	var ve *verbError
	if errors.As(err, &ve) {
		verb = ve.verb
	}
	err = asUsageError(verb, err)
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(e.stderr, "mailroom %s: %s\nrun 'mailroom %s --help' for usage\n", verb, ue.msg, verb)
		return exitUsage
	}
	var le *lineError
	if isUnreachable(err) || errors.As(err, &le) {
		// The message already says what it is about: the client's, which
		// address and why; a lineError, the command.
		fmt.Fprintln(e.stderr, err)
		return exitFailure
	}
	fmt.Fprintf(e.stderr, "mailroom %s: %s\n", verb, errorText(err))
	if d := conflictDetails(err); d != "" {
		fmt.Fprint(e.stderr, d)
	}
	return exitFailure
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ") + "\n"
}
