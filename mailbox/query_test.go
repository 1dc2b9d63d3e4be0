package mailbox

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"
)

// queryBySorting is Query the slow and obvious way: every part sorted in
// full, then filtered, then cut at the limit. Query walks heaps and stops
// early; it must list exactly this.
func queryBySorting(s *State, f QueueFilter, nowMs int64) QueueView {
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	var queued, leased, waiting []*taskRec
	for _, t := range s.tasks {
		switch t.State {
		case TaskQueued:
			queued = append(queued, t)
		case TaskInFlight:
			leased = append(leased, t)
		case TaskWaiting:
			waiting = append(waiting, t)
		}
	}
	sort.Slice(queued, func(i, j int) bool { return queued[i].SendSeq < queued[j].SendSeq })
	sort.Slice(leased, func(i, j int) bool {
		a, b := leased[i], leased[j]
		return a.LeasedAtMs < b.LeasedAtMs || a.LeasedAtMs == b.LeasedAtMs && a.SendSeq < b.SendSeq
	})
	sort.Slice(waiting, func(i, j int) bool {
		a, b := waiting[i].WaitingSince(), waiting[j].WaitingSince()
		return a < b || a == b && waiting[i].SendSeq < waiting[j].SendSeq
	})
	keep := func(t *taskRec) bool {
		if f.MinLeaseAgeMs != nil && (t.State != TaskInFlight || nowMs-t.LeasedAtMs < *f.MinLeaseAgeMs) {
			return false
		}
		if f.DeadlineWithinMs != nil && (t.Task.DeadlineMs == nil || *t.Task.DeadlineMs > nowMs+*f.DeadlineWithinMs) {
			return false
		}
		return f.Agent == "" || t.Task.Recipient == f.Agent || t.LeasedTo == f.Agent
	}
	view := QueueView{Tasks: []QueueEntry{}, Results: []PendingResult{}}
	var parts [][]*taskRec
	if f.State == "" || f.State == TaskQueued {
		parts = append(parts, queued)
	}
	if f.State == "" || f.State == TaskInFlight {
		parts = append(parts, leased)
	}
	if f.State == "" || f.State == TaskWaiting {
		parts = append(parts, waiting)
	}
	for _, part := range parts {
		for _, t := range part {
			if len(view.Tasks) < limit && keep(t) {
				view.Tasks = append(view.Tasks, t.entry())
			}
		}
	}
	var rs []*resultRec
	for _, r := range s.results {
		rs = append(rs, r)
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].seq < rs[j].seq })
	for _, r := range rs {
		if len(view.Results) < limit && (f.Agent == "" || r.Sender == f.Agent || r.Recipient == f.Agent) {
			view.Results = append(view.Results, r.PendingResult)
		}
	}
	return view
}

// Query lists what sorting everything would, for every filter, on a
// mailbox that sends, leases (some on another's behalf, some at the same
// millisecond), answers, requeues, moves, cancels and drains at random,
// and after a snapshot round trip.
func TestQueryMatchesAFullSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 26))
	b := newBox(t)
	agents := []string{"a@x", "b@x", "c@x"}
	for step := range 3000 {
		switch r := rng.IntN(100); {
		case r < 35:
			b.send(agents[rng.IntN(3)], agents[rng.IntN(3)])
		case r < 60:
			to := agents[rng.IntN(3)]
			holder := to
			if rng.IntN(5) == 0 {
				holder = agents[rng.IntN(3)]
			}
			if ev, ok := b.s.DecideLease(to, holder, b.id(), b.now); ok {
				b.apply(ev)
			}
			if rng.IntN(2) == 0 {
				b.now -= 10 // the next lease in the same millisecond
			}
		case r < 72:
			if in := b.s.InFlightTasks(); len(in) > 0 {
				e := in[rng.IntN(len(in))]
				if err := b.post(e.Task.ID, e.LeaseID); err != nil {
					t.Fatal(err)
				}
			}
		case r < 80:
			if in := b.s.InFlightTasks(); len(in) > 0 {
				e := in[rng.IntN(len(in))]
				if _, err := b.repair(e.Task.ID, e.LeaseID, ActionRequeue); err != nil {
					t.Fatal(err)
				}
			}
		case r < 88:
			if q := b.s.QueuedTasks(); len(q) > 0 {
				e := q[rng.IntN(len(q))]
				to := agents[rng.IntN(3)]
				if to == e.Task.Recipient {
					to = ""
				}
				if _, err := b.queuedRepair(e.Task.ID, e.Task.Recipient, to); err != nil {
					t.Fatal(err)
				}
			}
		default:
			b.drain(agents[rng.IntN(3)])
		}
		if step%100 != 99 {
			continue
		}
		if step == 1999 {
			b.roundTrip()
			restored := NewState()
			if err := restored.Restore(b.s.Snapshot(0)); err != nil {
				t.Fatal(err)
			}
			b.s = restored
		}
		for _, f := range queryFilters(b.now) {
			if got, want := b.s.Query(f, b.now), queryBySorting(b.s, f, b.now); !reflect.DeepEqual(got, want) {
				t.Fatalf("step %d, filter %+v:\n got %d tasks %d results %+v\nwant %d tasks %d results %+v", step, describe(f), len(got.Tasks), len(got.Results), got, len(want.Tasks), len(want.Results), want)
			}
		}
	}
}

func queryFilters(nowMs int64) []QueueFilter {
	ages := []int64{0, 500, 5_000, 50_000}
	var fs []QueueFilter
	for _, limit := range []int{1, 7, 100, MaxLimit} {
		for _, state := range []string{"", TaskQueued, TaskInFlight, TaskWaiting} {
			for _, agent := range []string{"", "a@x", "c@x", "nobody@x"} {
				fs = append(fs, QueueFilter{Limit: limit, State: state, Agent: agent})
				for i := range ages {
					fs = append(fs, QueueFilter{Limit: limit, State: state, Agent: agent, MinLeaseAgeMs: &ages[i]})
				}
			}
		}
	}
	return fs
}

func describe(f QueueFilter) string {
	age := "-"
	if f.MinLeaseAgeMs != nil {
		age = fmt.Sprint(*f.MinLeaseAgeMs)
	}
	return fmt.Sprintf("limit %d state %q agent %q min age %s", f.Limit, f.State, f.Agent, age)
}

// Ascend walks a heap in order and stops when told, at every size.
func TestHeapAscend(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := range 70 {
		h := newIndexedHeap(func(a, b *taskRec) bool { return a.SendSeq < b.SendSeq }, func(t *taskRec) *int { return &t.gidx })
		var want []uint64
		for range n {
			seq := rng.Uint64N(1000)
			h.Push(&taskRec{TaskRecord: TaskRecord{SendSeq: seq}})
			want = append(want, seq)
		}
		sort.Slice(want, func(i, j int) bool { return want[i] < want[j] })
		for stop := 0; stop <= n; stop++ {
			var got []uint64
			h.Ascend(func(t *taskRec) bool {
				got = append(got, t.SendSeq)
				return len(got) < stop
			})
			if wantN := min(max(stop, 1), n); len(got) != wantN || !reflect.DeepEqual(got, want[:wantN]) {
				t.Fatalf("n %d stop %d: got %v, want %v", n, stop, got, want[:wantN])
			}
		}
	}
}
