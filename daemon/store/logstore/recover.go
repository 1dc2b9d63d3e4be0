package logstore

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// damage is a line of a segment that cannot be trusted.
type damage struct {
	line   int
	off    int64
	reason error
	// torn: the line runs to the end of the file and is broken the way an
	// interrupted write leaves a line (cut short or failing its checksum).
	// Only such a line, at the end of the last segment, may be cut off.
	torn bool
}

// recover brings the data dir to a state the writer can continue: it picks
// the newest intact snapshot, checks every segment after it line by line,
// cuts a torn last line off, and removes what an interrupted compaction left
// behind. Anything else that is wrong stops it with an error that names the
// file, and the line and byte offset where it went wrong; it changes nothing
// in that case.
func (s *Store) recover() error {
	sv, err := surveyDir(s.dir)
	if err != nil {
		return err
	}
	if t := sv.torn; t != nil {
		if err := s.cutTornLine(t.seg, t.d, t.size); err != nil {
			return err
		}
	}
	if err := s.tidy(sv.obsolete, sv.skipped); err != nil {
		return err
	}

	chain, base := sv.chain, sv.base
	if len(chain) == 0 {
		g := &segment{path: s.segmentPath(base.seq + 1), start: base.seq + 1, next: base.seq + 1}
		if err := createSegment(g.path); err != nil {
			return fmt.Errorf("starting the log in %s: %w", s.dir, err)
		}
		chain = []*segment{g}
	}
	g := chain[len(chain)-1]
	f, err := openSegmentForWrite(g.path, g.size)
	if err != nil {
		return fmt.Errorf("opening the log in %s for writing: %w", s.dir, err)
	}
	s.active, s.activeSeg = f, g
	s.segs = chain
	s.snapSeq, s.snapPath, s.snapBytes = base.seq, base.path, base.size
	s.lastSeq = max(g.next-1, base.seq)
	return nil
}

// survey is what recover finds in a data dir before it changes anything:
// recover carries it out, and Check reports it without touching a file.
type survey struct {
	dir     string
	base    baseSnapshot
	skipped []skippedSnapshot // damaged snapshots newer than base, to set aside
	// chain is the segments the log continues in, each as far as it is
	// intact (without a torn last line).
	chain    []*segment
	torn     *tornLine // the newest segment's torn last line, to cut off
	obsolete []string  // names an interrupted compaction left behind
}

// tornLine is a torn last line of the newest segment.
type tornLine struct {
	seg  *segment
	d    *damage
	size int64 // the segment's size as found
}

// surveyDir reads the data dir and decides what recover must do. It refuses
// a log damaged anywhere but at its very end, naming the file, line and
// byte offset. It only reads.
func surveyDir(dir string) (*survey, error) {
	files, err := listDir(dir)
	if err != nil {
		return nil, err
	}
	sv := &survey{dir: dir}
	sv.base, sv.skipped = pickSnapshot(dir, files.snapshots)
	explain := func(err error) error {
		for _, sk := range sv.skipped {
			err = fmt.Errorf("%w (snapshot %s was not used: %v)", err, sk.path, sk.reason)
		}
		return err
	}

	// The chain of segments starts with the last one that begins at or
	// before the first event after the snapshot; earlier ones hold only
	// events the snapshot covers.
	first := -1
	for i, f := range files.segments {
		if f.seq <= sv.base.seq+1 {
			first = i
		}
	}
	if first < 0 && len(files.segments) > 0 {
		f := files.segments[0]
		return nil, explain(fmt.Errorf("the log in %s is missing events %d to %d: %s, but the oldest segment, %s, starts at %d",
			dir, sv.base.seq+1, f.seq-1, sv.base.describe(), filepath.Join(dir, f.name), f.seq))
	}
	if first >= 0 {
		if sv.chain, sv.torn, err = checkChain(dir, files.segments[first:]); err != nil {
			return nil, explain(err)
		}
	}
	sv.obsolete = names(files.segments[:max(first, 0)])
	// A chain that ends before the snapshot (its next segment was lost
	// while empty) holds nothing the snapshot lacks.
	if c := sv.chain; len(c) == 1 && c[0].start <= sv.base.seq && c[0].next <= sv.base.seq+1 {
		sv.obsolete = append(sv.obsolete, filepath.Base(c[0].path))
		sv.chain = nil
	}
	for _, sn := range files.snapshots {
		if sn.seq < sv.base.seq {
			sv.obsolete = append(sv.obsolete, sn.name)
		}
	}
	sv.obsolete = append(sv.obsolete, files.temps...)
	return sv, nil
}

// baseSnapshot is the snapshot the log continues; path is "" without one.
type baseSnapshot struct {
	path string
	seq  uint64
	size int64
}

