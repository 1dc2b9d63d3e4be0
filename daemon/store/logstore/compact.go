package logstore

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/mailroom/mailroom/daemon/store"
	"github.com/mailroom/mailroom/mailbox"
)

// Compact makes snapshot() the new base of the log, in steps that each
// leave a data dir Open recovers without loss:
//
//  1. the writer, between batches, calls snapshot() and checks that it is
//     at the last durable seq;
//  2. it starts a new segment at the next seq (and syncs the directory),
//     then goes back to serving appends into it;
//  3. another goroutine writes the snapshot to a temp file, fsyncs it,
//     renames it into place and fsyncs the directory;
//  4. only then are the older segments and snapshot removed.
//
// Until step 3 completes, the old snapshot and every old segment still
// describe everything; after it, Open prefers the new snapshot and skips
// (then removes) what it covers. Compact returns when all steps are done.
// Concurrent calls run one after the other.
//
// BytesBefore and BytesAfter are the log plus snapshot bytes when the
// writer took the snapshot and when Compact finished.
func (s *Store) Compact(snapshot func() *mailbox.Snapshot) (mailbox.CompactOutcome, error) {
	s.compactMu.Lock()
	defer s.compactMu.Unlock()
	type result struct {
		out mailbox.CompactOutcome
		err error
	}
	res := make(chan result, 1)
	queued := s.q.Control(func() {
		job, err := s.rotate(snapshot)
		if err != nil {
			res <- result{err: err}
			return
		}
		// The snapshot may be large: write it off the writer so appends
		// keep flowing into the new segment meanwhile.
		s.background.Add(1)
		go func() {
			defer s.background.Done()
			out, err := s.writeSnapshot(job)
			res <- result{out, err}
		}()
	})
	if !queued {
		return mailbox.CompactOutcome{}, store.ErrClosed
	}
	r := <-res
	return r.out, r.err
}

type compactJob struct {
	snap   *mailbox.Snapshot
	start  uint64 // the first seq of the segment that follows the snapshot
	before int64
}

// rotate runs in the writer: steps 1 and 2.
func (s *Store) rotate(snapshot func() *mailbox.Snapshot) (*compactJob, error) {
	if failed := s.q.Failed(); failed != nil {
		return nil, fmt.Errorf("compacting the log in %s: the log cannot be written until Reset: %w", s.dir, failed)
	}
	snap := snapshot()
	if snap == nil {
		return nil, fmt.Errorf("compacting the log in %s: the snapshot function returned nil", s.dir)
	}
	if snap.Seq != s.lastSeq {
		return nil, fmt.Errorf("compacting the log in %s: the snapshot is at seq %d, but the last durable event is %d", s.dir, snap.Seq, s.lastSeq)
	}
	job := &compactJob{snap: snap, start: snap.Seq + 1}
	s.segMu.RLock()
	job.before = s.logBytesLocked() + s.snapBytes
	s.segMu.RUnlock()

	// An empty active segment already starts right after the snapshot.
	if s.activeSeg.start == job.start {
		return job, nil
	}
	g := &segment{path: s.segmentPath(job.start), start: job.start, next: job.start}
	if err := createSegment(g.path); err != nil {
		return nil, fmt.Errorf("compacting the log in %s: starting a new segment: %w", s.dir, err)
	}
	f, err := openSegmentForWrite(g.path, 0)
	if err != nil {
		// An empty segment left here would not continue the old one once
		// more events go there, and Open would refuse the gap.
		if rerr := os.Remove(g.path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			s.log.Error("could not remove an unused new segment; remove it before restarting", "file", g.path, "err", rerr)
		}
		return nil, fmt.Errorf("compacting the log in %s: opening the new segment: %w", s.dir, err)
	}
	// Every batch in the old segment was synced before it was answered.
	if err := s.active.Close(); err != nil {
		s.log.Warn("closing a full log segment failed", "file", s.activeSeg.path, "err", err)
	}
	s.active, s.activeSeg = f, g
	s.segMu.Lock()
	s.segs = append(s.segs, g)
	s.segMu.Unlock()
	return job, nil
}

// writeSnapshot runs beside the writer: steps 3 and 4.
func (s *Store) writeSnapshot(job *compactJob) (mailbox.CompactOutcome, error) {
	path := filepath.Join(s.dir, snapshotName(job.snap.Seq))
	var size int64
	err := replaceFileWith(path, func(w io.Writer) error {
		var err error
		size, err = writeSnapshotRecord(w, job.snap)
		return err
	})
	if err != nil {
		s.segMu.Lock()
		s.counts.writeErrors++
		s.segMu.Unlock()
		return mailbox.CompactOutcome{}, fmt.Errorf("compacting the log in %s: writing snapshot %s: %w (the log is unchanged and complete)", s.dir, path, err)
	}

	s.segMu.Lock()
	var drop []string
	keep := make([]*segment, 0, 1)
	for _, g := range s.segs {
		if g.start < job.start {
			drop = append(drop, g.path)
		} else {
			keep = append(keep, g)
		}
	}
	if s.snapPath != "" && s.snapPath != path {
		drop = append(drop, s.snapPath)
	}
	s.segs = keep
	s.snapSeq, s.snapPath, s.snapBytes = job.snap.Seq, path, size
	s.counts.compactions++
	after := s.logBytesLocked() + s.snapBytes
	s.segMu.Unlock()

	// Readers open files under segMu, so none can start on these now; one
	// already reading keeps its open file.
	for _, p := range drop {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			s.log.Warn("could not remove a file the new snapshot made obsolete; Open removes it next time", "file", p, "err", err)
		}
	}
	if err := syncDir(s.dir); err != nil {
		s.log.Warn("syncing the data dir after compaction failed; Open finishes the cleanup next time", "dir", s.dir, "err", err)
	}
	return mailbox.CompactOutcome{Seq: job.snap.Seq, BytesBefore: job.before, BytesAfter: after, SnapshotPath: path}, nil
}
