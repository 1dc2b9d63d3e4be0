package logstore

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/mailroom/mailroom/daemon/store"
	"github.com/mailroom/mailroom/daemon/store/internal/replay"
	"github.com/mailroom/mailroom/mailbox"
)

// readPart is a stretch of one segment a reader will read.
type readPart struct {
	f    *os.File
	path string
	off  int64 // where to start: a line boundary
	line int   // the number of the line at off
	end  int64 // the durable size when the read was planned
}

func closeParts(parts []readPart) {
	for _, p := range parts {
		p.f.Close()
	}
}

// Load passes the durable state to fn in seq order: the snapshot (when
// there is one) as an event of type "snapshot", then every durable event
// after it. Open has already checked the files and cut a torn last line off;
// a fault Load still finds means the disk changed under the store. A record
// that passed its checksum but does not decode stops Load with a
// *RecordError naming it and how to move it aside; so does an error from fn,
// which the RecordError wraps.
func (s *Store) Load(fn func(mailbox.Event) error) error {
	if s.isClosed() {
		return store.ErrClosed
	}
	s.segMu.RLock()
	snapPath, snapSeq := s.snapPath, s.snapSeq
	var snapFile *os.File
	var err error
	if snapPath != "" {
		snapFile, err = os.Open(snapPath)
	}
	var parts []readPart
	for _, g := range s.segs {
		if err != nil {
			break
		}
		var f *os.File
		if f, err = os.Open(g.path); err == nil {
			parts = append(parts, readPart{f: f, path: g.path, line: 1, end: g.size})
		}
	}
	s.segMu.RUnlock()
	defer closeParts(parts)
	if snapFile != nil {
		defer snapFile.Close()
	}
	if err != nil {
		return fmt.Errorf("loading the log in %s: %w", s.dir, err)
	}
	return replayFiles(snapFile, snapPath, snapSeq, parts, fn)
}

