package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/mailbox"
)

// ask leases the next task for worker and posts a question for its sender.
func ask(t *testing.T, addr, worker string) string {
	t.Helper()
	l := leaseTask(t, addr, worker)
	mustCLI(t, addr, "result", "post", l.Task.ID, "--status", "input_required", "--text", "which branch?", "--lease-id", l.Lease.LeaseID)
	return l.Task.ID
}

// finish leases the next task for worker and posts its result.
func finish(t *testing.T, addr, worker string) string {
	t.Helper()
	l := leaseTask(t, addr, worker)
	mustCLI(t, addr, "result", "post", l.Task.ID, "--status", "ok", "--text", "done", "--lease-id", l.Lease.LeaseID)
	return l.Task.ID
}

// deadCoder is a mailbox where coder@local owes two questions (its
// workers asked it) and two undrained results; reviewer@local is known.
func deadCoder(t *testing.T) (addr string, questions, results []string) {
	addr = startDaemon(t)
	for range 2 {
		sendTask(t, addr, "coder@local", "worker@local", "ask me")
		questions = append(questions, ask(t, addr, "worker@local"))
	}
	for range 2 {
		sendTask(t, addr, "coder@local", "worker@local", "finish it")
		results = append(results, finish(t, addr, "worker@local"))
	}
	sendTask(t, addr, "reviewer@local", "worker@local", "reviewer's own")
	return addr, questions, results
}

