package engine

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/mailroom/mailroom/mailbox"
)

func idemTask(key string) mailbox.Task {
	return mailbox.Task{Sender: "p", Recipient: "a", IntentText: "reindex", Idempotency: &mailbox.Idempotency{DuplicateSafety: mailbox.DuplicateIdempotent, Key: key}}
}

func snapshotOf(e *Engine) *mailbox.Snapshot {
	var s *mailbox.Snapshot
	e.View(func(st *mailbox.State) { s = st.Snapshot(0) })
	return s
}

// TestDedupeReplayAndAuditSurviveRestartAndCompaction builds a state with
// live and finished idempotent tasks and repairs, then checks that the
// state, the dedupe answers and the audit trail are identical after a
// restart, after a compaction, and after both.
func TestDedupeReplayAndAuditSurviveRestartAndCompaction(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	e := open(t, dir, Options{})
	live, _ := e.Send(ctx, idemTask("live"))
	done, _ := e.Send(ctx, idemTask("done"))
	mustLease(t, e, "a") // live
	task, l := mustLease(t, e, "a")
	if task.ID != done.TaskID {
		t.Fatalf("leased %s, want %s", task.ID, done.TaskID)
	}
	if err := e.PostResult(ctx, mailbox.Result{TaskID: done.TaskID, Status: mailbox.StatusOK, Content: []mailbox.Content{{Type: "text", Text: "indexed 42 docs"}}, LeaseID: l.LeaseID}); err != nil {
		t.Fatal(err)
	}
	unsafe := mustSend(t, e, "p", "b")
	_, ul := mustLease(t, e, "b")
	if _, err := e.Repair(ctx, mailbox.RepairRequest{TaskID: unsafe, Reason: "worker b died",
		Command: mailbox.RepairCommand{Action: mailbox.ActionRequeue, LeaseID: ul.LeaseID, DuplicateRisk: mailbox.RiskOperatorAccepted}}); err != nil {
		t.Fatal(err)
	}
	e.Drain(ctx, "p")
	want := snapshotOf(e)

	check := func(stage string, e *Engine) {
		t.Helper()
		if got := snapshotOf(e); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: state differs:\n got %+v\nwant %+v", stage, got, want)
		}
		a, _ := e.Audit(ctx, "", 10)
		if len(a) != 1 || a[0].TaskID != unsafe || a[0].Reason != "worker b died" {
			t.Fatalf("%s: audit = %+v", stage, a)
		}
	}
	e.Close()
	e = open(t, dir, Options{})
	check("after restart", e)
	if _, err := e.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	check("after compaction", e)
	e.Close()
	e = open(t, dir, Options{})
	check("after compaction and restart", e)

	// The dedupe answers are the same too: a twin of the live task gets its
	// id, a twin of the finished one a replayed copy of its result.
	got, err := e.Send(ctx, idemTask("live"))
	if err != nil || !got.Deduplicated || got.TaskID != live.TaskID {
		t.Fatalf("twin of a live task = %+v, %v", got, err)
	}
	got, err = e.Send(ctx, idemTask("done"))
	if err != nil || !got.Deduplicated || got.TaskID == done.TaskID {
		t.Fatalf("twin of a finished task = %+v, %v", got, err)
	}
	r, _ := e.Drain(ctx, "p")
	if r == nil || r.TaskID != got.TaskID || !r.Replayed || len(r.Content) != 1 || r.Content[0].Text != "indexed 42 docs" {
		t.Fatalf("replayed result = %+v", r)
	}
	if task, _, _ := e.Lease(ctx, "a"); task != nil {
		t.Fatalf("a deduplicated task was leased: %s", task.ID)
	}
}

func TestUnsafeTasksAreNeverDeduplicated(t *testing.T) {
	e := open(t, t.TempDir(), Options{})
	ctx := context.Background()
	task := idemTask("k")
	task.Idempotency.DuplicateSafety = mailbox.DuplicateUnsafe
	a, _ := e.Send(ctx, task)
	b, _ := e.Send(ctx, task)
	if a.Deduplicated || b.Deduplicated || a.TaskID == b.TaskID {
		t.Fatalf("unsafe twins: %+v %+v", a, b)
	}
}

// TestRetryStaleLeaseChanged moves a lease between the scan's plan and its
// requeue: the guard refuses it and the report says lease_changed.
func TestRetryStaleLeaseChanged(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	e := open(t, t.TempDir(), Options{Now: func() time.Time { return now }})
	ctx := context.Background()
	sent, _ := e.Send(ctx, idemTask("k"))
	_, l := mustLease(t, e, "a")
	now = now.Add(10 * time.Minute)
	p := mailbox.DefaultRetryPolicy()
	p.Enabled = true
	var plan mailbox.RetryReport
	e.View(func(s *mailbox.State) { plan = s.PlanRetryStale(p, now.UnixMilli()) })
	if len(plan.Requeued) != 1 || plan.Requeued[0].LeaseID != l.LeaseID {
		t.Fatalf("plan = %+v", plan)
	}
	// Someone else repairs and re-leases it in between.
	if _, err := e.Repair(ctx, mailbox.RepairRequest{TaskID: sent.TaskID, Reason: "by hand",
		Command: mailbox.RepairCommand{Action: mailbox.ActionRequeue, LeaseID: l.LeaseID, DuplicateRisk: mailbox.RiskIdempotent}}); err != nil {
		t.Fatal(err)
	}
	_, l2 := mustLease(t, e, "a")
	rep, err := e.executeRetry(ctx, plan)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Requeued) != 0 || len(rep.Skipped) != 1 || rep.Skipped[0].Reason != mailbox.SkipLeaseChanged {
		t.Fatalf("report = %+v, want the lease skipped as lease_changed", rep)
	}
	v, _ := e.Queue(ctx, mailbox.QueueFilter{State: mailbox.TaskInFlight})
	if len(v.Tasks) != 1 || v.Tasks[0].LeaseID != l2.LeaseID {
		t.Fatalf("the new lease was disturbed: %+v", v.Tasks)
	}
	// A full scan through the service requeues the new lease once it is old.
	now = now.Add(10 * time.Minute)
	rep, err = e.RetryStale(ctx, p)
	if err != nil || len(rep.Requeued) != 1 || rep.Requeued[0].LeaseID != l2.LeaseID || rep.Requeued[0].Attempt != 2 {
		t.Fatalf("scan = %+v, %v", rep, err)
	}
	if a, _ := e.Audit(ctx, sent.TaskID, 10); len(a) != 2 || !a[0].Auto || a[0].Principal != RetryStalePrincipal || a[1].Auto {
		t.Fatalf("audit = %+v", a)
	}
	// A dry run changes nothing.
	mustLease(t, e, "a")
	now = now.Add(10 * time.Minute)
	p.Enabled, p.MaxAttempts = false, 5
	rep, _ = e.RetryStale(ctx, p)
	if !rep.DryRun || len(rep.Requeued) != 1 {
		t.Fatalf("dry run = %+v", rep)
	}
	if v, _ := e.Queue(ctx, mailbox.QueueFilter{State: mailbox.TaskInFlight}); len(v.Tasks) != 1 {
		t.Fatal("a dry run requeued")
	}
}
