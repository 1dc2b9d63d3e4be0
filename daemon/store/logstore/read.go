package logstore

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/mailroom/mailroom/daemon/store"
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
// a fault Load still finds means the disk changed under the store. An error
// from fn stops Load and is returned.
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

	if snapFile != nil {
		snap, err := readSnapshot(snapFile, snapSeq)
		if err != nil {
			return fmt.Errorf("loading snapshot %s: %w", snapPath, err)
		}
		ev := mailbox.Event{Seq: snap.Seq, AtMs: snap.AtMs, Type: mailbox.EventSnapshot, Snapshot: snap}
		if err := fn(ev); err != nil {
			return fmt.Errorf("replaying snapshot %s: %w", snapPath, err)
		}
	}
	for _, p := range parts {
		err := readEventsParallel(p, func(ev mailbox.Event) (bool, error) {
			if ev.Seq <= snapSeq {
				return true, nil
			}
			if err := fn(ev); err != nil {
				return false, fmt.Errorf("replaying event %d from %s: %w", ev.Seq, p.path, err)
			}
			return true, nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func readSnapshot(f *os.File, seq uint64) (*mailbox.Snapshot, error) {
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	body, err := parseSnapshotFile(data, seq)
	if err != nil {
		return nil, err
	}
	var snap mailbox.Snapshot
	if err := json.Unmarshal(body, &snap); err != nil {
		return nil, fmt.Errorf("the snapshot does not decode: %w", err)
	}
	if snap.Seq != seq {
		return nil, fmt.Errorf("the snapshot says seq %d, its record says %d", snap.Seq, seq)
	}
	return &snap, nil
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
		ev, err := parseLine(l)
		if err != nil {
			return damageError(p.path, &damage{line: l.num, off: l.off, reason: err})
		}
		if more, err := fn(ev); err != nil || !more {
			return err
		}
	}
}

func parseLine(l rawLine) (mailbox.Event, error) {
	if !l.terminated {
		return mailbox.Event{}, fmt.Errorf("the line has no newline")
	}
	seq, body, err := parseRecord(l.b, keyEvent)
	if err != nil {
		return mailbox.Event{}, err
	}
	return decodeEvent(seq, body)
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
