package mailbox

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func text(s string) []Content { return []Content{{Type: ContentText, Text: s}} }

// ask posts a worker's question (or any result) for a leased task.
func (b *box) result(taskID, leaseID, status string, content []Content, poster string) error {
	b.t.Helper()
	r, err := NormalizeResult(Result{TaskID: taskID, Status: status, Content: content, LeaseID: leaseID})
	if err != nil {
		return err
	}
	evs, err := b.s.DecideResult(r, poster, b.id, b.now)
	if err != nil {
		return err
	}
	for _, ev := range evs {
		b.apply(ev)
	}
	return nil
}

func (b *box) reply(taskID, sender, replier string, content []Content) (ReplyOutcome, error) {
	b.t.Helper()
	r, err := NormalizeReply(Reply{TaskID: taskID, Sender: sender, Content: content})
	if err != nil {
		return ReplyOutcome{}, err
	}
	ev, out, ok, err := b.s.DecideReply(r, replier, b.now)
	if err != nil {
		return out, err
	}
	if ok {
		b.apply(ev)
	}
	return out, nil
}

func mustState(t *testing.T, s *State, id, want string) TaskRecord {
	t.Helper()
	rec, ok := s.Task(id)
	if !ok {
		t.Fatalf("task %s is not remembered", id)
	}
	if rec.State != want {
		t.Fatalf("task %s is %s, want %s", id, rec.State, want)
	}
	return rec
}

// The whole loop: the worker asks, the sender drains the question and
// replies, the worker leases again (first in line, seeing both turns) and
// finishes; the attempt counter counts both leases.
func TestConversationLoop(t *testing.T) {
	b := newBox(t)
	id := b.send("planner@local", "coder@local")
	later := b.send("planner@local", "coder@local")
	got, l1 := b.lease("coder@local")
	if got != id {
		t.Fatalf("leased %s, want %s", got, id)
	}
	if err := b.result(id, l1.LeaseID, StatusInputRequired, text("which database?"), "coder@local"); err != nil {
		t.Fatal(err)
	}
	rec := mustState(t, b.s, id, TaskWaiting)
	if c := b.s.Counts(); c.Waiting != 1 || c.InFlight != 0 || c.ResultsPending != 1 {
		t.Errorf("counts while waiting = %+v, want 1 waiting, 0 in flight, the question pending", c)
	}
	if rec.LeaseID != "" || len(rec.Task.Turns) != 1 || rec.Task.Turns[0].Role != RoleWorker || rec.Task.Turns[0].Status != StatusInputRequired ||
		rec.Task.Turns[0].Agent != "coder@local" || rec.Task.Turns[0].LeaseID != l1.LeaseID || rec.WaitingSince() == 0 {
		t.Errorf("waiting record = %+v, want no lease and the worker's question as its one turn", rec)
	}
	agents := b.s.Agents(b.now + 5000)
	for _, a := range agents {
		if a.Agent == "planner@local" && (a.Waiting != 1 || a.OldestWaitingMs < 5000) {
			t.Errorf("planner@local in the agents listing = %+v, want 1 task waiting on it for at least 5 s", a)
		}
	}
	q, ok := b.drain("planner@local")
	if !ok || q.TaskID != id || q.Status != StatusInputRequired || q.Content[0].Text != "which database?" {
		t.Fatalf("drained %+v, want the question", q)
	}
	mustState(t, b.s, id, TaskWaiting) // a drained question still waits for its answer

	if _, err := b.reply(id, "coder@local", "", text("me?")); !isCode(err, CodeForbidden) || !strings.Contains(err.Error(), "only a task's sender") {
		t.Errorf("a reply naming another sender: %v, want forbidden", err)
	}
	if _, err := b.reply(id, "planner@local", "intruder@local", text("me?")); !isCode(err, CodeForbidden) || !strings.Contains(err.Error(), "intruder@local") {
		t.Errorf("a reply by a token speaking for another agent: %v, want forbidden naming it", err)
	}
	out, err := b.reply(id, "planner@local", "planner@local", text("staging"))
	if err != nil || out.State != TaskQueued || out.Turns != 2 || out.Duplicate {
		t.Fatalf("reply = %+v, %v; want the task queued with 2 turns", out, err)
	}
	// The same reply again (a retried request) changes nothing.
	seq := b.s.Seq
	if out, err := b.reply(id, "planner@local", "planner@local", text("staging")); err != nil || !out.Duplicate || b.s.Seq != seq {
		t.Errorf("the reply repeated = %+v, %v; want a duplicate and no event", out, err)
	}
	// A different answer to a task no longer waiting is refused.
	if _, err := b.reply(id, "planner@local", "", text("production")); !isCode(err, CodeConflict) || !strings.Contains(err.Error(), "queued") {
		t.Errorf("a second, different reply: %v, want a conflict saying it is queued", err)
	}

	got, l2 := b.lease("coder@local")
	if got != id {
		t.Fatalf("after the reply the lease took %s, want %s (it keeps its place ahead of %s)", got, id, later)
	}
	if l2.Attempt != 2 {
		t.Errorf("second lease attempt = %d, want 2 (attempts count leases across turns)", l2.Attempt)
	}
	leased, _ := b.s.Task(id)
	turns := leased.Task.Turns
	if len(turns) != 2 || turns[0].Content[0].Text != "which database?" || turns[1].Role != RoleSender || turns[1].Agent != "planner@local" || turns[1].Content[0].Text != "staging" {
		t.Errorf("turns the worker sees = %+v, want the question then the answer", turns)
	}
	if err := b.result(id, l2.LeaseID, StatusOK, text("migrated"), "coder@local"); err != nil {
		t.Fatal(err)
	}
	r, ok := b.drain("planner@local")
	if !ok || r.Status != StatusOK {
		t.Fatalf("drained %+v, want the final result", r)
	}
	mustState(t, b.s, id, TaskDone)
	checkRestores(t, b)
}

