package main

import (
	"strings"
	"testing"
)

// The loop from the CLI: a worker asks with result post, the sender sees
// the question in status and result next, answers with reply (by a
// prefix, the sender found from the waiting task), and the worker's next
// lease shows both turns.
func TestReplyVerb(t *testing.T) {
	addr := startDaemon(t)
	id := sendTask(t, addr, "planner@local", "coder@local", "migrate the schema")
	l := leaseTask(t, addr, "coder@local")
	out := mustCLI(t, addr, "result", "post", id, "--status", "input_required", "--text", "which database?", "--lease-id", l.Lease.LeaseID)
	wantContains(t, "result post input_required", out, "asked the sender of task "+id, "waits for its answer")

	status := mustCLI(t, addr, "status")
	wantContains(t, "status", status, "1 waiting on their senders", "WAITING TASK", "planner@local", "coder@local", "input_required: which database?")
	waiting := mustCLI(t, addr, "status", "--state", "waiting")
	wantContains(t, "status --state waiting", waiting, "waiting", id)

	next := mustCLI(t, addr, "result", "next", "--sender", "planner@local")
	wantContains(t, "result next", next, "status     input_required", "text       which database?", "mailroom reply "+id)

	out = mustCLI(t, addr, "reply", id[:8], "--text", "staging")
	wantContains(t, "reply", out, "replied to task "+id+" as planner@local", "queued again", "2 turns")

	leasedOut := mustCLI(t, addr, "lease", "--recipient", "coder@local")
	wantContains(t, "lease after the reply", leasedOut, id, "turn 1", "asked by coder@local (input_required): which database?", "turn 2", "answered by planner@local: staging")

	// Replying again to a task no longer waiting: the prefix finds no
	// waiting task; with --from the daemon's refusal is printed.
	wantUsage(t, addr, []string{"reply", id[:8], "--text", "again"}, "TASK_ID")
	o := cli(t, addr, "reply", id, "--text", "production", "--from", "planner@local")
	if o.code != 1 || !strings.Contains(o.stderr, "cannot reply to task "+id) || !strings.Contains(o.stderr, "in flight") {
		t.Errorf("reply to an in-flight task: exit %d, stderr %q; want 1 with the daemon's refusal", o.code, o.stderr)
	}
	wantUsage(t, addr, []string{"reply", id}, "give --text or --json-value")
	wantUsage(t, addr, []string{"reply", id, "--json-value", "{nope"}, "--json-value")
}