// describe says where the log must continue from, for error messages.
func (b baseSnapshot) describe() string {
	if b.path == "" {
		return "there is no usable snapshot, so the log must start at seq 1"
	}
	return fmt.Sprintf("snapshot %s ends at seq %d", b.path, b.seq)
}

type skippedSnapshot struct {
	path   string
	reason error
}

// pickSnapshot returns the newest snapshot that is whole, and the newer
// ones that are not. Using an older one is safe only while the segments
// after it still exist, which checkChain then verifies.
func pickSnapshot(dir string, snaps []namedSeq) (baseSnapshot, []skippedSnapshot) {
	var skipped []skippedSnapshot
	for i := len(snaps) - 1; i >= 0; i-- {
		path := filepath.Join(dir, snaps[i].name)
		size, err := checkSnapshotFile(path, snaps[i].seq)
		if err == nil {
			return baseSnapshot{path, snaps[i].seq, size}, skipped
		}
		skipped = append(skipped, skippedSnapshot{path, err})
	}
	return baseSnapshot{}, skipped
}

// checkSnapshotFile verifies a snapshot file's frame and checksum.
func checkSnapshotFile(path string, seq uint64) (int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	_, err = parseSnapshotFile(data, seq)
	return int64(len(data)), err
}

// parseSnapshotFile returns the checksummed body of a snapshot file's bytes.
func parseSnapshotFile(data []byte, seq uint64) ([]byte, error) {
	line, ok := strings.CutSuffix(string(data), "\n")
	if !ok || strings.Contains(line, "\n") {
		return nil, errors.New("it is not exactly one line: it was not written whole")
	}
	got, body, err := parseRecord([]byte(line), keySnapshot)
	if err != nil {
		return nil, err
	}
	if got != seq {
		return nil, fmt.Errorf("it holds seq %d but its name says %d", got, seq)
	}
	return body, nil
}

// checkChain scans the segments from the one holding the first event after
// the snapshot to the newest, requiring each to continue the previous one.
// A torn last line of the newest segment is returned, not cut: the
// segment's size already ends before it.
func checkChain(dir string, files []namedSeq) ([]*segment, *tornLine, error) {
	chain := make([]*segment, 0, len(files))
	var torn *tornLine
	next := files[0].seq
	for i, f := range files {
		g := &segment{path: filepath.Join(dir, f.name), start: f.seq}
		if g.start != next {
			prev := chain[len(chain)-1]
			return nil, nil, fmt.Errorf("the log in %s is missing events %d to %d: segment %s ends at seq %d but the next one, %s, starts at %d",
				dir, next, g.start-1, prev.path, next-1, g.path, g.start)
		}
		d, size, err := scanSegment(g)
		if err != nil {
			return nil, nil, err
		}
		if d != nil {
			if i < len(files)-1 || !d.torn {
				return nil, nil, damageError(g.path, d)
			}
			torn = &tornLine{seg: g, d: d, size: size}
		}
		chain = append(chain, g)
		next = g.next
	}
	return chain, torn, nil
}

func damageError(path string, d *damage) error {
	return fmt.Errorf("the log is damaged: %s, line %d (byte offset %d): %v; the lines before it are intact. Nothing was changed: restore the file from a backup, or cut it at that offset by hand if you accept losing the events from there on",
		path, d.line, d.off, d.reason)
}

