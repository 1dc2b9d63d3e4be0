package a2a_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/daemon/daemontest"
)

// The official a2a-go v2 client (v2.3.1, the A2A 1.0 wire) against a real
// daemon with tokens, over JSON-RPC and HTTP+JSON: it resolves the card of
// a protected agent, and every answer, success or error, is one it reads
// as the typed error the A2A spec names, never "server error". The client
// lives in its own module, interop/a2ago2 (a2a-go v2 would raise the root
// module's a2a-go v0.3.3, which the other suites are written against):
// the test builds its driver there and checks the line it prints for each
// scenario. Without the go command, or when the module cannot be built
// (no network and no module cache), the test skips, except on CI
// (CI=true), where it fails. It runs over plain HTTP and over HTTPS, the
// driver trusting the test's CA (-ca-file).
func TestA2AGoV2Interop(t *testing.T) {
	driver := buildA2AGoV2(t)
	overEachHop(t, func(t *testing.T, opts daemontest.Options) {
		opts.Tokens = edgeTokens
		a2aGoV2Scenarios(t, driver, opts)
	})
	a2aGoV2SecurityRequirements(t, driver)
}

// a2aGoV2Scenarios runs the driver against a daemon made with opts and
// checks the outcome of every scenario.
func a2aGoV2Scenarios(t *testing.T, driver string, opts daemontest.Options) {
	it := newInterop(t, opts)
	base := it.register("coder@local")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	args := []string{"-base", base, "-token", "tok-alice"}
	if opts.TLS {
		args = append(args, "-ca-file", it.d.CAFile)
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, driver, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("a2ago2: %v\n%s\n%s", err, out, stderr.String())
	}
	type line struct{ Binding, Scenario, Outcome, Detail string }
	got := map[string]line{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("a2ago2 printed %q: %v", sc.Text(), err)
		}
		got[l.Binding+" "+l.Scenario] = l
	}
	want := []struct{ scenario, outcome string }{
		{"card", "OK"},
		{"get-unknown", "TASK_NOT_FOUND"},
		{"send", "OK"},
		{"get", "OK"},
		{"cancel", "OK"},
		{"cancel-finished", "TASK_NOT_CANCELABLE"},
		{"answer-unknown", "TASK_NOT_FOUND"},
		{"push-create", "OK"},
		{"push-get", "OK"},
		{"push-list", "OK"},
		{"push-delete", "OK"},
		{"push-delete-again", "OK"},
		{"push-list-deleted", "OK"},
		{"push-get-deleted", "INVALID_PARAMS"},
		{"push-delete-unknown-task", "TASK_NOT_FOUND"},
	}
	for _, binding := range []string{"JSONRPC", "HTTP+JSON"} {
		for _, w := range want {
			l, ok := got[binding+" "+w.scenario]
			if !ok {
				t.Errorf("%s %s: no outcome printed\n%s", binding, w.scenario, out)
				continue
			}
			if l.Outcome != w.outcome {
				t.Errorf("%s %s: %s (%s); want %s", binding, w.scenario, l.Outcome, l.Detail, w.outcome)
			}
		}
		if l := got[binding+" card"]; !strings.Contains(l.Detail, "bearer") {
			t.Errorf("%s: the card a2a-go read declares %q; want the bearer scheme", binding, l.Detail)
		}
	}
	// Without a token: over HTTP+JSON a2a-go reads the 401 as
	// Unauthenticated. Its JSON-RPC client reads no answer but a 200, so
	// there it can only say the status.
	if l := got["HTTP+JSON get-without-token"]; l.Outcome != "UNAUTHENTICATED" {
		t.Errorf("HTTP+JSON without a token: %s (%s); want UNAUTHENTICATED", l.Outcome, l.Detail)
	}
	if l := got["JSONRPC get-without-token"]; l.Outcome == "OK" || !strings.Contains(l.Detail, "401") {
		t.Errorf("JSON-RPC without a token: %s (%s); want a refusal naming 401", l.Outcome, l.Detail)
	}
	if t.Failed() {
		t.Logf("a2ago2 printed:\n%s\n%s", out, stderr.String())
	}
}

// a2aGoV2SecurityRequirements says why securityRequirements is left out
// of the card by default: served, a2a-go v2.3.1 cannot parse the card
// (a2aproject/a2a-go#430). When an upgrade of a2a-go parses it, this
// fails: a2a_card_security_requirements may then default to true.
func a2aGoV2SecurityRequirements(t *testing.T, driver string) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	served := newInterop(t, daemontest.Options{Tokens: edgeTokens, Config: func(c *config.Config) { c.A2ACardSecurityRequirements = true }})
	sbase := served.register("coder@local")
	out, err := exec.CommandContext(ctx, driver, "-base", sbase, "-token", "tok-alice", "-bindings", "JSONRPC").Output()
	var card struct{ Scenario, Outcome string }
	if err != nil || json.Unmarshal(bytes.SplitN(out, []byte("\n"), 2)[0], &card) != nil || card.Scenario != "card" || card.Outcome == "OK" {
		t.Errorf("with a2a_card_security_requirements, a2a-go v2.3.1 read the card: %s %v; want it refused (a2a-go#430: if fixed, reconsider the default)", out, err)
	}
}

// buildA2AGoV2 builds interop/a2ago2 into the test's temporary directory
// and returns the binary.
func buildA2AGoV2(t *testing.T) string {
	t.Helper()
	unavailable := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("CI") == "true" {
			t.Fatalf(format, args...)
		}
		t.Skipf(format+" (on CI this fails)", args...)
	}
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot tell where the module is")
	}
	dir := filepath.Join(filepath.Dir(file), "..", "..", "interop", "a2ago2")
	goCmd, err := exec.LookPath("go")
	if err != nil {
		unavailable("the go command is not on PATH: it builds the a2a-go v2 driver in %s", dir)
	}
	bin := filepath.Join(t.TempDir(), "a2ago2")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goCmd, "build", "-o", bin, ".")
	cmd.Dir = dir
	// Its own module, never a workspace that would fold it into the root.
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		unavailable("building the a2a-go v2 driver in %s: %v\n%s", dir, err, out)
	}
	return bin
}
