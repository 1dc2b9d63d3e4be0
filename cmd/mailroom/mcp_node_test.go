package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/mailroom/mailroom/config"
	"github.com/mailroom/mailroom/mcpface/facetest"
)

// TestMCPTypeScriptInterop: the official TypeScript MCP SDK's client
// (@modelcontextprotocol/sdk 1.32.2, pinned in interop/node's
// package-lock.json), as an MCP host, spawns this binary as `mailroom mcp`
// over stdio against a real daemon and runs a full cycle, then the same
// over streamable HTTP against the daemon's /mcp
// (interop/node/mcp/host.test.mjs). Its client refuses a whole tools list
// whose schemas it cannot read, so this is what catches a tool typed too
// loosely. Without node or the packages the test skips, except on CI
// (CI=true), where it fails: .ci/run installs both.
func TestMCPTypeScriptInterop(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("..", "..", "interop", "node"))
	if err != nil {
		t.Fatal(err)
	}
	onCI := os.Getenv("CI") == "true"
	unavailable := func(format string, args ...any) {
		t.Helper()
		if onCI {
			t.Fatalf(format, args...)
		}
		t.Skipf(format+" (on CI this fails)", args...)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		unavailable("node is not installed: install Node.js 20 or later to run the @modelcontextprotocol/sdk interop test")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		npm, err := exec.LookPath("npm")
		if err != nil {
			unavailable("npm is not installed, and %s has no node_modules: install npm, or run npm ci there", dir)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			unavailable("npm ci in %s: %v\n%s", dir, err, out)
		}
	}

	d := facetest.StartDaemon(t, func(c *config.Config) { c.MCPHTTP = true })
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	files, err := filepath.Glob(filepath.Join(dir, "mcp", "*.test.mjs"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files in %s/mcp (%v)", dir, err)
	}
	cmd := exec.CommandContext(ctx, node, append([]string{"--test", "--test-reporter=spec"}, files...)...)
	cmd.Dir = dir
	// The binary under test is this test binary, run as `mailroom` when
	// asMainEnv is set (e2e_proc_test.go): node passes its environment on
	// to the servers it spawns.
	cmd.Env = append(os.Environ(), asMainEnv+"=1", "MAILROOM_MCP_BIN="+binPath, "MAILROOM_ADDR="+d.Addr(),
		"MAILROOM_SENDER="+facetest.Planner, "MAILROOM_SENDER_TOKEN="+d.Tokens[facetest.Planner],
		"MAILROOM_WORKER="+facetest.Coder, "MAILROOM_WORKER_TOKEN="+d.Tokens[facetest.Coder])
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test in %s against %s: %v\n%s", dir, d.Addr(), err, out)
	}
	t.Logf("node --test:\n%s", out)
}
