package engine

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/testclock"
	"github.com/mailroom/mailroom/mailbox"
)

// agentsOf returns the listing keyed by agent.
func agentsOf(t *testing.T, e *Engine) map[string]mailbox.AgentInfo {
	t.Helper()
	list, err := e.Agents(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]mailbox.AgentInfo{}
	for i, a := range list {
		if i > 0 && list[i-1].Agent >= a.Agent {
			t.Fatalf("listing not sorted by agent: %q before %q", list[i-1].Agent, a.Agent)
		}
		out[a.Agent] = a
	}
	return out
}

func TestAgentsLastSeenByCall(t *testing.T) {
	clock := testclock.New(time.UnixMilli(1_700_000_000_000))
	e := open(t, t.TempDir(), Options{Now: clock.Now, AgentsInterval: -1})
	bg := context.Background()
	at := func() int64 { clock.Advance(time.Second); return clock.Now().UnixMilli() }

	at() // planner is seen sending, and later draining
	id := mustSend(t, e, "planner", "coder")
	polledAt := at()
	if task, _, err := e.Lease(bg, "idle"); err != nil || task != nil {
		t.Fatalf("lease for idle = %v, %v; want nothing", task, err)
	}
	// Leasing without a recipient: seen as the lease holder, the caller.
	at()
	task, lease, err := e.Lease(mailbox.WithPrincipal(bg, "helper"), "")
	if err != nil || task == nil || task.ID != id {
		t.Fatalf("lease = %v, %v", task, err)
	}
	postedAt := at()
	if err := e.PostResult(bg, mailbox.Result{TaskID: id, Status: mailbox.StatusOK, LeaseID: lease.LeaseID}); err != nil {
		t.Fatal(err)
	}
	// A refused result is still a call: by the principal, when there is one.
	lateAt := at()
	if err := e.PostResult(mailbox.WithPrincipal(bg, "latecomer"), mailbox.Result{TaskID: id, Status: mailbox.StatusOK}); err == nil {
		t.Fatal("a second result was accepted")
	}
	drainedAt := at()
	if r, err := e.Drain(bg, "planner"); err != nil || r == nil {
		t.Fatalf("drain = %v, %v", r, err)
	}
	emptyDrainAt := at()
	if r, err := e.Drain(mailbox.WithPrincipal(bg, "auditor"), ""); err != nil || r != nil {
		t.Fatalf("drain of nothing = %v, %v", r, err)
	}
	clock.Advance(time.Minute)

	got := agentsOf(t, e)
	want := map[string]int64{"planner": drainedAt, "idle": polledAt, "helper": postedAt, "latecomer": lateAt, "auditor": emptyDrainAt, "coder": 0}
	for agent, seen := range want {
		if a, ok := got[agent]; !ok || a.LastSeenMs != seen {
			t.Errorf("%s: listed %v, last seen %d; want last seen %d", agent, ok, a.LastSeenMs, seen)
		}
	}
	if len(got) != len(want) {
		t.Errorf("listing = %v, want exactly %v", got, want)
	}
	if h := got["helper"]; h.ResultsOK5m != 1 || h.ResultsError5m != 0 {
		t.Errorf("helper = %+v, want one ok result in the window (it held the lease)", h)
	}
}

