package storetest

import (
	"sync"
	"testing"
)

func testCompactRoundTrip(t *testing.T, h *harness) {
	s, st, _ := h.start(t)
	e := newEngine(t, s, NewWorkload(7), st)
	e.run(400)

	out := mustCompact(t, s, e.snapshot)
	if out.Seq != 400 || s.LastSeq() != 400 {
		t.Fatalf("Compact at seq 400 gave outcome seq %d, LastSeq %d", out.Seq, s.LastSeq())
	}
	stats := s.Stats()
	if stats.Compactions != 1 || stats.LogBytes != 0 || stats.SnapshotBytes <= 0 {
		t.Errorf("after compacting everything: Compactions %d, LogBytes %d, SnapshotBytes %d; want 1, 0, > 0",
			stats.Compactions, stats.LogBytes, stats.SnapshotBytes)
	}
	wantEvents(t, s, 400, 10, nil)
	wantCompacted(t, s, 399)

	e.run(150)
	mustCompact(t, s, e.snapshot)
	tail := e.run(100)

	s.Close()
	s, loaded, evs := h.start(t)
	SameEvents(t, evs, tail)
	SameState(t, loaded, e.w.State)
	SameState(t, loaded, e.state())
	if got := s.LastSeq(); got != 650 {
		t.Errorf("LastSeq() = %d, want 650", got)
	}
	wantEvents(t, s, 550, 1000, tail)
}

func testCompactEdgeCases(t *testing.T, h *harness) {
	cases := []struct {
		name   string
		before int // events before the compactions
		times  int // compactions in a row, nothing appended in between
		after  int // events after them
	}{
		{"an empty store", 0, 1, 5},
		{"twice in a row", 30, 2, 5},
		{"with nothing appended after", 30, 1, 0},
		{"an empty store, nothing after", 0, 1, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := &harness{open: h.open, dir: t.TempDir()}
			s, st, _ := h.start(t)
			e := newEngine(t, s, NewWorkload(8), st)
			e.run(c.before)
			for range c.times {
				if out := mustCompact(t, s, e.snapshot); out.Seq != uint64(c.before) {
					t.Fatalf("Compact gave seq %d, want %d", out.Seq, c.before)
				}
			}
			tail := e.run(c.after)
			s.Close()

			s, loaded, evs := h.start(t)
			SameEvents(t, evs, tail)
			SameState(t, loaded, e.w.State)
			if got, want := s.LastSeq(), uint64(c.before+c.after); got != want {
				t.Fatalf("LastSeq() = %d, want %d", got, want)
			}
			// The log continues at LastSeq()+1.
			e = newEngine(t, s, e.w, loaded)
			e.run(3)
			s.Close()
			_, loaded, _ = h.start(t)
			SameState(t, loaded, e.w.State)
		})
	}
}

func testCompactWhileAppending(t *testing.T, h *harness) {
	const appenders, each, compactors, compactions = 6, 50, 2, 4
	s, st, _ := h.start(t)
	e := newEngine(t, s, NewWorkload(9), st)

	var wg sync.WaitGroup
	e.appendConcurrently(t, &wg, appenders, each)
	var cwg sync.WaitGroup
	var mu sync.Mutex
	var seqs []uint64
	for range compactors {
		cwg.Add(1)
		go func() {
			defer cwg.Done()
			for range compactions {
				out, err := s.Compact(e.snapshot)
				if err != nil {
					t.Errorf("Compact: %v", err)
					return
				}
				mu.Lock()
				seqs = append(seqs, out.Seq)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	cwg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if got := s.Stats().Compactions; got != compactors*compactions {
		t.Errorf("Stats().Compactions = %d, want %d", got, compactors*compactions)
	}
	last := s.LastSeq()
	for _, seq := range seqs {
		if seq > last {
			t.Errorf("a compaction reports seq %d, beyond the last durable seq %d", seq, last)
		}
	}
	s.Close()
	_, loaded, _ := h.start(t)
	SameState(t, loaded, e.w.State)
	if loaded.Seq != appenders*each {
		t.Fatalf("reload reaches seq %d, want %d", loaded.Seq, appenders*each)
	}
}
