package mailbox

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// cancelAs cancels a task on principal's word, applying the event.
func (b *box) cancelAs(taskID, principal, reason string) (Event, error) {
	b.t.Helper()
	ev, err := b.s.DecideCancel(taskID, principal, reason, b.now)
	if err != nil {
		return Event{}, err
	}
	return b.apply(ev), nil
}

// sendA2AWith sends an A2A task from sender in context ctxID, idempotent
// under key when key is not "".
func (b *box) sendA2AWith(sender, to, ctxID, key string) string {
	b.t.Helper()
	id := b.id()
	task := Task{ID: id, Sender: sender, Recipient: to, IntentText: "work",
		A2A: &A2AOrigin{Version: "1.0", MessageID: "m-" + id, ContextID: ctxID, Message: json.RawMessage(`{"messageId":"m-` + id + `"}`)}}
	if key != "" {
		task.Idempotency = &Idempotency{DuplicateSafety: DuplicateIdempotent, Key: key}
	}
	task, err := NormalizeTask(task)
	if err != nil {
		b.t.Fatal(err)
	}
	ev, err := b.s.DecideSend(task, b.now)
	if err != nil {
		b.t.Fatal(err)
	}
	b.apply(ev)
	return id
}

// jsonRoundTrip requires the state to survive its snapshot written as JSON
// (as a snapshot file or the event stream carries it) and read back.
func (b *box) jsonRoundTrip() {
	b.t.Helper()
	want := stateJSON(b.t, b.s, true)
	var snap Snapshot
	if err := json.Unmarshal([]byte(want), &snap); err != nil {
		b.t.Fatal(err)
	}
	restored := NewState()
	if err := restored.Apply(Event{Seq: snap.Seq, Type: EventSnapshot, Snapshot: &snap}); err != nil {
		b.t.Fatalf("restoring the snapshot read back from JSON: %v", err)
	}
	if got := stateJSON(b.t, restored, true); got != want {
		b.t.Fatalf("the snapshot read back from JSON restores to another state:\n got %s\nwant %s", got, want)
	}
}

// wantConflict requires err to be a conflict whose message holds every
// part, with the task's state in its details.
func wantConflict(t *testing.T, what string, err error, state string, parts ...string) {
	t.Helper()
	var e *Error
	if !errorsAs(err, &e) || e.Code != CodeConflict {
		t.Fatalf("%s: got %v, want a conflict", what, err)
	}
	for _, p := range parts {
		if !strings.Contains(e.Message, p) {
			t.Errorf("%s: message %q does not say %q", what, e.Message, p)
		}
	}
	if e.Details == nil || e.Details.TaskState != state {
		t.Errorf("%s: details %+v, want task_state %q", what, e.Details, state)
	}
}

func TestCancelQueuedTaskLeavesTheQueue(t *testing.T) {
	b := newBox(t)
	first := b.sendA2A("coder@local")
	second := b.sendA2A("coder@local")
	other := b.sendA2A("writer@local")
	ev, err := b.cancelAs(first, "caller@a2a", "changed my mind")
	if err != nil {
		t.Fatal(err)
	}
	if ev.Type != EventTaskCanceled || ev.TaskID != first || ev.LeaseID != "" || ev.LeasedTo != "" || ev.Attempt != 0 ||
		ev.Principal != "caller@a2a" || ev.Reason != "changed my mind" {
		t.Fatalf("cancel of a queued task decided %+v", ev)
	}
	if c := b.s.Counts(); c.Queued != 2 || c.InFlight != 0 || c.Known != 3 {
		t.Fatalf("counts after the cancel: %+v, want 2 queued of 3 known", c)
	}
	if got := ids(b.s.QueuedTasks()); !reflect.DeepEqual(got, []string{second, other}) {
		t.Fatalf("queue after the cancel = %v, want %v", got, []string{second, other})
	}
	for _, a := range b.s.Agents(b.now) {
		if a.Agent == "coder@local" && a.Queued != 1 {
			t.Errorf("coder@local has %d queued after the cancel, want 1", a.Queued)
		}
	}
	rec, ok := b.s.Task(first)
	if !ok || rec.State != TaskCanceled || rec.DoneAtMs != ev.AtMs || rec.DoneSeq != ev.Seq || rec.Attempt != 0 {
		t.Fatalf("the canceled task: %+v", rec)
	}
	h := rec.History[len(rec.History)-1]
	if h.Type != EventTaskCanceled || h.Principal != "caller@a2a" || h.Reason != "changed my mind" || h.Seq != ev.Seq {
		t.Fatalf("history does not record the cancel: %+v", h)
	}
	if id, _ := b.lease("coder@local"); id != second {
		t.Fatalf("leased %s, want %s: a canceled task is never leased", id, second)
	}
	if id, _ := b.lease(""); id != other {
		t.Fatalf("a lease for any recipient took %s, want %s", id, other)
	}
	audit := b.s.Audit(first, 10)
	if len(audit) != 1 || audit[0].Action != OutcomeCanceled || audit[0].LeaseID != "" || audit[0].Principal != "caller@a2a" || audit[0].Seq != ev.Seq {
		t.Fatalf("audit of the canceled queued task: %+v", audit)
	}
	b.roundTrip()
	b.jsonRoundTrip()
}

