// Package writeq is the append queue in front of a store's one writer
// goroutine, shared by every backend so that they all keep the
// store.Store contract the same way: Append checks the seq and queues a
// unit (a single event is a unit of one) without I/O; a unit is never split; control steps (compaction,
// Reset) run between batches in queue order; once a write fails, every
// queued event and every later append is refused until the backend
// resumes.
package writeq

import (
	"fmt"
	"sync"

	"github.com/mailroom/mailroom/daemon/store"
	"github.com/mailroom/mailroom/mailbox"
)

// Item is one entry of the queue: an appended event with what the writer
// writes for it (P: a record line, a row), or a control step.
type Item[P any] struct {
	Seq  uint64
	P    P
	Done func(error)
	// Err, when set, refuses the event: done gets it, nothing is written.
	Err error
	Ctl func()
	// Cont marks an event that continues the unit of the item before it:
	// a batch never ends before it.
	Cont bool
}

// Queue is the append queue. The zero value is not usable: see New.
type Queue[P any] struct {
	where string // "the log in DIR": whose seq a refusal names

	mu      sync.Mutex
	wake    chan struct{}
	items   []Item[P]
	nextSeq uint64 // the seq the next accepted append must carry
	failed  error  // the failure that refuses appends until Resume
	closed  bool
}

// New returns a queue whose next append must carry next. where names the
// log in refusals ("the log in /var/lib/mailroom").
func New[P any](where string, next uint64) *Queue[P] {
	return &Queue[P]{where: where, nextSeq: next, wake: make(chan struct{}, 1)}
}

// Wake is signalled when the queue grows or closes.
func (q *Queue[P]) Wake() <-chan struct{} { return q.wake }

func (q *Queue[P]) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Append queues evs (with ps[i], what the writer writes for evs[i], and
// encErrs[i] when it could not be made) as one unit: together, under one
// lock, so no control step falls between them, and never split across two
// writes. A single event is a unit of one. While the queue is failed or
// closed, done is called before Append returns, as store.Store requires.
// A unit of several that is not one (its first event's Unit, the others',
// consecutive seqs; a single event's Unit is written as it is, so a log's
// events can be appended again one at a time), that holds an event that cannot be encoded, or that does not
// carry the seq expected next is queued as refused, one item standing for
// it: done gets why, in queue order, nothing is written, and the seq stays
// the one expected.
func (q *Queue[P]) Append(evs []mailbox.Event, ps []P, encErrs []error, done func(error)) {
	if done == nil {
		done = func(error) {}
	}
	if len(evs) == 0 {
		done(nil)
		return
	}
	var refused error
	for i, ev := range evs {
		want := 0
		if i == 0 && len(evs) > 1 {
			want = len(evs)
		}
		switch {
		case encErrs[i] != nil:
			refused = fmt.Errorf("event %d (%s) cannot be logged: %w", ev.Seq, ev.Type, encErrs[i])
		case len(evs) > 1 && ev.Unit != want:
			refused = fmt.Errorf("event %d (%s) refused: it is event %d of a unit of %d and says unit %d, expected %d", ev.Seq, ev.Type, i+1, len(evs), ev.Unit, want)
		case ev.Seq != evs[0].Seq+uint64(i):
			refused = fmt.Errorf("event %d (%s) refused: the events of a unit must have consecutive seqs", ev.Seq, ev.Type)
		}
		if refused != nil {
			break
		}
	}

	q.mu.Lock()
	var now error
	switch {
	case q.closed:
		now = store.ErrClosed
	case q.failed != nil:
		now = q.failed
	case refused == nil && evs[0].Seq != q.nextSeq:
		refused = fmt.Errorf("event %d (%s) refused: %s expects seq %d next", evs[0].Seq, evs[0].Type, q.where, q.nextSeq)
	}
	switch {
	case now != nil:
	case refused != nil:
		q.items = append(q.items, Item[P]{Seq: evs[0].Seq, Done: done, Err: refused})
	default:
		q.nextSeq += uint64(len(evs))
		for i, ev := range evs {
			it := Item[P]{Seq: ev.Seq, P: ps[i], Done: nop, Cont: i > 0}
			if i == len(evs)-1 {
				it.Done = done
			}
			q.items = append(q.items, it)
		}
	}
	q.mu.Unlock()
	if now != nil {
		done(now)
		return
	}
	q.signal()
}

func nop(error) {}

// Control queues fn for the writer; false when the queue is closed.
func (q *Queue[P]) Control(fn func()) bool {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return false
	}
	q.items = append(q.items, Item[P]{Ctl: fn})
	q.mu.Unlock()
	q.signal()
	return true
}

// Take returns the next batch without waiting: one control step, or the
// queued events up to the next control step, at most max of them to be
// written (never ending inside a unit). last is true when the queue is
// closed and nothing remains. The batch shares the queue's array: the
// writer clears it when done.
func (q *Queue[P]) Take(max int) (batch []Item[P], last bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	n, writes := 0, 0
	for n < len(q.items) {
		it := &q.items[n]
		if it.Ctl != nil {
			if n == 0 {
				n = 1
			}
			break
		}
		if it.Err == nil {
			if writes >= max && !it.Cont {
				break
			}
			writes++
		}
		n++
	}
	batch = q.items[:n:n]
	q.items = q.items[n:]
	return batch, q.closed && len(q.items) == 0
}

// Answer calls each item's done: its own refusal, or err.
func Answer[P any](batch []Item[P], err error) {
	for i := range batch {
		if e := batch[i].Err; e != nil {
			batch[i].Done(e)
		} else {
			batch[i].Done(err)
		}
	}
}

// Fail puts the queue in failed mode with err (unless it is failed
// already), and refuses every queued event: they were decided on top of
// the failed ones.
func (q *Queue[P]) Fail(err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.failed == nil {
		q.failed = err
	}
	for i := range q.items {
		if q.items[i].Ctl == nil && q.items[i].Err == nil {
			q.items[i].Err = q.failed
		}
	}
}

// Failed is the failure that refuses appends, or nil.
func (q *Queue[P]) Failed() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.failed
}

// Resume lets appends through again; the next must carry next.
func (q *Queue[P]) Resume(next uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.failed = nil
	q.nextSeq = next
}

// Expect sets the seq the next append must carry.
func (q *Queue[P]) Expect(next uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.nextSeq = next
}

// Close refuses every later append and control step; what is queued is
// still served. It reports whether the queue was closed already.
func (q *Queue[P]) Close() (already bool) {
	q.mu.Lock()
	already, q.closed = q.closed, true
	q.mu.Unlock()
	q.signal()
	return already
}

// Closed reports whether Close has run.
func (q *Queue[P]) Closed() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.closed
}

// Reset runs fn on the writer, in queue order, when the queue is failed,
// and returns its result: the backend's way back from a failure. Without
// a failure it does nothing; after Close it returns store.ErrClosed.
func (q *Queue[P]) Reset(fn func() error) error {
	reply := make(chan error, 1)
	q.mu.Lock()
	switch {
	case q.closed:
		q.mu.Unlock()
		return store.ErrClosed
	case q.failed == nil:
		q.mu.Unlock()
		return nil
	}
	q.items = append(q.items, Item[P]{Ctl: func() { reply <- fn() }})
	q.mu.Unlock()
	q.signal()
	return <-reply
}
