package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/daemon/daemontest"
)

// Every verb that talks to a daemon retries a request a shared mailbox
// answered "the leader changed" (which did nothing), and says so on
// stderr once a retry: the first request of each verb below is refused
// that way once, and the verb still does its work.
func TestVerbsRetryWhenTheLeaderChanged(t *testing.T) {
	d := daemontest.Start(t, daemontest.Options{})
	direct := d.Addr()
	sendTask(t, direct, "a", "b", "to lease")
	sendTask(t, direct, "a", "c", "to requeue")
	leaseTask(t, direct, "c")
	requeued := sendTask(t, direct, "a", "d", "requeue me")
	leaseTask(t, direct, "d")
	forced := sendTask(t, direct, "a", "e", "force me")
	leaseTask(t, direct, "e")
	done := sendTask(t, direct, "a", "f", "post a result")
	leaseTask(t, direct, "f")
	sendTask(t, direct, "a", "g", "answered")
	l := leaseTask(t, direct, "g")
	mustCLI(t, direct, "result", "post", l.Task.ID, "--status", "ok", "--text", "done")

	for _, tc := range []struct {
		verb string
		args []string
	}{
		{"send", []string{"send", "--from", "a", "--to", "b", "--intent", "retried"}},
		{"lease", []string{"lease", "--recipient", "b"}},
		{"result post", []string{"result", "post", done, "--status", "ok", "--text", "done"}},
		{"result next", []string{"result", "next", "--sender", "a"}},
		{"status", []string{"status"}},
		{"requeue", []string{"requeue", requeued, "--reason", "stuck", "--duplicate-risk", "operator-accepted"}},
		{"force-error", []string{"force-error", forced, "--reason", "stuck", "--message", "gave up"}},
		{"compact", []string{"compact"}},
		{"retry-stale", []string{"retry-stale"}},
		{"audit", []string{"audit"}},
		{"agent register", []string{"agent", "register", "helper", "--name", "Helper"}},
		{"agent list", []string{"agent", "list"}},
		{"agent deregister", []string{"agent", "deregister", "helper"}},
	} {
		t.Run(tc.verb, func(t *testing.T) {
			p := daemontest.StartLeaderChanged(t, d.URL(), daemontest.LeaderChangedOptions{N: 1})
			o := cli(t, p.URL, tc.args...)
			if o.code != 0 {
				t.Fatalf("mailroom %s through a changing lead: exit %d\nstdout: %s\nstderr: %s", strings.Join(tc.args, " "), o.code, o.stdout, o.stderr)
			}
			if len(p.Refused()) != 1 {
				t.Fatalf("%d requests refused, want the first", len(p.Refused()))
			}
			want := "mailroom " + tc.verb + ": the leader changed; retrying\n"
			if o.stderr != want {
				t.Fatalf("stderr %q, want %q once", o.stderr, want)
			}
		})
	}
}

// A 503 without the hint is the verb's error, not retried or announced.
func TestVerbDoesNotRetryA503WithoutTheHint(t *testing.T) {
	d := daemontest.Start(t, daemontest.Options{})
	p := daemontest.StartLeaderChanged(t, d.URL(), daemontest.LeaderChangedOptions{N: 1, NoHint: true})
	o := cli(t, p.URL, "send", "--from", "a", "--to", "b", "--intent", "unknown outcome")
	if o.code == 0 || strings.Contains(o.stderr, "retrying") || len(p.Refused()) != 1 || len(p.Passed()) != 0 {
		t.Fatalf("exit %d, stderr %q, %d refused, %d passed: want a failure, sent once", o.code, o.stderr, len(p.Refused()), len(p.Passed()))
	}
	wantContains(t, "stderr", o.stderr, "mailroom send: no instance leads")
}

// The bench verb's load goes through a changing lead too: its pairs retry
// and it says so, once a retry.
func TestBenchRetriesWhenTheLeaderChanged(t *testing.T) {
	d := daemontest.Start(t, daemontest.Options{})
	p := daemontest.StartLeaderChanged(t, d.URL(), daemontest.LeaderChangedOptions{N: 1, Match: isSend})
	o := benchCLI(t, map[string]string{"MAILROOM_ADDR": p.URL}, "--duration", "300ms", "--pairs", "1")
	if o.code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", o.code, o.stderr)
	}
	if n := strings.Count(o.stderr, "mailroom bench: the leader changed; retrying\n"); n != 1 || len(p.Refused()) != 1 {
		t.Fatalf("%d notices for %d refusals, want 1 and 1; stderr:\n%s", n, len(p.Refused()), o.stderr)
	}
	wantContains(t, "stdout", o.stdout, "errors             0")
}

func isSend(r *http.Request) bool { return r.Method == http.MethodPost && r.URL.Path == "/a2a/tasks" }