func TestAgentsResultWindow(t *testing.T) {
	clock := testclock.New(time.UnixMilli(1_700_000_000_000))
	e := open(t, t.TempDir(), Options{Now: clock.Now, AgentsInterval: -1})
	bg := context.Background()
	post := func(status string) {
		t.Helper()
		id := mustSend(t, e, "p", "w")
		_, l := mustLease(t, e, "w")
		if err := e.PostResult(bg, mailbox.Result{TaskID: id, Status: status, LeaseID: l.LeaseID, ErrorMessage: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	post(mailbox.StatusOK)
	first := clock.Now()
	clock.Advance(time.Minute)
	post(mailbox.StatusError)
	post(mailbox.StatusPartial) // neither ok nor error
	id := mustSend(t, e, "p", "w")
	_, l := mustLease(t, e, "w")
	if _, err := e.Repair(bg, mailbox.RepairRequest{TaskID: id, Reason: "gone", Command: mailbox.RepairCommand{Action: mailbox.ActionForceError, LeaseID: l.LeaseID, Message: "m"}}); err != nil {
		t.Fatal(err)
	}
	counts := func() (int, int) {
		w := agentsOf(t, e)["w"]
		return w.ResultsOK5m, w.ResultsError5m
	}
	if ok, bad := counts(); ok != 1 || bad != 2 {
		t.Fatalf("window = %d ok, %d error; want 1 ok, 2 error (a forced error counts)", ok, bad)
	}
	e.pushAgentsNow() // takes the changes above
	clock.Set(first.Add(ResultWindow - time.Millisecond))
	if ok, bad := counts(); ok != 1 || bad != 2 {
		t.Errorf("a millisecond before the first result is 5 minutes old: %d ok, %d error; want 1, 2", ok, bad)
	}
	clock.Set(first.Add(ResultWindow))
	if ok, bad := counts(); ok != 0 || bad != 2 {
		t.Errorf("5 minutes after the first result: %d ok, %d error; want 0, 2", ok, bad)
	}
	// Results leaving the window are a change to push, even with no event.
	sub, err := e.Subscribe(bg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	collect(t, sub, 1)
	updates := sub.Agents()
	if !e.pushAgentsNow() {
		t.Error("a result left the window and nothing was pushed")
	}
	if up := nextAgents(t, updates); !reflect.DeepEqual(up.Agents, mustAgents(t, e)) {
		t.Errorf("pushed %+v, want the listing %+v", up.Agents, mustAgents(t, e))
	}
	clock.Advance(time.Hour)
	if ok, bad := counts(); ok != 0 || bad != 0 {
		t.Errorf("an hour later: %d ok, %d error; want none", ok, bad)
	}
}

func mustAgents(t *testing.T, e *Engine) []mailbox.AgentInfo {
	t.Helper()
	list, err := e.Agents(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return list
}

func nextAgents(t *testing.T, ch <-chan mailbox.AgentsUpdate) mailbox.AgentsUpdate {
	t.Helper()
	select {
	case up := <-ch:
		return up
	case <-time.After(10 * time.Second):
		t.Fatal("no agents listing within 10 s")
	}
	panic("unreachable")
}

// TestAgentsPushedAfterChangesToThoseWhoAsked: the listing goes out only
// after a change, only to subscriptions that asked, the latest replacing one
// not yet taken, and never holds up or cuts off a subscriber.
func TestAgentsPushedAfterChangesToThoseWhoAsked(t *testing.T) {
	clock := testclock.New(time.UnixMilli(1_700_000_000_000))
	e := open(t, t.TempDir(), Options{Now: clock.Now, AgentsInterval: -1, SubscriberBuffer: 8})
	bg := context.Background()
	asked, err := e.Subscribe(bg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer asked.Close()
	plain, err := e.Subscribe(bg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	collect(t, asked, 1)
	collect(t, plain, 1)
	updates := asked.Agents()

	if e.pushAgentsNow() {
		t.Error("pushed a listing with nothing changed")
	}
	mustSend(t, e, "p", "w")
	if !e.pushAgentsNow() {
		t.Fatal("nothing pushed after a send")
	}
	if e.pushAgentsNow() {
		t.Error("pushed twice for one change")
	}
	up := nextAgents(t, updates)
	want := []mailbox.AgentInfo{{Agent: "p", LastSeenMs: clock.Now().UnixMilli()}, {Agent: "w", Queued: 1}}
	if up.Type != mailbox.EventAgents || up.AtMs != clock.Now().UnixMilli() || !reflect.DeepEqual(up.Agents, want) {
		t.Errorf("update = %+v, want type agents at the clock's time with %+v", up, want)
	}
	if string(up.Encoded) == "" {
		t.Error("the update carries no encoded bytes")
	}
	if up.Seq != e.DurableSeq() {
		t.Errorf("the update counts events up to seq %d, want %d: a stream holds it until it has sent that far", up.Seq, e.DurableSeq())
	}
	if n := len(plain.(*subscription).agentsIn) + len(plain.(*subscription).agentsOut); n != 0 {
		t.Errorf("a subscription that never asked holds %d listings", n)
	}

	// Nobody takes them: each replaces the last, and the subscriber is
	// neither waited for nor cut off.
	for i := range 20 {
		clock.Advance(time.Second)
		if _, _, err := e.Lease(bg, "w"+string(rune('a'+i))); err != nil {
			t.Fatal(err)
		}
		if !e.pushAgentsNow() {
			t.Fatalf("push %d: nothing pushed after a poll", i)
		}
	}
	mustSend(t, e, "p", "w") // an event after them still arrives
	if evs := collect(t, asked, 1); evs[0].Type != mailbox.EventTaskSent {
		t.Fatalf("event after the listings = %+v, want task_sent", evs[0])
	}
	if !e.pushAgentsNow() {
		t.Fatal("nothing pushed after the send")
	}
	deadline := time.After(10 * time.Second)
	for {
		var up mailbox.AgentsUpdate
		select {
		case up = <-updates:
		case <-deadline:
			t.Fatal("the latest listing never arrived")
		}
		if up.AtMs == clock.Now().UnixMilli() {
			if w := up.Agents[len(up.Agents)-1]; w.Agent != "wt" || w.LastSeenMs != clock.Now().UnixMilli() {
				t.Errorf("latest listing ends with %+v, want wt seen now", w)
			}
			break
		}
	}
	if err := asked.Err(); err != nil {
		t.Errorf("the subscriber that did not read its listings was ended: %v", err)
	}
}

// An agent is seen while its long poll waits, not only when the poll
// ends: a live worker in a 20 s poll never reads as gone, after a restart
// too, and its last-seen time does not climb while it waits.
func TestAgentsSeenWhileLongPollWaits(t *testing.T) {
	clock := testclock.New(time.UnixMilli(1_700_000_000_000))
	dir := t.TempDir()
	e := open(t, dir, Options{Now: clock.Now, AgentsInterval: -1})
	id := mustSend(t, e, "planner", "worker")
	if task, _, err := e.Lease(context.Background(), "worker"); err != nil || task == nil || task.ID != id {
		t.Fatalf("lease = %v, %v", task, err)
	}
	e.Close()

	// The daemon restarts; much later the worker's next long poll begins.
	clock.Advance(time.Hour)
	e = open(t, dir, Options{Now: clock.Now, AgentsInterval: -1})
	for _, kind := range []string{"lease", "drain"} {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			var err error
			if kind == "lease" {
				_, err = e.LeaseN(ctx, "worker", 1, mailbox.MaxWaitMs*time.Millisecond)
			} else {
				_, err = e.DrainN(ctx, "worker", 1, mailbox.MaxWaitMs*time.Millisecond)
			}
			done <- err
		}()
		for e.waiting.count() == 0 {
			time.Sleep(time.Millisecond)
		}
		for range 3 {
			clock.Advance(7 * time.Second)
			w := agentsOf(t, e)["worker"]
			if !w.Polling || w.LastSeenMs != clock.Now().UnixMilli() {
				t.Fatalf("%s poll waiting: worker = %+v, want polling and seen now (%d)", kind, w, clock.Now().UnixMilli())
			}
		}
		cancel()
		<-done
		endedAt := clock.Now().UnixMilli()
		clock.Advance(time.Minute)
		if w := agentsOf(t, e)["worker"]; w.Polling || w.LastSeenMs != endedAt {
			t.Fatalf("%s poll ended: worker = %+v, want not polling, last seen when it ended (%d)", kind, w, endedAt)
		}
	}
	// A poll that does not wait is a call, not a poll.
	if _, err := e.LeaseN(context.Background(), "idle", 1, 0); err != nil {
		t.Fatal(err)
	}
	if w := agentsOf(t, e)["idle"]; w.Polling || w.LastSeenMs != clock.Now().UnixMilli() {
		t.Fatalf("idle = %+v", w)
	}
}
