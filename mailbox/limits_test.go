package mailbox

import (
	"encoding/json"
	"errors"
	"testing"
)

const (
	taskX = "00000000-0000-4000-8000-00000000000a"
	taskY = "00000000-0000-4000-8000-00000000000b"
)

// sendID sends a task with a client-chosen id.
func (b *box) sendID(id string) {
	b.t.Helper()
	task, err := NormalizeTask(Task{ID: id, Sender: "p", Recipient: "a", IntentText: "work"})
	if err != nil {
		b.t.Fatal(err)
	}
	ev, err := b.s.DecideSend(task, b.now)
	if err != nil {
		b.t.Fatalf("send %s: %v", id, err)
	}
	b.apply(ev)
}

// finish leases, answers and drains the task that is queued for "a".
func (b *box) finish(id string) {
	b.t.Helper()
	got, l := b.lease("a")
	if got != id {
		b.t.Fatalf("lease = %q, want %s", got, id)
	}
	if err := b.post(id, l.LeaseID); err != nil {
		b.t.Fatal(err)
	}
	if r, ok := b.drain("p"); !ok || r.TaskID != id {
		b.t.Fatalf("drain = %+v, %v; want the result of %s", r, ok, id)
	}
}

func (b *box) setLimits(l Limits) {
	b.t.Helper()
	ev, ok := b.s.DecideLimits(l, b.now)
	if !ok {
		b.t.Fatalf("limits %v are in force already", l)
	}
	b.apply(ev)
}

// issueLog is the log of issue 9, written under retain_done 1: X is sent
// and drained, then Y, which makes the state forget X, then X is sent again
// with the same id. recorded says whether the log records its limits (as
// this version writes it) or not (as an older one did).
func issueLog(t *testing.T, recorded bool) []Event {
	b := newBox(t)
	l := DefaultLimits()
	l.RetainDone = 1
	if recorded {
		b.setLimits(l)
	} else {
		b.s.Limits = l
	}
	b.sendID(taskX)
	b.finish(taskX)
	b.sendID(taskY)
	b.finish(taskY)
	b.sendID(taskX)
	return b.log
}

// replay applies evs to s. A state whose limits were set directly replays
// as a process configured with them did before limits were logged.
func replay(t *testing.T, s *State, evs []Event) *State {
	t.Helper()
	for _, ev := range evs {
		if err := s.Apply(ev); err != nil {
			t.Fatalf("replay with limits starting as %v: %v", s.Limits, err)
		}
	}
	return s
}