// checkRestores requires that a snapshot of the box restores to a state
// that snapshots the same, and that replaying its log gives the same.
func checkRestores(t *testing.T, b *box) {
	t.Helper()
	want := b.s.Snapshot(0)
	r := NewState()
	if err := r.Restore(want); err != nil {
		t.Fatalf("restore: %v", err)
	}
	if got := r.Snapshot(0); !reflect.DeepEqual(got, want) {
		t.Errorf("restored snapshot differs:\n got %+v\nwant %+v", got, want)
	}
	replayed := replayJSON(t, b.log)
	if got := replayed.Snapshot(0); !reflect.DeepEqual(got, want) {
		t.Errorf("replayed snapshot differs:\n got %+v\nwant %+v", got, want)
	}
}

// replayJSON replays events into a new state through JSON, as the log and
// the event stream carry them.
func replayJSON(t *testing.T, log []Event) *State {
	t.Helper()
	s := NewState()
	for _, ev := range log {
		raw, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		var back Event
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatal(err)
		}
		if err := s.Apply(back); err != nil {
			t.Fatalf("replay %s: %v", raw, err)
		}
	}
	return s
}

func isCode(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// A reply to a task that is not waiting is refused, names its state, and
// changes nothing.
func TestReplyRefusedUnlessWaiting(t *testing.T) {
	b := newBox(t)
	queued := b.send("planner@local", "coder@local")
	inFlight := b.send("planner@local", "coder@local")
	pending := b.send("planner@local", "coder@local")
	done := b.send("planner@local", "coder@local")
	canceled := b.send("planner@local", "coder@local")
	// Lease all but the first: requeue nothing, the first is leased first,
	// so lease in order and put the first back.
	leases := map[string]Lease{}
	for range 5 {
		id, l := b.lease("coder@local")
		leases[id] = l
	}
	if _, err := b.repair(queued, leases[queued].LeaseID, ActionRequeue); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{pending, done} {
		if err := b.result(id, leases[id].LeaseID, StatusOK, nil, ""); err != nil {
			t.Fatal(err)
		}
	}
	for {
		r, ok := b.drain("planner@local")
		if !ok || r.TaskID == done {
			break
		}
	}
	ev, err := b.s.DecideCancel(canceled, "planner@local", "not needed", b.now)
	if err != nil {
		t.Fatal(err)
	}
	b.apply(ev)
	for name, tc := range map[string]struct{ id, says string }{
		"queued":    {queued, "it is queued"},
		"in flight": {inFlight, "it is in flight"},
		"canceled":  {canceled, "it was canceled by planner@local"},
		"done":      {done, "its sender has its result"},
	} {
		before := b.s.Snapshot(0)
		_, err := b.reply(tc.id, "planner@local", "", text("answer"))
		if !isCode(err, CodeConflict) || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), "only a task waiting on its sender") {
			t.Errorf("%s: reply = %v, want a conflict saying %q", name, err, tc.says)
		}
		if !reflect.DeepEqual(b.s.Snapshot(0), before) {
			t.Errorf("%s: a refused reply changed the state", name)
		}
	}
	if _, err := b.reply("00000000-0000-4000-8000-999999999999", "planner@local", "", text("answer")); !isCode(err, CodeNotFound) {
		t.Errorf("reply to an unknown task: %v, want not_found", err)
	}
	if _, err := NormalizeReply(Reply{TaskID: queued, Sender: "planner@local"}); !isCode(err, CodeInvalid) || !strings.Contains(err.Error(), "content") {
		t.Errorf("a reply without content: %v, want invalid naming content", err)
	}
	if _, err := NormalizeResult(Result{TaskID: queued, Status: StatusAuthRequired}); !isCode(err, CodeInvalid) || !strings.Contains(err.Error(), "content") {
		t.Errorf("a question without content: %v, want invalid naming content", err)
	}
}

