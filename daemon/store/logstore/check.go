package logstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mailroom/mailroom/mailbox"
)

// Report is what Check found in a data dir: what the daemon would do with
// it when it starts, and the first thing that would stop it.
type Report struct {
	Dir string
	// SnapshotPath is the snapshot replay starts from ("" without one);
	// SnapshotSeq is the seq it holds.
	SnapshotPath string
	SnapshotSeq  uint64
	// Segments are the log segments replay reads, oldest first.
	Segments []string
	// Events counts the events replayed after the snapshot; LastSeq is the
	// last one replayed (or the snapshot's seq).
	Events  int
	LastSeq uint64
	// Warnings are what the daemon repairs on its own when it starts: a
	// torn last line it cuts off, damaged snapshots it sets aside, files an
	// interrupted compaction left behind. None of them stops it.
	Warnings []string
	// Problem is the first record that cannot be replayed. The daemon cannot
	// start until it is moved aside with SkipRecord (or, for a snapshot,
	// until the data dir is restored).
	Problem *RecordError
	// Damage is what stops the daemon before replay: a record failing its
	// checksum before the end of the log, a missing segment. Moving a record
	// aside does not fix it; its message says what does.
	Damage error

	lastAtMs int64 // the time of the last event replayed
}

// Healthy reports whether the daemon would start on the data dir.
func (r *Report) Healthy() bool { return r.Problem == nil && r.Damage == nil }

// Check reads the data dir exactly as the daemon does when it starts, and
// changes nothing: it picks the snapshot, checks the frame and checksum of
// every record, decodes every event and replays them all through a fresh
// mailbox state, stopping at the first that cannot be replayed. It takes the
// data dir's lock, so it refuses to run while a daemon has the dir open. Its
// error means the dir could not be checked at all; what it found is in the
// Report.
func Check(dir string) (Report, error) {
	lock, err := lockForRepair(dir)
	if err != nil {
		return Report{}, err
	}
	defer unlockDir(lock)
	return check(dir)
}

// lockForRepair takes the lock of an existing data dir for Check or
// SkipRecord, which must never run beside a daemon (nor create a data dir
// that was mistyped).
func lockForRepair(dir string) (*os.File, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("no data dir to check: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("data dir %s is not a directory", dir)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, fmt.Errorf("the log can only be checked or repaired while no daemon has it open: %w", err)
	}
	return lock, nil
}

// check is Check with the lock held.
func check(dir string) (Report, error) {
	r := Report{Dir: dir}
	sv, err := surveyDir(dir)
	if err != nil {
		r.Damage = err
		return r, nil
	}
	r.Warnings = sv.warnings()
	r.SnapshotPath, r.SnapshotSeq, r.LastSeq = sv.base.path, sv.base.seq, sv.base.seq

	var snapFile *os.File
	if sv.base.path != "" {
		if snapFile, err = os.Open(sv.base.path); err != nil {
			return r, fmt.Errorf("checking the log in %s: %w", dir, err)
		}
		defer snapFile.Close()
	}
	parts := make([]readPart, 0, len(sv.chain))
	defer func() { closeParts(parts) }()
	for _, g := range sv.chain {
		f, err := os.Open(g.path)
		if err != nil {
			return r, fmt.Errorf("checking the log in %s: %w", dir, err)
		}
		parts = append(parts, readPart{f: f, path: g.path, line: 1, end: g.size})
		r.Segments = append(r.Segments, g.path)
	}

	st := mailbox.NewState()
	err = replayFiles(snapFile, sv.base.path, sv.base.seq, parts, func(ev mailbox.Event) error {
		if err := st.Apply(ev); err != nil {
			return err
		}
		if ev.Type != mailbox.EventSnapshot {
			r.Events++
		}
		r.LastSeq, r.lastAtMs = ev.Seq, ev.AtMs
		return nil
	})
	var re *RecordError
	switch {
	case errors.As(err, &re):
		r.Problem = re
	case err != nil:
		return r, fmt.Errorf("checking the log in %s: %w", dir, err)
	}
	return r, nil
}

// warnings describe what recover will change on its own.
func (sv *survey) warnings() []string {
	var w []string
	if t := sv.torn; t != nil {
		w = append(w, fmt.Sprintf("%s, line %d (byte offset %d): %v; the daemon cuts this torn last line (%d bytes) off when it starts and keeps the file as found as %s%s; the lines before it are intact",
			t.seg.path, t.d.line, t.d.off, t.d.reason, t.size-t.d.off, filepath.Base(t.seg.path), brokenSuffix))
	}
	for _, sk := range sv.skipped {
		w = append(w, fmt.Sprintf("snapshot %s is damaged (%v); the daemon sets it aside as %s%s and replays the older snapshot and the log after it instead, losing nothing",
			sk.path, sk.reason, filepath.Base(sk.path), brokenSuffix))
	}
	for _, name := range sv.obsolete {
		w = append(w, fmt.Sprintf("%s is left over from an interrupted compaction; the daemon removes it when it starts", filepath.Join(sv.dir, name)))
	}
	return w
}
