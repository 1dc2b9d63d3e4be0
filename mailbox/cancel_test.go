package mailbox

import (
	"errors"
	"strings"
	"testing"
)

func errorsAs(err error, target **Error) bool { return errors.As(err, target) }

func TestCancelQueuedAndInFlight(t *testing.T) {
	b := newBox(t)
	queued := b.sendA2A("coder@local")
	leased := b.sendA2A("coder@local")
	if err := b.cancel(queued); err != nil {
		t.Fatal(err)
	}
	if c := b.s.Counts(); c.Queued != 1 {
		t.Fatalf("counts after canceling a queued task: %+v", c)
	}
	id, lease := b.lease("coder@local")
	if id != leased {
		t.Fatalf("leased %s, want %s: a canceled task is never leased", id, leased)
	}
	if err := b.cancel(leased); err != nil {
		t.Fatal(err)
	}
	if c := b.s.Counts(); c.Queued != 0 || c.InFlight != 0 || c.Known != 2 {
		t.Fatalf("counts after canceling the leased task: %+v", c)
	}
	// The worker's late result, and a repair, are refused naming the cancel.
	err := b.post(leased, lease.LeaseID)
	if ErrorCode(err) != CodeConflict || !strings.Contains(err.Error(), "canceled by alice@local") {
		t.Fatalf("late result: %v", err)
	}
	if _, err := b.repair(leased, lease.LeaseID, ActionRequeue); ErrorCode(err) != CodeConflict {
		t.Fatalf("repair of a canceled task: %v", err)
	}
	// Canceling again names the state.
	if err := b.cancel(leased); ErrorCode(err) != CodeConflict || !strings.Contains(err.Error(), "already canceled by alice@local") {
		t.Fatalf("second cancel: %v", err)
	}
	if err := b.cancel("00000000-0000-4000-8000-000000009999"); ErrorCode(err) != CodeNotFound {
		t.Fatalf("cancel of an unknown task: %v", err)
	}
	audit := b.s.Audit(leased, 10)
	if len(audit) != 1 || audit[0].Action != OutcomeCanceled || audit[0].Principal != "alice@local" || audit[0].LeaseID != lease.LeaseID || audit[0].Reason != "not needed" {
		t.Fatalf("audit %+v", audit)
	}
	b.roundTrip()
}

func TestCancelReleasesTheIdempotentTwin(t *testing.T) {
	b := newBox(t)
	twin := Task{Sender: "planner@local", Recipient: "coder@local", IntentText: "build", Idempotency: &Idempotency{DuplicateSafety: DuplicateIdempotent, Key: "k"}}
	first := twin
	first.ID = b.id()
	_, id, _ := b.sendTask(first)
	if err := b.cancel(id); err != nil {
		t.Fatal(err)
	}
	again := twin
	again.ID = b.id()
	if dup, ok := b.s.LiveDuplicate(again); ok {
		t.Fatalf("a canceled task still answers its idempotent twin (%s)", dup)
	}
}

func TestCanceledTasksAreForgottenLikeDrainedOnes(t *testing.T) {
	b := newBox(t)
	b.setLimits(Limits{RetainDone: 2, ResultCacheMax: 10, ResultCacheAgeMs: 1000, AuditMax: 10})
	var ids []string
	for range 4 {
		id := b.sendA2A("coder@local")
		if err := b.cancel(id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for i, id := range ids {
		_, ok := b.s.Task(id)
		if want := i >= 2; ok != want {
			t.Errorf("canceled task %d remembered = %v, want %v (retain_done 2)", i, ok, want)
		}
	}
	b.roundTrip()
}

func TestA2ATasksKeepTheirResultAfterDelivery(t *testing.T) {
	b := newBox(t)
	id := b.sendA2A("coder@local")
	native := b.send("planner@local", "coder@local")
	_, l1 := b.lease("coder@local")
	_, l2 := b.lease("coder@local")
	if err := b.post(id, l1.LeaseID); err != nil {
		t.Fatal(err)
	}
	if err := b.post(native, l2.LeaseID); err != nil {
		t.Fatal(err)
	}
	ev, ok := b.s.DecideDelivered(id, "caller@a2a", b.now)
	if !ok {
		t.Fatal("no delivery for a task with a pending result")
	}
	b.apply(ev)
	if _, ok := b.s.DecideDelivered(id, "caller@a2a", b.now); ok {
		t.Fatal("a result delivered twice")
	}
	rec, _ := b.s.Task(id)
	if rec.State != TaskDone || rec.Result == nil || rec.Result.Status != StatusOK || rec.Result.LeaseID != "" {
		t.Fatalf("the A2A task after delivery: %+v", rec)
	}
	if h := rec.History[len(rec.History)-1]; h.Type != EventResultDrained || h.Principal != "caller@a2a" {
		t.Fatalf("the delivery is not recorded with its principal: %+v", h)
	}
	if rec, _ := b.s.Task(native); rec.Result != nil {
		t.Fatalf("a native task keeps its result on the record: %+v", rec.Result)
	}
	b.roundTrip()
}

func TestNormalizeTaskChecksTheA2AOrigin(t *testing.T) {
	base := Task{ID: "00000000-0000-4000-8000-000000000001", Sender: "a@local", Recipient: "b@local", IntentText: "x"}
	for _, tc := range []struct {
		o     A2AOrigin
		field string
	}{
		{A2AOrigin{Version: "2.0", MessageID: "m", ContextID: "c", Message: []byte(`{}`)}, "a2a.version"},
		{A2AOrigin{Version: "0.3", ContextID: "c", Message: []byte(`{}`)}, "a2a.message_id"},
		{A2AOrigin{Version: "0.3", MessageID: "m", Message: []byte(`{}`)}, "a2a.context_id"},
		{A2AOrigin{Version: "0.3", MessageID: "m", ContextID: "c", Message: []byte(`[1]`)}, "a2a.message"},
		{A2AOrigin{Version: "0.3", MessageID: strings.Repeat("m", MaxA2AIDBytes+1), ContextID: "c", Message: []byte(`{}`)}, "a2a.message_id"},
	} {
		task := base
		o := tc.o
		task.A2A = &o
		_, err := NormalizeTask(task)
		var e *Error
		if !errorsAs(err, &e) || e.Details == nil || e.Details.Field != tc.field {
			t.Errorf("NormalizeTask with %+v = %v, want a refusal naming %s", tc.o, err, tc.field)
		}
	}
	// Each generation the edge writes is accepted, the legacy dialect too.
	for _, v := range []string{"0.3", "1.0", "legacy"} {
		task := base
		task.A2A = &A2AOrigin{Version: v, MessageID: "m", ContextID: "c", Message: []byte(`{"role":"user"}`)}
		if _, err := NormalizeTask(task); err != nil {
			t.Errorf("NormalizeTask with version %q: %v", v, err)
		}
	}
}
