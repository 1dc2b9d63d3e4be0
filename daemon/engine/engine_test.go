package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mailroom/mailroom/daemon/store/logstore"
	"github.com/mailroom/mailroom/mailbox"
)

func open(t *testing.T, dir string, opts Options) *Engine {
	t.Helper()
	st, err := logstore.Open(dir, logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e, err := Open(st, opts)
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func mustSend(t *testing.T, e *Engine, from, to string) string {
	t.Helper()
	out, err := e.Send(context.Background(), mailbox.Task{Sender: from, Recipient: to, IntentText: "work"})
	if err != nil {
		t.Fatal(err)
	}
	return out.TaskID
}

func mustLease(t *testing.T, e *Engine, recipient string) (*mailbox.Task, *mailbox.Lease) {
	t.Helper()
	task, lease, err := e.Lease(context.Background(), recipient)
	if err != nil || task == nil {
		t.Fatalf("lease(%s) = %v, %v", recipient, task, err)
	}
	return task, lease
}

func TestAttemptsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	e := open(t, dir, Options{})
	id := mustSend(t, e, "p", "a")
	_, l := mustLease(t, e, "a")
	if l.Attempt != 1 {
		t.Fatalf("first attempt = %d", l.Attempt)
	}
	out, err := e.Repair(ctx, mailbox.RepairRequest{TaskID: id, Reason: "worker died", Command: mailbox.RepairCommand{Action: mailbox.ActionRequeue, LeaseID: l.LeaseID, DuplicateRisk: mailbox.RiskOperatorAccepted}})
	if err != nil || out.Attempt != 1 {
		t.Fatalf("requeue = %+v, %v", out, err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = open(t, dir, Options{})
	_, l2 := mustLease(t, e, "a")
	if l2.Attempt != 2 || l2.LeaseID == l.LeaseID {
		t.Fatalf("lease after restart = %+v, want attempt 2 and a new lease id", l2)
	}
	// The lease itself survives a restart exactly as it was.
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = open(t, dir, Options{})
	v, _ := e.Queue(ctx, mailbox.QueueFilter{State: mailbox.TaskInFlight})
	if len(v.Tasks) != 1 || v.Tasks[0].LeaseID != l2.LeaseID || v.Tasks[0].Attempt != 2 || v.Tasks[0].LeasedTo != "a" || v.Tasks[0].LeasedAtMs != l2.LeasedAtMs {
		t.Fatalf("after restart in flight = %+v, want lease %s attempt 2", v.Tasks, l2.LeaseID)
	}
}

// TestRepairRacesResult races a repair against a result on the same lease,
// many times: exactly one of them may win each time.
func TestRepairRacesResult(t *testing.T) {
	e := open(t, t.TempDir(), Options{})
	ctx := context.Background()
	rounds := 1000
	if testing.Short() {
		rounds = 200
	}
	for i := range rounds {
		id := mustSend(t, e, "p", "a")
		_, l := mustLease(t, e, "a")
		var wg sync.WaitGroup
		var repairErr, resultErr error
		wg.Add(2)
		go func() {
			defer wg.Done()
			action := mailbox.RepairCommand{Action: mailbox.ActionRequeue, LeaseID: l.LeaseID, DuplicateRisk: mailbox.RiskOperatorAccepted}
			if i%2 == 1 {
				action = mailbox.RepairCommand{Action: mailbox.ActionForceError, LeaseID: l.LeaseID, Message: "operator gave up"}
			}
			_, repairErr = e.Repair(ctx, mailbox.RepairRequest{TaskID: id, Reason: "race", Command: action})
		}()
		go func() {
			defer wg.Done()
			resultErr = e.PostResult(ctx, mailbox.Result{TaskID: id, Status: mailbox.StatusOK, LeaseID: l.LeaseID})
		}()
		wg.Wait()
		if (repairErr == nil) == (resultErr == nil) {
			t.Fatalf("round %d: repair err %v, result err %v: want exactly one winner", i, repairErr, resultErr)
		}
		loser := repairErr
		if loser == nil {
			loser = resultErr
		}
		if !errors.Is(loser, mailbox.ErrConflict) {
			t.Fatalf("round %d: loser got %v, want conflict", i, loser)
		}
		// Clean up so the queue stays small: whatever state, end the task.
		if task, lease, _ := e.Lease(ctx, "a"); task != nil {
			if err := e.PostResult(ctx, mailbox.Result{TaskID: task.ID, Status: mailbox.StatusOK, LeaseID: lease.LeaseID}); err != nil {
				t.Fatal(err)
			}
		}
		r, err := e.Drain(ctx, "p")
		if err != nil || r == nil || r.TaskID != id {
			t.Fatalf("round %d: drain = %+v, %v", i, r, err)
		}
		if r, _ := e.Drain(ctx, "p"); r != nil {
			t.Fatalf("round %d: sender got a second result %+v", i, r)
		}
	}
}

func TestConcurrentRequestsShareSyncs(t *testing.T) {
	e := open(t, t.TempDir(), Options{})
	var wg sync.WaitGroup
	const n = 200
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := e.Send(context.Background(), mailbox.Task{Sender: "p", Recipient: fmt.Sprintf("w%d", i%4), IntentText: "x"}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	st, log := e.Stats(), e.st.Stats()
	if st.Queued != n || log.EventsAppended != n {
		t.Fatalf("queued %d, appended %d; want %d", st.Queued, log.EventsAppended, n)
	}
	if log.Batches == 0 || log.Batches > log.EventsAppended {
		t.Fatalf("fsync batches = %d for %d events", log.Batches, log.EventsAppended)
	}
}

func TestCompactAndReopenKeepState(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	e := open(t, dir, Options{})
	for range 50 {
		mustSend(t, e, "p", "a")
	}
	for range 20 {
		task, l := mustLease(t, e, "a")
		if err := e.PostResult(ctx, mailbox.Result{TaskID: task.ID, Status: mailbox.StatusOK, LeaseID: l.LeaseID}); err != nil {
			t.Fatal(err)
		}
	}
	for range 10 {
		e.Drain(ctx, "p")
	}
	mustLease(t, e, "a")
	var before *mailbox.Snapshot
	e.View(func(s *mailbox.State) { before = s.Snapshot(0) })
	if _, err := e.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	mustSend(t, e, "p", "b")
	e.Close()
	e = open(t, dir, Options{})
	var after *mailbox.Snapshot
	e.View(func(s *mailbox.State) { after = s.Snapshot(0) })
	if after.Seq != before.Seq+1 || len(after.Tasks) != len(before.Tasks)+1 || len(after.Results) != len(before.Results) {
		t.Fatalf("after compaction and reopen: seq %d tasks %d results %d; before: seq %d tasks %d results %d",
			after.Seq, len(after.Tasks), len(after.Results), before.Seq, len(before.Tasks), len(before.Results))
	}
}

func collect(t *testing.T, sub mailbox.Subscription, n int) []mailbox.Event {
	t.Helper()
	var out []mailbox.Event
	timeout := time.After(10 * time.Second)
	for len(out) < n {
		select {
		case ev, ok := <-sub.Events():
			if !ok {
				t.Fatalf("subscription ended after %d of %d events: %v", len(out), n, sub.Err())
			}
			out = append(out, *ev)
		case <-timeout:
			t.Fatalf("got %d of %d events", len(out), n)
		}
	}
	return out
}

func TestSubscribeSnapshotThenEvents(t *testing.T) {
	e := open(t, t.TempDir(), Options{})
	ctx := context.Background()
	mustSend(t, e, "p", "a")
	sub, err := e.Subscribe(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	id := mustSend(t, e, "p", "a")
	mustLease(t, e, "a")
	evs := collect(t, sub, 3)
	if evs[0].Type != mailbox.EventSnapshot || evs[0].Seq != 1 || len(evs[0].Snapshot.Tasks) != 1 {
		t.Fatalf("first event = %+v, want a snapshot at seq 1 with one task", evs[0])
	}
	if evs[1].Seq != 2 || evs[1].Task.ID != id || evs[2].Seq != 3 || evs[2].Type != mailbox.EventTaskLeased {
		t.Fatalf("events = %+v", evs[1:])
	}
}

func TestSubscribeResumeReplaysOrSnapshots(t *testing.T) {
	e := open(t, t.TempDir(), Options{})
	ctx := context.Background()
	for range 5 {
		mustSend(t, e, "p", "a")
	}
	after := uint64(2)
	sub, _ := e.Subscribe(ctx, &after)
	mustSend(t, e, "p", "a")
	evs := collect(t, sub, 4)
	sub.Close()
	for i, ev := range evs {
		if ev.Seq != uint64(3+i) || ev.Type != mailbox.EventTaskSent {
			t.Fatalf("resumed event %d = seq %d %s, want seq %d", i, ev.Seq, ev.Type, 3+i)
		}
	}
	if _, err := e.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	sub, _ = e.Subscribe(ctx, &after)
	defer sub.Close()
	evs = collect(t, sub, 1)
	if evs[0].Type != mailbox.EventSnapshot || evs[0].Seq != 6 {
		t.Fatalf("resume after compaction = %s at %d, want a snapshot at 6", evs[0].Type, evs[0].Seq)
	}
}

func TestSlowSubscriberIsCutOthersComplete(t *testing.T) {
	e := open(t, t.TempDir(), Options{SubscriberBuffer: 8})
	ctx := context.Background()
	stalled, _ := e.Subscribe(ctx, nil)
	defer stalled.Close()
	fast, _ := e.Subscribe(ctx, nil)
	defer fast.Close()
	got := make(chan []mailbox.Event)
	go func() {
		var evs []mailbox.Event
		for ev := range fast.Events() {
			evs = append(evs, *ev)
			if len(evs) == 51 {
				break
			}
		}
		got <- evs
	}()
	for range 50 {
		mustSend(t, e, "p", "a")
	}
	evs := <-got
	for i, ev := range evs[1:] {
		if ev.Seq != uint64(i+1) {
			t.Fatalf("fast subscriber event %d has seq %d", i, ev.Seq)
		}
	}
	// The stalled one got its buffer's worth and was then cut off.
	n := 0
	for range stalled.Events() {
		n++
	}
	if !errors.Is(stalled.Err(), mailbox.ErrSlowSubscriber) || n > 8+1+1 {
		t.Fatalf("stalled subscriber: %d events, err %v; want cut off as slow", n, stalled.Err())
	}
}

// A task's subscription carries that task's events and no other's, live
// from now (no snapshot, no replay) or replayed from a position, and a
// snapshot when the position was compacted away.
func TestSubscribeTaskCarriesOnlyItsTask(t *testing.T) {
	e := open(t, t.TempDir(), Options{})
	ctx := context.Background()
	mustSend(t, e, "p", "b") // seq 1, before the subscription
	id := mustSend(t, e, "p", "a")
	now, err := e.SubscribeTask(ctx, nil, 4, id)
	if err != nil {
		t.Fatal(err)
	}
	defer now.Close()
	from := uint64(1)
	replayed, err := e.SubscribeTask(ctx, &from, 4, id)
	if err != nil {
		t.Fatal(err)
	}
	defer replayed.Close()
	// Other tasks' events, before and after this task's.
	mustSend(t, e, "p", "b")
	_, l := mustLease(t, e, "a") // this task: seq 4
	mustSend(t, e, "p", "b")
	if err := e.PostResult(ctx, mailbox.Result{TaskID: id, Status: mailbox.StatusOK, LeaseID: l.LeaseID}); err != nil { // seq 6
		t.Fatal(err)
	}
	got := collect(t, now, 2)
	if got[0].Seq != 4 || got[0].Type != mailbox.EventTaskLeased || got[1].Seq != 6 || got[1].Type != mailbox.EventResultPosted {
		t.Fatalf("from now: %s@%d %s@%d, want the lease at 4 and the result at 6", got[0].Type, got[0].Seq, got[1].Type, got[1].Seq)
	}
	got = collect(t, replayed, 3)
	if got[0].Seq != 2 || got[0].Type != mailbox.EventTaskSent || got[1].Seq != 4 || got[2].Seq != 6 {
		t.Fatalf("replayed from 1: seqs %d %d %d, want its send at 2, then 4 and 6", got[0].Seq, got[1].Seq, got[2].Seq)
	}
	// Nothing of the other tasks follows.
	mustSend(t, e, "p", "b")
	select {
	case ev := <-now.Events():
		t.Fatalf("another task's event reached the task's subscription: %s@%d", ev.Type, ev.Seq)
	case <-time.After(50 * time.Millisecond):
	}
	if _, err := e.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	gone, err := e.SubscribeTask(ctx, &from, 4, id)
	if err != nil {
		t.Fatal(err)
	}
	defer gone.Close()
	if got := collect(t, gone, 1); got[0].Type != mailbox.EventSnapshot {
		t.Fatalf("resume from a compacted position: %s, want a snapshot", got[0].Type)
	}
	if _, err := e.SubscribeTask(ctx, nil, 4, ""); mailbox.ErrorCode(err) != mailbox.CodeInvalid {
		t.Fatalf("a task subscription without a task: %v, want invalid", err)
	}
}

// TestASubscriberBehindByLessThanItsBufferMissesNothing follows a
// subscriber through the hand-offs of its events: caught up, publish
// writes to what it reads; when it falls behind by more than that holds
// (32 here) but less than its buffer (64), the pump takes over again, and
// once it has caught up, publish again. Every event arrives once, in
// order, and the subscription is not cut.
func TestASubscriberBehindByLessThanItsBufferMissesNothing(t *testing.T) {
	e := open(t, t.TempDir(), Options{SubscriberBuffer: 64})
	ctx := context.Background()
	sub, err := e.Subscribe(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if evs := collect(t, sub, 1); evs[0].Type != mailbox.EventSnapshot {
		t.Fatalf("first event %s, want the snapshot", evs[0].Type)
	}
	next := uint64(1)
	check := func(evs []mailbox.Event) {
		t.Helper()
		for _, ev := range evs {
			if ev.Seq != next {
				t.Fatalf("event seq %d, want %d", ev.Seq, next)
			}
			next++
		}
	}
	for round := range 3 {
		// Behind by 50: more than the 32 ready to read, less than 64.
		for range 50 {
			mustSend(t, e, "p", "a")
		}
		check(collect(t, sub, 50))
		// Then kept up with, one at a time.
		for range 20 {
			mustSend(t, e, "p", "a")
			check(collect(t, sub, 1))
		}
		if err := sub.Err(); err != nil {
			t.Fatalf("round %d: the subscription ended: %v", round, err)
		}
	}
	// Behind by more than the buffer: cut off, as before.
	for range 70 {
		mustSend(t, e, "p", "a")
	}
	n := 0
	for range sub.Events() {
		n++
	}
	// At most the buffer, and the one the pump holds between the two.
	if !errors.Is(sub.Err(), mailbox.ErrSlowSubscriber) || n > 65 {
		t.Fatalf("behind by 70: %d events, err %v; want at most 65 and cut off as slow", n, sub.Err())
	}
}