func TestCancelInFlightTaskEndsItsLease(t *testing.T) {
	b := newBox(t)
	id := b.sendA2A("coder@local")
	_, lease := b.lease("coder@local")
	ev, err := b.cancelAs(id, "ops", "the caller went away")
	if err != nil {
		t.Fatal(err)
	}
	if ev.LeaseID != lease.LeaseID || ev.LeasedTo != "coder@local" || ev.Attempt != 1 {
		t.Fatalf("the cancel does not name the lease it ended: %+v", ev)
	}
	if c := b.s.Counts(); c.Queued != 0 || c.InFlight != 0 || c.ResultsPending != 0 || c.Known != 1 {
		t.Fatalf("counts after canceling the leased task: %+v", c)
	}
	if got := b.s.InFlightTasks(); len(got) != 0 {
		t.Fatalf("in flight after the cancel: %+v", got)
	}
	for _, a := range b.s.Agents(b.now) {
		if a.InFlight != 0 || a.OldestLeaseAgeMs != 0 {
			t.Errorf("%s still holds a lease after the cancel: %+v", a.Agent, a)
		}
	}
	rec, _ := b.s.Task(id)
	if rec.State != TaskCanceled || rec.LeaseID != "" || rec.LeasedTo != "" || rec.LeasedAtMs != 0 || rec.Attempt != 1 {
		t.Fatalf("the canceled task keeps its attempt and nothing of its lease: %+v", rec)
	}
	audit := b.s.Audit("", 10)
	if len(audit) != 1 || audit[0].LeaseID != lease.LeaseID || audit[0].LeasedTo != "coder@local" || audit[0].Attempt != 1 || audit[0].Reason != "the caller went away" {
		t.Fatalf("audit of the canceled lease: %+v", audit)
	}
	if id, _ := b.lease("coder@local"); id != "" {
		t.Fatalf("the canceled task was leased again: %s", id)
	}
	b.roundTrip()
	b.jsonRoundTrip()
}

// A worker that finishes after the cancel is told who canceled it and
// when; so is an operator repairing the lease. Nothing changes.
func TestLateResultAndRepairNameTheCanceler(t *testing.T) {
	for _, who := range []struct{ principal, named string }{
		{"alice@local", "canceled by alice@local at "},
		{"", "canceled by an unauthenticated caller at "},
	} {
		b := newBox(t)
		id := b.sendA2A("coder@local")
		_, lease := b.lease("coder@local")
		ev, err := b.cancelAs(id, who.principal, "")
		if err != nil {
			t.Fatal(err)
		}
		when := time.UnixMilli(ev.AtMs).UTC().Format(time.RFC3339)
		before := stateJSON(t, b.s, true)
		wantConflict(t, "a late result", b.post(id, lease.LeaseID), TaskCanceled, who.named+when, "no longer wants a result")
		wantConflict(t, "a late result without a lease id", b.post(id, ""), TaskCanceled, who.named)
		_, err = b.repair(id, lease.LeaseID, ActionRequeue)
		wantConflict(t, "a requeue", err, TaskCanceled, "cannot requeue task "+id, who.named+when)
		_, err = b.repair(id, lease.LeaseID, ActionForceError)
		wantConflict(t, "a force_error", err, TaskCanceled, "cannot force an error on task "+id, who.named+when)
		_, err = b.cancelAs(id, "bob@local", "")
		wantConflict(t, "a second cancel", err, TaskCanceled, "already canceled", who.named+when, "only a queued, in-flight or waiting task")
		if after := stateJSON(t, b.s, true); after != before {
			t.Errorf("a refusal changed the state:\n%s\n%s", before, after)
		}
	}
}

