package mailbox

import (
	"errors"
	"fmt"
	"math/rand"
	"reflect"
	"testing"
)

// box drives a State the way the engine does: decide, number, apply.
type box struct {
	t   *testing.T
	s   *State
	now int64
	ids int
	log []Event
}

func newBox(t *testing.T) *box { return &box{t: t, s: NewState(), now: 1_000_000} }

func (b *box) id() string {
	b.ids++
	return fmt.Sprintf("00000000-0000-4000-8000-%012d", b.ids)
}

func (b *box) apply(ev Event) Event {
	b.t.Helper()
	ev.Seq = b.s.Seq + 1
	if err := b.s.Apply(ev); err != nil {
		b.t.Fatalf("apply %+v: %v", ev, err)
	}
	b.log = append(b.log, ev)
	b.now += 10
	return ev
}

func (b *box) send(from, to string) string {
	b.t.Helper()
	task, err := NormalizeTask(Task{ID: b.id(), Sender: from, Recipient: to, IntentText: "work"})
	if err != nil {
		b.t.Fatal(err)
	}
	ev, err := b.s.DecideSend(task, b.now)
	if err != nil {
		b.t.Fatal(err)
	}
	b.apply(ev)
	return task.ID
}

func (b *box) lease(recipient string) (string, Lease) {
	b.t.Helper()
	ev, ok := b.s.DecideLease(recipient, recipient, b.id(), b.now)
	if !ok {
		return "", Lease{}
	}
	ev = b.apply(ev)
	_, l := b.s.LeaseOf(ev)
	return ev.TaskID, l
}

func (b *box) post(taskID, leaseID string) error {
	ev, err := b.s.DecidePostResult(Result{TaskID: taskID, Status: StatusOK, LeaseID: leaseID}, b.now)
	if err == nil {
		b.apply(ev)
	}
	return err
}

func (b *box) repair(taskID, leaseID, action string) (RepairOutcome, error) {
	req := RepairRequest{TaskID: taskID, Reason: "stuck", Command: RepairCommand{Action: action, LeaseID: leaseID}}
	if action == ActionRequeue {
		req.Command.DuplicateRisk = RiskOperatorAccepted
	} else {
		req.Command.Message = "gave up"
	}
	ev, err := b.s.DecideRepair(req, "oncall", b.now)
	if err != nil {
		return RepairOutcome{}, err
	}
	ev = b.apply(ev)
	return b.s.RepairOutcomeOf(ev), nil
}

func (b *box) drain(sender string) (PendingResult, bool) {
	ev, r, ok := b.s.DecideDrain(sender, b.now)
	if ok {
		b.apply(ev)
	}
	return r, ok
}

func TestLeaseIsFIFOPerRecipient(t *testing.T) {
	b := newBox(t)
	a1 := b.send("p", "a")
	b1 := b.send("p", "b")
	a2 := b.send("p", "a")
	if got, _ := b.lease("a"); got != a1 {
		t.Fatalf("first lease for a = %s, want %s", got, a1)
	}
	if got, _ := b.lease("a"); got != a2 {
		t.Fatalf("second lease for a = %s, want %s", got, a2)
	}
	if got, _ := b.lease("a"); got != "" {
		t.Fatalf("third lease for a = %s, want nothing", got)
	}
	if got, _ := b.lease(""); got != b1 {
		t.Fatalf("global lease = %s, want %s", got, b1)
	}
}

func TestGlobalLeaseTakesOldestAcrossRecipients(t *testing.T) {
	b := newBox(t)
	x := b.send("p", "b")
	y := b.send("p", "a")
	for _, want := range []string{x, y} {
		if got, _ := b.lease(""); got != want {
			t.Fatalf("global lease = %s, want %s", got, want)
		}
	}
}

func TestAttemptCountingAndRequeueAtHead(t *testing.T) {
	b := newBox(t)
	first := b.send("p", "a")
	second := b.send("p", "a")
	id, l := b.lease("a")
	if id != first || l.Attempt != 1 {
		t.Fatalf("lease = %s attempt %d, want %s attempt 1", id, l.Attempt, first)
	}
	out, err := b.repair(first, l.LeaseID, ActionRequeue)
	if err != nil || out.Attempt != 1 || out.State != TaskQueued || out.Action != OutcomeRequeued {
		t.Fatalf("requeue = %+v, %v; want requeued, queued, attempt 1", out, err)
	}
	// The requeued task has waited longest: it goes before the second one.
	id, l = b.lease("a")
	if id != first || l.Attempt != 2 {
		t.Fatalf("lease after requeue = %s attempt %d, want %s attempt 2", id, l.Attempt, first)
	}
	if id, _ := b.lease("a"); id != second {
		t.Fatalf("next lease = %s, want %s", id, second)
	}
}

