package client_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/mailroom/mailroom/mailbox"
)

// TestLateResultRefused: after a requeue or a force_error, the old lease's
// result is refused with 409 and never reaches the sender, who gets exactly
// one result.
func TestLateResultRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		command func(leaseID string) mailbox.RepairCommand
		// relaunch says whether, after the repair, the task is leased
		// again and completed (requeue) or already has its error (force).
		relaunch bool
	}{
		{"after requeue", func(id string) mailbox.RepairCommand {
			return mailbox.RepairCommand{Action: mailbox.ActionRequeue, LeaseID: id, DuplicateRisk: mailbox.RiskOperatorAccepted}
		}, true},
		{"after force_error", func(id string) mailbox.RepairCommand {
			return mailbox.RepairCommand{Action: mailbox.ActionForceError, LeaseID: id, Message: "operator gave up"}
		}, false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, c := start(t)
			ctx := t.Context()
			sender, worker := fmt.Sprintf("p%d@x", i), fmt.Sprintf("w%d@x", i)
			id := send(t, c, sender, worker, "work")
			_, old := lease(t, c, worker)
			if _, err := c.Repair(ctx, mailbox.RepairRequest{TaskID: id, Reason: "stuck", Command: tt.command(old.LeaseID)}); err != nil {
				t.Fatal(err)
			}
			late := mailbox.Result{TaskID: id, Status: mailbox.StatusOK, LeaseID: old.LeaseID,
				Content: []mailbox.Content{{Type: mailbox.ContentText, Text: "late"}}}
			if err := c.PostResult(ctx, late); !errors.Is(err, mailbox.ErrConflict) {
				t.Fatalf("late result with the old lease = %v, want 409 conflict", err)
			}
			// Without a lease guard a result is refused once the task has
			// one (a requeued task still queued takes it from its
			// recipient: TestUnguardedResultForARequeuedTask).
			unguarded := late
			unguarded.LeaseID = ""
			wantStatus := mailbox.StatusError
			if tt.relaunch {
				_, again := lease(t, c, worker)
				if again.Attempt != 2 || again.LeaseID == old.LeaseID {
					t.Fatalf("re-lease = %+v, want attempt 2 under a new lease", again)
				}
				if err := c.PostResult(ctx, mailbox.Result{TaskID: id, Status: mailbox.StatusOK, LeaseID: again.LeaseID}); err != nil {
					t.Fatal(err)
				}
				if err := c.PostResult(ctx, late); !errors.Is(err, mailbox.ErrConflict) {
					t.Fatalf("late result after the new one = %v, want 409", err)
				}
				wantStatus = mailbox.StatusOK
			}
			if err := c.PostResult(ctx, unguarded); !errors.Is(err, mailbox.ErrConflict) {
				t.Fatalf("late result without a lease = %v, want 409 conflict (the task has its result)", err)
			}
			r, err := c.Drain(ctx, sender)
			if err != nil || r == nil || r.TaskID != id || r.Status != wantStatus {
				t.Fatalf("drain = %+v %v, want the %s result of %s", r, err, wantStatus, id)
			}
			for _, part := range r.Content {
				if part.Text == "late" {
					t.Errorf("the sender got the late result's content")
				}
			}
			if r, err := c.Drain(ctx, sender); err != nil || r != nil {
				t.Errorf("second drain = %+v %v, want nothing: exactly one result per task", r, err)
			}
		})
	}
}

// TestAttemptsAcrossRestart: lease -> attempt 1; requeue keeps 1; the
// daemon restarts on the same log; the next lease is attempt 2, and a lease
// held across the restart is kept exactly.
func TestAttemptsAcrossRestart(t *testing.T) {
	t.Parallel()
	d, c := start(t)
	ctx := t.Context()
	id := send(t, c, "p@x", "w@x", "retry me")
	held := send(t, c, "p@x", "h@x", "hold me")
	_, l := lease(t, c, "w@x")
	_, hl := lease(t, c, "h@x")
	if l.Attempt != 1 {
		t.Fatalf("first lease attempt %d, want 1", l.Attempt)
	}
	out, err := c.Repair(ctx, mailbox.RepairRequest{TaskID: id, Reason: "worker crashed",
		Command: mailbox.RepairCommand{Action: mailbox.ActionRequeue, LeaseID: l.LeaseID, DuplicateRisk: mailbox.RiskOperatorAccepted}})
	if err != nil || out.Attempt != 1 {
		t.Fatalf("requeue = %+v %v, want attempt kept at 1", out, err)
	}

	d.Restart()

	view, err := c.Queue(ctx, mailbox.QueueFilter{})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]mailbox.QueueEntry{}
	for _, e := range view.Tasks {
		byID[e.Task.ID] = e
	}
	if e := byID[id]; e.State != mailbox.TaskQueued || e.Attempt != 1 {
		t.Errorf("after restart the requeued task is %+v, want queued at attempt 1", e)
	}
	if e := byID[held]; e.State != mailbox.TaskInFlight || e.LeaseID != hl.LeaseID || e.LeasedAtMs != hl.LeasedAtMs || e.Attempt != 1 {
		t.Errorf("after restart the held lease is %+v, want %+v", e, hl)
	}
	task, l2 := lease(t, c, "w@x")
	if task.ID != id || l2.Attempt != 2 {
		t.Errorf("lease after restart = %s attempt %d, want %s attempt 2", task.ID, l2.Attempt, id)
	}
}

