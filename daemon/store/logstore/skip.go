package logstore

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/mailroom/mailroom/mailbox"
)

// SkipOutcome is what SkipRecord did.
type SkipOutcome struct {
	// Skipped is the record that was moved aside, as Check found it.
	Skipped *RecordError
	// KeptAs is the original segment, byte for byte.
	KeptAs string
	// Replacement is the record_skipped event now in the record's place.
	Replacement mailbox.Event
	// After is Check's report on the repaired data dir: another record may
	// need moving aside before the daemon starts.
	After Report
}

// SkipRecord moves the record of seq aside so the daemon can start: it
// replaces that one record with a record_skipped event of the same seq (and
// time, when it could be read), which replay applies as a no-op, and keeps
// the segment as it was in a .broken file beside it. The segment is
// rewritten to a temp file, fsynced and renamed over the old one, so a
// crash leaves either the old segment or the repaired one.
//
// It refuses, changing nothing, unless seq is exactly the first record
// Check finds that cannot be replayed, so the record moved aside is the one
// the operator looked at; and it refuses a snapshot, which cannot be
// skipped. reason, when given, is recorded with the operator's words. Like
// Check, it takes the data dir's lock, and it checks the log again after
// the repair.
func SkipRecord(dir string, seq uint64, reason string) (SkipOutcome, error) {
	lock, err := lockForRepair(dir)
	if err != nil {
		return SkipOutcome{}, err
	}
	defer unlockDir(lock)
	r, err := check(dir)
	if err != nil {
		return SkipOutcome{}, err
	}
	if err := mayMoveAside(&r, seq); err != nil {
		return SkipOutcome{}, err
	}
	p := r.Problem
	// An event whose time could not be read takes the time of the one
	// before it, so the log's clock never runs backwards.
	atMs := p.AtMs
	if atMs == 0 {
		atMs = r.lastAtMs
	}
	kept, ev, err := moveAside(p, atMs, reason)
	if err != nil {
		return SkipOutcome{}, fmt.Errorf("moving record seq %d aside in %s: %w", seq, p.Path, err)
	}
	out := SkipOutcome{Skipped: p, KeptAs: kept, Replacement: ev}
	if out.After, err = check(dir); err != nil {
		return out, fmt.Errorf("record seq %d was moved aside (the original segment is %s), but checking the log again failed: %w", seq, kept, err)
	}
	return out, nil
}

// mayMoveAside refuses unless seq is the record r says must be moved aside.
func mayMoveAside(r *Report, seq uint64) error {
	p := r.Problem
	switch {
	case r.Damage != nil:
		return fmt.Errorf("refusing to move seq %d aside: the log in %s is damaged in a way that moving a record aside does not fix: %w", seq, r.Dir, r.Damage)
	case p == nil:
		return fmt.Errorf("refusing to move seq %d aside: the log in %s replays cleanly up to seq %d, so nothing needs moving", seq, r.Dir, r.LastSeq)
	case p.Snapshot:
		return fmt.Errorf("refusing to move seq %d aside: what cannot be replayed is %s, which %s. %s", seq, p.Where(), p.Problem(), p.Advice())
	case p.Seq != seq:
		return fmt.Errorf("refusing to move seq %d aside: the first record that cannot be replayed is %s, which %s. Look at it with '%s' and move that one aside with '%s'",
			seq, p.Where(), p.Problem(), p.CheckCommand(), p.RepairCommand())
	}
	return nil
}

// moveAside keeps a copy of p's segment, then rewrites it with a
// record_skipped event at atMs in place of p's line. It returns the copy's
// name and the event.
func moveAside(p *RecordError, atMs int64, reason string) (string, mailbox.Event, error) {
	f, err := os.Open(p.Path)
	if err != nil {
		return "", mailbox.Event{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", mailbox.Event{}, err
	}
	// The lock is held, so the line is still where Check found it; reading
	// it again makes sure no other bytes are ever replaced.
	old, err := newLineReader(f, p.Offset, fi.Size(), p.Line).next()
	if err == nil && !old.terminated {
		err = errors.New("its line has no newline")
	}
	if err == nil {
		if got, _, perr := parseRecord(old.b, keyEvent); perr != nil || got != p.Seq {
			err = fmt.Errorf("line %d (byte offset %d) no longer holds its record", p.Line, p.Offset)
		}
	}
	if err != nil {
		return "", mailbox.Event{}, err
	}
	end := old.end()

	kept, err := keepCopy(p.Path)
	if err != nil {
		return "", mailbox.Event{}, fmt.Errorf("keeping the original segment: %w", err)
	}
	ev := mailbox.Event{Seq: p.Seq, AtMs: atMs, Type: mailbox.EventRecordSkipped,
		Reason: skipReason(p, kept, reason)}
	line, err := encodeEvent(ev)
	if err == nil {
		err = replaceFileWith(p.Path, func(w io.Writer) error {
			if _, err := io.Copy(w, io.NewSectionReader(f, 0, p.Offset)); err != nil {
				return err
			}
			if _, err := w.Write(line); err != nil {
				return err
			}
			_, err := io.Copy(w, io.NewSectionReader(f, end, fi.Size()-end))
			return err
		})
	}
	if err != nil {
		// Nothing was replaced: the copy is not needed.
		os.Remove(kept)
		return "", mailbox.Event{}, err
	}
	return kept, ev, nil
}

// skipReason is the record_skipped event's reason: what was moved aside,
// why, and where the original is.
func skipReason(p *RecordError, kept, operator string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "moved aside by 'mailroom log repair': %s %s; the original record is line %d of %s", p.Where(), p.Problem(), p.Line, kept)
	if operator = strings.TrimSpace(operator); operator != "" {
		fmt.Fprintf(&b, "; the operator's reason: %s", operator)
	}
	return b.String()
}
