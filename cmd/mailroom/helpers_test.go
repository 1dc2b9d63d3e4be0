package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/daemon/daemontest"
)

// startDaemon runs a real daemon in-process on a free port over a fresh data
// directory and returns its address. It is shut down when the test ends.
func startDaemon(t *testing.T) string {
	t.Helper()
	return daemontest.Start(t, daemontest.Options{}).Addr()
}

// startDaemonIn is startDaemon over an existing data directory.
func startDaemonIn(t *testing.T, dir string) string {
	t.Helper()
	return daemontest.Start(t, daemontest.Options{Dir: dir}).Addr()
}

// startDaemonWith is startDaemon with the configuration changed by mutate
// (tokens, say) and logging to logger (nil: nowhere).
func startDaemonWith(t *testing.T, mutate func(*config.Config), logger *slog.Logger) string {
	t.Helper()
	return daemontest.Start(t, daemontest.Options{Config: mutate, Logger: logger}).Addr()
}

// closedAddr returns an address where nothing listens.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

type outcome struct {
	code           int
	stdout, stderr string
}

// cli runs the CLI in-process with MAILROOM_ADDR=addr and nothing else in
// its environment.
func cli(t *testing.T, addr string, args ...string) outcome {
	t.Helper()
	return cliEnv(t, map[string]string{"MAILROOM_ADDR": addr}, args...)
}

func cliEnv(t *testing.T, vars map[string]string, args ...string) outcome {
	t.Helper()
	var stdout, stderr bytes.Buffer
	environ := func() []string {
		var out []string
		for k, v := range vars {
			out = append(out, k+"="+v)
		}
		return out
	}
	code := runEnv(t.Context(), &env{stdout: &stdout, stderr: &stderr, getenv: func(k string) string { return vars[k] }, environ: environ}, args)
	return outcome{code, stdout.String(), stderr.String()}
}

// mustCLI runs the CLI and fails the test unless it exits 0.
func mustCLI(t *testing.T, addr string, args ...string) string {
	t.Helper()
	o := cli(t, addr, args...)
	if o.code != 0 {
		t.Fatalf("mailroom %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), o.code, o.stdout, o.stderr)
	}
	return o.stdout
}

// mustJSON runs the CLI and decodes its stdout into v.
func mustJSON(t *testing.T, addr string, v any, args ...string) {
	t.Helper()
	out := mustCLI(t, addr, args...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("mailroom %s: stdout is not JSON: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// sendTask sends a task through the CLI and returns its id.
func sendTask(t *testing.T, addr, from, to, intent string, extra ...string) string {
	t.Helper()
	out := mustCLI(t, addr, append([]string{"send", "--from", from, "--to", to, "--intent", intent}, extra...)...)
	return strings.TrimSpace(out)
}

type leased struct {
	Kind string `json:"kind"`
	Task *struct {
		ID string `json:"id"`
	} `json:"task"`
	Lease *struct {
		LeaseID string `json:"lease_id"`
		Attempt int    `json:"attempt"`
	} `json:"lease"`
}

// leaseTask leases through the CLI and returns the lease, failing when
// nothing was queued.
func leaseTask(t *testing.T, addr, recipient string) leased {
	t.Helper()
	var l leased
	mustJSON(t, addr, &l, "lease", "--recipient", recipient, "--json")
	if l.Task == nil || l.Lease == nil {
		t.Fatalf("lease --recipient %s: nothing leased", recipient)
	}
	return l
}

// wantUsage runs the CLI and fails the test unless it is a usage error:
// exit 2, every want on stderr, nothing on stdout.
func wantUsage(t *testing.T, addr string, args []string, wants ...string) {
	t.Helper()
	name := "mailroom " + strings.Join(args, " ")
	if len(name) > 100 {
		name = name[:100] + "..."
	}
	o := cli(t, addr, args...)
	if o.code != 2 || o.stdout != "" {
		t.Errorf("%s: exit %d, stdout %q, want 2 and nothing (stderr %q)", name, o.code, o.stdout, o.stderr)
		return
	}
	wantContains(t, name, o.stderr, wants...)
}

// startDaemonWithToken is startDaemon requiring tokens, with one for
// principal holding caps; it returns the address and the token.
func startDaemonWithToken(t *testing.T, principal string, caps ...string) (addr, token string) {
	t.Helper()
	token, hash, err := auth.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	addr = startDaemonWith(t, func(c *config.Config) {
		c.Tokens = []auth.Token{{Principal: principal, SHA256: hash, Caps: caps}}
	}, nil)
	return addr, token
}

func wantContains(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s = %q, want it to contain %q", what, got, w)
		}
	}
}

// tally is a count the goroutines of a test add to and the test waits on:
// the waiter is told of each add, never polling.
type tally struct {
	mu   sync.Mutex
	n    int64
	next chan struct{} // closed by the next add; nil while nobody waits
}

func (c *tally) add() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	if c.next != nil {
		close(c.next)
		c.next = nil
	}
}

func (c *tally) load() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// waitUntil returns true once ok holds of the count, checked at the call
// and at each add after it; false if within passes first (a watchdog, not
// synchronisation).
func (c *tally) waitUntil(within time.Duration, ok func(n int64) bool) bool {
	watchdog := time.NewTimer(within)
	defer watchdog.Stop()
	for {
		c.mu.Lock()
		if ok(c.n) {
			c.mu.Unlock()
			return true
		}
		if c.next == nil {
			c.next = make(chan struct{})
		}
		next := c.next
		c.mu.Unlock()
		select {
		case <-next:
		case <-watchdog.C:
			return false
		}
	}
}
