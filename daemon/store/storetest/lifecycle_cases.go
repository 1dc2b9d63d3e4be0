package storetest

import (
	"errors"
	"testing"

	"github.com/mailroom/mailroom/daemon/store"
	"github.com/mailroom/mailroom/mailbox"
)

func testClosedStoreRefuses(t *testing.T, h *harness) {
	w := NewWorkload(10)
	s, _, _ := h.start(t)
	AppendAll(t, s, w.Events(t, 3)...)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v, want nil", err)
	}

	done := make(chan error, 1)
	s.AppendUnit([]mailbox.Event{w.Next(t)}, func(err error) { done <- err })
	if err := await(t, done, "done callback after Close"); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Append after Close: done(%v), want ErrClosed", err)
	}
	if _, err := s.Compact(func() *mailbox.Snapshot { return w.State.Snapshot(0) }); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Compact after Close: %v, want ErrClosed", err)
	}
	if err := s.Reset(); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Reset after Close: %v, want ErrClosed", err)
	}
	if _, err := s.EventsSince(0, 10); !errors.Is(err, store.ErrClosed) {
		t.Errorf("EventsSince after Close: %v, want ErrClosed", err)
	}
	if err := s.Load(func(mailbox.Event) error { return nil }); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Load after Close: %v, want ErrClosed", err)
	}
	if got := s.LastSeq(); got != 3 {
		t.Errorf("LastSeq() after Close = %d, want 3", got)
	}
}

func testReopenContinues(t *testing.T, h *harness) {
	w := NewWorkload(11)
	s, _, _ := h.start(t)
	AppendAll(t, s, w.Events(t, 100)...)
	s.Close()

	// The next seq after a restart is LastSeq()+1.
	s, st, _ := h.start(t)
	if got := s.LastSeq(); got != 100 {
		t.Fatalf("LastSeq() after reopening = %d, want 100", got)
	}
	SameState(t, st, w.State)
	AppendAll(t, s, w.Events(t, 50)...)
	// Reset without a failure changes nothing.
	if err := s.Reset(); err != nil {
		t.Fatalf("Reset without a failure: %v", err)
	}
	AppendAll(t, s, w.Events(t, 5)...)
	mustCompact(t, s, func() *mailbox.Snapshot { return w.State.Snapshot(snapshotAtMs) })
	s.Close()

	// With nothing after the snapshot, Load gives just the snapshot and
	// LastSeq is its seq.
	s = h.reopen(t)
	var got []mailbox.Event
	if err := s.Load(func(ev mailbox.Event) error { got = append(got, ev); return nil }); err != nil {
		t.Fatalf("Load: %v", err)
	}
	if len(got) != 1 || got[0].Type != mailbox.EventSnapshot || got[0].Seq != 155 || got[0].AtMs != snapshotAtMs || got[0].Snapshot == nil {
		t.Fatalf("Load after compacting everything gave %d events, first %+v; want only the snapshot at 155 stamped %d", len(got), first(got), snapshotAtMs)
	}
	replayed := mailbox.NewState()
	if err := replayed.Apply(got[0]); err != nil {
		t.Fatal(err)
	}
	SameState(t, replayed, w.State)
	if got := s.LastSeq(); got != 155 {
		t.Fatalf("LastSeq() = %d, want the snapshot's 155", got)
	}
	AppendAll(t, s, w.Events(t, 5)...)
	s.Close()

	_, st, evs := h.start(t)
	if len(evs) != 5 {
		t.Errorf("reload gives %d events after the snapshot, want 5", len(evs))
	}
	SameState(t, st, w.State)
}

func first(evs []mailbox.Event) any {
	if len(evs) == 0 {
		return nil
	}
	return evs[0]
}

func testStats(t *testing.T, h *harness) {
	w := NewWorkload(12)
	s, _, _ := h.start(t)
	for range 4 {
		AppendAll(t, s, w.Events(t, 50)...)
	}
	st := s.Stats()
	if st.LastSeq != 200 || st.EventsAppended != 200 {
		t.Errorf("LastSeq %d, EventsAppended %d; want 200, 200", st.LastSeq, st.EventsAppended)
	}
	if st.Batches < 4 || st.Batches > 200 {
		t.Errorf("Batches = %d, want between 4 (one per wave) and 200 (one per event)", st.Batches)
	}
	if st.LogBytes <= 0 || st.SnapshotBytes != 0 || st.WriteErrors != 0 || st.Compactions != 0 {
		t.Errorf("LogBytes %d, SnapshotBytes %d, WriteErrors %d, Compactions %d; want > 0, 0, 0, 0", st.LogBytes, st.SnapshotBytes, st.WriteErrors, st.Compactions)
	}

	mustCompact(t, s, func() *mailbox.Snapshot { return w.State.Snapshot(snapshotAtMs) })
	st = s.Stats()
	if st.Compactions != 1 || st.SnapshotBytes <= 0 || st.LogBytes != 0 {
		t.Errorf("after Compact: Compactions %d, SnapshotBytes %d, LogBytes %d; want 1, > 0, 0", st.Compactions, st.SnapshotBytes, st.LogBytes)
	}
	AppendAll(t, s, w.Events(t, 10)...)
	if st := s.Stats(); st.LogBytes <= 0 || st.EventsAppended != 210 {
		t.Errorf("after 10 more events: LogBytes %d, EventsAppended %d; want > 0, 210", st.LogBytes, st.EventsAppended)
	}
}
