package logstore

import (
	"fmt"
	"time"

	"github.com/mailroom/mailroom/daemon/store"
	"github.com/mailroom/mailroom/mailbox"
)

// item is one entry of the writer's queue: an appended event, or a control
// step (compaction, Reset) that the writer runs between batches, in queue
// order, so that it sees exactly the events appended before it.
type item struct {
	seq  uint64
	line []byte
	done func(error)
	err  error // set when the event was refused: done gets it, nothing is written
	ctl  func()
	// cont marks an event that continues the unit of the item before it:
	// a batch never ends before it.
	cont bool
}

// Append hands ev to the writer and returns without waiting for I/O. done is
// called exactly once: nil once ev is durable, or the reason it never will
// be. Accepted events and those refused for their seq are answered by the
// writer in queue order. While the store is failed (a write failed and
// Reset has not run) or closed, Append calls done itself before returning,
// as the store.Store contract requires, so that after a failure nothing
// decided on top of it can still be queued when the engine resets.
//
// An event that cannot be encoded, or whose encoding replay could not read
// back, is refused like one with the wrong seq: done gets the error, nothing
// is written, and the store is not failed. Nothing decided on top of it can
// be written either, because the seq it held is still the one expected next;
// failing the store instead would let one unreadable value stop every write
// until Reset.
func (s *Store) Append(ev mailbox.Event, done func(error)) {
	if done == nil {
		done = func(error) {}
	}
	// Encoding here, outside the lock, fixes the event's bytes before the
	// caller can touch what its pointers share.
	line, encErr := encodeEvent(ev)
	it := item{seq: ev.Seq, line: line, done: done}

	s.mu.Lock()
	var now error
	switch {
	case s.closed:
		now = store.ErrClosed
	case s.failed != nil:
		now = s.failed
	case encErr != nil:
		it.err = fmt.Errorf("event %d (%s) cannot be logged: %w", ev.Seq, ev.Type, encErr)
	case ev.Seq != s.nextSeq:
		it.err = fmt.Errorf("event %d (%s) refused: the log in %s expects seq %d next", ev.Seq, ev.Type, s.dir, s.nextSeq)
	default:
		s.nextSeq++
	}
	if now == nil {
		s.queue = append(s.queue, it)
		s.wake.Signal()
	}
	s.mu.Unlock()
	if now != nil {
		done(now)
	}
}

// AppendUnit appends evs as one unit (see store.Store): their items are
// queued together, under one lock, so no control step falls between them,
// and the writer never splits them across two writes.
func (s *Store) AppendUnit(evs []mailbox.Event, done func(error)) {
	if done == nil {
		done = func(error) {}
	}
	if len(evs) == 0 {
		done(nil)
		return
	}
	items := make([]item, len(evs))
	var refused error
	for i, ev := range evs {
		line, err := encodeEvent(ev)
		want := 0
		if i == 0 && len(evs) > 1 {
			want = len(evs)
		}
		switch {
		case err != nil && refused == nil:
			refused = fmt.Errorf("event %d (%s) cannot be logged: %w", ev.Seq, ev.Type, err)
		case ev.Unit != want && refused == nil:
			refused = fmt.Errorf("event %d (%s) refused: it is event %d of a unit of %d and says unit %d, expected %d", ev.Seq, ev.Type, i+1, len(evs), ev.Unit, want)
		}
		items[i] = item{seq: ev.Seq, line: line, done: func(error) {}, cont: i > 0}
	}
	items[len(items)-1].done = done

	s.mu.Lock()
	var now error
	switch {
	case s.closed:
		now = store.ErrClosed
	case s.failed != nil:
		now = s.failed
	case refused == nil && evs[0].Seq != s.nextSeq:
		refused = fmt.Errorf("event %d (%s) refused: the log in %s expects seq %d next", evs[0].Seq, evs[0].Type, s.dir, s.nextSeq)
	}
	if refused == nil {
		for i, ev := range evs {
			if ev.Seq != evs[0].Seq+uint64(i) {
				refused = fmt.Errorf("event %d (%s) refused: the events of a unit must have consecutive seqs", ev.Seq, ev.Type)
				break
			}
		}
	}
	if now == nil {
		if refused != nil {
			// One item stands for the refused unit: done gets the
			// refusal, nothing is written, the seq stays expected.
			s.queue = append(s.queue, item{seq: evs[0].Seq, done: done, err: refused})
		} else {
			s.nextSeq += uint64(len(evs))
			s.queue = append(s.queue, items...)
		}
		s.wake.Signal()
	}
	s.mu.Unlock()
	if now != nil {
		done(now)
	}
}

// control queues fn for the writer; false when the store is closed.
func (s *Store) control(fn func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.queue = append(s.queue, item{ctl: fn})
	s.wake.Signal()
	return true
}

// run is the writer goroutine: the only code that writes the active segment.
func (s *Store) run() {
	defer close(s.writerDone)
	for {
		batch, last := s.take()
		if len(batch) == 1 && batch[0].ctl != nil {
			batch[0].ctl()
		} else if len(batch) > 0 {
			s.commit(batch)
		}
		// The batch shares its array with the queue's tail; drop the
		// callbacks and lines so that they do not live until it is
		// reallocated.
		clear(batch)
		if last {
			s.finish()
			return
		}
	}
}