func agentOf(t *testing.T, c *client.Client, id string) mailbox.AgentInfo {
	t.Helper()
	list, err := c.Agents(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range list {
		if a.Agent == id {
			return a
		}
	}
	return mailbox.AgentInfo{Agent: id}
}

// hand-over --agent hands a dead sender's questions and undrained results
// to another agent: a dry run lists them and changes nothing; --questions
// and --results take one kind each; afterwards the dead agent owes nothing
// and the new sender drains the results and answers the questions.
func TestHandOverAnAgentsDebt(t *testing.T) {
	addr, questions, results := deadCoder(t)
	c, err := client.New(addr)
	if err != nil {
		t.Fatal(err)
	}
	out := mustCLI(t, addr, "hand-over", "--agent", "coder@local", "--to", "reviewer@local", "--reason", "coder@local is gone", "--dry-run")
	for _, id := range questions {
		wantContains(t, "dry run", out, "would hand-over question "+id+" (input_required asked by worker@local, waiting ")
	}
	for _, id := range results {
		wantContains(t, "dry run", out, "would hand-over result "+id+" (ok result from worker@local, waiting ")
	}
	wantContains(t, "dry run", out, ") to reviewer@local\n",
		"dry run: would hand-over 2 question(s) waiting on coder@local's answer and 2 result(s) waiting for coder@local to drain; nothing changed\n")
	if a := agentOf(t, c, "coder@local"); a.Waiting != 2 || a.Undrained != 2 {
		t.Fatalf("after a dry run coder@local = %+v", a)
	}

	out = mustCLI(t, addr, "hand-over", "--agent", "coder@local", "--questions", "--to", "reviewer@local", "--reason", "coder@local is gone")
	for _, id := range questions {
		wantContains(t, "hand-over --questions", out, "handed task "+id+" over to sender reviewer@local: its question waits on reviewer@local's answer\n")
	}
	wantContains(t, "hand-over --questions", out, "hand-over: 2 repaired, 0 conflicts, 0 skipped, of 2 question(s) waiting on coder@local's answer\n")
	if a := agentOf(t, c, "coder@local"); a.Waiting != 0 || a.Undrained != 2 {
		t.Fatalf("after --questions coder@local = %+v, want only its results left", a)
	}

	out = mustCLI(t, addr, "hand-over", "--agent", "coder@local", "--results", "--to", "reviewer@local", "--reason", "coder@local is gone", "--json")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 {
		t.Fatalf("want a line a result and the summary, got:\n%s", out)
	}
	for i, id := range results {
		var l bulkLine
		if err := json.Unmarshal([]byte(lines[i]), &l); err != nil || l.TaskID != id || l.What != debtResults || l.SentBy != "coder@local" || l.Outcome != "repaired" ||
			l.Repaired == nil || l.Repaired.Action != mailbox.OutcomeHandedOver || l.Repaired.Sender != "reviewer@local" {
			t.Errorf("line %d = %s (%v), want %s handed over", i, lines[i], err, id)
		}
	}
	var sum bulkSummary
	if err := json.Unmarshal([]byte(lines[2]), &sum); err != nil || sum != (bulkSummary{Kind: kindBulkRepair, Action: mailbox.ActionHandOver, Agent: "coder@local", Listed: 2, Repaired: 2, Results: 2}) {
		t.Errorf("summary = %s (%v)", lines[2], err)
	}
	if a := agentOf(t, c, "coder@local"); a.Owes() != 0 {
		t.Fatalf("coder@local still owes: %+v", a)
	}
	// Nothing left: a second run lists nothing.
	out = mustCLI(t, addr, "hand-over", "--agent", "coder@local", "--to", "reviewer@local", "--reason", "again", "--dry-run")
	wantContains(t, "a second dry run", out, "would hand-over 0 question(s) waiting on coder@local's answer and 0 result(s)")

	// reviewer@local drains the results (and the questions, undrained)
	// and answers a question.
	got, err := c.DrainN(t.Context(), "reviewer@local", 10, 0)
	if err != nil || len(got) != 4 {
		t.Fatalf("reviewer@local drained %+v, %v; want the two questions and two results", got, err)
	}
	mustCLI(t, addr, "reply", questions[0], "--from", "reviewer@local", "--text", "main")
	wantContains(t, "audit", mustCLI(t, addr, "audit"), "handed_over", "sender coder@local -> reviewer@local", "coder@local is gone")
}

// One task at a time, guarded by --sent-by: a stale guard is a conflict
// (exit 1) naming the sender now; a typo in --to is refused (exit 2)
// naming the close match, unless --new-agent confirms it.
func TestHandOverOneTask(t *testing.T) {
	addr, questions, _ := deadCoder(t)
	o := cli(t, addr, "hand-over", questions[0], "--sent-by", "planner@local", "--to", "reviewer@local", "--reason", "r")
	if o.code != exitFailure {
		t.Fatalf("a stale guard: exit %d, want 1; stderr %q", o.code, o.stderr)
	}
	wantContains(t, "a stale guard", o.stderr, "--sent-by: cannot hand task "+questions[0]+" over as sent by planner@local: its sender is coder@local now")
	wantUsage(t, addr, []string{"hand-over", questions[0], "--sent-by", "coder@local", "--to", "reveiwer", "--reason", "r"},
		`mailroom hand-over: --to: got "reveiwer", an agent the mailbox does not know`, "did you mean reviewer@local", "--new-agent to confirm a new one")
	out := mustCLI(t, addr, "hand-over", questions[0], "--sent-by", "coder@local", "--to", "reviewer@local", "--reason", "r")
	wantContains(t, "hand-over", out, "handed task "+questions[0]+" over to sender reviewer@local: its question waits on reviewer@local's answer\n")
	out = mustCLI(t, addr, "hand-over", questions[1], "--to", "desk@local", "--new-agent", "--reason", "r")
	wantContains(t, "hand-over to a new agent", out, "over to sender desk@local")

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"hand-over", "--to", "b@x", "--reason", "r"}, "missing TASK_ID (or --agent AGENT, for every task waiting on the agent as its sender)"},
		{[]string{"hand-over", questions[0], "--reason", "r"}, "--to is required"},
		{[]string{"hand-over", questions[0], "--to", "b@x"}, "--reason is required"},
		{[]string{"hand-over", questions[0], "--to", "b@x", "--reason", "r", "--questions"}, "--questions and --results: only with --agent"},
		{[]string{"hand-over", questions[0], "--to", "b@x", "--reason", "r", "--dry-run"}, "--stale-after and --dry-run: only with --agent (a repair of one task is guarded by --sent-by)"},
		{[]string{"hand-over", "--agent", "coder@local", "--sent-by", "coder@local", "--to", "b@x", "--reason", "r"}, "--sent-by: with --agent"},
		{[]string{"hand-over", "--agent", "coder@local", "--to", "coder@local", "--reason", "r"}, `--to: got "coder@local", the agent whose tasks are handed over`},
	} {
		wantUsage(t, addr, tt.args, tt.want)
	}
}

