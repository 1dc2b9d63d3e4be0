package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/mailbox"
)

// staleLeases sends and leases an idempotent and an unsafe task.
func staleLeases(t *testing.T, addr string) (safe, unsafe leased) {
	t.Helper()
	sendTask(t, addr, "planner@local", "coder@local", "rerunnable", "--idempotency-key", "build-42", "--idempotent")
	safe = leaseTask(t, addr, "coder@local")
	sendTask(t, addr, "planner@local", "tester@local", "charges a card")
	unsafe = leaseTask(t, addr, "tester@local")
	return safe, unsafe
}

func statusOf(t *testing.T, addr, taskID string) string {
	t.Helper()
	var st statusReport
	mustJSON(t, addr, &st, "status", "--json")
	for _, e := range st.Tasks {
		if e.Task.ID == taskID {
			return e.State
		}
	}
	return "absent"
}

func TestRetryStaleDryRunThenEnable(t *testing.T) {
	t.Parallel()
	addr := startDaemon(t)
	safe, unsafe := staleLeases(t, addr)

	out := mustCLI(t, addr, "retry-stale", "--min-lease-age-ms", "0")
	wantContains(t, "retry-stale (dry run)", out,
		"dry run: would requeue 1 of 2 lease(s) considered; nothing changed (add --enable to requeue)",
		"policy: idempotent tasks only, leases held at least 0s, attempts below 3, at most 10 requeue(s), scanning the 100 oldest leases",
		"WOULD REQUEUE", safe.Task.ID, safe.Lease.LeaseID, "build-42",
		"SKIPPED", unsafe.Task.ID, mailbox.SkipMissingIdempotency)
	if got := statusOf(t, addr, safe.Task.ID); got != mailbox.TaskInFlight {
		t.Fatalf("after a dry run the task is %s, want still in_flight", got)
	}

	// The default minimum age (5m) makes both leases too young.
	out = mustCLI(t, addr, "retry-stale")
	wantContains(t, "retry-stale (defaults)", out, "would requeue 0 of 2", "5m0s", mailbox.SkipLeaseTooYoung)

	out = mustCLI(t, addr, "retry-stale", "--enable", "--min-lease-age-ms", "0")
	wantContains(t, "retry-stale --enable", out, "requeued 1 of 2 lease(s) considered", "REQUEUED", safe.Task.ID)
	if strings.Contains(out, "dry run") || strings.Contains(out, "WOULD") {
		t.Errorf("an enabled run says it is a dry run:\n%s", out)
	}
	if got := statusOf(t, addr, safe.Task.ID); got != mailbox.TaskQueued {
		t.Errorf("after --enable the task is %s, want queued", got)
	}
	if got := statusOf(t, addr, unsafe.Task.ID); got != mailbox.TaskInFlight {
		t.Errorf("after --enable the unsafe task is %s, want still in_flight", got)
	}
}

func TestRetryStaleJSONIsTheDaemonsAnswer(t *testing.T) {
	t.Parallel()
	addr := startDaemon(t)
	safe, _ := staleLeases(t, addr)
	out := mustCLI(t, addr, "retry-stale", "--min-lease-age-ms", "0", "--max-attempts", "2", "--max-requeues", "5", "--scan-limit", "7", "--json")
	var top map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &top); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if keys := slices.Sorted(func(yield func(string) bool) {
		for k := range top {
			if !yield(k) {
				return
			}
		}
	}); !slices.Equal(keys, []string{"kind", "report"}) {
		t.Errorf("top-level keys = %v, want exactly kind and report", keys)
	}
	var resp mailbox.AutoRetryResponse
	if err := json.Unmarshal([]byte(out), &resp); err != nil {
		t.Fatal(err)
	}
	want := mailbox.RetryPolicy{MinLeaseAgeMs: 0, MaxAttempts: 2, MaxRequeues: 5, ScanLimit: 7}
	if resp.Kind != mailbox.KindAutoRetry || resp.Report.Policy != want || !resp.Report.DryRun || resp.Report.Considered != 2 ||
		len(resp.Report.Requeued) != 1 || resp.Report.Requeued[0].TaskID != safe.Task.ID || len(resp.Report.Skipped) != 1 {
		t.Errorf("retry-stale --json = %+v", resp)
	}
}