func TestResultGuards(t *testing.T) {
	b := newBox(t)
	id := b.send("p", "a")
	if err := b.post(id, ""); !errors.Is(err, ErrConflict) {
		t.Fatalf("result for queued task = %v, want conflict", err)
	}
	if err := b.post("00000000-0000-4000-8000-999999999999", ""); !errors.Is(err, ErrNotFound) {
		t.Fatalf("result for unknown task = %v, want not_found", err)
	}
	_, l := b.lease("a")
	other := "00000000-0000-4000-8000-888888888888"
	err := b.post(id, other)
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeConflict || e.Details.ExpectedLeaseID != other || e.Details.ActualLeaseID != l.LeaseID ||
		e.Details.LeasedTo != "a" || e.Details.Attempt != 1 || e.Details.LeasedAtMs == 0 {
		t.Fatalf("result under wrong lease = %#v, want conflict with details", err)
	}
	if err := b.post(id, l.LeaseID); err != nil {
		t.Fatalf("result under current lease: %v", err)
	}
	if err := b.post(id, l.LeaseID); !errors.Is(err, ErrConflict) {
		t.Fatalf("second result = %v, want conflict", err)
	}
	r, ok := b.drain("p")
	if !ok || r.TaskID != id || r.Sender != "p" || r.Status != StatusOK {
		t.Fatalf("drain = %+v %v", r, ok)
	}
	if _, ok := b.drain("p"); ok {
		t.Fatal("drained twice")
	}
	if err := b.post(id, ""); !errors.Is(err, ErrConflict) {
		t.Fatalf("result after drain = %v, want conflict (already resolved)", err)
	}
}

func TestLateResultsAfterRepairAreRefused(t *testing.T) {
	for _, action := range []string{ActionRequeue, ActionForceError} {
		t.Run(action, func(t *testing.T) {
			b := newBox(t)
			id := b.send("p", "a")
			_, l := b.lease("a")
			if _, err := b.repair(id, l.LeaseID, action); err != nil {
				t.Fatal(err)
			}
			if err := b.post(id, l.LeaseID); !errors.Is(err, ErrConflict) {
				t.Fatalf("late result = %v, want conflict", err)
			}
			if action == ActionRequeue {
				_, l2 := b.lease("a")
				if err := b.post(id, l.LeaseID); !errors.Is(err, ErrConflict) {
					t.Fatalf("late result under the old lease after a new lease = %v, want conflict", err)
				}
				if err := b.post(id, l2.LeaseID); err != nil {
					t.Fatal(err)
				}
			}
			r, ok := b.drain("p")
			if !ok || r.TaskID != id {
				t.Fatalf("drain = %+v, %v", r, ok)
			}
			if action == ActionForceError && (r.Status != StatusError || r.ErrorMessage != "gave up" || !r.Forced) {
				t.Fatalf("forced result = %+v", r)
			}
			if _, ok := b.drain("p"); ok {
				t.Fatal("sender got two results")
			}
		})
	}
}

func TestRepairGuards(t *testing.T) {
	b := newBox(t)
	id := b.send("p", "a")
	if _, err := b.repair(id, "", ActionRequeue); !errors.Is(err, ErrConflict) {
		t.Fatalf("repair of a queued task = %v, want conflict", err)
	}
	_, l := b.lease("a")
	stale := "00000000-0000-4000-8000-777777777777"
	if _, err := b.repair(id, stale, ActionForceError); !errors.Is(err, ErrConflict) {
		t.Fatalf("repair under a stale lease = %v, want conflict", err)
	}
	req := RepairRequest{TaskID: id, Reason: "r", Command: RepairCommand{Action: ActionRequeue, DuplicateRisk: RiskIdempotent}}
	if _, err := b.s.DecideRepair(req, "op", b.now); !errors.Is(err, ErrInvalid) {
		t.Fatalf("idempotent posture on an unsafe task = %v, want invalid", err)
	}
	out, err := b.repair(id, l.LeaseID, ActionForceError)
	if err != nil || out.Action != OutcomeForcedError || out.State != TaskResultPending || out.Result == nil || out.Result.ErrorMessage != "gave up" {
		t.Fatalf("force_error = %+v, %v", out, err)
	}
}

