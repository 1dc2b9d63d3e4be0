package mailbox

import (
	"errors"
	"reflect"
	"testing"
)

func (b *box) sendTask(t Task) (Event, string, bool) {
	b.t.Helper()
	t.ID = b.id()
	t, err := NormalizeTask(t)
	if err != nil {
		b.t.Fatal(err)
	}
	if id, ok := b.s.LiveDuplicate(t); ok {
		return Event{}, id, true
	}
	ev, err := b.s.DecideSend(t, b.now)
	if err != nil {
		b.t.Fatal(err)
	}
	return b.apply(ev), t.ID, false
}

func idem(key string) Task {
	return Task{Sender: "p", Recipient: "a", IntentText: "index the docs", TaskKind: strp("index"), Idempotency: &Idempotency{DuplicateSafety: DuplicateIdempotent, Key: key}}
}

func TestIdempotentDedupeWhileLive(t *testing.T) {
	b := newBox(t)
	_, first, _ := b.sendTask(idem("k1"))
	if _, id, dup := b.sendTask(idem("k1")); !dup || id != first {
		t.Fatalf("duplicate while queued = %s dup %v, want %s", id, dup, first)
	}
	_, l := b.lease("a")
	if _, id, dup := b.sendTask(idem("k1")); !dup || id != first {
		t.Fatalf("duplicate while in flight = %s dup %v, want %s", id, dup, first)
	}
	if _, _, dup := b.sendTask(idem("k2")); dup {
		t.Fatal("a different key was deduplicated")
	}
	other := idem("k1")
	other.Recipient = "b"
	if _, _, dup := b.sendTask(other); dup {
		t.Fatal("a different recipient was deduplicated")
	}
	unsafe := idem("k1")
	unsafe.Idempotency.DuplicateSafety = DuplicateUnsafe
	if _, _, dup := b.sendTask(unsafe); dup {
		t.Fatal("an unsafe task was deduplicated")
	}
	if _, _, dup := b.sendTask(unsafe); dup {
		t.Fatal("an unsafe task was deduplicated against another unsafe task")
	}
	// After a force_error the key is free again and nothing is cached.
	if _, err := b.repair(first, l.LeaseID, ActionForceError); err != nil {
		t.Fatal(err)
	}
	ev, _, dup := b.sendTask(idem("k1"))
	if dup || ev.Type != EventTaskSent {
		t.Fatalf("send after force_error = %s dup %v, want a fresh task", ev.Type, dup)
	}
}

func TestIdempotentReplayAfterResult(t *testing.T) {
	b := newBox(t)
	_, first, _ := b.sendTask(idem("k"))
	_, l := b.lease("a")
	if err := b.post(first, l.LeaseID); err != nil {
		t.Fatal(err)
	}
	ev, second, dup := b.sendTask(idem("k"))
	if dup || ev.Type != EventResultReplayed || ev.ReplayedFrom != first {
		t.Fatalf("send after result = %+v, want result_replayed from %s", ev, first)
	}
	if got, _ := b.lease("a"); got != "" {
		t.Fatalf("the replayed task was leased: %s", got)
	}
	r1, _ := b.drain("p")
	r2, _ := b.drain("p")
	if r1.TaskID != first || r2.TaskID != second || !r2.Replayed || r1.Replayed || r2.Status != r1.Status {
		t.Fatalf("drained %+v then %+v, want the original then a replayed copy", r1, r2)
	}
	rec, _ := b.s.Task(second)
	if rec.State != TaskDone || rec.Attempt != 0 {
		t.Fatalf("replayed task = %+v, want done and never attempted", rec)
	}
}

func TestResultCacheIsBounded(t *testing.T) {
	b := newBox(t)
	b.s.ResultCacheMax = 2
	b.s.ResultCacheAgeMs = 1000
	for _, k := range []string{"a", "b", "c"} {
		_, id, _ := b.sendTask(idem(k))
		_, l := b.lease("a")
		b.post(id, l.LeaseID)
	}
	if got := len(b.s.CachedResults()); got != 2 {
		t.Fatalf("cache holds %d results, want 2", got)
	}
	if ev, _, _ := b.sendTask(idem("a")); ev.Type != EventTaskSent {
		t.Fatalf("evicted key answered with %s, want a fresh task", ev.Type)
	}
	b.now += 5000
	if ev, _, _ := b.sendTask(idem("c")); ev.Type != EventTaskSent {
		t.Fatalf("expired key answered with %s, want a fresh task", ev.Type)
	}
}

