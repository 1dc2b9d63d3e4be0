package storetest

import (
	"slices"
	"sync"
	"testing"

	"github.com/mailroom/mailroom/mailbox"
)

func testFreshStoreIsEmpty(t *testing.T, h *harness) {
	s, st, evs := h.start(t)
	if st.Seq != 0 || len(evs) != 0 {
		t.Fatalf("fresh store loads %d events up to seq %d, want none", len(evs), st.Seq)
	}
	if got := s.LastSeq(); got != 0 {
		t.Errorf("LastSeq() = %d, want 0", got)
	}
	wantEvents(t, s, 0, 10, nil)
	stats := s.Stats()
	if stats.LastSeq != 0 || stats.EventsAppended != 0 || stats.Batches != 0 {
		t.Errorf("fresh Stats() = %+v, want zero figures", stats)
	}
}

func testAppendThenLoadRoundTrips(t *testing.T, h *harness) {
	w := NewWorkload(1)
	evs := w.Events(t, 500)
	s, _, _ := h.start(t)
	AppendAll(t, s, evs...)
	if got := s.LastSeq(); got != 500 {
		t.Fatalf("LastSeq() = %d, want 500", got)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	s, st, loaded := h.start(t)
	SameEvents(t, loaded, evs)
	SameState(t, st, w.State)
	if got := s.LastSeq(); got != 500 {
		t.Errorf("LastSeq() after reopening = %d, want 500", got)
	}
}

func testDoneOnceInOrder(t *testing.T, h *harness) {
	s, _, _ := h.start(t)
	evs := NewWorkload(2).Events(t, 300)
	var (
		mu      sync.Mutex
		order   []uint64
		allDone = make(chan struct{})
	)
	for _, ev := range evs {
		s.AppendUnit([]mailbox.Event{ev}, func(err error) {
			if err != nil {
				t.Errorf("done(seq %d) = %v, want nil", ev.Seq, err)
			}
			// done(nil) promises durability, which LastSeq reports.
			if last := s.Stats().LastSeq; last < ev.Seq {
				t.Errorf("done(seq %d) called while Stats().LastSeq = %d", ev.Seq, last)
			}
			mu.Lock()
			defer mu.Unlock()
			order = append(order, ev.Seq)
			if len(order) == len(evs) {
				close(allDone)
			}
		})
	}
	await(t, allDone, "last done callback")
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := make([]uint64, len(evs))
	for i := range want {
		want[i] = uint64(i + 1)
	}
	if !slices.Equal(order, want) {
		t.Fatalf("done callbacks ran for seqs %v, want 1..%d once each in order", order, len(evs))
	}
}

func testSeqMustFollow(t *testing.T, h *harness) {
	cases := []struct {
		name     string
		seqs     []uint64 // appended in this order
		accepted []bool
	}{
		{"the first seq must be 1", []uint64{2, 1}, []bool{false, true}},
		{"seq 0 is refused", []uint64{0, 1}, []bool{false, true}},
		{"a repeated seq is refused", []uint64{1, 1, 2}, []bool{true, false, true}},
		{"a gap is refused and can then be filled", []uint64{1, 3, 2, 3}, []bool{true, false, true, true}},
		{"going back is refused", []uint64{1, 2, 3, 2}, []bool{true, true, true, false}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := &harness{open: h.open, dir: t.TempDir()}
			w := NewWorkload(3)
			evs := w.Events(t, 3)
			s, _, _ := h.start(t)
			var appended []mailbox.Event
			for _, seq := range c.seqs {
				ev := evs[max(seq, 1)-1]
				ev.Seq = seq
				appended = append(appended, ev)
			}
			errs := make([]chan error, len(appended))
			for i, ev := range appended {
				errs[i] = make(chan error, 1)
				s.AppendUnit([]mailbox.Event{ev}, func(err error) { errs[i] <- err })
			}
			var want []mailbox.Event
			for i, ch := range errs {
				err := await(t, ch, "done callback")
				if got := err == nil; got != c.accepted[i] {
					t.Errorf("append #%d (seq %d): done(%v), want accepted=%v", i+1, c.seqs[i], err, c.accepted[i])
				}
				if err == nil {
					want = append(want, appended[i])
				}
			}
			if got := s.LastSeq(); got != uint64(len(want)) {
				t.Errorf("LastSeq() = %d, want %d", got, len(want))
			}
			s.Close()
			_, _, loaded := h.start(t)
			SameEvents(t, loaded, want)
		})
	}
}

func testConcurrentAppenders(t *testing.T, h *harness) {
	const appenders, each = 16, 40
	s, st, _ := h.start(t)
	e := newEngine(t, s, NewWorkload(4), st)
	var wg sync.WaitGroup
	e.appendConcurrently(t, &wg, appenders, each)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if got := s.LastSeq(); got != appenders*each {
		t.Fatalf("LastSeq() = %d, want %d", got, appenders*each)
	}
	if got := s.Stats().EventsAppended; got != appenders*each {
		t.Errorf("Stats().EventsAppended = %d, want %d", got, appenders*each)
	}
	s.Close()
	_, loaded, evs := h.start(t)
	if len(evs) != appenders*each {
		t.Fatalf("reload gives %d events, want %d", len(evs), appenders*each)
	}
	SameState(t, loaded, e.w.State)
	SameState(t, loaded, e.state())
}

func testCloseAnswersPending(t *testing.T, h *harness) {
	w := NewWorkload(5)
	evs := w.Events(t, 300)
	s, _, _ := h.start(t)
	var (
		mu      sync.Mutex
		answers int
	)
	for _, ev := range evs {
		s.AppendUnit([]mailbox.Event{ev}, func(err error) {
			if err != nil {
				t.Errorf("done(seq %d) = %v, want nil", ev.Seq, err)
			}
			mu.Lock()
			answers++
			mu.Unlock()
		})
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	mu.Lock()
	got := answers
	mu.Unlock()
	if got != len(evs) {
		t.Fatalf("after Close returned, %d of %d appends were answered", got, len(evs))
	}
	_, st, loaded := h.start(t)
	SameEvents(t, loaded, evs)
	SameState(t, st, w.State)
}