// force-error --agent A --questions ends the questions waiting on A's
// answer as well as A's leases, each question guarded by the lease that
// asked; without --questions the questions are left alone.
func TestForceErrorAnAgentsQuestions(t *testing.T) {
	addr, questions, _ := deadCoder(t)
	sendTask(t, addr, "planner@local", "coder@local", "coder's own work")
	lease := leaseTask(t, addr, "coder@local")

	out := mustCLI(t, addr, "force-error", "--agent", "coder@local", "--reason", "gone", "--message", "coder@local is gone", "--dry-run")
	wantContains(t, "dry run without --questions", out, "dry run: would force-error 1 lease(s) held by coder@local; nothing changed\n")
	out = mustCLI(t, addr, "force-error", "--agent", "coder@local", "--questions", "--reason", "gone", "--message", "coder@local is gone", "--dry-run")
	wantContains(t, "dry run", out, "would force-error "+lease.Task.ID+" (lease ",
		"would force-error question "+questions[0]+" (input_required asked by worker@local",
		"would force-error question "+questions[1],
		"dry run: would force-error 1 lease(s) held by coder@local and 2 question(s) waiting on coder@local's answer; nothing changed\n")

	out = mustCLI(t, addr, "force-error", "--agent", "coder@local", "--questions", "--reason", "gone", "--message", "coder@local is gone")
	wantContains(t, "force-error --questions", out,
		"forced an error on task "+lease.Task.ID, "forced an error on task "+questions[0], "forced an error on task "+questions[1],
		"force-error: 3 repaired, 0 conflicts, 0 skipped, of 1 lease(s) held by coder@local and 2 question(s) waiting on coder@local's answer\n")
	c, err := client.New(addr)
	if err != nil {
		t.Fatal(err)
	}
	if a := agentOf(t, c, "coder@local"); a.Waiting != 0 || a.InFlight != 0 {
		t.Fatalf("coder@local = %+v, want no lease and no question left", a)
	}
	wantUsage(t, addr, []string{"force-error", questions[0], "--questions", "--reason", "r", "--message", "m"}, "--questions: only with --agent")
}

// An --agent that names no agent the mailbox knows is a usage error
// (exit 2) naming the close matches, in every verb that takes one, a dry
// run included; nothing is listed or changed.
func TestUnknownAgentIsRefusedEverywhere(t *testing.T) {
	addr, _, _ := deadCoder(t)
	for _, args := range [][]string{
		{"move", "--agent", "coder", "--to", "reviewer@local", "--reason", "r"},
		{"move", "--agent", "coder", "--to", "reviewer@local", "--reason", "r", "--dry-run"},
		{"cancel", "--agent", "coder", "--reason", "r"},
		{"requeue", "--agent", "coder", "--reason", "r", "--operator-accepted"},
		{"force-error", "--agent", "coder", "--reason", "r", "--message", "m", "--questions"},
		{"hand-over", "--agent", "coder", "--to", "reviewer@local", "--reason", "r", "--dry-run"},
		{"status", "--agent", "coder"},
		{"push", "retry", "--agent", "coder", "--dry-run"},
		{"push", "drop", "--agent", "coder", "--reason", "r"},
	} {
		wantUsage(t, addr, args, `--agent: got "coder", an agent the mailbox does not know`, "did you mean coder@local", "expected a known agent")
	}
	c, err := client.New(addr)
	if err != nil {
		t.Fatal(err)
	}
	if a := agentOf(t, c, "coder@local"); a.Waiting != 2 || a.Undrained != 2 {
		t.Fatalf("coder@local = %+v after refusals", a)
	}
}