func TestAuditAndCacheSurviveSnapshot(t *testing.T) {
	b := newBox(t)
	_, id, _ := b.sendTask(idem("k"))
	_, l := b.lease("a")
	b.repair(id, l.LeaseID, ActionRequeue)
	_, l = b.lease("a")
	b.post(id, l.LeaseID)
	id2 := b.send("p", "a")
	_, l2 := b.lease("a")
	b.repair(id2, l2.LeaseID, ActionForceError)

	audit := b.s.Audit("", 10)
	if len(audit) != 2 || audit[0].TaskID != id2 || audit[0].Action != OutcomeForcedError || audit[1].Action != OutcomeRequeued ||
		audit[1].Principal != "oncall" || audit[1].Reason != "stuck" || audit[1].DuplicateRisk != RiskOperatorAccepted || audit[1].LeaseID == "" {
		t.Fatalf("audit = %+v", audit)
	}
	if got := b.s.Audit(id, 10); len(got) != 1 || got[0].TaskID != id {
		t.Fatalf("audit for %s = %+v", id, got)
	}
	restored := NewState()
	if err := restored.Restore(b.s.Snapshot(0)); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(restored.Audit("", 10), audit) || !reflect.DeepEqual(restored.CachedResults(), b.s.CachedResults()) {
		t.Fatal("audit or result cache lost in a snapshot")
	}
	t2 := idem("k")
	t2.ID = "00000000-0000-4000-8000-000000000999"
	ev, err := restored.DecideSend(t2, b.now)
	if err != nil || ev.Type != EventResultReplayed {
		t.Fatalf("after restore, duplicate = %s %v, want result_replayed", ev.Type, err)
	}
}

func TestPlanRetryStale(t *testing.T) {
	b := newBox(t)
	p := RetryPolicy{Enabled: true, MinLeaseAgeMs: 1000, MaxAttempts: 2, MaxRequeues: 1, ScanLimit: 10}
	// Queued tasks never use up the scan limit.
	for range 20 {
		b.send("p", "q")
	}
	mk := func(task Task) string {
		_, id, _ := b.sendTask(task)
		b.lease("a")
		return id
	}
	noIdem := mk(Task{Sender: "p", Recipient: "a", IntentText: "x"})
	unsafe := idem("u")
	unsafe.Idempotency.DuplicateSafety = DuplicateUnsafe
	unsafeID := mk(unsafe)
	tired := mk(idem("t"))
	if ev, err := b.s.DecideRepair(RepairRequest{TaskID: tired, Reason: "r", Command: RepairCommand{Action: ActionRequeue, DuplicateRisk: RiskIdempotent}}, "op", b.now); err != nil {
		t.Fatal(err)
	} else {
		b.apply(ev)
	}
	b.lease("a") // attempt 2 of "tired"
	ok1 := mk(idem("o1"))
	ok2 := mk(idem("o2"))
	b.now += 5000
	young := mk(idem("y"))

	rep := b.s.PlanRetryStale(p, b.now)
	want := map[string]string{noIdem: SkipMissingIdempotency, unsafeID: SkipUnsafe, tired: SkipMaxAttempts, ok2: SkipLimitReached, young: SkipLeaseTooYoung}
	if rep.Considered != 6 || len(rep.Requeued) != 1 || rep.Requeued[0].TaskID != ok1 || rep.Requeued[0].IdempotencyKey != "o1" {
		t.Fatalf("report = %+v", rep)
	}
	for _, s := range rep.Skipped {
		if want[s.TaskID] != s.Reason {
			t.Errorf("skipped %s as %s, want %s", s.TaskID, s.Reason, want[s.TaskID])
		}
		delete(want, s.TaskID)
	}
	if len(want) != 0 {
		t.Errorf("not reported: %v", want)
	}
	p.ScanLimit = 2
	if rep := b.s.PlanRetryStale(p, b.now); rep.Considered != 2 {
		t.Errorf("scan limit 2 considered %d", rep.Considered)
	}
	// A requeue guarded by a lease that has since moved is refused.
	r := rep.Requeued[0]
	ev, err := b.s.DecideRetryRequeue(r, "retry-stale", b.now)
	if err != nil || !ev.Auto {
		t.Fatal(err)
	}
	b.apply(ev)
	b.lease("a")
	if _, err := b.s.DecideRetryRequeue(r, "retry-stale", b.now); !errors.Is(err, ErrConflict) {
		t.Fatalf("stale guard = %v, want conflict", err)
	}
	if a := b.s.Audit(ok1, 1); len(a) != 1 || !a[0].Auto {
		t.Fatalf("scan requeue audit = %+v, want auto", a)
	}
}