func TestDuplicateTaskID(t *testing.T) {
	b := newBox(t)
	id := b.send("p", "a")
	task := validTask()
	task.ID = id
	if _, err := b.s.DecideSend(task, b.now); !errors.Is(err, ErrConflict) {
		t.Fatalf("duplicate id = %v, want conflict", err)
	}
}

func TestApplyRefusesGapsAndMisfits(t *testing.T) {
	s := NewState()
	if err := s.Apply(Event{Seq: 2, Type: EventTaskSent, Task: &Task{ID: tid}}); err == nil {
		t.Error("gap accepted")
	}
	if err := s.Apply(Event{Seq: 1, Type: EventTaskLeased, TaskID: tid}); err == nil {
		t.Error("lease of unknown task accepted")
	}
	if err := s.Apply(Event{Seq: 1, Type: "task_exploded"}); err == nil {
		t.Error("unknown type accepted")
	}
	if s.Seq != 0 || s.Counts() != (Counts{}) {
		t.Errorf("refused events changed the state: %+v", s.Counts())
	}
}

func TestQueryFiltersBeforeLimit(t *testing.T) {
	b := newBox(t)
	for range 5 {
		b.send("p", "a")
	}
	b.send("p", "b")
	b.lease("b")
	v := b.s.Query(QueueFilter{Limit: 1, State: TaskInFlight}, b.now)
	if len(v.Tasks) != 1 || v.Tasks[0].State != TaskInFlight {
		t.Fatalf("state=in_flight limit=1 = %+v", v.Tasks)
	}
	v = b.s.Query(QueueFilter{Limit: 1, MinLeaseAgeMs: i64p(0)}, b.now)
	if len(v.Tasks) != 1 || v.Tasks[0].State != TaskInFlight {
		t.Fatalf("min_lease_age_ms=0 limit=1 = %+v", v.Tasks)
	}
	v = b.s.Query(QueueFilter{Limit: 1, MinLeaseAgeMs: i64p(1 << 40)}, b.now)
	if len(v.Tasks) != 0 {
		t.Fatalf("huge min lease age matched %+v", v.Tasks)
	}
	v = b.s.Query(QueueFilter{}, b.now)
	if len(v.Tasks) != 6 || v.Tasks[5].State != TaskInFlight || v.Tasks[0].State != TaskQueued {
		t.Fatalf("unfiltered = %d tasks, want 5 queued then 1 in flight", len(v.Tasks))
	}
}

func TestDeadlineFilter(t *testing.T) {
	s := NewState()
	mk := func(seq uint64, id string, deadline *int64) {
		task := validTask()
		task.ID, task.DeadlineMs = id, deadline
		if err := s.Apply(Event{Seq: seq, Type: EventTaskSent, Task: &task, AtMs: 1}); err != nil {
			t.Fatal(err)
		}
	}
	mk(1, tid, i64p(5000))
	mk(2, tid2, nil)
	mk(3, "11111111-1111-4111-8111-111111111111", i64p(1_000_000))
	v := s.Query(QueueFilter{DeadlineWithinMs: i64p(1000)}, 4500)
	if len(v.Tasks) != 1 || v.Tasks[0].Task.ID != tid {
		t.Fatalf("deadline_within_ms=1000 at 4500 = %+v, want only %s", v.Tasks, tid)
	}
}