// take waits for work and returns the next batch: either one control step,
// or queued events up to the next control step, at most maxBatch of them
// to be written. last is true when the store is closed and nothing remains.
func (s *Store) take() (batch []item, last bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.queue) == 0 && !s.closed {
		s.wake.Wait()
	}
	n, writes := 0, 0
	for n < len(s.queue) {
		it := &s.queue[n]
		if it.ctl != nil {
			if n == 0 {
				n = 1
			}
			break
		}
		if it.err == nil {
			if writes >= s.maxBatch && !it.cont {
				break
			}
			writes++
		}
		n++
	}
	batch = s.queue[:n:n]
	s.queue = s.queue[n:]
	return batch, s.closed && len(s.queue) == 0
}

// commit writes the batch's accepted events with one write, syncs once, and
// answers every event in queue order.
func (s *Store) commit(batch []item) {
	g := s.activeSeg
	buf := s.buf[:0]
	var last uint64
	for i := range batch {
		if batch[i].err == nil {
			buf = append(buf, batch[i].line...)
			last = batch[i].seq
		}
	}
	s.buf = buf
	if len(buf) == 0 {
		answer(batch, nil)
		return
	}

	_, err := s.active.WriteAt(buf, g.size)
	var took time.Duration
	if err == nil {
		start := time.Now()
		err = fdatasync(s.active)
		took = time.Since(start)
	}
	if err != nil {
		s.fail(batch, err)
		return
	}

	s.segMu.Lock()
	off := g.size
	var events uint64
	for i := range batch {
		if batch[i].err == nil {
			g.noteRecord(batch[i].seq, off)
			off += int64(len(batch[i].line))
			events++
		}
	}
	g.size, g.next, s.lastSeq = off, last+1, last
	s.counts.eventsAppended += events
	s.counts.batches++
	s.segMu.Unlock()
	s.syncs.Observe(took.Seconds())

	answer(batch, nil)
}

// answer calls each item's done: its own refusal, or err.
func answer(batch []item, err error) {
	for i := range batch {
		if e := batch[i].err; e != nil {
			batch[i].done(e)
		} else {
			batch[i].done(err)
		}
	}
}

// fail handles a failed write or sync. The batch's bytes are cut off again
// (after a failed fsync the kernel may already have dropped the dirty pages
// and their error, so nothing of the batch may ever be read back as if it
// were durable); then the batch and every queued event are refused, and so
// is every append until Reset. The engine decided the queued events on top
// of the failed ones, so none of them may be written.
func (s *Store) fail(batch []item, cause error) {
	err := fmt.Errorf("writing the log in %s: %w", s.dir, cause)
	if terr := s.cutActive(); terr != nil {
		err = fmt.Errorf("%w (cutting the unsynced batch off %s failed too: %v)", err, s.activeSeg.path, terr)
	}
	s.log.Error("log write failed; appends are refused until Reset",
		"dir", s.dir, "file", s.activeSeg.path, "offset", s.activeSeg.size, "err", err)

	s.mu.Lock()
	s.failed = err
	for i := range s.queue {
		if s.queue[i].ctl == nil && s.queue[i].err == nil {
			s.queue[i].err = err
		}
	}
	s.mu.Unlock()

	s.segMu.Lock()
	s.counts.writeErrors++
	s.segMu.Unlock()

	answer(batch, err)
}

// cutActive truncates the active segment back to its durable size and
// syncs that, recording whether the file may still hold more.
func (s *Store) cutActive() error {
	s.dirty = true
	if err := s.active.Truncate(s.activeSeg.size); err != nil {
		return err
	}
	if err := fdatasync(s.active); err != nil {
		return err
	}
	s.dirty = false
	return nil
}

// Reset lets appends through again after a failed write: the writer reopens
// the active segment, cuts it back to its last durable record and syncs.
// The next append carries LastSeq()+1. Events appended before Reset returns
// are refused. Reset returns an error while the file still cannot be
// written; without a failure it does nothing.
func (s *Store) Reset() error {
	reply := make(chan error, 1)
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		return store.ErrClosed
	case s.failed == nil:
		s.mu.Unlock()
		return nil
	}
	s.queue = append(s.queue, item{ctl: func() { reply <- s.reopenActive() }})
	s.wake.Signal()
	s.mu.Unlock()
	return <-reply
}

// reopenActive is Reset's step in the writer. A fresh descriptor matters:
// after an I/O error the old one may keep failing.
func (s *Store) reopenActive() error {
	s.mu.Lock()
	failed := s.failed
	s.mu.Unlock()
	if failed == nil {
		return nil
	}
	g := s.activeSeg
	f, err := openSegmentForWrite(g.path, g.size)
	if err != nil {
		return fmt.Errorf("resetting the log in %s: %w (still failing since: %v)", s.dir, err, failed)
	}
	s.active.Close() // its errors are the failure being reset
	s.active, s.dirty = f, false

	s.mu.Lock()
	s.failed = nil
	s.nextSeq = s.lastSeq + 1
	s.mu.Unlock()
	s.log.Info("log writes resume after Reset", "dir", s.dir, "file", g.path, "next_seq", s.lastSeq+1)
	return nil
}

// finish runs when the writer stops: everything is written and answered.
func (s *Store) finish() {
	var err error
	if s.dirty {
		if terr := s.cutActive(); terr != nil {
			err = fmt.Errorf("cutting an unsynced batch off %s: %w", s.activeSeg.path, terr)
		}
	}
	if cerr := s.active.Close(); cerr != nil && err == nil {
		err = cerr
	}
	s.finishErr = err
}
