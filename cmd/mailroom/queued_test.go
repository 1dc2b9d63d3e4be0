package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/mailbox"
)

// A dead agent's queued backlog, moved to a live agent in one command: a
// dry run lists it and changes nothing; the real run moves each task
// guarded by the agent it was listed for, so the one a colleague moved in
// between is reported as a conflict (the recipient listed, the one now)
// and left alone, and the command exits 1 saying so. The dead agent's
// lease and another agent's queued task are not touched, and the live
// agent leases the moved tasks ahead of its own, newer work.
func TestBulkMoveOfAnAgentsQueue(t *testing.T) {
	addr := startDaemon(t)
	leased := sendTask(t, addr, "p@x", "dead@x", "leased")
	leaseTask(t, addr, "dead@x")
	var ids []string
	for _, intent := range []string{"one", "two", "three"} {
		ids = append(ids, sendTask(t, addr, "p@x", "dead@x", intent))
	}
	own := sendTask(t, addr, "p@x", "live@x", "live's own, sent later")
	sendTask(t, addr, "p@x", "other@x", "someone else's")

	out := mustCLI(t, addr, "move", "--agent", "dead@x", "--to", "live@x", "--reason", "dead@x is gone", "--dry-run")
	for _, id := range ids {
		wantContains(t, "dry run", out, "would move "+id+" (queued ", ", attempt 0) to live@x\n")
	}
	wantContains(t, "dry run", out, "dry run: would move 3 task(s) queued for dead@x; nothing changed\n")
	if strings.Contains(out, leased) || strings.Contains(out, own) {
		t.Errorf("the dry run lists a task that is not queued for dead@x:\n%s", out)
	}
	c, err := client.New(addr)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if e := entryOf(t, c, id); e.Task.Recipient != "dead@x" {
			t.Fatalf("after a dry run %s is queued for %s", id, e.Task.Recipient)
		}
	}

	// Between the listing and the repairs a colleague moves the second.
	bulkListed = func() {
		if _, err := c.Repair(t.Context(), mailbox.RepairRequest{TaskID: ids[1], Reason: "a colleague got there first",
			Command: mailbox.RepairCommand{Action: mailbox.ActionMove, QueuedFor: "dead@x", Recipient: "other@x"}}); err != nil {
			t.Error(err)
		}
	}
	defer func() { bulkListed = nil }()
	o := cli(t, addr, "move", "--agent", "dead@x", "--to", "live@x", "--reason", "dead@x is gone")
	if o.code != exitFailure {
		t.Fatalf("exit %d, want 1 (a conflict); stdout:\n%s\nstderr:\n%s", o.code, o.stdout, o.stderr)
	}
	wantContains(t, "bulk move", o.stdout,
		"moved task "+ids[0]+": queued for live@x, in its old place\n",
		"conflict on "+ids[1]+" (queued for dead@x listed): ", "expected queued for: dead@x", "queued for now:      other@x",
		"moved task "+ids[2]+": queued for live@x",
		"move: 2 repaired, 1 conflicts, 0 skipped, of 3 task(s) queued for dead@x\n")
	wantContains(t, "bulk move's error", o.stderr, "1 of 3 queued task(s) changed since they were listed and were not repaired", "mailroom status --agent dead@x")
	for id, want := range map[string]string{ids[0]: "live@x", ids[2]: "live@x", ids[1]: "other@x"} {
		if e := entryOf(t, c, id); e.State != mailbox.TaskQueued || e.Task.Recipient != want {
			t.Errorf("task %s is %s for %s, want queued for %s", id, e.State, e.Task.Recipient, want)
		}
	}
	if e := entryOf(t, c, leased); e.State != mailbox.TaskInFlight || e.LeasedTo != "dead@x" {
		t.Errorf("dead@x's lease was touched: %+v", e)
	}
	// The moved tasks waited longest: live@x leases them first, in order.
	for _, want := range []string{ids[0], ids[2], own} {
		if got := leaseTask(t, addr, "live@x"); got.Task == nil || got.Task.ID != want {
			t.Fatalf("live@x leased %+v, want %s", got.Task, want)
		}
	}
	// The audit shows where each went.
	audit := mustCLI(t, addr, "audit")
	wantContains(t, "audit", audit, "dead@x -> live@x", "dead@x -> other@x", "moved")
}

