// Package remotetest starts remote A2A agents for tests: the servers of
// the official JavaScript SDK in interop/node (remote/server.mjs), run by
// node, and an a2a-go server (goremote.go), that the outbound client's
// tests and the dispatcher's call. Only tests import it.
package remotetest

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// NodeRemote starts the server for sdk ("v03": @a2a-js/sdk 0.3.14,
// JSON-RPC v0.3; "v1": 1.3.0, JSON-RPC and HTTP+JSON v1.0) and returns
// its base URL; it stops with the test. Without node or the packages the
// test skips, except on CI (CI=true), where it fails: .ci/run installs
// both.
func NodeRemote(t testing.TB, sdk string) string {
	t.Helper()
	node, dir := Node(t, "the @a2a-js/sdk remote tests", "a2a-v03", "a2a-v1", "express")
	cmd := exec.Command(node, filepath.Join("remote", "server.mjs"), sdk)
	cmd.Dir = dir
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting node: %v", err)
	}
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("node server (%s) stderr:\n%s", sdk, stderr.String())
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	var hello struct{ URL string }
	if err != nil || json.Unmarshal([]byte(line), &hello) != nil || hello.URL == "" {
		t.Fatalf("node server (%s) did not say where it listens: %q, %v\n%s", sdk, line, err, stderr.String())
	}
	return hello.URL
}

// Control asks the node server at base to do what (release its slow
// work, forget its tasks as after a restart, ...).
func Control(t testing.TB, base, what string) {
	t.Helper()
	resp, err := http.Post(base+"/control/"+what, "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatalf("control %s: %v", what, err)
	}
	_ = resp.Body.Close()
}

// Node returns the node binary and interop/node's directory, its packages
// pkgs installed (npm ci there when one is missing), for what. Without
// node or npm the test skips, except on CI (CI=true), where it fails:
// .ci/run installs both.
func Node(t testing.TB, what string, pkgs ...string) (node, dir string) {
	t.Helper()
	dir = nodeDir(t)
	unavailable := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("CI") == "true" {
			t.Fatalf(format, args...)
		}
		t.Skipf(format+" (on CI this fails)", args...)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		unavailable("node is not installed: install Node.js 20 or later to run %s", what)
	}
	for _, pkg := range pkgs {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", pkg)); err == nil {
			continue
		}
		npm, err := exec.LookPath("npm")
		if err != nil {
			unavailable("npm is not installed, and %s has no node_modules/%s: install npm, or run npm ci there", dir, pkg)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
		cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			unavailable("npm ci in %s: %v\n%s", dir, err, out)
		}
		break
	}
	return node, dir
}

// NodeTests runs interop/node's sub/*.test.mjs under node's test runner
// with env added to this process's environment, and fails the test with
// node's output if any fails.
func NodeTests(t testing.TB, node, dir, sub string, env ...string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, sub, "*.test.mjs"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files in %s/%s (%v)", dir, sub, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{"--test", "--test-reporter=spec"}, files...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test %s in %s: %v\n%s", sub, dir, err, out)
	}
	t.Logf("node --test %s:\n%s", sub, out)
}

// nodeDir is interop/node in this module, wherever the test runs from.
func nodeDir(t testing.TB) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("remotetest: cannot tell where the module is")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "interop", "node")
}
