package storetest

import (
	"sync"
	"testing"

	"github.com/mailroom/mailroom/daemon/store"
	"github.com/mailroom/mailroom/mailbox"
)

// engine drives a store the way the daemon's engine does: it decides each
// event on the workload's state and appends it under one lock (which is
// what assigns seqs), and applies it to the committed state in done, on the
// store's writer. Compaction snapshots the committed state.
type engine struct {
	tb testing.TB
	s  store.Store

	mu sync.Mutex // decisions and the order of Append
	w  *Workload

	cmu       sync.Mutex
	committed *mailbox.State
}

// newEngine continues w on s, whose durable state is committed.
func newEngine(tb testing.TB, s store.Store, w *Workload, committed *mailbox.State) *engine {
	return &engine{tb: tb, s: s, w: w, committed: committed}
}

// step decides and appends the next event; its done's error arrives on the
// returned channel.
func (e *engine) step() (mailbox.Event, <-chan error) {
	done := make(chan error, 1)
	e.mu.Lock()
	defer e.mu.Unlock()
	ev := e.w.Next(e.tb)
	e.s.AppendUnit([]mailbox.Event{ev}, func(err error) {
		if err == nil {
			e.cmu.Lock()
			if aerr := e.committed.Apply(ev); aerr != nil {
				e.tb.Errorf("committed state refuses durable event %d: %v", ev.Seq, aerr)
			}
			e.cmu.Unlock()
		}
		done <- err
	})
	return ev, done
}

// run takes n steps without waiting in between, then waits for all.
func (e *engine) run(n int) []mailbox.Event {
	e.tb.Helper()
	evs := make([]mailbox.Event, n)
	dones := make([]<-chan error, n)
	for i := range n {
		evs[i], dones[i] = e.step()
	}
	for i, d := range dones {
		if err := await(e.tb, d, "done callback"); err != nil {
			e.tb.Fatalf("Append(seq %d): %v", evs[i].Seq, err)
		}
	}
	return evs
}

// snapshot is what the engine hands to Compact.
func (e *engine) snapshot() *mailbox.Snapshot {
	e.cmu.Lock()
	defer e.cmu.Unlock()
	return e.committed.Snapshot(snapshotAtMs)
}

// state returns a copy of the committed state.
func (e *engine) state() *mailbox.State {
	e.cmu.Lock()
	defer e.cmu.Unlock()
	return e.committed.Clone()
}

// snapshotAtMs stamps the suite's snapshots, so that Load can be checked
// to hand back the stamp.
const snapshotAtMs = 1_767_225_600_123

// appendConcurrently starts appenders goroutines on wg that each append
// each events, waiting for every one to be durable before the next, as a
// client waits for its response: only group commit lets them share syncs.
func (e *engine) appendConcurrently(t *testing.T, wg *sync.WaitGroup, appenders, each int) {
	for range appenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				ev, done := e.step()
				if err := await(t, done, "done callback"); err != nil {
					t.Errorf("Append(seq %d): %v", ev.Seq, err)
					return
				}
			}
		}()
	}
}