func TestAuditVerb(t *testing.T) {
	t.Parallel()
	addr := startDaemon(t)
	if out := mustCLI(t, addr, "audit"); out != "no repairs recorded\n" {
		t.Errorf("audit on a fresh daemon = %q", out)
	}
	safe, unsafe := staleLeases(t, addr)
	mustCLI(t, addr, "retry-stale", "--enable", "--min-lease-age-ms", "0")
	mustCLI(t, addr, "force-error", unsafe.Task.ID, "--reason", "card service down", "--message", "try later", "--lease-id", unsafe.Lease.LeaseID)

	out := mustCLI(t, addr, "audit")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 {
		t.Fatalf("audit printed %d lines, want a header and two repairs:\n%s", len(lines), out)
	}
	wantContains(t, "audit header", lines[0], "WHEN", "PRINCIPAL", "ACTION", "MOVE", "TASK", "LEASE", "ATTEMPT", "POSTURE", "REASON", "AUTO")
	// Newest first: the forced error, then the scan's requeue.
	wantContains(t, "audit newest", lines[1], mailbox.OutcomeForcedError, unsafe.Task.ID, unsafe.Lease.LeaseID, "card service down")
	wantContains(t, "audit oldest", lines[2], mailbox.OutcomeRequeued, safe.Task.ID, safe.Lease.LeaseID, mailbox.RiskIdempotent, "auto")
	if strings.HasSuffix(strings.TrimSpace(lines[1]), "auto") {
		t.Errorf("the operator's force-error is marked auto: %q", lines[1])
	}

	// Without tokens nobody could be named: (no auth), as the console says.
	wantContains(t, "audit principal", lines[1], "(no auth)")

	// A requeue that handed the task on says where it went.
	moved := sendTask(t, addr, "p@x", "dead@x", "move me")
	l := leaseTask(t, addr, "dead@x")
	mustCLI(t, addr, "requeue", moved, "--reason", "dead@x is gone", "--operator-accepted", "--lease-id", l.Lease.LeaseID, "--to", "live@x", "--new-agent")
	out = mustCLI(t, addr, "audit", "-n", "1")
	wantContains(t, "audit of a move", out, "MOVE", "dead@x -> live@x", moved)

	if out := mustCLI(t, addr, "audit", "-n", "1", "--task", unsafe.Task.ID); strings.Count(out, "\n") != 2 || !strings.Contains(out, unsafe.Task.ID) {
		t.Errorf("audit -n 1 = %q, want only the newest repair", out)
	}
	var resp mailbox.AuditResponse
	mustJSON(t, addr, &resp, "audit", "--task", safe.Task.ID, "--json")
	if resp.Kind != mailbox.KindAudit || len(resp.Repairs) != 1 || !resp.Repairs[0].Auto || resp.Repairs[0].Reason != mailbox.RetryStaleReason {
		t.Errorf("audit --task --json = %+v", resp)
	}
	const other = "00000000-0000-4000-8000-000000000000"
	if out := mustCLI(t, addr, "audit", "--task", other); out != "no repairs recorded for task "+other+"\n" {
		t.Errorf("audit for an unrepaired task = %q", out)
	}
}

func TestRetryStaleAndAuditUsageErrors(t *testing.T) {
	t.Parallel()
	addr := startDaemon(t)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"retry-stale", "--min-lease-age-ms", "-1"}, "--min-lease-age-ms: got -1"},
		{[]string{"retry-stale", "--max-attempts", "0"}, "--max-attempts: got 0"},
		{[]string{"retry-stale", "--max-requeues", "-2"}, "--max-requeues: got -2"},
		{[]string{"retry-stale", "--scan-limit", "0"}, "--scan-limit: got 0, expected a number from 1 to 10000"},
		{[]string{"retry-stale", "--scan-limit", "10001"}, "--scan-limit: got 10001"},
		{[]string{"retry-stale", "now"}, `unexpected argument "now"`},
		{[]string{"audit", "-n", "0"}, "-n: got 0"},
		{[]string{"audit", "--task", "nope"}, `--task: got "nope", expected a task id (a UUID`},
		{[]string{"audit", "--task", "nope-nope-nope-nope-nope-nope-nope-n"}, `--task: got "nope-nope-nope-nope-nope-nope-nope-n", expected a UUID`},
	}
	for _, tt := range tests {
		o := cli(t, addr, tt.args...)
		name := strings.Join(tt.args, " ")
		if o.code != 2 {
			t.Errorf("mailroom %s: exit %d, want 2 (stderr %q)", name, o.code, o.stderr)
		}
		wantContains(t, "mailroom "+name, o.stderr, "mailroom "+tt.args[0]+": "+tt.want, "--help")
	}
	for _, verb := range []string{"retry-stale", "audit"} {
		o := cli(t, closedAddr(t), verb)
		if o.code != 1 || !strings.HasPrefix(o.stderr, "cannot reach mailroom daemon at ") {
			t.Errorf("mailroom %s against nothing: exit %d, stderr %q; want 1 and the unreachable message", verb, o.code, o.stderr)
		}
	}
	tests2 := []struct {
		verb  string
		flags []string
	}{
		{"retry-stale", []string{"-enable", "-min-lease-age-ms", "-max-attempts", "-max-requeues", "-scan-limit", "-json", "-addr", "-token"}},
		{"audit", []string{"-task", "-n ", "-json", "-addr", "-token"}},
	}
	for _, tt := range tests2 {
		o := cli(t, addr, tt.verb, "--help")
		if o.code != 0 {
			t.Errorf("mailroom %s --help: exit %d", tt.verb, o.code)
		}
		wantContains(t, "mailroom "+tt.verb+" --help", o.stdout, append(tt.flags, "Usage:", "Example:\n  mailroom "+tt.verb)...)
	}
}