// TestRandomOpsMatchModel checks the heaps and Apply against a naive model
// over random operation sequences, and that snapshots round-trip at every step.
func TestRandomOpsMatchModel(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	recipients := []string{"a", "b", "c"}
	for round := range 20 {
		b := newBox(t)
		type rec struct{ recipient, sender string }
		info := map[string]rec{}
		var queueOrder []string // model: queued ids in send order
		for step := range 300 {
			switch op := rng.Intn(10); {
			case op < 4:
				to, from := recipients[rng.Intn(3)], recipients[rng.Intn(3)]+"-sender"
				id := b.send(from, to)
				info[id] = rec{to, from}
				queueOrder = append(queueOrder, id)
			case op < 7:
				r := ""
				if rng.Intn(4) > 0 {
					r = recipients[rng.Intn(3)]
				}
				want := ""
				for _, id := range queueOrder {
					if r == "" || info[id].recipient == r {
						want = id
						break
					}
				}
				got, _ := b.lease(r)
				if got != want {
					t.Fatalf("round %d step %d: lease(%q) = %s, want %s", round, step, r, got, want)
				}
				if got != "" {
					queueOrder = remove(queueOrder, got)
				}
			case op < 8:
				if fl := b.s.InFlightTasks(); len(fl) > 0 {
					e := fl[rng.Intn(len(fl))]
					var err error
					if rng.Intn(2) == 0 {
						_, err = b.repair(e.Task.ID, e.LeaseID, ActionRequeue)
					} else {
						// Handed to another recipient, it keeps its place.
						to := recipients[rng.Intn(3)]
						_, err = b.requeueTo(e.Task.ID, e.LeaseID, to)
						info[e.Task.ID] = rec{to, info[e.Task.ID].sender}
					}
					if err != nil {
						t.Fatal(err)
					}
					queueOrder = insertBySend(queueOrder, e.Task.ID, b.s)
				}
			case op < 9:
				if fl := b.s.InFlightTasks(); len(fl) > 0 {
					e := fl[rng.Intn(len(fl))]
					var err error
					if rng.Intn(3) == 0 {
						// The worker asks instead: the task waits on its sender.
						err = b.result(e.Task.ID, e.LeaseID, StatusInputRequired, text("which?"), "")
					} else {
						err = b.post(e.Task.ID, e.LeaseID)
					}
					if err != nil {
						t.Fatal(err)
					}
				}
			default:
				if w := b.s.WaitingTasks(); len(w) > 0 && rng.Intn(2) == 0 {
					// The sender answers: the task is queued in its old place.
					e := w[rng.Intn(len(w))]
					if _, err := b.reply(e.Task.ID, e.Task.Sender, "", text("that one")); err != nil {
						t.Fatal(err)
					}
					queueOrder = insertBySend(queueOrder, e.Task.ID, b.s)
					break
				}
				b.drain(recipients[rng.Intn(3)] + "-sender")
			}
			if err := checkInvariants(b.s); err != nil {
				t.Fatalf("round %d step %d: %v", round, step, err)
			}
			got := ids(b.s.QueuedTasks())
			if !reflect.DeepEqual(got, queueOrder) && !(len(got) == 0 && len(queueOrder) == 0) {
				t.Fatalf("round %d step %d: queue = %v, want %v", round, step, got, queueOrder)
			}
			if got, want := b.s.Agents(b.now), agentsByHand(b.s, b.now, b.log); !reflect.DeepEqual(got, want) {
				t.Fatalf("round %d step %d: Agents = %+v, by hand %+v", round, step, got, want)
			}
		}
		// Replaying the same events, and restoring a snapshot, give the same state.
		replay := NewState()
		for _, ev := range b.log {
			if err := replay.Apply(ev); err != nil {
				t.Fatal(err)
			}
		}
		if !reflect.DeepEqual(replay.Snapshot(0), b.s.Snapshot(0)) {
			t.Fatalf("round %d: replay differs from live state", round)
		}
		if !reflect.DeepEqual(b.s.Clone().Snapshot(0), b.s.Snapshot(0)) {
			t.Fatalf("round %d: clone differs", round)
		}
		// A clone taken midway and the state it was taken from, each fed
		// the rest of the events, both end as the live state: they share
		// nothing either writes (a history appended twice, a heap or map
		// entry moved in one and not the other would show).
		for _, cut := range []int{len(b.log) / 3, 2 * len(b.log) / 3} {
			orig := NewState()
			for _, ev := range b.log[:cut] {
				if err := orig.Apply(ev); err != nil {
					t.Fatal(err)
				}
			}
			clone := orig.Clone()
			if err := checkInvariants(clone); err != nil {
				t.Fatalf("round %d: clone at event %d: %v", round, cut, err)
			}
			for _, ev := range b.log[cut:] {
				if err := orig.Apply(ev); err != nil {
					t.Fatalf("round %d: the original refused event %d after the clone: %v", round, ev.Seq, err)
				}
				if err := clone.Apply(ev); err != nil {
					t.Fatalf("round %d: the clone at event %d refused event %d: %v", round, cut, ev.Seq, err)
				}
			}
			for name, st := range map[string]*State{"clone": clone, "original": orig} {
				if err := checkInvariants(st); err != nil {
					t.Fatalf("round %d: %s after the rest: %v", round, name, err)
				}
				if !reflect.DeepEqual(st.Snapshot(0), b.s.Snapshot(0)) {
					t.Fatalf("round %d: the %s of event %d, fed the rest, differs from the live state", round, name, cut)
				}
				// The heaps, which the snapshot does not show: every way
				// of listing with a limit walks one.
				for _, f := range []QueueFilter{{Limit: MaxLimit}, {State: TaskQueued, Limit: 3}, {State: TaskInFlight, Limit: 3}, {State: TaskInFlight, Limit: MaxLimit}, {Agent: recipients[0], Limit: 2}} {
					if got, want := st.Query(f, b.now), b.s.Query(f, b.now); !reflect.DeepEqual(got, want) {
						t.Fatalf("round %d: the %s of event %d, fed the rest, lists %+v for %+v; the live state %+v", round, name, cut, got, f, want)
					}
				}
			}
		}
	}
}

