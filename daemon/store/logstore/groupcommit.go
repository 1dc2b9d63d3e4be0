package logstore

import (
	"fmt"
	"time"

	"github.com/mailroom/mailroom/daemon/store/internal/writeq"
	"github.com/mailroom/mailroom/mailbox"
)

// AppendUnit hands evs, one unit (a single event is a unit of one), to the
// writer and returns without waiting for I/O. done is called exactly once:
// nil once every event is durable, or the reason none will be. Accepted
// units and those refused for their seq are answered by the writer in queue
// order; a unit's items are queued together, under one lock, so no control
// step falls between them, and the writer never splits them across two
// writes. While the store is failed (a write failed and Reset has not run)
// or closed, AppendUnit calls done itself before returning,
// as the store.Store contract requires, so that after a failure nothing
// decided on top of it can still be queued when the engine resets.
//
// A unit holding an event that cannot be encoded, or whose encoding replay
// could not read back, is refused like one with the wrong seq: done gets
// the error, nothing
// is written, and the store is not failed. Nothing decided on top of it can
// be written either, because the seq it held is still the one expected next;
// failing the store instead would let one unreadable value stop every write
// until Reset.
func (s *Store) AppendUnit(evs []mailbox.Event, done func(error)) {
	// Encoding here, outside the lock, fixes the events' bytes before the
	// caller can touch what their pointers share. A single event (the
	// common case) is encoded into arrays on the stack.
	var oneLine [1][]byte
	var oneErr [1]error
	lines, errs := oneLine[:], oneErr[:]
	if len(evs) != 1 {
		lines, errs = make([][]byte, len(evs)), make([]error, len(evs))
	}
	for i, ev := range evs {
		lines[i], errs[i] = encodeEvent(ev)
	}
	s.q.Append(evs, lines, errs, done)
}

// run is the writer goroutine: the only code that writes the active segment.
func (s *Store) run() {
	defer close(s.writerDone)
	for {
		batch, last := s.q.Take(s.maxBatch)
		switch {
		case len(batch) == 1 && batch[0].Ctl != nil:
			batch[0].Ctl()
		case len(batch) > 0:
			s.commit(batch)
		case last:
			s.finish()
			return
		default:
			<-s.q.Wake()
		}
		// The batch shares its array with the queue's tail; drop the
		// callbacks and lines so that they do not live until it is
		// reallocated.
		clear(batch)
	}
}

// A sync that takes slowSync or longer makes the writer give its P back
// during its syncs for slowSyncRelease after it: a sync holding its P holds
// up every stop-the-world of the collector, and on a disk that stalls that
// would freeze reads, event streams and /healthz along with the writes. A
// healthy disk has the odd sync of a few milliseconds (1 in 29,000 over
// 2 ms on the development machine), so the bar is well above that.
//
// commitSyncHolding and commitSyncReleasing are the two ways commit syncs.
// Tests replace these to slow a sync down.
var (
	slowSync        = 20 * time.Millisecond
	slowSyncRelease = 10 * time.Second

	commitSyncHolding   = fdatasyncHolding
	commitSyncReleasing = fdatasync
)

// commit writes the batch's accepted events with one write, syncs once, and
// answers every event in queue order.
func (s *Store) commit(batch []writeq.Item[[]byte]) {
	g := s.activeSeg
	buf := s.buf[:0]
	var last uint64
	for i := range batch {
		if batch[i].Err == nil {
			buf = append(buf, batch[i].P...)
			last = batch[i].Seq
		}
	}
	s.buf = buf
	if len(buf) == 0 {
		writeq.Answer(batch, nil)
		return
	}

	_, err := s.active.WriteAt(buf, g.size)
	var took time.Duration
	if err == nil {
		start := time.Now()
		if start.Before(s.releaseUntil) {
			err = commitSyncReleasing(s.active)
		} else {
			err = commitSyncHolding(s.active)
		}
		took = time.Since(start)
		if took >= slowSync {
			if !start.Before(s.releaseUntil) {
				s.log.Warn("a log sync was slow; the disk holds up every acknowledgement while it is",
					"dir", s.dir, "took", took.Round(time.Millisecond), "events", len(batch))
			}
			s.releaseUntil = start.Add(took + slowSyncRelease)
		}
	}
	if err != nil {
		s.fail(batch, err)
		return
	}

	s.segMu.Lock()
	off := g.size
	var events uint64
	for i := range batch {
		if batch[i].Err == nil {
			g.noteRecord(batch[i].Seq, off)
			off += int64(len(batch[i].P))
			events++
		}
	}
	g.size, g.next, s.lastSeq = off, last+1, last
	s.counts.eventsAppended += events
	s.counts.batches++
	s.segMu.Unlock()
	s.syncs.Observe(took.Seconds())

	writeq.Answer(batch, nil)
}

// fail handles a failed write or sync. The batch's bytes are cut off again
// (after a failed fsync the kernel may already have dropped the dirty pages
// and their error, so nothing of the batch may ever be read back as if it
// were durable); then the batch and every queued event are refused, and so
// is every append until Reset. The engine decided the queued events on top
// of the failed ones, so none of them may be written.
func (s *Store) fail(batch []writeq.Item[[]byte], cause error) {
	err := fmt.Errorf("writing the log in %s: %w", s.dir, cause)
	if terr := s.cutActive(); terr != nil {
		err = fmt.Errorf("%w (cutting the unsynced batch off %s failed too: %v)", err, s.activeSeg.path, terr)
	}
	s.log.Error("log write failed; appends are refused until Reset",
		"dir", s.dir, "file", s.activeSeg.path, "offset", s.activeSeg.size, "err", err)

	s.q.Fail(err)

	s.segMu.Lock()
	s.counts.writeErrors++
	s.segMu.Unlock()

	writeq.Answer(batch, err)
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
func (s *Store) Reset() error { return s.q.Reset(s.reopenActive) }

// reopenActive is Reset's step in the writer. A fresh descriptor matters:
// after an I/O error the old one may keep failing.
func (s *Store) reopenActive() error {
	failed := s.q.Failed()
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

	s.q.Resume(s.lastSeq + 1)
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
