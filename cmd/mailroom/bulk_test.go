package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/mailbox"
)

// A dead agent's leases, requeued to a live agent in one command: a dry
// run lists them and changes nothing; the real run repairs each under the
// lease it listed, so the one that changed hands in between is reported
// as a conflict (the lease listed, the current one) and left alone, and
// the command exits 1 saying so. Another agent's lease and the dead
// agent's queued task are not touched.
func TestBulkRequeueOfAnAgentsLeases(t *testing.T) {
	addr := startDaemon(t)
	var ids []string
	for _, intent := range []string{"one", "two", "three"} {
		ids = append(ids, sendTask(t, addr, "p@x", "dead@x", intent))
		leaseTask(t, addr, "dead@x")
	}
	queued := sendTask(t, addr, "p@x", "dead@x", "still queued")
	mustCLI(t, addr, "lease", "--recipient", "live@x") // live@x polls: a known agent
	other := sendTask(t, addr, "p@x", "other@x", "someone else's")
	leaseTask(t, addr, "other@x")

	out := mustCLI(t, addr, "requeue", "--agent", "dead@x", "--to", "live@x", "--reason", "dead@x is gone", "--operator-accepted", "--dry-run")
	for _, id := range ids {
		wantContains(t, "dry run", out, "would requeue "+id+" (lease ", ", attempt 1, held ")
	}
	wantContains(t, "dry run", out, ") to live@x\n", "dry run: would requeue 3 lease(s) held by dead@x; nothing changed\n")
	if strings.Contains(out, queued) || strings.Contains(out, other) {
		t.Errorf("the dry run lists a task that is not a lease of dead@x:\n%s", out)
	}
	var st statusReport
	mustJSON(t, addr, &st, "status", "--json", "--agent", "dead@x", "--state", "in_flight")
	if len(st.Tasks) != 3 {
		t.Fatalf("after a dry run dead@x holds %d leases, want the 3 it had", len(st.Tasks))
	}

	// Between the listing and the repairs, the second lease is requeued
	// by someone else (and leased again: a new lease).
	c, err := client.New(addr)
	if err != nil {
		t.Fatal(err)
	}
	bulkListed = func() {
		e := entryOf(t, c, ids[1])
		if _, err := c.Repair(t.Context(), mailbox.RepairRequest{TaskID: ids[1], Reason: "a colleague got there first",
			Command: mailbox.RepairCommand{Action: mailbox.ActionRequeue, LeaseID: e.LeaseID, DuplicateRisk: mailbox.RiskOperatorAccepted}}); err != nil {
			t.Error(err)
		}
	}
	defer func() { bulkListed = nil }()
	o := cli(t, addr, "requeue", "--agent", "dead@x", "--to", "live@x", "--reason", "dead@x is gone", "--operator-accepted")
	if o.code != exitFailure {
		t.Fatalf("exit %d, want 1 (a conflict); stdout:\n%s\nstderr:\n%s", o.code, o.stdout, o.stderr)
	}
	wantContains(t, "bulk requeue", o.stdout,
		"requeued task "+ids[0]+": queued again for live@x",
		"conflict on "+ids[1]+" (lease ", " listed): ", "task state:     queued",
		"requeued task "+ids[2]+": queued again for live@x",
		"requeue: 2 repaired, 1 conflicts, 0 skipped, of 3 lease(s) held by dead@x\n")
	wantContains(t, "bulk requeue's error", o.stderr, "1 of 3 lease(s) changed since they were listed and were not repaired", "mailroom status --agent dead@x")
	for id, want := range map[string]string{ids[0]: "live@x", ids[2]: "live@x", ids[1]: "dead@x", queued: "dead@x"} {
		if e := entryOf(t, c, id); e.State != mailbox.TaskQueued || e.Task.Recipient != want {
			t.Errorf("task %s is %s for %s, want queued for %s", id, e.State, e.Task.Recipient, want)
		}
	}
	if e := entryOf(t, c, other); e.State != mailbox.TaskInFlight || e.LeasedTo != "other@x" {
		t.Errorf("another agent's lease was touched: %+v", e)
	}
}