// cancel --agent ends each queued task with an error its sender drains;
// with --json it prints a line a task and the summary; --stale-after
// leaves the younger ones alone; a single cancel guarded by the wrong
// agent is a conflict (exit 1) that changes nothing.
func TestCancelOfQueuedTasks(t *testing.T) {
	addr := startDaemon(t)
	a := sendTask(t, addr, "p@x", "dead@x", "one")
	b := sendTask(t, addr, "p@x", "dead@x", "two")
	single := sendTask(t, addr, "q@x", "gone@x", "three")

	out := mustCLI(t, addr, "cancel", "--agent", "dead@x", "--stale-after", "1h", "--reason", "gone")
	if out != "cancel: 0 repaired, 0 conflicts, 0 skipped, of 0 task(s) queued for dead@x\n" {
		t.Errorf("tasks younger than --stale-after were listed:\n%s", out)
	}
	out = mustCLI(t, addr, "cancel", "--agent", "dead@x", "--reason", "dead@x is gone", "--dry-run")
	wantContains(t, "a dry run", out, "would cancel "+a+" (queued ", "would cancel "+b+" (queued ", "dry run: would cancel 2 task(s) queued for dead@x; nothing changed\n")
	var st statusReport
	mustJSON(t, addr, &st, "status", "--json", "--agent", "dead@x", "--state", "queued")
	if len(st.Tasks) != 2 {
		t.Fatalf("after a dry run dead@x has %d tasks queued, want the 2 it had", len(st.Tasks))
	}
	out = mustCLI(t, addr, "cancel", "--agent", "dead@x", "--reason", "dead@x is gone", "--json")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 {
		t.Fatalf("want a line a task and the summary, got:\n%s", out)
	}
	for i, id := range []string{a, b} {
		var l bulkLine
		if err := json.Unmarshal([]byte(lines[i]), &l); err != nil || l.Kind != kindBulkItem || l.TaskID != id || l.Outcome != "repaired" ||
			l.QueuedFor != "dead@x" || l.LeaseID != "" || l.Repaired == nil || l.Repaired.Action != mailbox.OutcomeCanceled || l.Repaired.Result == nil ||
			!strings.Contains(l.Repaired.Result.ErrorMessage, "dead@x is gone") {
			t.Errorf("line %d = %s (%v), want %s canceled with an error naming the reason", i, lines[i], err, id)
		}
	}
	var sum bulkSummary
	if err := json.Unmarshal([]byte(lines[2]), &sum); err != nil || sum != (bulkSummary{Kind: kindBulkRepair, Action: mailbox.ActionCancel, Agent: "dead@x", Listed: 2, Repaired: 2, Queued: 2}) {
		t.Errorf("summary = %s (%v)", lines[2], err)
	}
	var res struct {
		Results []mailbox.PendingResult `json:"results"`
	}
	mustJSON(t, addr, &res, "status", "--json", "--agent", "p@x")
	if len(res.Results) != 2 || res.Results[0].TaskID != a || res.Results[0].Status != mailbox.StatusError || res.Results[1].TaskID != b {
		t.Errorf("p@x's results: %+v, want both errors", res.Results)
	}

	o := cli(t, addr, "cancel", single, "--queued-for", "dead@x", "--reason", "wrong agent")
	if o.code != exitFailure {
		t.Fatalf("exit %d, want 1; stdout %q stderr %q", o.code, o.stdout, o.stderr)
	}
	wantContains(t, "a cancel guarded by the wrong agent", o.stderr, "queued for gone@x now", "expected queued for: dead@x")
	c, err := client.New(addr)
	if err != nil {
		t.Fatal(err)
	}
	if e := entryOf(t, c, single); e.State != mailbox.TaskQueued {
		t.Fatalf("the refused cancel changed %s: %+v", single, e)
	}
	out = mustCLI(t, addr, "cancel", single[:8], "--queued-for", "gone@x", "--reason", "gone@x is gone", "--message", "send it to w@x")
	wantContains(t, "single cancel", out, "canceled task "+single+": result_pending for q@x (\"send it to w@x\")")
}

