package storetest

import (
	"testing"

	"github.com/mailroom/mailroom/mailbox"
)

// asUnit marks evs as one unit, as the engine does for a batch request.
func asUnit(evs []mailbox.Event) []mailbox.Event {
	out := append([]mailbox.Event(nil), evs...)
	for i := range out {
		out[i].Encoded, out[i].Unit = nil, 0
	}
	if len(out) > 1 {
		out[0].Unit = len(out)
	}
	return out
}

// appendUnit appends a unit and waits for its one answer.
func appendUnit(tb testing.TB, s interface {
	AppendUnit([]mailbox.Event, func(error))
}, evs []mailbox.Event) error {
	tb.Helper()
	done := make(chan error, 1)
	s.AppendUnit(evs, func(err error) { done <- err })
	return await(tb, done, "a unit's done callback")
}

// Units of every size, between single appends, come back whole and in
// order, with the first event of each saying its unit's size.
func testUnitsRoundTrip(t *testing.T, h *harness) {
	w := NewWorkload(11)
	evs := w.Events(t, 60)
	s, _, _ := h.start(t)
	var want []mailbox.Event
	for i, size := 0, 1; i < len(evs); size = size%7 + 1 {
		unit := asUnit(evs[i:min(i+size, len(evs))])
		if err := appendUnit(t, s, unit); err != nil {
			t.Fatalf("AppendUnit(%d events from seq %d): %v", len(unit), unit[0].Seq, err)
		}
		want = append(want, unit...)
		i += len(unit)
		if i < len(evs) {
			AppendAll(t, s, evs[i])
			want = append(want, evs[i])
			i++
		}
	}
	if got := s.LastSeq(); got != 60 {
		t.Fatalf("LastSeq() = %d, want 60", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	_, st, loaded := h.start(t)
	SameEvents(t, loaded, want)
	SameState(t, st, w.State)
}

// A unit the store refuses (a gap in its seqs, a missing unit size)
// writes nothing and leaves the next seq expected.
func testRefusedUnit(t *testing.T, h *harness) {
	w := NewWorkload(12)
	evs := w.Events(t, 4)
	s, _, _ := h.start(t)
	gap := asUnit([]mailbox.Event{evs[0], evs[2]})
	if err := appendUnit(t, s, gap); err == nil {
		t.Fatal("a unit with a gap in its seqs was accepted")
	}
	unmarked := asUnit(evs[0:2])
	unmarked[0].Unit = 0
	if err := appendUnit(t, s, unmarked); err == nil {
		t.Fatal("a unit whose first event does not say its size was accepted")
	}
	if got := s.LastSeq(); got != 0 {
		t.Fatalf("LastSeq() = %d after refused units, want 0", got)
	}
	if err := appendUnit(t, s, asUnit(evs)); err != nil {
		t.Fatalf("the unit at the expected seq: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	_, _, loaded := h.start(t)
	SameEvents(t, loaded, asUnit(evs))
}
