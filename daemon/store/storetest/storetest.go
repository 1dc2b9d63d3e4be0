// Package storetest is the conformance suite every store.Store backend runs.
// A backend opts in with one test:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T, dir string) store.Store {
//			s, err := mybackend.Open(dir)
//			if err != nil {
//				t.Fatal(err)
//			}
//			return s
//		})
//	}
//
// The suite drives the store the way the engine does (decide on a State,
// Append under one lock, apply to the committed state in done) with
// realistic traffic from Workload, and checks what a restart gives back
// against the State those events made.
package storetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mailroom/mailroom/daemon/store"
	"github.com/mailroom/mailroom/mailbox"
)

// Opener opens the backend under test on dir. The suite calls it with a
// fresh t.TempDir() for every test, and again with the same dir to test a
// restart, always after closing the store it opened there before; it
// closes every store it opens, so Close must be idempotent. A backend that
// keeps no files (PostgreSQL) treats dir as the name of an isolated
// database or schema: the same dir must reach the same data.
type Opener func(t *testing.T, dir string) store.Store

// Run runs every conformance test against the backend open returns.
func Run(t *testing.T, open Opener) {
	t.Helper()
	for _, c := range suite {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, &harness{open: open, dir: t.TempDir()})
		})
	}
}

var suite = []struct {
	name string
	run  func(*testing.T, *harness)
}{
	{"FreshStoreIsEmpty", testFreshStoreIsEmpty},
	{"AppendThenLoadRoundTrips", testAppendThenLoadRoundTrips},
	{"DoneIsCalledOnceInSeqOrderAfterDurability", testDoneOnceInOrder},
	{"SeqMustFollowTheLastAccepted", testSeqMustFollow},
	{"EventsSince", testEventsSince},
	{"CompactThenReloadGivesTheSameState", testCompactRoundTrip},
	{"CompactEdgeCases", testCompactEdgeCases},
	{"CompactWhileAppending", testCompactWhileAppending},
	{"ConcurrentAppendersAllDurable", testConcurrentAppenders},
	{"CloseAnswersEveryPendingAppend", testCloseAnswersPending},
	{"ClosedStoreRefuses", testClosedStoreRefuses},
	{"ReopenContinuesTheLog", testReopenContinues},
	{"Stats", testStats},
	{"UnitsRoundTrip", testUnitsRoundTrip},
	{"ARefusedUnitWritesNothing", testRefusedUnit},
}

// waitLimit bounds every wait for the store, so that a lost callback fails
// the test instead of hanging it.
const waitLimit = 30 * time.Second

type harness struct {
	open Opener
	dir  string
}

// start opens the store on the harness's dir and replays it into a State,
// checking on the way that the snapshot, if any, comes first.
func (h *harness) start(t *testing.T) (store.Store, *mailbox.State, []mailbox.Event) {
	t.Helper()
	s := h.reopen(t)
	st, evs := LoadState(t, s)
	return s, st, evs
}

// reopen opens the store on the harness's dir without loading it.
func (h *harness) reopen(t *testing.T) store.Store {
	t.Helper()
	s := h.open(t, h.dir)
	t.Cleanup(func() { s.Close() })
	return s
}

// LoadState runs s.Load into a fresh State and returns it with the events
// after the snapshot. It fails the test if the snapshot event does not come
// first or the events do not apply in order.
func LoadState(tb testing.TB, s store.Store) (*mailbox.State, []mailbox.Event) {
	tb.Helper()
	st := mailbox.NewState()
	var evs []mailbox.Event
	first := true
	err := s.Load(func(ev mailbox.Event) error {
		defer func() { first = false }()
		if ev.Type == mailbox.EventSnapshot {
			if !first {
				return fmt.Errorf("snapshot event at seq %d after other events", ev.Seq)
			}
			if ev.Snapshot == nil || ev.Snapshot.Seq != ev.Seq {
				return fmt.Errorf("snapshot event at seq %d carries no snapshot of that seq", ev.Seq)
			}
		} else {
			evs = append(evs, ev)
		}
		return st.Apply(ev)
	})
	if err != nil {
		tb.Fatalf("Load: %v", err)
	}
	return st, evs
}

