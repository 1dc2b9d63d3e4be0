package logstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/mailroom/mailroom/mailbox"
)

// RecordError is a record that passed its checksum but cannot be replayed:
// it does not decode into the event (or snapshot) it frames, or it decodes
// and replaying it fails (the mailbox refuses it). Its bytes are whole, so
// the daemon never cuts it off on its own, and it cannot start past it.
// Check finds the first one; SkipRecord moves exactly that one aside.
type RecordError struct {
	Path   string // the segment or snapshot file holding the record
	Line   int    // its line number, from 1
	Offset int64  // the byte offset of its line
	Seq    uint64 // the seq its record carries
	// Type, TaskID and AtMs are what could be read of the event: "" and 0
	// when unknown.
	Type   string
	TaskID string
	AtMs   int64
	// Snapshot is set when the record is the snapshot file's.
	Snapshot bool
	// Refused is set when the record decodes but replaying it failed;
	// otherwise it does not decode.
	Refused bool
	Err     error
}

func (e *RecordError) Error() string {
	return e.Where() + " " + e.Problem() + ". " + e.Advice()
}

func (e *RecordError) Unwrap() error { return e.Err }

// Dir is the data dir the record is in.
func (e *RecordError) Dir() string { return filepath.Dir(e.Path) }

// Name names the record: "record seq 3 (result_posted, task T)".
func (e *RecordError) Name() string {
	if e.Snapshot {
		return fmt.Sprintf("snapshot seq %d", e.Seq)
	}
	if about := e.about(); about != "" {
		return fmt.Sprintf("record seq %d (%s)", e.Seq, about)
	}
	return fmt.Sprintf("record seq %d", e.Seq)
}

// Where names the record as an operator looks for it: its seq, what it is
// when known, and the file, line and byte offset it lies at.
func (e *RecordError) Where() string {
	if e.Snapshot {
		return fmt.Sprintf("snapshot seq %d (%s)", e.Seq, e.Path)
	}
	about := e.about()
	if about != "" {
		about += "; "
	}
	return fmt.Sprintf("record seq %d (%sline %d, byte offset %d of %s)", e.Seq, about, e.Line, e.Offset, e.Path)
}

// about is what the record's event is, as far as it is known.
func (e *RecordError) about() string {
	switch {
	case e.TaskID == "":
		return e.Type
	case e.Type == "":
		return "task " + e.TaskID
	}
	return e.Type + ", task " + e.TaskID
}

// Problem says what is wrong with the record.
func (e *RecordError) Problem() string {
	if e.Refused {
		return "decodes, but replaying it fails: " + e.Err.Error()
	}
	return "passed its checksum but does not decode: " + e.Err.Error()
}

// CheckCommand is the command that shows the record.
func (e *RecordError) CheckCommand() string {
	return "mailroom log check --data-dir " + shellQuote(e.Dir())
}

// RepairCommand is the command that moves the record aside; "" for a
// snapshot, which cannot be.
func (e *RecordError) RepairCommand() string {
	if e.Snapshot {
		return ""
	}
	return fmt.Sprintf("mailroom log repair --data-dir %s --seq %d", shellQuote(e.Dir()), e.Seq)
}

// Advice says how to get the daemon up again.
func (e *RecordError) Advice() string {
	if e.Snapshot {
		return fmt.Sprintf("The daemon cannot start from it, and a snapshot cannot be moved aside like a log record: "+
			"it holds the whole mailbox up to seq %d and the log before it was removed when it was written "+
			"(without it the log would be missing events 1 to %d). Restore data dir %s from a backup, "+
			"or start the daemon on a new, empty data dir and keep this one for inspection", e.Seq, e.Seq, e.Dir())
	}
	advice := fmt.Sprintf("the daemon cannot start until it is moved aside: run '%s' to see it, then '%s' (the original segment is kept as %s.broken)",
		e.CheckCommand(), e.RepairCommand(), filepath.Base(e.Path))
	if e.Refused {
		return "If another version of mailroom wrote this log, run that version instead; otherwise " + advice
	}
	return strings.ToUpper(advice[:1]) + advice[1:]
}

// shellQuote returns dir as it must be typed in a shell command.
func shellQuote(dir string) string {
	plain := func(r rune) bool {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+,:@%=~", r)
	}
	if dir != "" && strings.IndexFunc(dir, func(r rune) bool { return !plain(r) }) < 0 {
		return dir
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, `$`, `\$`, "`", "\\`").Replace(dir) + `"`
}

// undecodableRecord is the error for line l of the segment at path, whose
// record of seq passed its checksum but whose body did not decode.
func undecodableRecord(path string, l rawLine, seq uint64, body []byte, err error) *RecordError {
	e := &RecordError{Path: path, Line: l.num, Offset: l.off, Seq: seq, Err: err}
	e.Type, e.TaskID, e.AtMs = eventHead(body)
	return e
}

// refusedRecord is the error for the event of seq in the segment at path,
// which decoded but which replaying refused with err.
func refusedRecord(path string, ev mailbox.Event, err error) *RecordError {
	e := &RecordError{Path: path, Seq: ev.Seq, Type: ev.Type, TaskID: ev.TaskID, AtMs: ev.AtMs, Refused: true, Err: err}
	if e.TaskID == "" && ev.Task != nil {
		e.TaskID = ev.Task.ID
	}
	// Replay passes events on without their lines; finding the line again
	// costs one read of one segment, and only on this path.
	if line, off, lerr := locateRecord(path, ev.Seq); lerr == nil {
		e.Line, e.Offset = line, off
	} else {
		e.Err = fmt.Errorf("%w (and its line could not be found again: %v)", err, lerr)
	}
	return e
}

// locateRecord returns the line and byte offset of the record of seq in
// the segment at path.
func locateRecord(path string, seq uint64) (int, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	r := newLineReader(f, 0, fi.Size(), 1)
	for {
		l, err := r.next()
		if err == io.EOF {
			return 0, 0, fmt.Errorf("no record of seq %d in %s", seq, path)
		}
		if err != nil {
			return 0, 0, err
		}
		if got, _, err := parseRecord(l.b, keyEvent); err == nil && got == seq {
			return l.num, l.off, nil
		}
	}
}

// eventHead reads what it can of an event body that does not decode: its
// type, task and time, so the operator (and the record that replaces it) can
// be told what it was. The encoder writes these keys first, so they are
// read one top-level key at a time until a value cannot be read.
func eventHead(body []byte) (typ, taskID string, atMs int64) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return
	}
	for dec.More() {
		t, err := dec.Token()
		key, ok := t.(string)
		if err != nil || !ok {
			return
		}
		var v any
		switch key {
		case "type":
			v = &typ
		case "task_id":
			v = &taskID
		case "at_ms":
			v = &atMs
		case "task":
			v = &struct {
				ID *string `json:"id"`
			}{&taskID}
		default:
			v = new(json.RawMessage)
		}
		// A value of the wrong type is read past; anything else (too deep,
		// not JSON) ends what can be read.
		var typeErr *json.UnmarshalTypeError
		if err := dec.Decode(v); err != nil && !errors.As(err, &typeErr) {
			return
		}
	}
	return
}
