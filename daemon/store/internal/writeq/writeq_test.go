package writeq

import (
	"errors"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/daemon/store"
	"github.com/mailroom/mailroom/mailbox"
)

func ev(seq uint64, unit int) mailbox.Event {
	return mailbox.Event{Seq: seq, Type: mailbox.EventTaskSent, Unit: unit}
}

// record collects dones by name.
type record map[string]error

func (r record) done(name string) func(error) { return func(err error) { r[name] = err } }

func TestSeqsAreCheckedAndRefusalsKeepTheSeq(t *testing.T) {
	q := New[string]("the log in test", 1)
	got := record{}
	appendOne(q, ev(1, 0), "one", nil, got.done("1"))
	appendOne(q, ev(3, 0), "gap", nil, got.done("gap"))
	appendOne(q, ev(2, 0), "bad", errors.New("does not encode"), got.done("unencodable"))
	appendOne(q, ev(2, 0), "two", nil, got.done("2"))
	batch, last := q.Take(100)
	if last || len(batch) != 4 {
		t.Fatalf("Take = %d items, last %v; want 4, false", len(batch), last)
	}
	Answer(batch, nil)
	if got["1"] != nil || got["2"] != nil {
		t.Errorf("accepted events got %v, %v", got["1"], got["2"])
	}
	if err := got["gap"]; err == nil || !strings.Contains(err.Error(), "the log in test expects seq 2 next") {
		t.Errorf("a gap: %v", err)
	}
	if err := got["unencodable"]; err == nil || !strings.Contains(err.Error(), "cannot be logged: does not encode") {
		t.Errorf("an unencodable event: %v", err)
	}
}

func TestAUnitIsRefusedWholeAndNeverSplit(t *testing.T) {
	q := New[int]("the log in test", 1)
	got := record{}
	q.Append([]mailbox.Event{ev(1, 3), ev(2, 0), ev(3, 2)}, []int{1, 2, 3}, make([]error, 3), got.done("bad unit"))
	q.Append([]mailbox.Event{ev(1, 3), ev(2, 0), ev(3, 0)}, []int{1, 2, 3}, make([]error, 3), got.done("unit"))
	appendOne(q, ev(4, 0), 4, nil, got.done("4"))
	// At most 2 writes a batch, but a unit is never cut.
	batch, _ := q.Take(2)
	var written []int
	for _, it := range batch {
		if it.Err == nil {
			written = append(written, it.P)
		}
	}
	if len(batch) != 4 || len(written) != 3 {
		t.Fatalf("first batch: %d items, written %v; want the refused unit's one item and the whole unit", len(batch), written)
	}
	Answer(batch, nil)
	if err := got["bad unit"]; err == nil || !strings.Contains(err.Error(), "says unit 2, expected 0") {
		t.Errorf("the bad unit: %v", err)
	}
	if got["unit"] != nil {
		t.Errorf("the unit: %v", got["unit"])
	}
	batch, _ = q.Take(2)
	if len(batch) != 1 || batch[0].P != 4 {
		t.Fatalf("second batch: %+v, want event 4", batch)
	}
}

func TestAControlStepRunsBetweenBatches(t *testing.T) {
	q := New[int]("the log in test", 1)
	appendOne(q, ev(1, 0), 1, nil, nil)
	q.Control(func() {})
	appendOne(q, ev(2, 0), 2, nil, nil)
	for i, want := range []string{"event 1", "control", "event 2"} {
		batch, _ := q.Take(100)
		if len(batch) != 1 {
			t.Fatalf("batch %d has %d items, want 1 (%s)", i, len(batch), want)
		}
		if (batch[0].Ctl != nil) != (want == "control") {
			t.Errorf("batch %d is %+v, want the %s", i, batch[0], want)
		}
	}
}

func TestFailedModeRefusesUntilResume(t *testing.T) {
	q := New[int]("the log in test", 1)
	got := record{}
	appendOne(q, ev(1, 0), 1, nil, got.done("queued"))
	boom := errors.New("disk full")
	q.Fail(boom)
	appendOne(q, ev(2, 0), 2, nil, got.done("after")) // answered at once
	if !errors.Is(got["after"], boom) {
		t.Errorf("an append while failed: %v, want the failure", got["after"])
	}
	ran := false
	reset := make(chan error, 1)
	go func() { reset <- q.Reset(func() error { ran = true; q.Resume(1); return nil }) }()
	// The writer serves the queue: the refused event, then Reset's step.
	for served := 0; served < 2; {
		batch, _ := q.Take(100)
		for _, it := range batch {
			if it.Ctl != nil {
				it.Ctl()
			}
		}
		if len(batch) > 0 && batch[0].Ctl == nil {
			Answer(batch, nil)
		}
		served += len(batch)
	}
	if err := <-reset; err != nil || !ran {
		t.Fatalf("Reset = %v (ran %v)", err, ran)
	}
	if !errors.Is(got["queued"], boom) {
		t.Errorf("the event queued before the failure: %v, want the failure", got["queued"])
	}
	if q.Failed() != nil {
		t.Errorf("still failed after Resume")
	}
	// Without a failure Reset does nothing.
	if err := q.Reset(func() error { return errors.New("must not run") }); err != nil {
		t.Errorf("Reset without a failure: %v", err)
	}
}

func TestClose(t *testing.T) {
	q := New[int]("the log in test", 1)
	appendOne(q, ev(1, 0), 1, nil, nil)
	if q.Close() {
		t.Error("the first Close says the queue was closed already")
	}
	if batch, last := q.Take(100); len(batch) != 1 || !last {
		t.Errorf("after Close the queued event is still served, and last: %d items, last %v", len(batch), last)
	}
	got := record{}
	appendOne(q, ev(2, 0), 2, nil, got.done("late"))
	if !errors.Is(got["late"], store.ErrClosed) {
		t.Errorf("an append after Close: %v", got["late"])
	}
	if q.Control(func() {}) {
		t.Error("a control step was queued after Close")
	}
	if err := q.Reset(func() error { return nil }); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Reset after Close: %v", err)
	}
}

// appendOne appends a unit of one event, as a store appends a single one.
func appendOne[P any](q *Queue[P], e mailbox.Event, p P, encErr error, done func(error)) {
	q.Append([]mailbox.Event{e}, []P{p}, []error{encErr}, done)
}
