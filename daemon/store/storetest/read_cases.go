package storetest

import (
	"testing"

	"github.com/mailroom/mailroom/mailbox"
)

// sinceRow asks EventsSince(after, limit) and wants events[from:to].
type sinceRow struct {
	after    uint64
	limit    int
	from, to int
}

func testEventsSince(t *testing.T, h *harness) {
	w := NewWorkload(6)
	evs := w.Events(t, 300)
	s, _, _ := h.start(t)
	AppendAll(t, s, evs...)

	before := []sinceRow{
		{0, 10, 0, 10},
		{0, 1000, 0, 300},
		{1, 1, 1, 2},
		{63, 2, 63, 65},
		{64, 64, 64, 128},
		{150, 7, 150, 157},
		{299, 5, 299, 300},
		{300, 5, 0, 0},  // nothing after the last seq
		{1000, 5, 0, 0}, // nor beyond it
		{0, 0, 0, 0},    // a zero limit gives nothing
	}
	for _, r := range before {
		wantEvents(t, s, r.after, r.limit, evs[r.from:r.to])
	}

	// After compaction at 300, only what follows the snapshot is in the log.
	mustCompact(t, s, func() *mailbox.Snapshot { return w.State.Snapshot(snapshotAtMs) })
	more := w.Events(t, 40)
	AppendAll(t, s, more...)
	after := []sinceRow{
		{300, 5, 0, 5},
		{300, 100, 0, 40},
		{330, 100, 30, 40},
		{340, 10, 0, 0},
	}
	check := func(t *testing.T) {
		t.Helper()
		for _, r := range after {
			wantEvents(t, s, r.after, r.limit, more[r.from:r.to])
		}
		for _, a := range []uint64{0, 1, 150, 298, 299} {
			wantCompacted(t, s, a)
		}
	}
	check(t)

	// A restart must find the same events (and rebuild whatever index it
	// keeps).
	s.Close()
	s, _, _ = h.start(t)
	check(t)
}
