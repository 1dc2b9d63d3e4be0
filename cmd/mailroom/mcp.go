package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/mailbox"
	"github.com/mailroom/mailroom/mcpface"
)

const mcpSummary = "serve the mailbox to an MCP host (Claude Code, Cursor, ...) over stdio, as the token's agent"

// runMCP serves one MCP session on stdin and stdout until the host closes
// stdin. Every tool is a request to the daemon with the token, so the
// daemon decides what the session may do.
func runMCP(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, verbHelp{
		verb:    "mcp",
		summary: mcpSummary,
		usage:   "[--agent AGENT] [flags]",
		example: "mailroom mcp --addr 127.0.0.1:7717 --token \"$MAILROOM_TOKEN\"   # what an MCP host launches: JSON-RPC on stdin and stdout\n" +
			"mailroom mcp --agent planner@local                              # a daemon without tokens: say which agent the session is",
	})
	cf := addClientFlags(fs, e)
	agent := fs.String("agent", "", "the agent id the session sends as and leases for (default: the token's principal; required without tokens)")
	logLevel := fs.String("log-level", "warn", "what the server logs to stderr: debug, info, warn or error")
	if _, err := parseExact(fs, args); err != nil {
		return err
	}
	if *agent != "" {
		if err := mailbox.ValidateAgentID("--agent", *agent); err != nil {
			return usagef("%s", err.Error())
		}
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return usagef("--log-level: got %q, expected debug, info, warn or error", *logLevel)
	}
	// A session lives as long as its host: --timeout bounds each request
	// (a long poll's plus its wait), not the session.
	c, err := cf.client(e, client.WithTimeout(cf.timeout))
	if err != nil {
		return err
	}
	// stdout is the protocol's: the log goes to stderr, which hosts show
	// as the server's log.
	logger := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: level}))
	start, cancel := ctx, context.CancelFunc(func() {})
	if cf.timeout > 0 {
		start, cancel = context.WithTimeout(ctx, cf.timeout)
	}
	face, err := mcpface.New(start, c, mcpface.Options{Agent: *agent, Version: moduleVersion(), Logger: logger})
	cancel()
	if errors.Is(err, mcpface.ErrNoAgent) {
		return usagef("--agent: missing; the daemon at %s runs without tokens, so give the agent id this session sends as and leases for (such as planner@local)", cf.addr)
	}
	if err != nil {
		return err
	}
	defer face.Close()
	var stdin io.Reader = os.Stdin
	if e.stdin != nil {
		stdin = e.stdin
	}
	err = face.Server.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{e.stdout}})
	if ctx.Err() != nil {
		return nil // a signal ended the session
	}
	return err
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