// await receives from ch or fails the test after waitLimit.
func await[T any](tb testing.TB, ch <-chan T, what string) T {
	tb.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitLimit):
		tb.Fatalf("no %s after %v", what, waitLimit)
		panic("unreachable")
	}
}

// AppendAll appends evs without waiting in between (so they share syncs),
// then waits until every one is durable.
func AppendAll(tb testing.TB, s store.Store, evs ...mailbox.Event) {
	tb.Helper()
	errs := appendAsync(s, evs)
	for _, ev := range evs {
		if err := await(tb, errs, "done callback"); err != nil {
			tb.Fatalf("Append(seq %d): %v", ev.Seq, err)
		}
	}
}

func appendAsync(s store.Store, evs []mailbox.Event) <-chan error {
	errs := make(chan error, len(evs))
	for _, ev := range evs {
		s.AppendUnit([]mailbox.Event{ev}, func(err error) { errs <- err })
	}
	return errs
}

// SameState fails the test unless got and want have identical snapshots.
func SameState(tb testing.TB, got, want *mailbox.State) {
	tb.Helper()
	sameJSON(tb, "state", got.Snapshot(0), want.Snapshot(0))
}

// SameEvents fails the test unless got and want encode identically.
func SameEvents(tb testing.TB, got, want []mailbox.Event) {
	tb.Helper()
	if len(got) != len(want) {
		tb.Fatalf("got %d events (%s), want %d (%s)", len(got), seqRange(got), len(want), seqRange(want))
	}
	if len(want) == 0 {
		return
	}
	sameJSON(tb, "events", got, want)
}

func seqRange(evs []mailbox.Event) string {
	if len(evs) == 0 {
		return "none"
	}
	return fmt.Sprintf("seq %d..%d", evs[0].Seq, evs[len(evs)-1].Seq)
}

func sameJSON(tb testing.TB, what string, got, want any) {
	tb.Helper()
	g, err := json.Marshal(got)
	if err != nil {
		tb.Fatal(err)
	}
	w, err := json.Marshal(want)
	if err != nil {
		tb.Fatal(err)
	}
	if bytes.Equal(g, w) {
		return
	}
	i := 0
	for i < len(g) && i < len(w) && g[i] == w[i] {
		i++
	}
	from := max(0, i-120)
	tb.Fatalf("%s differ at byte %d:\n got: …%s…\nwant: …%s…", what, i, g[from:min(len(g), i+120)], w[from:min(len(w), i+120)])
}

// mustCompact compacts s with snapshot and fails the test on error.
func mustCompact(tb testing.TB, s store.Store, snapshot func() *mailbox.Snapshot) mailbox.CompactOutcome {
	tb.Helper()
	out, err := s.Compact(snapshot)
	if err != nil {
		tb.Fatalf("Compact: %v", err)
	}
	return out
}

// wantEvents fails the test unless EventsSince(after, limit) gives want.
func wantEvents(tb testing.TB, s store.Store, after uint64, limit int, want []mailbox.Event) {
	tb.Helper()
	got, err := s.EventsSince(after, limit)
	if err != nil {
		tb.Fatalf("EventsSince(%d, %d): %v", after, limit, err)
	}
	if len(got) != len(want) {
		tb.Fatalf("EventsSince(%d, %d) = %d events (%s), want %d (%s)", after, limit, len(got), seqRange(got), len(want), seqRange(want))
	}
	if len(want) == 0 {
		return
	}
	sameJSON(tb, fmt.Sprintf("EventsSince(%d, %d)", after, limit), got, want)
}

func wantCompacted(tb testing.TB, s store.Store, after uint64) {
	tb.Helper()
	if got, err := s.EventsSince(after, 10); !errors.Is(err, store.ErrCompacted) {
		tb.Fatalf("EventsSince(%d, 10) = %d events, %v; want ErrCompacted", after, len(got), err)
	}
}
