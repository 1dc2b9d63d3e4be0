// Package remotetest starts remote A2A agents for tests: the servers of
// the official JavaScript SDK in interop/node (remote/server.mjs), run by
// node, and an a2a-go server (goremote.go), that the outbound client's
// tests and the dispatcher's call. Only tests import it.
package remotetest

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// NodeRemote starts the server for sdk ("v03": @a2a-js/sdk 0.3.14,
// JSON-RPC v0.3; "v1": 1.3.0, JSON-RPC and HTTP+JSON v1.0) and returns
// its base URL; it stops with the test. Without node or the packages the
// test skips, except on CI (CI=true), where it fails: .ci/run installs
// both.
func NodeRemote(t testing.TB, sdk string) string {
	t.Helper()
	dir := nodeDir(t)
	unavailable := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("CI") == "true" {
			t.Fatalf(format, args...)
		}
		t.Skipf(format+" (on CI this fails)", args...)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		unavailable("node is not installed: install Node.js 20 or later to run the @a2a-js/sdk remote tests")
	}
	for _, pkg := range []string{"a2a-v03", "a2a-v1", "express"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", pkg)); err != nil {
			unavailable("%s has no node_modules/%s: run npm ci there", dir, pkg)
		}
	}
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

// nodeDir is interop/node in this module, wherever the test runs from.
func nodeDir(t testing.TB) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("remotetest: cannot tell where the module is")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "interop", "node")
}
