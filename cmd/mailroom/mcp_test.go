package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/internal/testlog"
	"github.com/mailroom/mailroom/mcpface/facetest"
)

// faceDaemon is the MCP suite's Factory here: a daemon in this process
// requiring the suite's tokens, the rest of its configuration changed by
// change (nil: nothing).
func faceDaemon(change func(*config.Config)) facetest.Factory {
	return func(t *testing.T, grants []facetest.Grant) facetest.Target {
		var tokens []auth.Token
		for _, g := range grants {
			tokens = append(tokens, auth.Token{Principal: g.Principal, SHA256: g.SHA256(), Caps: g.Caps})
		}
		return daemontest.Start(t, daemontest.Options{Tokens: tokens, Config: change})
	}
}

// mcpProc starts the real binary as `mailroom mcp` with token, as an MCP
// host launches it, and connects the Go SDK's client to its stdin and
// stdout. Its log (stderr) is shown when the test fails.
func mcpProc(t *testing.T, d *facetest.Daemon, token string, o facetest.Session) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(binPath, "mcp", "--addr", d.Addr(), "--log-level", "info")
	cmd.Env = []string{asMainEnv + "=1", "MAILROOM_TOKEN=" + token}
	logs := &testlog.Buffer{}
	cmd.Stderr = logs
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("mailroom mcp's log:\n%s", logs)
		}
	})
	return facetest.ClientSession(t, &mcp.CommandTransport{Command: cmd}, o)
}

// TestMCPStdio runs the MCP face's suite against real `mailroom mcp`
// subprocesses over stdio: a full cycle between two sessions, long polls,
// a guarded repair, refusals, resources and subscriptions.
func TestMCPStdio(t *testing.T) {
	facetest.Run(t, mcpProc, faceDaemon(nil))
}

// TestMCPUsage: what `mailroom mcp` refuses before it serves anything.
func TestMCPUsage(t *testing.T) {
	addr := startDaemon(t)
	wantUsage(t, addr, []string{"mcp"}, "--agent: missing", "runs without tokens")
	wantUsage(t, addr, []string{"mcp", "--agent", "Planner@local"}, "--agent", "Planner@local")
	wantUsage(t, addr, []string{"mcp", "--agent", "planner@local", "--log-level", "loud"}, "--log-level", `"loud"`)
	o := cli(t, closedAddr(t), "mcp", "--agent", "planner@local")
	if o.code != 1 || !strings.Contains(o.stderr, "cannot reach mailroom daemon") {
		t.Errorf("mailroom mcp against nothing: exit %d, stderr %q; want 1 and cannot reach", o.code, o.stderr)
	}
}