// replayFiles passes the snapshot in snapFile (when there is one) and then
// every event of parts after it to fn, in seq order: Load does it for the
// daemon and Check for an operator, so both stop at the same record. A
// record that passed its checksum but does not decode, or whose event fn
// refuses, stops it with a *RecordError naming the record.
func replayFiles(snapFile *os.File, snapPath string, snapSeq uint64, parts []readPart, fn func(mailbox.Event) error) error {
	if snapFile != nil {
		snap, err := readSnapshot(snapFile, snapPath, snapSeq)
		if err != nil {
			return err
		}
		ev := mailbox.Event{Seq: snap.Seq, AtMs: snap.AtMs, Type: mailbox.EventSnapshot, Snapshot: snap}
		if err := fn(ev); err != nil {
			return &RecordError{Path: snapPath, Line: 1, Seq: snapSeq, AtMs: snap.AtMs, Snapshot: true, Refused: true, Err: err}
		}
	}
	for _, p := range parts {
		err := readEventsParallel(p, func(ev mailbox.Event) (bool, error) {
			if ev.Seq <= snapSeq {
				return true, nil
			}
			if err := fn(ev); err != nil {
				return false, refusedRecord(p.path, ev, err)
			}
			return true, nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// readSnapshot reads the snapshot file at path, holding seq.
func readSnapshot(f *os.File, path string, seq uint64) (*mailbox.Snapshot, error) {
	data, err := readWhole(f)
	if err != nil {
		return nil, fmt.Errorf("loading snapshot %s: %w", path, err)
	}
	body, err := parseSnapshotFile(data, seq)
	if err != nil {
		return nil, fmt.Errorf("loading snapshot %s: %w", path, err)
	}
	var snap mailbox.Snapshot
	if err := replay.DecodeSnapshot(body, &snap); err != nil {
		return nil, &RecordError{Path: path, Line: 1, Seq: seq, Snapshot: true, Err: err}
	}
	if snap.Seq != seq {
		return nil, &RecordError{Path: path, Line: 1, Seq: seq, Snapshot: true,
			Err: fmt.Errorf("the snapshot inside says seq %d, its record says %d", snap.Seq, seq)}
	}
	return &snap, nil
}

// readWhole reads f to its end into a buffer of its size, as os.ReadFile
// does: io.ReadAll grows its buffer by doubling, which copied a 500 MB
// snapshot several times over. The MinRead to spare is what ReadFrom
// needs free to see the end without growing the buffer.
func readWhole(f *os.File) ([]byte, error) {
	var buf bytes.Buffer
	if fi, err := f.Stat(); err == nil {
		buf.Grow(int(fi.Size()) + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(f); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// readEvents decodes the records of p in order and passes them to fn until
// fn says stop.
func readEvents(p readPart, fn func(mailbox.Event) (more bool, err error)) error {
	r := newLineReader(p.f, p.off, p.end, p.line)
	for {
		l, err := r.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", p.path, err)
		}
		ev, err := parseLine(p.path, l)
		if err != nil {
			return err
		}
		if more, err := fn(ev); err != nil || !more {
			return err
		}
	}
}

// parseLine decodes line l of the segment at path. A line that is not a
// whole, checksummed record is damage; one that is but does not decode is
// a *RecordError.
func parseLine(path string, l rawLine) (mailbox.Event, error) {
	if !l.terminated {
		return mailbox.Event{}, damageError(path, &damage{line: l.num, off: l.off, reason: errors.New("the line has no newline")})
	}
	seq, body, err := parseRecord(l.b, keyEvent)
	if err != nil {
		return mailbox.Event{}, damageError(path, &damage{line: l.num, off: l.off, reason: err})
	}
	ev, err := decodeEvent(seq, body)
	if err != nil {
		return mailbox.Event{}, undecodableRecord(path, l, seq, body, err)
	}
	return ev, nil
}

// EventsSince returns up to limit durable events with seq > after, in
// order, read from the segment files: the sparse index finds where to start,
// so a reader near the end of the log does not read it from its beginning.
// Events may be returned as soon as they are durable, possibly before their
// done has run. It returns ErrCompacted when event after+1 is no longer in
// the log, and no events when after >= LastSeq() or limit <= 0.
func (s *Store) EventsSince(after uint64, limit int) ([]mailbox.Event, error) {
	if s.isClosed() {
		return nil, store.ErrClosed
	}
	parts, err := s.planRead(after, limit)
	if err != nil || len(parts) == 0 {
		return nil, err
	}
	defer closeParts(parts)
	events := make([]mailbox.Event, 0, min(limit, 1024))
	for _, p := range parts {
		err := readEvents(p, func(ev mailbox.Event) (bool, error) {
			if ev.Seq > after {
				events = append(events, ev)
			}
			return len(events) < limit, nil
		})
		if err != nil {
			return nil, err
		}
		if len(events) == limit {
			break
		}
	}
	return events, nil
}

// planRead opens the segments that hold events after+1 onward, enough of
// them for limit events. Files are opened under segMu, so a compaction
// cannot remove one in between; once open, removal does not matter.
func (s *Store) planRead(after uint64, limit int) ([]readPart, error) {
	s.segMu.RLock()
	defer s.segMu.RUnlock()
	if after >= s.lastSeq || limit <= 0 {
		return nil, nil
	}
	from := after + 1
	if len(s.segs) == 0 || from < s.segs[0].start {
		return nil, store.ErrCompacted
	}
	i := sort.Search(len(s.segs), func(i int) bool { return s.segs[i].start > from }) - 1
	var parts []readPart
	want := uint64(limit)
	for _, g := range s.segs[i:] {
		p := readPart{path: g.path, line: 1, end: g.size}
		have := g.next - g.start
		if g.start <= from {
			p.off, p.line = g.offsetOf(from)
			have = g.next - from
		}
		if have == 0 {
			continue
		}
		f, err := os.Open(g.path)
		if err != nil {
			closeParts(parts)
			return nil, fmt.Errorf("reading the log in %s: %w", s.dir, err)
		}
		p.f = f
		parts = append(parts, p)
		if have >= want {
			break
		}
		want -= have
	}
	return parts, nil
}