// stateJSON is the whole state, limits included unless withLimits is false.
func stateJSON(t *testing.T, s *State, withLimits bool) string {
	t.Helper()
	snap := s.Snapshot(0)
	if !withLimits {
		snap.Limits = nil
	}
	b, err := json.Marshal(snap)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestIssue9LogReplaysTheSameUnderAnyLimits(t *testing.T) {
	var initial []Limits
	for _, n := range []int{DefaultRetainDone, 1, 5} {
		l := DefaultLimits()
		l.RetainDone = n
		initial = append(initial, l)
	}
	for _, recorded := range []bool{true, false} {
		log := issueLog(t, recorded)
		want := ""
		for _, l := range initial {
			s := NewState()
			s.Limits = l
			replay(t, s, log)
			name := l.String()
			// A log that does not record its limits can only give the same
			// tasks; one that does gives the same limits too.
			got := stateJSON(t, s, recorded)
			if want == "" {
				want = got
			} else if got != want {
				t.Errorf("recorded=%v: replay under %s =\n%s\nwant\n%s", recorded, name, got, want)
			}
			if x, ok := s.Task(taskX); !ok || x.State != TaskQueued || x.Attempt != 0 {
				t.Errorf("recorded=%v, under %s: X = %+v, %v; want the second X, queued", recorded, name, x, ok)
			}
			if y, ok := s.Task(taskY); !ok || y.State != TaskDone {
				t.Errorf("recorded=%v, under %s: Y = %+v, %v; want done", recorded, name, y, ok)
			}
			if recorded && s.RetainDone != 1 {
				t.Errorf("under %s: retain_done %d after replay, want the log's 1", name, s.RetainDone)
			}
		}
	}
}

// A drained task that is sent again (or answered from the cache) replaces
// the old record in the drain order too: the old entry must not later
// forget the new task.
func TestResentDoneTaskLeavesTheDrainOrder(t *testing.T) {
	for _, typ := range []string{EventTaskSent, EventResultReplayed} {
		t.Run(typ, func(t *testing.T) {
			b := newBox(t)
			b.sendID(taskX)
			b.finish(taskX)
			b.sendID(taskY)
			b.finish(taskY)
			// What a log written under retain_done 1 holds next: X again.
			task := Task{ID: taskX, Sender: "p", Recipient: "a", IntentText: "again"}
			ev := Event{AtMs: b.now, Type: typ, Task: &task}
			if typ == EventResultReplayed {
				ev.Result = &Result{TaskID: taskX, Status: StatusOK, Content: []Content{}}
				b.apply(ev)
				b.drain("p")
			} else {
				b.apply(ev)
				b.finish(taskX)
			}
			b.setLimits(Limits{RetainDone: 1, ResultCacheMax: 1, ResultCacheAgeMs: DefaultResultCacheAgeMs, AuditMax: 1})
			if x, ok := b.s.Task(taskX); !ok || x.Task.IntentText != "again" || x.State != TaskDone {
				t.Errorf("X = %+v, %v; want the second X, done, remembered as the newest drain", x, ok)
			}
			if _, ok := b.s.Task(taskY); ok {
				t.Error("Y is remembered beyond retain_done 1")
			}
			if got, want := stateJSON(t, b.s.Clone(), true), stateJSON(t, b.s, true); got != want {
				t.Errorf("restored state differs:\n%s\nwant\n%s", got, want)
			}
		})
	}
}

func TestSendingALiveTaskAgainIsRefused(t *testing.T) {
	b := newBox(t)
	for _, step := range []string{TaskQueued, TaskInFlight, TaskResultPending} {
		switch step {
		case TaskQueued:
			b.sendID(taskX)
		case TaskInFlight:
			b.lease("a")
		case TaskResultPending:
			x, _ := b.s.Task(taskX)
			if err := b.post(taskX, x.LeaseID); err != nil {
				t.Fatal(err)
			}
		}
		before := stateJSON(t, b.s, true)
		task := Task{ID: taskX, Sender: "p", Recipient: "a", IntentText: "work"}
		for _, ev := range []Event{
			{Seq: b.s.Seq + 1, Type: EventTaskSent, Task: &task},
			{Seq: b.s.Seq + 1, Type: EventResultReplayed, Task: &task, Result: &Result{TaskID: taskX, Status: StatusOK}},
		} {
			if err := b.s.Apply(ev); err == nil {
				t.Errorf("%s of a task that is %s was accepted", ev.Type, step)
			}
		}
		if after := stateJSON(t, b.s, true); after != before {
			t.Errorf("refused sends of a %s task changed the state", step)
		}
	}
	b.drain("p")
	// The decision still refuses an id the state remembers, drained or not.
	task, _ := NormalizeTask(Task{ID: taskX, Sender: "p", Recipient: "a", IntentText: "work"})
	if _, err := b.s.DecideSend(task, b.now); !errors.Is(err, ErrConflict) {
		t.Errorf("sending a remembered drained id = %v, want conflict", err)
	}
}

// limits_set applies at once, and what it trims does not come back when a
// later one raises the limits again, exactly as in a state restored from a
// snapshot taken in between.
func TestLimitsSetAppliesAtOnce(t *testing.T) {
	b := newBox(t)
	var ids []string
	for _, key := range []string{"k1", "k2", "k3"} {
		_, id, _ := b.sendTask(idem(key))
		ids = append(ids, id)
		_, l := b.lease("a")
		if _, err := b.repair(id, l.LeaseID, ActionRequeue); err != nil {
			t.Fatal(err)
		}
		_, l = b.lease("a")
		if err := b.post(id, l.LeaseID); err != nil {
			t.Fatal(err)
		}
		b.drain("p")
	}
	counts := func() [3]int {
		return [3]int{len(b.s.done) - b.s.doneHead, len(b.s.CachedResults()), len(b.s.Audit("", MaxLimit))}
	}
	if got := counts(); got != [3]int{3, 3, 3} {
		t.Fatalf("drained, cached, audited = %v, want 3 each", got)
	}
	tight := Limits{RetainDone: 1, ResultCacheMax: 2, ResultCacheAgeMs: DefaultResultCacheAgeMs, AuditMax: 1}
	b.setLimits(tight)
	if got := counts(); got != [3]int{1, 2, 1} {
		t.Fatalf("after %v: drained, cached, audited = %v, want 1, 2, 1", tight, got)
	}
	if a := b.s.Audit("", 10); a[0].TaskID != ids[2] {
		t.Errorf("audit kept the repair of %s, want the newest, of %s", a[0].TaskID, ids[2])
	}
	if _, ok := b.s.Task(ids[2]); !ok {
		t.Errorf("the newest drained task was forgotten")
	}
	restored := NewState()
	if err := restored.Restore(b.s.Snapshot(0)); err != nil {
		t.Fatal(err)
	}
	b.setLimits(DefaultLimits())
	if got := counts(); got != [3]int{1, 2, 1} {
		t.Errorf("after raising the limits again: drained, cached, audited = %v, want 1, 2, 1 (nothing comes back)", got)
	}
	if err := restored.Apply(b.log[len(b.log)-1]); err != nil {
		t.Fatal(err)
	}
	if got, want := stateJSON(t, restored, true), stateJSON(t, b.s, true); got != want {
		t.Errorf("restored then raised:\n%s\nwant\n%s", got, want)
	}
}

// Repair records past AuditMax are trimmed in chunks; the ones waiting to be
// trimmed must not reappear when AuditMax is raised, since a state restored
// from a snapshot never had them.
func TestRaisedAuditMaxBringsNothingBack(t *testing.T) {
	b := newBox(t)
	l := DefaultLimits()
	l.AuditMax = 8
	b.setLimits(l)
	id := b.send("p", "a")
	for range 9 {
		_, lease := b.lease("a")
		if _, err := b.repair(id, lease.LeaseID, ActionRequeue); err != nil {
			t.Fatal(err)
		}
	}
	restored := b.s.Clone()
	b.setLimits(DefaultLimits())
	if got := len(b.s.Audit("", MaxLimit)); got != 8 {
		t.Errorf("after raising audit_max from 8: %d repairs listed, want the 8 listed before", got)
	}
	if err := restored.Apply(b.log[len(b.log)-1]); err != nil {
		t.Fatal(err)
	}
	if got, want := stateJSON(t, restored, true), stateJSON(t, b.s, true); got != want {
		t.Errorf("restored then raised:\n%s\nwant\n%s", got, want)
	}
}

func TestLimitsSetRefusesMisfits(t *testing.T) {
	s := NewState()
	for _, ev := range []Event{
		{Seq: 1, Type: EventLimitsSet},
		{Seq: 1, Type: EventLimitsSet, Limits: &Limits{RetainDone: -1, ResultCacheMax: 1, AuditMax: 1}},
	} {
		if err := s.Apply(ev); err == nil {
			t.Errorf("%+v accepted", ev.Limits)
		}
	}
	if s.Seq != 0 || s.Limits != DefaultLimits() {
		t.Errorf("refused limits changed the state: seq %d, %v", s.Seq, s.Limits)
	}
	if _, ok := s.DecideLimits(DefaultLimits(), 0); ok {
		t.Error("DecideLimits decided the limits already in force")
	}
}

// Snapshots carry the limits, so a state restored from one has them
// whatever it had before; a snapshot written before they did has the
// defaults.
func TestRestoreTakesTheSnapshotsLimits(t *testing.T) {
	src := NewState()
	small := Limits{RetainDone: 2, ResultCacheMax: 3, ResultCacheAgeMs: 4, AuditMax: 5}
	if err := src.Apply(Event{Seq: 1, Type: EventLimitsSet, Limits: &small}); err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(src.Snapshot(0))
	if err != nil {
		t.Fatal(err)
	}
	old := []byte(`{"seq":1,"at_ms":0,"tasks":[],"results":[]}`)
	for _, c := range []struct {
		name string
		data []byte
		want Limits
	}{{"this version's snapshot", data, small}, {"an older snapshot", old, DefaultLimits()}} {
		var snap Snapshot
		if err := json.Unmarshal(c.data, &snap); err != nil {
			t.Fatal(err)
		}
		s := NewState()
		s.Limits = Limits{RetainDone: 9, ResultCacheMax: 9, ResultCacheAgeMs: 9, AuditMax: 9}
		if err := s.Apply(Event{Seq: 1, Type: EventSnapshot, Snapshot: &snap}); err != nil {
			t.Fatal(err)
		}
		if s.Limits != c.want {
			t.Errorf("%s: limits %v, want %v", c.name, s.Limits, c.want)
		}
	}
}

// A log written under a smaller result cache holds a fresh send of a key
// whose result a larger cache still holds; its result replaces the cached
// one. The cache bound must count only live entries, as a restored state
// does, or the replayed and the restored state evict different results.
func TestResultCacheBoundCountsLiveEntries(t *testing.T) {
	b := newBox(t)
	l := DefaultLimits()
	l.ResultCacheMax = 2
	b.setLimits(l)
	finish := func(id string) {
		_, lease := b.lease("a")
		if err := b.post(id, lease.LeaseID); err != nil {
			t.Fatal(err)
		}
	}
	_, other, _ := b.sendTask(idem("k2"))
	finish(other)
	_, first, _ := b.sendTask(idem("k"))
	finish(first)
	restored := b.s.Clone()
	task := idem("k")
	task.ID = b.id()
	task, err := NormalizeTask(task)
	if err != nil {
		t.Fatal(err)
	}
	b.apply(Event{AtMs: b.now, Type: EventTaskSent, Task: &task})
	finish(task.ID)
	var cached []string
	for _, c := range b.s.CachedResults() {
		cached = append(cached, c.TaskID)
	}
	if len(cached) != 2 || cached[0] != other || cached[1] != task.ID {
		t.Errorf("cached results of %v, want %s and %s", cached, other, task.ID)
	}
	replay(t, restored, b.log[len(b.log)-3:])
	if got, want := stateJSON(t, restored, true), stateJSON(t, b.s, true); got != want {
		t.Errorf("restored then replayed:\n%s\nwant\n%s", got, want)
	}
}