func ids(es []QueueEntry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Task.ID)
	}
	return out
}

func remove(s []string, id string) []string {
	for i, x := range s {
		if x == id {
			return append(s[:i:i], s[i+1:]...)
		}
	}
	return s
}

func insertBySend(order []string, id string, s *State) []string {
	rec, _ := s.Task(id)
	for i, x := range order {
		if other, _ := s.Task(x); other.SendSeq > rec.SendSeq {
			return append(order[:i:i], append([]string{id}, order[i:]...)...)
		}
	}
	return append(order, id)
}

func TestRetainDoneForgetsOldest(t *testing.T) {
	b := newBox(t)
	b.s.RetainDone = 2
	var done []string
	for range 3 {
		id := b.send("p", "a")
		_, l := b.lease("a")
		if err := b.post(id, l.LeaseID); err != nil {
			t.Fatal(err)
		}
		b.drain("p")
		done = append(done, id)
	}
	if _, ok := b.s.Task(done[0]); ok {
		t.Error("oldest drained task still remembered")
	}
	for _, id := range done[1:] {
		if r, ok := b.s.Task(id); !ok || r.State != TaskDone {
			t.Errorf("task %s forgotten too early", id)
		}
	}
	if err := b.post(done[0], ""); !errors.Is(err, ErrNotFound) {
		t.Errorf("late result for a forgotten task = %v, want not_found", err)
	}
}

// Drains in the same millisecond must be forgotten in drain order after a
// restore too, or a restored state forgets a different task than the live one.
func TestRestoreForgetsInDrainOrder(t *testing.T) {
	b := newBox(t)
	b.s.RetainDone = 2
	var ids []string
	for range 3 {
		id := b.send("p", "a")
		ids = append(ids, id)
	}
	// Lease and answer in reverse send order, all drained at one instant.
	for range 3 {
		tid, l := b.lease("a")
		if err := b.post(tid, l.LeaseID); err != nil {
			t.Fatal(err)
		}
	}
	b.now = 5_000_000
	for i := 2; i >= 0; i-- {
		ev := Event{AtMs: b.now, Type: EventResultDrained, TaskID: ids[i]}
		ev.Seq = b.s.Seq + 1
		if err := b.s.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	restored := NewState()
	restored.RetainDone = 2
	if err := restored.Restore(b.s.Snapshot(0)); err != nil {
		t.Fatal(err)
	}
	id := b.send("p", "a")
	tid, l := b.lease("a")
	b.post(tid, l.LeaseID)
	for _, ev := range b.log[len(b.log)-3:] {
		if err := restored.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	b.drain("p")
	if err := restored.Apply(b.log[len(b.log)-1]); err != nil {
		t.Fatal(err)
	}
	for _, x := range append(ids, id) {
		_, live := b.s.Task(x)
		_, rest := restored.Task(x)
		if live != rest {
			t.Errorf("task %s remembered live=%v restored=%v", x, live, rest)
		}
	}
}
