package a2a_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/mailroom/mailroom/daemon/daemontest"
)

// The official JavaScript SDK, @a2a-js/sdk, in both the versions our users
// run (0.3.14: v0.3 JSON-RPC; 1.3.0: v1.0 JSON-RPC and HTTP+JSON), drives
// a real daemon from interop/node (node:test). Versions are pinned in its
// package-lock.json. Without node or the packages the test skips, except
// on CI (CI=true), where it fails: .ci/run installs both.
func TestJSSDKInterop(t *testing.T) {
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
		unavailable("node is not installed: install Node.js 18 or later to run the @a2a-js/sdk interop tests")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "a2a-v1")); err != nil {
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

	d := daemontest.Start(t, daemontest.Options{})
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	files, err := filepath.Glob(filepath.Join(dir, "test", "*.test.mjs"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files in %s/test (%v)", dir, err)
	}
	cmd := exec.CommandContext(ctx, node, append([]string{"--test", "--test-reporter=spec"}, files...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "MAILROOM_URL="+d.URL())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test in %s against %s: %v\n%s", dir, d.URL(), err, out)
	}
	t.Logf("node --test:\n%s", out)
}