// force-error --agent ends each lease with the error for its sender; with
// --json it prints a line a task and the summary; --stale-after leaves the
// younger leases alone.
func TestBulkForceErrorJSON(t *testing.T) {
	addr := startDaemon(t)
	a := sendTask(t, addr, "p@x", "dead@x", "one")
	leaseTask(t, addr, "dead@x")
	b := sendTask(t, addr, "p@x", "dead@x", "two")
	leaseTask(t, addr, "dead@x")

	out := mustCLI(t, addr, "force-error", "--agent", "dead@x", "--stale-after", "1h", "--reason", "gone", "--message", "dead@x stopped")
	if out != "force-error: 0 repaired, 0 conflicts, 0 skipped, of 0 lease(s) held by dead@x\n" {
		t.Errorf("leases younger than --stale-after were listed:\n%s", out)
	}

	out = mustCLI(t, addr, "force-error", "--agent", "dead@x", "--reason", "gone", "--message", "dead@x stopped", "--json")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 {
		t.Fatalf("want a line a task and the summary, got:\n%s", out)
	}
	for i, id := range []string{a, b} {
		var l bulkLine
		if err := json.Unmarshal([]byte(lines[i]), &l); err != nil || l.Kind != kindBulkItem || l.TaskID != id || l.Outcome != "repaired" ||
			l.LeaseID == "" || l.Repaired == nil || l.Repaired.Result == nil || l.Repaired.Result.ErrorMessage != "dead@x stopped" {
			t.Errorf("line %d = %s (%v), want %s repaired with the error", i, lines[i], err, id)
		}
	}
	var sum bulkSummary
	if err := json.Unmarshal([]byte(lines[2]), &sum); err != nil || sum != (bulkSummary{Kind: kindBulkRepair, Action: mailbox.ActionForceError, Agent: "dead@x", Listed: 2, Repaired: 2, Leases: 2}) {
		t.Errorf("summary = %s (%v)", lines[2], err)
	}
	var got []string
	var res struct {
		Results []mailbox.PendingResult `json:"results"`
	}
	mustJSON(t, addr, &res, "status", "--json", "--agent", "p@x")
	for _, r := range res.Results {
		got = append(got, r.TaskID+" "+r.Status)
	}
	if strings.Join(got, ",") != a+" error,"+b+" error" {
		t.Errorf("p@x's results: %v, want both errors", got)
	}
}

func TestBulkRepairUsage(t *testing.T) {
	addr := startDaemon(t)
	rq := []string{"requeue", "--reason", "r", "--operator-accepted"}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{append(rq, "--agent", "a@x", "6f9619ff"), `unexpected argument "6f9619ff": give a TASK_ID or --agent, not both`},
		{append(rq, "--agent", " "), `--agent: got " ", expected the agent whose leases to repair`},
		{append(rq, "--agent", "a@x", "--lease-id", "0b5c0b5c"), "--lease-id: with --agent each task is guarded by the lease listed for it"},
		{append(rq, "6f9619ff", "--dry-run"), "--stale-after and --dry-run: only with --agent"},
		{append(rq, "6f9619ff", "--stale-after", "5m"), "--stale-after and --dry-run: only with --agent"},
		{append(rq, "--agent", "a@x", "--stale-after", "-1s"), "--stale-after: got -1s, expected a duration of 0 or more"},
		{rq, "missing TASK_ID (or --agent AGENT"},
		{[]string{"requeue", "--agent", "a@x", "--reason", "r", "--idempotent", "--operator-accepted"}, "give one of them"},
		{[]string{"requeue", "--agent", "a@x", "--reason", "r", "--idempotent", "--duplicate-risk", "idempotent"}, "give one of them"},
		{[]string{"requeue", "--agent", "a@x", "--reason", "r"}, "--duplicate-risk is required (or --idempotent, or --operator-accepted)"},
		{[]string{"force-error", "--agent", "a@x", "--reason", "r"}, "--message is required"},
		{[]string{"force-error", "--reason", "r", "--message", "m", "--dry-run", "6f9619ff"}, "--stale-after and --dry-run: only with --agent"},
	} {
		wantUsage(t, addr, tt.args, tt.want)
	}
}