// scanSegment checks every line of g, filling in how far it is intact and
// its index. It returns the first damaged line, if any, and the file size.
//
// Events appended as one unit (a batch request's) were written by one
// write and synced together, and none was acknowledged before all were
// durable; the first carries the unit's size. A unit cut short at the end
// of the file is torn as a whole: the damage is placed at its first line,
// so no part of an unacknowledged unit is ever read back.
func scanSegment(g *segment) (*damage, int64, error) {
	f, err := os.Open(g.path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	end := fi.Size()
	g.next, g.size, g.index = g.start, 0, nil
	r := newLineReader(f, 0, end, 1)
	// The unit being read: where it starts, as g stood there, and how many
	// of its events are still to come.
	var unit struct {
		line           int
		off, size      int64
		next           uint64
		index, n, left int
	}
	// cutUnit rewinds g to the start of the unit in progress, if any, and
	// says so; else it returns d as it is.
	cutUnit := func(d *damage) *damage {
		if unit.left == 0 || !d.torn {
			return d
		}
		g.next, g.size, g.index = unit.next, unit.size, g.index[:unit.index]
		return &damage{unit.line, unit.off, fmt.Errorf("a unit of %d events written together was cut short after %d (%v); none of them was acknowledged", unit.n, unit.n-unit.left, d.reason), true}
	}
	for {
		l, err := r.next()
		if err == io.EOF {
			if unit.left > 0 {
				return cutUnit(&damage{0, end, errors.New("the file ends"), true}), end, nil
			}
			return nil, end, nil
		}
		if err != nil {
			return nil, 0, fmt.Errorf("reading %s: %w", g.path, err)
		}
		if !l.terminated {
			return cutUnit(&damage{l.num, l.off, errors.New("the line has no newline: it was cut short"), true}), end, nil
		}
		seq, body, err := parseRecord(l.b, keyEvent)
		if err != nil {
			torn := l.end() == end
			if torn && holdsWholeRecordAfterDamage(l.b) {
				// Two records run together (a newline was damaged):
				// bytes after the damage were durable, so the damage is
				// not the tail of an interrupted write.
				torn = false
				err = fmt.Errorf("%w; a whole record follows the damage, so this is not a torn write", err)
			}
			return cutUnit(&damage{l.num, l.off, err, torn}), end, nil
		}
		if seq != g.next {
			// An interrupted write cannot produce a whole, checksummed
			// record with the wrong seq, so this is never cut off.
			return &damage{l.num, l.off, fmt.Errorf("it holds seq %d where seq %d was expected", seq, g.next), false}, end, nil
		}
		if unit.left > 0 {
			unit.left--
		} else if n := unitOf(body); n > 1 {
			unit.line, unit.off, unit.size, unit.next, unit.index = l.num, l.off, g.size, g.next, len(g.index)
			unit.n, unit.left = n, n-1
		}
		g.noteRecord(seq, l.off)
		g.next++
		g.size = l.end()
	}
}

// holdsWholeRecordAfterDamage reports whether a damaged line ends in a
// whole, checksummed record that starts after its first byte. JSON escapes
// quotes inside strings, so the record prefix can only occur in an event
// as a key of raw JSON content, which cannot pass as a framed record.
func holdsWholeRecordAfterDamage(line []byte) bool {
	prefix := []byte(`{"seq":`)
	for p := 1; p < len(line); {
		i := bytes.Index(line[p:], prefix)
		if i < 0 {
			return false
		}
		p += i
		if _, _, err := parseRecord(line[p:], keyEvent); err == nil {
			return true
		}
		p++
	}
	return false
}

// cutTornLine keeps a copy of the segment as found, then truncates it
// before its torn last line.
func (s *Store) cutTornLine(g *segment, d *damage, size int64) error {
	kept, err := keepCopy(g.path)
	if err != nil {
		return fmt.Errorf("keeping a copy of %s before cutting its torn last line: %w", g.path, err)
	}
	f, err := openSegmentForWrite(g.path, d.off)
	if err != nil {
		return fmt.Errorf("cutting the torn last line off %s: %w", g.path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("cutting the torn last line off %s: %w", g.path, err)
	}
	s.log.Warn("cut a torn last line off the log; the events before it are intact",
		"file", g.path, "line", d.line, "offset", d.off, "bytes_cut", size-d.off,
		"reason", d.reason.Error(), "original_kept_as", kept)
	return nil
}

// tidy finishes an interrupted compaction: files made obsolete by the
// snapshot in use are removed, and the damaged snapshots pickSnapshot
// skipped (all newer than it) are set aside as .broken. The directory is synced first so that the snapshot
// which makes them obsolete is durable before they go.
func (s *Store) tidy(obsolete []string, skipped []skippedSnapshot) error {
	if len(obsolete) == 0 && len(skipped) == 0 {
		return nil
	}
	if err := syncDir(s.dir); err != nil {
		return fmt.Errorf("syncing data dir %s: %w", s.dir, err)
	}
	for _, sk := range skipped {
		aside := sk.path + brokenSuffix
		if err := os.Rename(sk.path, aside); err != nil {
			return fmt.Errorf("setting damaged snapshot %s aside: %w", sk.path, err)
		}
		s.log.Warn("a snapshot is damaged; the log from the older snapshot is used instead and nothing is lost",
			"file", sk.path, "reason", sk.reason.Error(), "kept_as", aside)
	}
	for _, name := range obsolete {
		path := filepath.Join(s.dir, name)
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("removing %s, which a snapshot made obsolete: %w", path, err)
		}
		s.log.Info("removed a file an interrupted compaction left behind", "file", path)
	}
	if err := syncDir(s.dir); err != nil {
		return fmt.Errorf("syncing data dir %s: %w", s.dir, err)
	}
	return nil
}

func names(l []namedSeq) []string {
	out := make([]string, len(l))
	for i, f := range l {
		out[i] = f.name
	}
	return out
}

// createSegment creates an empty segment and makes its name durable.
func createSegment(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		os.Remove(path)
		return err
	}
	return nil
}

// openSegmentForWrite opens a segment to be written after its first size
// bytes, cutting anything beyond them off durably.
func openSegmentForWrite(path string, size int64) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	err = f.Truncate(size)
	if err == nil {
		err = fdatasync(f)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
