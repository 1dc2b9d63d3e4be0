package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/mailbox"
)

// TestFaultKill9LargestDeepestValues posts the largest and deepest values
// the daemon accepts, kills it with SIGKILL, restarts it, compacts, kills
// and restarts again, and streams them: every copy must come back whole,
// and the daemon must start every time (issue 9: one accepted value nested
// 9,997 deep used to stop it from ever starting again).
func TestFaultKill9LargestDeepestValues(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	p := startProc(t, dir)
	c := mustClient(t, p)

	long := func(b byte, n int) string { return strings.Repeat(string(b), n) }
	sender, worker := long('s', mailbox.MaxAgentIDBytes), long('w', mailbox.MaxAgentIDBytes-2)+"@x"
	deadline := mailbox.MaxTimestampMs
	kind := long('k', mailbox.MaxKindBytes)
	// The biggest task: every bounded field at its bound, and an intent
	// that fills the body to just under the 1 MiB limit.
	big := mailbox.Task{Sender: sender, Recipient: worker, TaskKind: &kind, DeadlineMs: &deadline,
		Idempotency: &mailbox.Idempotency{DuplicateSafety: mailbox.DuplicateIdempotent, Key: long('i', mailbox.MaxKeyBytes)}}
	body, _ := json.Marshal(big)
	big.IntentText = long('x', mailbox.MaxBodyBytes-len(body)-64)
	sent, err := c.Send(ctx, big)
	if err != nil {
		t.Fatalf("sending the largest task: %v", err)
	}
	// The deepest result: values nested exactly MaxValueDepth deep, as
	// arrays and as objects, beside text that fills the body.
	deepArray := strings.Repeat("[", mailbox.MaxValueDepth) + `"\u00e9\ud83d\ude00"` + strings.Repeat("]", mailbox.MaxValueDepth)
	deepObject := strings.Repeat(`{"k":`, mailbox.MaxValueDepth) + "-1.5e300" + strings.Repeat("}", mailbox.MaxValueDepth)
	if _, err := c.Send(ctx, mailbox.Task{Sender: sender, Recipient: "deep@x", IntentText: "answer deeply"}); err != nil {
		t.Fatal(err)
	}
	task, lease, err := c.Lease(ctx, "deep@x")
	if err != nil || task == nil {
		t.Fatalf("lease: %v %v", task, err)
	}
	res := mailbox.Result{TaskID: task.ID, Status: mailbox.StatusPartial, LeaseID: lease.LeaseID, Content: []mailbox.Content{
		{Type: mailbox.ContentJSON, Value: json.RawMessage(deepArray)},
		{Type: mailbox.ContentJSON, Value: json.RawMessage(deepObject)},
		{Type: mailbox.ContentText, Text: long('t', mailbox.MaxBodyBytes-4096)},
	}}
	if err := c.PostResult(ctx, res); err != nil {
		t.Fatalf("posting the deepest result: %v", err)
	}
	// The longest repair reason, in the audit trail.
	if _, err := c.Send(ctx, mailbox.Task{Sender: sender, Recipient: "stuck@x", IntentText: "get stuck"}); err != nil {
		t.Fatal(err)
	}
	stuck, stuckLease, err := c.Lease(ctx, "stuck@x")
	if err != nil || stuck == nil {
		t.Fatalf("lease: %v %v", stuck, err)
	}
	if _, err := c.Repair(ctx, mailbox.RepairRequest{TaskID: stuck.ID, Reason: long('r', mailbox.MaxReasonBytes),
		Command: mailbox.RepairCommand{Action: mailbox.ActionRequeue, LeaseID: stuckLease.LeaseID, DuplicateRisk: mailbox.RiskOperatorAccepted}}); err != nil {
		t.Fatalf("repair with the longest reason: %v", err)
	}

	want := view(t, c)
	wantAudit, err := c.Audit(ctx, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	check := func(when string, c *client.Client) {
		t.Helper()
		if got := view(t, c); jsonOf(t, got) != jsonOf(t, want) {
			t.Fatalf("%s: the mailbox differs from what was acknowledged", when)
		}
		audit, err := c.Audit(ctx, "", 10)
		if err != nil || jsonOf(t, audit) != jsonOf(t, wantAudit) {
			t.Fatalf("%s: the audit trail differs (%v)", when, err)
		}
	}

	p.kill9(t)
	p = startProc(t, dir)
	c = mustClient(t, p)
	check("after kill -9 and replay", c)

	if _, err := c.Compact(ctx); err != nil {
		t.Fatalf("compact: %v", err)
	}
	p.kill9(t)
	p = startProc(t, dir)
	c = mustClient(t, p)
	check("after compaction, kill -9 and a restart from the snapshot", c)

	// The stream: its snapshot carries every value, read with the plain test
	// reader (ssetest) and encoding/json.
	snap, _ := daemontest.ReadSnapshot(t, "http://"+p.addr)
	var gotResult *mailbox.PendingResult
	for i := range snap.Results {
		if snap.Results[i].TaskID == task.ID {
			gotResult = &snap.Results[i]
		}
	}
	if gotResult == nil || len(gotResult.Content) != 3 ||
		string(gotResult.Content[0].Value) != deepArray || string(gotResult.Content[1].Value) != deepObject || gotResult.Content[2].Text != res.Content[2].Text {
		t.Fatalf("the streamed snapshot does not carry the deepest result whole")
	}
	found := false
	for _, tr := range snap.Tasks {
		if tr.Task.ID == sent.TaskID {
			found = tr.Task.IntentText == big.IntentText && tr.Task.Sender == sender && *tr.Task.TaskKind == kind
		}
	}
	if !found {
		t.Fatalf("the streamed snapshot does not carry the largest task whole")
	}
	p.stop(t)
}

func mustClient(t *testing.T, p *proc) *client.Client {
	t.Helper()
	c, err := client.New(p.addr)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func view(t *testing.T, c *client.Client) mailbox.QueueView {
	t.Helper()
	v, err := c.Queue(context.Background(), mailbox.QueueFilter{Limit: mailbox.MaxLimit})
	if err != nil {
		t.Fatalf("queue: %v", err)
	}
	return v
}