// entryOf is a task's queue entry, read through the status of its queue.
func entryOf(t *testing.T, c *client.Client, id string) mailbox.QueueEntry {
	t.Helper()
	v, err := c.Queue(t.Context(), mailbox.QueueFilter{Limit: mailbox.MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range v.Tasks {
		if e.Task.ID == id {
			return e
		}
	}
	t.Fatalf("task %s is not queued, in flight or waiting", id)
	return mailbox.QueueEntry{}
}

// A lease-id prefix of a lease that has ended since the operator looked
// (requeued, and the task leased again) is not "no lease id starts with":
// the repair is sent with that lease, and the conflict report says which
// lease is current (exit 1).
func TestAnOldLeasePrefixReportsTheConflict(t *testing.T) {
	addr := startDaemon(t)
	id := sendTask(t, addr, "p@x", "w@x", "flaky")
	old := leaseTask(t, addr, "w@x").Lease.LeaseID
	mustCLI(t, addr, "requeue", id, "--reason", "first try hung", "--operator-accepted", "--lease-id", old)
	current := leaseTask(t, addr, "w@x").Lease.LeaseID

	o := cli(t, addr, "requeue", id, "--reason", "again", "--operator-accepted", "--lease-id", old[:8])
	if o.code != exitFailure {
		t.Fatalf("exit %d, want 1 (a conflict); stdout %q stderr %q", o.code, o.stdout, o.stderr)
	}
	wantContains(t, "an old lease's prefix", o.stderr, "expected lease: "+old, "current lease:  "+current, "held by w@x")

	// A prefix of no lease of the task, current or past, is still a
	// usage error.
	wantUsage(t, addr, []string{"requeue", id, "--reason", "r", "--operator-accepted", "--lease-id", "ffffff"}, `--lease-id: no lease id starts with "ffffff"`)
}

// agent list --all says of each agent when it was last seen (its last
// action, from the log; how long ago and when), whether it is live or
// probably gone, and what it owes: a sender whose result waits undrained
// is probably gone too once it is not seen.
func TestAgentListSaysWhoIsProbablyGone(t *testing.T) {
	addr := startDaemon(t)
	sendTask(t, addr, "p@x", "w@x", "one")
	sendTask(t, addr, "p@x", "w@x", "two")
	l := leaseTask(t, addr, "w@x")
	// Not synchronisation: the agents' last sight must be older than the
	// --stale-after 10ms the listing below is asked with.
	time.Sleep(30 * time.Millisecond)

	rows := func(out string) (w, p string) {
		for _, l := range strings.Split(out, "\n") {
			switch {
			case strings.HasPrefix(l, "w@x "):
				w = l
			case strings.HasPrefix(l, "p@x "):
				p = l
			}
		}
		return w, p
	}
	out := mustCLI(t, addr, "agent", "list", "--all", "--stale-after", "10ms")
	wantContains(t, "agent list header", out, "LAST SEEN", "STATE", "QUEUED", "LEASES", "OLDEST LEASE", "QUESTIONS", "UNDRAINED", "WEBHOOK")
	w, p := rows(out)
	if !regexp.MustCompile(`^w@x .* ago \(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\) +probably gone +1 +1 +\d+s +0 +0 +-$`).MatchString(w) {
		t.Errorf("w@x's row = %q, want last seen (ago and when), probably gone, 1 queued, 1 lease, its age, no question, nothing undrained, no webhook", w)
	}
	if !regexp.MustCompile(`^p@x .* ago \(.*Z\) +quiet +0 +0 +- +0 +0 +-$`).MatchString(p) {
		t.Errorf("p@x's row = %q, want quiet, owing nothing", p)
	}
	if out := mustCLI(t, addr, "agent", "list", "--all"); !regexp.MustCompile(`(?m)^w@x .* ago .* +live `).MatchString(out) {
		t.Errorf("within the default 5m w@x should be live:\n%s", out)
	}
	// w@x answers: now p@x owes a drain, and is probably gone while it
	// is not seen.
	mustCLI(t, addr, "result", "post", l.Task.ID, "--status", "ok", "--text", "done", "--lease-id", l.Lease.LeaseID)
	time.Sleep(30 * time.Millisecond) // as above: older than --stale-after 10ms
	_, p = rows(mustCLI(t, addr, "agent", "list", "--all", "--stale-after", "10ms"))
	if !regexp.MustCompile(`^p@x .* ago \(.*Z\) +probably gone +0 +0 +- +0 +1 +-$`).MatchString(p) {
		t.Errorf("p@x's row = %q, want probably gone, owing one undrained result", p)
	}
	wantUsage(t, addr, []string{"agent", "list", "--stale-after", "0s"}, "--stale-after: got 0s, expected a positive duration")
}