// TestFIFO: leases per recipient come out oldest first and never take
// another recipient's task; a lease without recipient takes the global
// oldest.
func TestFIFO(t *testing.T) {
	t.Parallel()
	_, c := start(t)
	var a, b []string
	for i := range 4 {
		a = append(a, send(t, c, "p@x", "a@x", fmt.Sprint("a", i)))
		b = append(b, send(t, c, "p@x", "b@x", fmt.Sprint("b", i)))
	}
	for i, want := range b[:2] {
		if task, _ := lease(t, c, "b@x"); task.ID != want || task.Recipient != "b@x" {
			t.Errorf("lease %d for b = %s, want %s", i, task.ID, want)
		}
	}
	// Global order is send order: a0 b0 a1 b1 a2 b2 ...; b0 and b1 are gone.
	for i, want := range []string{a[0], a[1], a[2], b[2]} {
		if task, _ := lease(t, c, ""); task.ID != want {
			t.Errorf("global lease %d = %s, want %s", i, task.ID, want)
		}
	}
	if task, _ := lease(t, c, "a@x"); task.ID != a[3] {
		t.Errorf("last lease for a = %s, want %s", task.ID, a[3])
	}
	if task, _, err := c.Lease(t.Context(), "a@x"); err != nil || task != nil {
		t.Errorf("lease for a with none left = %v %v", task, err)
	}
}

// TestQueueFiltersBeforeLimit: with 5 queued and 2 in flight, state and
// limit together find in-flight entries even though queued ones come first.
func TestQueueFiltersBeforeLimit(t *testing.T) {
	t.Parallel()
	_, c := start(t)
	ctx := t.Context()
	for i := range 7 {
		send(t, c, "p@x", "w@x", fmt.Sprint("t", i))
	}
	_, first := lease(t, c, "w@x")
	lease(t, c, "w@x")
	tests := []struct {
		f          mailbox.QueueFilter
		n          int
		state      string
		firstLease string
	}{
		{mailbox.QueueFilter{State: mailbox.TaskInFlight, Limit: 1}, 1, mailbox.TaskInFlight, first.LeaseID},
		{mailbox.QueueFilter{State: mailbox.TaskInFlight}, 2, mailbox.TaskInFlight, first.LeaseID},
		{mailbox.QueueFilter{State: mailbox.TaskQueued, Limit: 3}, 3, mailbox.TaskQueued, ""},
		{mailbox.QueueFilter{Limit: 6}, 6, mailbox.TaskQueued, ""},
		{mailbox.QueueFilter{}, 7, mailbox.TaskQueued, ""},
	}
	for _, tt := range tests {
		view, err := c.Queue(ctx, tt.f)
		if err != nil {
			t.Fatalf("Queue(%+v): %v", tt.f, err)
		}
		if len(view.Tasks) != tt.n || view.Tasks[0].State != tt.state || view.Tasks[0].LeaseID != tt.firstLease {
			t.Errorf("Queue(%+v) = %d entries, first %+v; want %d, first %s %q", tt.f, len(view.Tasks), view.Tasks[0], tt.n, tt.state, tt.firstLease)
		}
	}
}

// TestUnguardedResultForARequeuedTask: a worker that finished after its
// lease was requeued, posting without a lease guard while the task is
// still queued, is taken at its word: its result is recorded under a new
// lease (attempt 2) and the task is not leased again. With its old lease
// as guard the same result is refused.
func TestUnguardedResultForARequeuedTask(t *testing.T) {
	t.Parallel()
	_, c := start(t)
	ctx := t.Context()
	id := send(t, c, "p@x", "w@x", "work")
	_, old := lease(t, c, "w@x")
	if _, err := c.Repair(ctx, mailbox.RepairRequest{TaskID: id, Reason: "stuck",
		Command: mailbox.RepairCommand{Action: mailbox.ActionRequeue, LeaseID: old.LeaseID, DuplicateRisk: mailbox.RiskOperatorAccepted}}); err != nil {
		t.Fatal(err)
	}
	late := mailbox.Result{TaskID: id, Status: mailbox.StatusOK, LeaseID: old.LeaseID, Content: []mailbox.Content{{Type: mailbox.ContentText, Text: "late"}}}
	if err := c.PostResult(ctx, late); !errors.Is(err, mailbox.ErrConflict) {
		t.Fatalf("late result with the old lease = %v, want 409 conflict", err)
	}
	late.LeaseID = ""
	if err := c.PostResult(ctx, late); err != nil {
		t.Fatalf("late result without a guard for the queued task: %v", err)
	}
	if task, _, err := c.Lease(ctx, "w@x"); err != nil || task != nil {
		t.Fatalf("the task was leased again after its result: %v, %v", task, err)
	}
	r, err := c.Drain(ctx, "p@x")
	if err != nil || r == nil || r.TaskID != id || r.Content[0].Text != "late" || r.LeaseID == "" || r.LeaseID == old.LeaseID {
		t.Fatalf("drain = %+v, %v; want the late result under a new lease", r, err)
	}
}