// Bounds: a task holds at most max_turns turns, and max_turns_bytes of
// content; a turn past either is refused (400) and changes nothing.
func TestConversationBounds(t *testing.T) {
	b := newBox(t)
	b.s.MaxTurns, b.s.MaxTurnsBytes = 3, 40
	id := b.send("planner@local", "coder@local")
	_, l := b.lease("coder@local")
	if err := b.result(id, l.LeaseID, StatusInputRequired, text("q1"), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := b.reply(id, "planner@local", "", text(strings.Repeat("x", 39))); !isCode(err, CodeInvalid) || !strings.Contains(err.Error(), "max_turns_bytes is 40") {
		t.Errorf("a reply past the size bound: %v, want invalid naming max_turns_bytes", err)
	}
	mustState(t, b.s, id, TaskWaiting)
	if _, err := b.reply(id, "planner@local", "", text("a1")); err != nil {
		t.Fatal(err)
	}
	_, l = b.lease("coder@local")
	if err := b.result(id, l.LeaseID, StatusAuthRequired, text("q2"), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := b.reply(id, "planner@local", "", text("a2")); !isCode(err, CodeInvalid) || !strings.Contains(err.Error(), "max_turns is 3") {
		t.Errorf("a fourth turn: %v, want invalid naming max_turns", err)
	}
	rec := mustState(t, b.s, id, TaskWaiting)
	if len(rec.Task.Turns) != 3 {
		t.Errorf("turns = %d, want 3", len(rec.Task.Turns))
	}
}

// A worker's question past the bound is refused to the worker, whose
// lease stays; it may still finish.
func TestQuestionPastTheBoundKeepsTheLease(t *testing.T) {
	b := newBox(t)
	b.s.MaxTurns = 1
	id := b.send("planner@local", "coder@local")
	_, l := b.lease("coder@local")
	if err := b.result(id, l.LeaseID, StatusInputRequired, text("q1"), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := b.reply(id, "planner@local", "", text("a1")); !isCode(err, CodeInvalid) {
		t.Fatalf("a second turn with max_turns 1: %v, want invalid", err)
	}
	// Cancel and start over with room for one answer.
	b.s.MaxTurns = 2
	if _, err := b.reply(id, "planner@local", "", text("a1")); err != nil {
		t.Fatal(err)
	}
	_, l = b.lease("coder@local")
	err := b.result(id, l.LeaseID, StatusInputRequired, text("q2"), "")
	if !isCode(err, CodeInvalid) || !strings.Contains(err.Error(), "status: task") || !strings.Contains(err.Error(), "max_turns is 2") {
		t.Errorf("a question past the bound: %v, want invalid naming status and max_turns", err)
	}
	mustState(t, b.s, id, TaskInFlight)
	if err := b.result(id, l.LeaseID, StatusRejected, text("cannot"), ""); err != nil {
		t.Fatal(err)
	}
	r, _ := b.s.PendingResult(id)
	if r.Status != StatusRejected {
		t.Errorf("pending result status = %q, want rejected", r.Status)
	}
}

// A reply before the question was drained answers it: the question is no
// longer pending, and the task's only pending result later is its last.
func TestReplyBeforeDrainAnswersTheQuestion(t *testing.T) {
	b := newBox(t)
	id := b.send("planner@local", "coder@local")
	_, l := b.lease("coder@local")
	if err := b.result(id, l.LeaseID, StatusInputRequired, text("q"), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := b.reply(id, "planner@local", "", text("a")); err != nil {
		t.Fatal(err)
	}
	if c := b.s.Counts(); c.ResultsPending != 0 || c.Queued != 1 || c.Waiting != 0 {
		t.Errorf("counts after a reply to an undrained question = %+v, want the task queued and nothing pending", c)
	}
	_, l = b.lease("coder@local")
	if err := b.result(id, l.LeaseID, StatusOK, text("done"), ""); err != nil {
		t.Fatal(err)
	}
	if r, ok := b.drain("planner@local"); !ok || r.Status != StatusOK {
		t.Errorf("drained %+v, want the final result", r)
	}
	checkRestores(t, b)
}

// An operator ends a question nobody answers: force_error (guarded by the
// lease that asked) or cancel; a requeue is refused.
func TestWaitingTaskRepairs(t *testing.T) {
	b := newBox(t)
	id := b.send("planner@local", "coder@local")
	other := b.send("planner@local", "coder@local")
	_, l := b.lease("coder@local")
	_, lo := b.lease("coder@local")
	if err := b.result(id, l.LeaseID, StatusInputRequired, text("q"), ""); err != nil {
		t.Fatal(err)
	}
	if err := b.result(other, lo.LeaseID, StatusAuthRequired, text("log in at https://example.test"), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := b.repair(id, l.LeaseID, ActionRequeue); !isCode(err, CodeConflict) || !strings.Contains(err.Error(), "waiting on its sender") {
		t.Errorf("requeue of a waiting task: %v, want a conflict saying it waits on its sender", err)
	}
	if _, err := b.repair(id, lo.LeaseID, ActionForceError); !isCode(err, CodeConflict) || !strings.Contains(err.Error(), l.LeaseID) {
		t.Errorf("force_error under another lease: %v, want a conflict naming the lease that asked", err)
	}
	out, err := b.repair(id, l.LeaseID, ActionForceError)
	if err != nil || out.Action != OutcomeForcedError || out.Result == nil || out.Result.Status != StatusError {
		t.Fatalf("force_error of a waiting task = %+v, %v", out, err)
	}
	// The undrained question went; the forced error is the one pending.
	if r, ok := b.s.PendingResult(id); !ok || !r.Forced {
		t.Errorf("pending result after force_error = %+v, want the forced error", r)
	}
	ev, err := b.s.DecideCancel(other, "oncall", "nobody will log in", b.now)
	if err != nil {
		t.Fatal(err)
	}
	b.apply(ev)
	mustState(t, b.s, other, TaskCanceled)
	if _, ok := b.s.PendingResult(other); ok {
		t.Error("a canceled waiting task still has its question pending")
	}
	if c := b.s.Counts(); c.Waiting != 0 {
		t.Errorf("waiting count = %d, want 0", c.Waiting)
	}
	if a := b.s.Audit(id, 10); len(a) != 1 || a[0].Action != OutcomeForcedError {
		t.Errorf("audit of the forced waiting task = %+v", a)
	}
	checkRestores(t, b)
}

// A snapshot holds waiting tasks with and without their question pending,
// and restores them as waiting (queued again only by a reply).
func TestSnapshotKeepsWaitingTasks(t *testing.T) {
	b := newBox(t)
	a := b.send("planner@local", "coder@local")
	c := b.send("planner@local", "coder@local")
	_, la := b.lease("coder@local")
	_, lc := b.lease("coder@local")
	for id, l := range map[string]Lease{a: la, c: lc} {
		if err := b.result(id, l.LeaseID, StatusInputRequired, text("q "+id), ""); err != nil {
			t.Fatal(err)
		}
	}
	b.drain("planner@local") // a's question drained, c's still pending
	checkRestores(t, b)
	r := NewState()
	if err := r.Restore(b.s.Snapshot(0)); err != nil {
		t.Fatal(err)
	}
	if got := r.Counts(); got.Waiting != 2 || got.ResultsPending != 1 || got.Queued != 0 {
		t.Errorf("restored counts = %+v, want 2 waiting, 1 question pending", got)
	}
	if w := r.WaitingTasks(); len(w) != 2 || w[0].State != TaskWaiting || w[0].WaitingSinceMs == 0 {
		t.Errorf("restored waiting tasks = %+v", w)
	}
	if _, ok := r.DecideLease("coder@local", "coder@local", "00000000-0000-4000-8000-000000000099", b.now); ok {
		t.Error("a restored waiting task can be leased before its sender replies")
	}
	// The waiting state is listed by the queue query, after leases.
	v := b.s.Query(QueueFilter{State: TaskWaiting}, b.now)
	if len(v.Tasks) != 2 {
		t.Errorf("query state=waiting = %d tasks, want 2", len(v.Tasks))
	}
	if v := b.s.Query(QueueFilter{MinLeaseAgeMs: new(int64)}, b.now); len(v.Tasks) != 0 {
		t.Errorf("a lease-age filter listed %d waiting tasks, want none (they hold no lease)", len(v.Tasks))
	}
}

// Logs and snapshots written before the conversation bounds existed read
// them as the defaults, and default bounds are recorded as nothing, so
// those files are written back byte for byte as they were.
func TestTurnBoundsDefaultIsZero(t *testing.T) {
	s := NewState()
	if _, ok := s.DecideLimits(Limits{RetainDone: DefaultRetainDone, ResultCacheMax: DefaultResultCacheMax, ResultCacheAgeMs: DefaultResultCacheAgeMs, AuditMax: DefaultAuditMax,
		MaxTurns: DefaultMaxTurns, MaxTurnsBytes: DefaultMaxTurnsBytes}, 1); ok {
		t.Error("the default bounds, given explicitly, made a limits_set event")
	}
	ev, ok := s.DecideLimits(Limits{RetainDone: 1, MaxTurns: 7}, 1)
	if !ok {
		t.Fatal("new limits made no event")
	}
	raw, _ := json.Marshal(ev.Limits)
	if !strings.Contains(string(raw), `"max_turns":7`) || strings.Contains(string(raw), "max_turns_bytes") {
		t.Errorf("limits_set = %s, want max_turns 7 and no max_turns_bytes (the default)", raw)
	}
	if turns, bytes := (Limits{}).turnBounds(); turns != DefaultMaxTurns || bytes != DefaultMaxTurnsBytes {
		t.Errorf("bounds of an old log = %d, %d; want the defaults", turns, bytes)
	}
}