func TestCancelRefusesFinishedUnknownAndOverlongReasons(t *testing.T) {
	b := newBox(t)
	pending := b.send("planner@local", "coder@local")
	done := b.send("planner@local", "coder@local")
	queued := b.send("planner@local", "coder@local")
	_, l1 := b.lease("coder@local")
	_, l2 := b.lease("coder@local")
	if err := b.post(pending, l1.LeaseID); err != nil {
		t.Fatal(err)
	}
	if err := b.post(done, l2.LeaseID); err != nil {
		t.Fatal(err)
	}
	if r, ok := b.drain("planner@local"); !ok || r.TaskID != pending {
		t.Fatalf("drained %+v, want %s", r, pending)
	}
	// pending is now done, done has its result pending: name them by state.
	pending, done = done, pending
	before := stateJSON(t, b.s, true)
	_, err := b.cancelAs(pending, "planner@local", "")
	wantConflict(t, "cancel of a task with a result", err, TaskResultPending, "cannot cancel task "+pending, "already has a result")
	_, err = b.cancelAs(done, "planner@local", "")
	wantConflict(t, "cancel of a drained task", err, TaskDone, "its sender has it")
	_, err = b.cancelAs("00000000-0000-4000-8000-00000000dead", "planner@local", "")
	var e *Error
	if !errorsAs(err, &e) || e.Code != CodeNotFound || e.Details == nil || e.Details.Field != "task_id" || !strings.HasPrefix(e.Message, "task_id: ") {
		t.Errorf("cancel of an unknown task: %v, want not_found naming task_id", err)
	}
	_, err = b.cancelAs(queued, "planner@local", strings.Repeat("r", MaxReasonBytes+1))
	if !errorsAs(err, &e) || e.Code != CodeInvalid || e.Details == nil || e.Details.Field != "reason" {
		t.Errorf("cancel with an overlong reason: %v, want invalid naming reason", err)
	}
	if after := stateJSON(t, b.s, true); after != before {
		t.Errorf("a refused cancel changed the state:\n%s\n%s", before, after)
	}
	if _, err := b.cancelAs(queued, "planner@local", strings.Repeat("r", MaxReasonBytes)); err != nil {
		t.Errorf("cancel with a reason of exactly %d bytes: %v", MaxReasonBytes, err)
	}
}

// A cancel ends the idempotent task's life: a new send with its key is a
// new task, whether the canceled one was queued or in flight, and stays so
// after the state is restored from a snapshot.
func TestCancelReleasesTheLiveTwinFromQueueAndFlight(t *testing.T) {
	for _, leased := range []bool{false, true} {
		b := newBox(t)
		first := b.sendA2AWith("planner@local", "coder@local", "c", "key")
		twin := Task{Sender: "planner@local", Recipient: "coder@local", IntentText: "work", Idempotency: &Idempotency{DuplicateSafety: DuplicateIdempotent, Key: "key"}}
		if id, ok := b.s.LiveDuplicate(twin); !ok || id != first {
			t.Fatalf("before the cancel the twin answers %q, %v; want %s", id, ok, first)
		}
		if leased {
			b.lease("coder@local")
		}
		if _, err := b.cancelAs(first, "planner@local", ""); err != nil {
			t.Fatal(err)
		}
		if id, ok := b.s.LiveDuplicate(twin); ok {
			t.Fatalf("leased=%v: the canceled task %s still answers its twin (%s)", leased, first, id)
		}
		ev, second, dup := b.sendTask(twin)
		if dup || ev.Type != EventTaskSent || second == first {
			t.Fatalf("leased=%v: the twin sent after the cancel: %s %s dup %v; want a new task_sent", leased, ev.Type, second, dup)
		}
		restored := NewState()
		if err := restored.Restore(b.s.Snapshot(0)); err != nil {
			t.Fatal(err)
		}
		if id, ok := restored.LiveDuplicate(twin); !ok || id != second {
			t.Fatalf("leased=%v: after a restore the twin answers %q, %v; want %s", leased, id, ok, second)
		}
		b.roundTrip()
	}
}