func TestMoveAndCancelUsage(t *testing.T) {
	addr := startDaemon(t)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"move", "--agent", "a@x", "--reason", "r"}, "--to is required"},
		{[]string{"move", "--agent", "a@x", "--to", "b@x"}, "--reason is required"},
		{[]string{"move", "--agent", "a@x", "--to", "a@x", "--reason", "r"}, `--to: got "a@x", the agent whose tasks are moved`},
		{[]string{"move", "--agent", "a@x", "--to", " ", "--reason", "r"}, `--to: got " "`},
		{[]string{"move", "--agent", "a@x", "--to", "b@x", "--reason", " "}, `--reason: got " "`},
		{[]string{"move", "--agent", "a@x", "--queued-for", "a@x", "--to", "b@x", "--reason", "r"}, "--queued-for: with --agent each task is guarded by the agent it was listed for"},
		{[]string{"move", "6f9619ff", "--to", "b@x", "--reason", "r", "--dry-run"}, "--stale-after and --dry-run: only with --agent (a repair of one task is guarded by --queued-for)"},
		{[]string{"move", "--to", "b@x", "--reason", "r"}, "missing TASK_ID (or --agent AGENT, for every task queued for the agent)"},
		{[]string{"move", "--agent", " ", "--to", "b@x", "--reason", "r"}, "expected the agent whose queued tasks to repair"},
		{[]string{"cancel", "--agent", "a@x"}, "--reason is required"},
		{[]string{"cancel", "--agent", "a@x", "--reason", "r", "--message", " "}, `--message: got " "`},
		{[]string{"cancel", "--agent", "a@x", "--reason", "r", "--lease-id", "0b5c0b5c"}, "flag provided but not defined: -lease-id"},
	} {
		wantUsage(t, addr, tt.args, tt.want)
	}
}

// A move to an agent the mailbox does not know is refused (exit 2, naming
// --to, not the API's field) with the close matches, by a dry run as by
// the real run, one task or many, and changes nothing; --new-agent
// confirms it.
func TestMoveToAnUnknownAgent(t *testing.T) {
	addr := startDaemon(t)
	id := sendTask(t, addr, "p@x", "dead@x", "one")
	mustCLI(t, addr, "lease", "--recipient", "live@x")
	for _, args := range [][]string{
		{"move", "--agent", "dead@x", "--to", "liev@x", "--reason", "r"},
		{"move", "--agent", "dead@x", "--to", "liev@x", "--reason", "r", "--dry-run"},
		{"move", id, "--queued-for", "dead@x", "--to", "liev@x", "--reason", "r"},
		{"requeue", "--agent", "dead@x", "--to", "liev@x", "--reason", "r", "--operator-accepted", "--dry-run"},
	} {
		o := cli(t, addr, args...)
		if o.code != exitUsage || o.stdout != "" {
			t.Fatalf("%q: exit %d, want 2; stdout %q stderr %q", args, o.code, o.stdout, o.stderr)
		}
		wantContains(t, "a move to a typo", o.stderr, "mailroom "+args[0]+": --to: got \"liev@x\", an agent the mailbox does not know", "did you mean live@x",
			"expected a known agent, or --new-agent to confirm a new one\n")
		if strings.Contains(o.stderr, "command.") {
			t.Errorf("%q: the refusal names the API's fields: %s", args, o.stderr)
		}
	}
	c, err := client.New(addr)
	if err != nil {
		t.Fatal(err)
	}
	if e := entryOf(t, c, id); e.Task.Recipient != "dead@x" {
		t.Fatalf("the refused move moved %s to %s", id, e.Task.Recipient)
	}
	out := mustCLI(t, addr, "move", id, "--queued-for", "dead@x", "--to", "liev@x", "--new-agent", "--reason", "r")
	wantContains(t, "a confirmed new agent", out, "moved task "+id+": queued for liev@x")
}
