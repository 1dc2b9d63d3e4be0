package mailbox

import (
	"fmt"
	"testing"
)

// benchMailbox is a mailbox of n live tasks, half queued and half in
// flight, spread over 50 recipients, with n/100 results pending.
func benchMailbox(b *testing.B, n int) *box {
	b.Helper()
	bx := &box{t: &testing.T{}, s: NewState(), now: 1_000_000}
	for i := range n {
		to := fmt.Sprintf("agent-%02d@local", i%50)
		task, err := NormalizeTask(Task{ID: bx.id(), Sender: "planner@local", Recipient: to, IntentText: "crunch the numbers for the quarterly report, part one"})
		if err != nil {
			b.Fatal(err)
		}
		ev, err := bx.s.DecideSend(task, bx.now)
		if err != nil {
			b.Fatal(err)
		}
		ev.Seq = bx.s.Seq + 1
		if err := bx.s.Apply(ev); err != nil {
			b.Fatal(err)
		}
		bx.now++
	}
	for i := range n / 2 {
		ev, ok := bx.s.DecideLease(fmt.Sprintf("agent-%02d@local", i%50), "", bx.id(), bx.now)
		if !ok {
			b.Fatal("nothing to lease")
		}
		ev.Seq = bx.s.Seq + 1
		if err := bx.s.Apply(ev); err != nil {
			b.Fatal(err)
		}
		bx.now++
	}
	for _, e := range bx.s.InFlightTasks()[:n/100] {
		ev, err := bx.s.DecidePostResult(Result{TaskID: e.Task.ID, Status: StatusOK, LeaseID: e.LeaseID, Content: []Content{}}, bx.now)
		if err != nil {
			b.Fatal(err)
		}
		ev.Seq = bx.s.Seq + 1
		if err := bx.s.Apply(ev); err != nil {
			b.Fatal(err)
		}
	}
	return bx
}

// BenchmarkQuery is what an operator's reads cost as the mailbox grows:
// the queue with a limit (mailroom status), the stale leases, the
// in-flight ones, one agent's tasks. Compare the sizes: a read that costs
// the same at every size does not grow with the mailbox.
//
//	go test ./mailbox -run '^$' -bench Query -benchtime 200x
func BenchmarkQuery(b *testing.B) {
	minAge := int64(0)
	for _, n := range []int{1_000, 100_000} {
		bx := benchMailbox(b, n)
		now := bx.now
		// The 50 oldest leases are stale, at every size.
		staleAge := now - bx.s.InFlightTasks()[49].LeasedAtMs
		for _, q := range []struct {
			name string
			f    QueueFilter
		}{
			{"limit=100", QueueFilter{Limit: 100}},
			{"in_flight", QueueFilter{Limit: 100, State: TaskInFlight}},
			{"stale", QueueFilter{Limit: MaxLimit, MinLeaseAgeMs: &staleAge}},
			{"all_leases", QueueFilter{Limit: 100, MinLeaseAgeMs: &minAge}},
			{"agent", QueueFilter{Limit: 100, Agent: "agent-07@local"}},
		} {
			b.Run(fmt.Sprintf("tasks=%d/%s", n, q.name), func(b *testing.B) {
				for b.Loop() {
					if v := bx.s.Query(q.f, now); len(v.Tasks) == 0 {
						b.Fatal("nothing listed")
					}
				}
			})
		}
	}
}