// Canceled and drained tasks are forgotten together, in the order they
// finished, and a state restored half way forgets the same ones.
func TestCanceledAndDrainedTasksAreForgottenInFinishOrder(t *testing.T) {
	b := newBox(t)
	b.setLimits(Limits{RetainDone: 3, ResultCacheMax: 10, ResultCacheAgeMs: 60_000, AuditMax: 10})
	var finished []string
	cancel := func() {
		t.Helper()
		id := b.sendA2A("coder@local")
		if _, err := b.cancelAs(id, "caller@a2a", ""); err != nil {
			t.Fatal(err)
		}
		finished = append(finished, id)
	}
	drain := func() {
		t.Helper()
		id := b.send("p", "a")
		b.finish(id)
		finished = append(finished, id)
	}
	cancel()
	drain()
	cancel()
	half := b.s.Snapshot(0)
	halfLog := len(b.log)
	drain()
	cancel()
	drain()
	for i, id := range finished {
		_, ok := b.s.Task(id)
		if want := i >= len(finished)-3; ok != want {
			t.Errorf("finished task %d (%s) remembered = %v, want %v", i, id, ok, want)
		}
	}
	if c := b.s.Counts(); c.Known != 3 {
		t.Errorf("known %d, want the 3 retain_done allows", c.Known)
	}
	restored := NewState()
	if err := restored.Restore(half); err != nil {
		t.Fatal(err)
	}
	for _, ev := range b.log[halfLog:] {
		if err := restored.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := stateJSON(t, restored, true), stateJSON(t, b.s, true); got != want {
		t.Fatalf("restored half way and replayed:\n got %s\nwant %s", got, want)
	}
	b.roundTrip()
}

// A smaller retain_done put in force forgets canceled tasks at once.
func TestSmallerRetainDoneForgetsCanceledTasks(t *testing.T) {
	b := newBox(t)
	var canceled []string
	for range 4 {
		id := b.sendA2A("coder@local")
		if _, err := b.cancelAs(id, "caller@a2a", ""); err != nil {
			t.Fatal(err)
		}
		canceled = append(canceled, id)
	}
	live := b.sendA2A("coder@local")
	for _, id := range canceled {
		if _, ok := b.s.Task(id); !ok {
			t.Fatalf("canceled task %s forgotten under the default retain_done", id)
		}
	}
	l := DefaultLimits()
	l.RetainDone = 1
	b.setLimits(l)
	for i, id := range canceled {
		if _, ok := b.s.Task(id); ok != (i == len(canceled)-1) {
			t.Errorf("after retain_done 1, canceled task %d remembered = %v", i, ok)
		}
	}
	if rec, ok := b.s.Task(live); !ok || rec.State != TaskQueued {
		t.Errorf("the queued task was forgotten: %+v %v", rec, ok)
	}
	b.roundTrip()
	b.jsonRoundTrip()
}

// A log written under a smaller retain_done than the replaying state's
// (one that did not record its limits) forgot a canceled task and accepted
// its id again: it replays under any limits.
func TestResentCanceledIDReplaysUnderAnyLimits(t *testing.T) {
	b := newBox(t)
	b.s.Limits.RetainDone = 0 // as an older version configured so wrote it
	b.sendID(taskX)
	if _, err := b.cancelAs(taskX, "p", ""); err != nil {
		t.Fatal(err)
	}
	if _, ok := b.s.Task(taskX); ok {
		t.Fatal("retain_done 0 remembers the canceled task")
	}
	b.sendID(taskX)
	want := stateJSON(t, b.s, false)
	for _, retain := range []int{0, 1, DefaultRetainDone} {
		s := NewState()
		s.Limits.RetainDone = retain
		got := stateJSON(t, replay(t, s, b.log), false)
		if got != want {
			t.Errorf("replay under retain_done %d:\n got %s\nwant %s", retain, got, want)
		}
	}
}

// The A2A caller reads its result from the task: kept there once posted,
// forced or replayed, and after it was delivered or drained. Native tasks
// never carry it.
func TestA2AResultKeptOnTheRecord(t *testing.T) {
	b := newBox(t)
	posted := b.sendA2AWith("caller@a2a", "coder@local", "c", "k")
	forced := b.sendA2A("coder@local")
	native := b.send("planner@local", "coder@local")
	_, lp := b.lease("coder@local")
	_, lf := b.lease("coder@local")
	_, ln := b.lease("coder@local")

	res := Result{TaskID: posted, Status: StatusPartial, LeaseID: lp.LeaseID, Content: []Content{{Type: ContentText, Text: "half"}}}
	ev, err := b.s.DecidePostResult(res, b.now)
	if err != nil {
		t.Fatal(err)
	}
	b.apply(ev)
	rec, _ := b.s.Task(posted)
	if rec.State != TaskResultPending || rec.Result == nil || rec.Result.Status != StatusPartial || rec.Result.LeaseID != "" ||
		len(rec.Result.Content) != 1 || rec.Result.Content[0].Text != "half" {
		t.Fatalf("the posted A2A result on its record: %+v", rec.Result)
	}
	if pr, ok := b.s.PendingResult(posted); !ok || pr.LeaseID != lp.LeaseID {
		t.Fatalf("the pending result keeps its lease id: %+v", pr)
	}
	if _, err := b.repair(forced, lf.LeaseID, ActionForceError); err != nil {
		t.Fatal(err)
	}
	if rec, _ := b.s.Task(forced); rec.Result == nil || rec.Result.Status != StatusError || rec.Result.ErrorMessage != "gave up" || rec.Result.LeaseID != "" {
		t.Fatalf("the forced A2A result on its record: %+v", rec.Result)
	}
	if err := b.post(native, ln.LeaseID); err != nil {
		t.Fatal(err)
	}

	// A twin of the posted idempotent task is answered with a copy,
	// which its record keeps too.
	replayed := b.sendA2AWith("caller@a2a", "coder@local", "c", "k")
	rec, _ = b.s.Task(replayed)
	if h := rec.History[0]; h.Type != EventResultReplayed {
		t.Fatalf("the twin was %s, want result_replayed", h.Type)
	}
	if rec.Result == nil || rec.Result.TaskID != replayed || rec.Result.Status != StatusPartial || rec.Result.LeaseID != "" || rec.Result.Content[0].Text != "half" {
		t.Fatalf("the replayed A2A result on its record: %+v", rec.Result)
	}

	// Delivered to the caller (the edge) and drained by the sender (any
	// other way): the result stays on the record.
	ev, ok := b.s.DecideDelivered(posted, "caller@a2a", b.now)
	if !ok || ev.Type != EventResultDrained || ev.TaskID != posted || ev.Attempt != 1 || ev.Principal != "caller@a2a" {
		t.Fatalf("delivery decided %+v, %v", ev, ok)
	}
	b.apply(ev)
	for sender, n := "caller@a2a", 0; ; n++ {
		if _, ok := b.drain(sender); !ok {
			if n != 2 {
				t.Fatalf("drained %d results for %s, want the forced and the replayed one", n, sender)
			}
			break
		}
	}
	for _, id := range []string{posted, forced, replayed} {
		rec, _ := b.s.Task(id)
		if rec.State != TaskDone || rec.Result == nil {
			t.Errorf("A2A task %s after delivery: state %s, result %+v; want done with its result", id, rec.State, rec.Result)
		}
	}
	if _, ok := b.s.DecideDelivered(posted, "caller@a2a", b.now); ok {
		t.Error("a delivered result delivered again")
	}
	if _, ok := b.s.DecideDelivered("00000000-0000-4000-8000-00000000dead", "caller@a2a", b.now); ok {
		t.Error("a delivery for an unknown task")
	}
	if rec, _ := b.s.Task(native); rec.Result != nil {
		t.Errorf("a native task carries its result on the record: %+v", rec.Result)
	}
	b.roundTrip()
	b.jsonRoundTrip()
}

// A state holding every new kind of record (registered agents, canceled
// tasks from the queue and from a lease, A2A tasks with results pending and
// delivered) snapshots, restores and replays to itself.
func TestSnapshotRoundTripWithRegistryCanceledAndA2ATasks(t *testing.T) {
	b := newBox(t)
	b.register("coder@local", AgentCard{Name: "Coder", Description: "writes code", Version: "2.1",
		Skills:            []AgentSkill{{ID: "fix", Name: "Fix", Description: "fixes bugs", Tags: []string{"go"}, Examples: []string{"fix the build"}}},
		DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain", "application/json"}})
	b.register("writer@local", AgentCard{Name: "Writer"})
	queued := b.sendA2A("coder@local")
	inFlight := b.sendA2A("coder@local")
	pending := b.sendA2A("coder@local")
	delivered := b.sendA2A("coder@local")
	b.sendA2A("coder@local") // stays queued
	if _, err := b.cancelAs(queued, "caller@a2a", "not needed"); err != nil {
		t.Fatal(err)
	}
	_, l := b.lease("coder@local")
	if _, err := b.cancelAs(inFlight, "ops", ""); err != nil {
		t.Fatal(err)
	}
	_, lp := b.lease("coder@local")
	_, ld := b.lease("coder@local")
	if err := b.post(pending, lp.LeaseID); err != nil {
		t.Fatal(err)
	}
	if err := b.post(delivered, ld.LeaseID); err != nil {
		t.Fatal(err)
	}
	ev, ok := b.s.DecideDelivered(delivered, "caller@a2a", b.now)
	if !ok {
		t.Fatal("nothing to deliver")
	}
	b.apply(ev)
	snap := b.s.Snapshot(0)
	if len(snap.Registry) != 2 || snap.Registry[0].Agent != "coder@local" || snap.Registry[1].Agent != "writer@local" {
		t.Fatalf("snapshot registry %+v", snap.Registry)
	}
	states := map[string]string{}
	for _, r := range snap.Tasks {
		states[r.Task.ID] = r.State
	}
	if states[queued] != TaskCanceled || states[inFlight] != TaskCanceled || states[pending] != TaskResultPending || states[delivered] != TaskDone {
		t.Fatalf("snapshot task states %v", states)
	}
	b.roundTrip()
	b.jsonRoundTrip()
	// The restored state goes on like the original: the canceled lease is
	// still refused, naming its canceler.
	restored := NewState()
	if err := restored.Restore(snap); err != nil {
		t.Fatal(err)
	}
	_, err := restored.DecidePostResult(Result{TaskID: inFlight, Status: StatusOK, LeaseID: l.LeaseID}, b.now)
	wantConflict(t, "a late result after a restore", err, TaskCanceled, "canceled by ops")
}

// Apply refuses a task_canceled that does not fit the state, changing
// nothing: replay stops on it instead of making up a state.
func TestApplyRefusesMisfitCancels(t *testing.T) {
	b := newBox(t)
	first := b.send("p", "a")
	second := b.send("p", "a")
	done := b.send("p", "b")
	b.lease("a")
	b.lease("a")
	_, lb := b.lease("b")
	if err := b.post(done, lb.LeaseID); err != nil {
		t.Fatal(err)
	}
	b.drain("p")
	before := stateJSON(t, b.s, true)
	for name, ev := range map[string]Event{
		"unknown task":          {Type: EventTaskCanceled, TaskID: "00000000-0000-4000-8000-00000000dead"},
		"drained task":          {Type: EventTaskCanceled, TaskID: done},
		"under another lease":   {Type: EventTaskCanceled, TaskID: second, LeaseID: "00000000-0000-4000-8000-00000000beef", LeasedTo: "a", Attempt: 1},
		"in flight, no lease":   {Type: EventTaskCanceled, TaskID: first},
		"registration, no card": {Type: EventAgentRegistered, Agent: "a"},
		"registration, bad id":  {Type: EventAgentRegistered, Agent: "Coder", Card: &AgentCard{Name: "C"}},
		"deregistration, none":  {Type: EventAgentDeregistered, Agent: "a"},
	} {
		ev.Seq, ev.AtMs = b.s.Seq+1, b.now
		if err := b.s.Apply(ev); err == nil {
			t.Errorf("%s: a misfit %s applied", name, ev.Type)
		}
		if after := stateJSON(t, b.s, true); after != before {
			t.Fatalf("%s: the refused event changed the state:\n%s\n%s", name, before, after)
		}
	}
}
