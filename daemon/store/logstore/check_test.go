package logstore

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/daemon/store/storetest"
	"github.com/mailroom/mailroom/mailbox"
)

// plantedLog is a log the store wrote, with one record replaced by a line
// whose checksum is right but whose event does not decode (or does not
// apply), as an older version's bug or a hand edit might leave it.
type plantedLog struct {
	dir, path string
	data      []byte          // the segment as planted
	bad       uint64          // the planted record's seq
	off       int             // where its line starts
	evs       []mailbox.Event // the events as written; evs[bad-1] held the place of the planted one
}

// plantLog writes n events with the store (real files, real fsync), the
// one at seq bad a placeholder, then replaces the placeholder's line with
// the record of body.
func plantLog(t *testing.T, seed uint64, n int, bad uint64, body []byte) plantedLog {
	t.Helper()
	evs := storetest.NewWorkload(seed).Events(t, n-1)
	placeholder := mailbox.Event{Seq: bad, AtMs: evs[bad-2].AtMs, Type: mailbox.EventRecordSkipped, Reason: "placeholder"}
	evs = append(evs[:bad-1], append([]mailbox.Event{placeholder}, evs[bad-1:]...)...)
	for i := bad; i < uint64(len(evs)); i++ {
		evs[i].Seq = i + 1
	}
	return plantEvents(t, evs, bad, body)
}

// plantEvents writes evs with the store and replaces the line of seq bad
// with the record of body (nil: leaves it as written).
func plantEvents(t *testing.T, evs []mailbox.Event, bad uint64, body []byte) plantedLog {
	t.Helper()
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{})
	storetest.AppendAll(t, s, evs...)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	p := plantedLog{dir: dir, path: filepath.Join(dir, segmentName(1)), bad: bad, evs: evs}
	written := readFile(t, p.path)
	starts := append(lineStarts(written), len(written))
	p.off = starts[bad-1]
	p.data = written
	if body != nil {
		p.data = bytes.Join([][]byte{written[:p.off], appendRecord(nil, keyEvent, bad, body), written[starts[bad]:]}, nil)
		if err := os.WriteFile(p.path, p.data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// nested is a JSON value nested depth arrays deep.
func nested(depth int) string { return strings.Repeat("[", depth) + strings.Repeat("]", depth) }

// undecodable are event bodies with a right checksum that replay cannot
// decode. {at} is the time the event says it happened.
var undecodable = []struct {
	name, body string
	typ, task  string // what the error can still say about it
	knowsTime  bool
	cause      string
}{
	{"a result's content value nested 20,000 deep",
		`{"seq":11,"at_ms":{at},"type":"result_posted","task_id":"t-1","lease_id":"l-1","result":{"task_id":"t-1","status":"ok","content":[{"type":"json","value":` + nested(20000) + `}]}}`,
		"result_posted", "t-1", true, "exceeded max depth"},
	{"a field of the wrong type",
		`{"seq":11,"at_ms":{at},"type":"task_leased","task_id":"t-2","lease_id":"l-2","leased_to":"coder@local","attempt":"two"}`,
		"task_leased", "t-2", true, "attempt"},
	{"the event inside says another seq",
		`{"seq":12,"at_ms":{at},"type":"record_skipped"}`,
		"record_skipped", "", true, "the event inside says seq 12, its record says 11"},
	{"not an event at all",
		`[1,2,3]`,
		"", "", false, "array"},
}

// plantUndecodable plants case c at seq 11 of 21 events, stamped 1 ms after
// the event before it.
func plantUndecodable(t *testing.T, body string) (plantedLog, int64) {
	t.Helper()
	probe := storetest.NewWorkload(91).Events(t, 10)
	at := probe[9].AtMs + 1
	return plantLog(t, 91, 21, 11, []byte(strings.ReplaceAll(body, "{at}", fmt.Sprint(at)))), at
}

// TestUndecodableRecordStopsLoadNamingIt: Open only checks frames and
// checksums, so it opens; Load hands over every event before the record and
// then stops with a *RecordError that names it and says how to move it
// aside.
func TestUndecodableRecordStopsLoadNamingIt(t *testing.T) {
	for _, c := range undecodable {
		t.Run(c.name, func(t *testing.T) {
			p, _ := plantUndecodable(t, c.body)
			s := mustOpen(t, p.dir, Options{})
			var got []mailbox.Event
			err := s.Load(func(ev mailbox.Event) error {
				got = append(got, ev)
				return nil
			})
			wantErrorNaming(t, err, "record seq 11 (", "line 11,", fmt.Sprintf("byte offset %d of %s)", p.off, p.path),
				"passed its checksum but does not decode: ", c.cause,
				"The daemon cannot start until it is moved aside: run 'mailroom log check --data-dir "+p.dir+"' to see it, then 'mailroom log repair --data-dir "+p.dir+" --seq 11'",
				segmentName(1)+".broken")
			var re *RecordError
			if !errors.As(err, &re) {
				t.Fatalf("Load's error is a %T, want a *RecordError", err)
			}
			if re.Path != p.path || re.Line != 11 || re.Offset != int64(p.off) || re.Seq != 11 || re.Refused || re.Snapshot || re.Type != c.typ || re.TaskID != c.task {
				t.Errorf("RecordError = %+v, want %s line 11 offset %d seq 11 type %q task %q, not refused", re, p.path, p.off, c.typ, c.task)
			}
			if len(got) != 10 {
				t.Errorf("Load passed %d events before the record, want 10", len(got))
			}
			// Readers of a running store meet the same error.
			if _, err := s.EventsSince(0, 100); !errors.As(err, &re) || re.Seq != 11 {
				t.Errorf("EventsSince: %v, want the *RecordError of seq 11", err)
			}
		})
	}
}

// TestCheckFindsTheUndecodableRecord: Check reports what Load stops at,
// with everything replayed before it, and changes nothing.
func TestCheckFindsTheUndecodableRecord(t *testing.T) {
	for _, c := range undecodable {
		t.Run(c.name, func(t *testing.T) {
			p, _ := plantUndecodable(t, c.body)
			before := dirNames(t, p.dir)
			r, err := Check(p.dir)
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			if r.Healthy() || r.Damage != nil || r.Problem == nil {
				t.Fatalf("Check = %+v, want the record at seq 11 as its problem", r)
			}
			if q := r.Problem; q.Seq != 11 || q.Line != 11 || q.Offset != int64(p.off) || q.Path != p.path || q.Refused {
				t.Errorf("problem = %+v, want seq 11 at line 11, offset %d of %s", q, p.off, p.path)
			}
			if got, want := r.Problem.RepairCommand(), "mailroom log repair --data-dir "+p.dir+" --seq 11"; got != want {
				t.Errorf("repair command = %q, want %q", got, want)
			}
			if r.Events != 10 || r.LastSeq != 10 || len(r.Segments) != 1 || r.SnapshotPath != "" {
				t.Errorf("report = %d events to seq %d in %q, snapshot %q; want 10 events to seq 10 in one segment, no snapshot", r.Events, r.LastSeq, r.Segments, r.SnapshotPath)
			}
			if got := readFile(t, p.path); !bytes.Equal(got, p.data) {
				t.Errorf("Check changed the segment")
			}
			if after := dirNames(t, p.dir); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Errorf("Check changed the dir: %q, was %q", after, before)
			}
		})
	}
}

// sentTwice is a log whose third event sends a queued task again: every
// line decodes, but replay refuses it.
func sentTwice(t *testing.T) plantedLog {
	t.Helper()
	const at = int64(1_767_225_600_000)
	task := func(id string) *mailbox.Task {
		return &mailbox.Task{ID: id, Sender: "planner@local", Recipient: "coder@local", IntentText: "do " + id}
	}
	evs := []mailbox.Event{
		{Seq: 1, AtMs: at, Type: mailbox.EventTaskSent, Task: task("task-a")},
		{Seq: 2, AtMs: at + 1, Type: mailbox.EventTaskSent, Task: task("task-b")},
		{Seq: 3, AtMs: at + 2, Type: mailbox.EventTaskSent, Task: task("task-a")},
		{Seq: 4, AtMs: at + 3, Type: mailbox.EventTaskLeased, TaskID: "task-b", LeaseID: "lease-1", LeasedTo: "coder@local", Attempt: 1},
	}
	return plantEvents(t, evs, 3, nil)
}

func TestRefusedEventIsNamedByLoadAndCheck(t *testing.T) {
	p := sentTwice(t)
	s := mustOpen(t, p.dir, Options{})
	st := mailbox.NewState()
	err := s.Load(st.Apply)
	wantErrorNaming(t, err, "record seq 3 (task_sent, task task-a; line 3, byte offset "+fmt.Sprint(p.off)+" of "+p.path+")",
		"decodes, but replaying it fails", "sent twice", "run that version instead",
		"'mailroom log repair --data-dir "+p.dir+" --seq 3'")
	s.Close()

	r, err := Check(p.dir)
	if err != nil {
		t.Fatal(err)
	}
	q := r.Problem
	if q == nil || !q.Refused || q.Seq != 3 || q.Line != 3 || q.Offset != int64(p.off) || q.Type != mailbox.EventTaskSent || q.TaskID != "task-a" || q.AtMs != p.evs[2].AtMs {
		t.Fatalf("Check's problem = %+v, want seq 3 (task_sent, task-a, refused) at line 3, offset %d", q, p.off)
	}
	if r.Events != 2 || r.LastSeq != 2 {
		t.Errorf("Check replayed %d events to seq %d, want 2 to seq 2", r.Events, r.LastSeq)
	}
}

// TestUndecodableSnapshot: a snapshot that passed its checksum but does not
// decode stops Load, and Check says it cannot be moved aside.
func TestUndecodableSnapshot(t *testing.T) {
	evs := storetest.NewWorkload(92).Events(t, 8)
	body := []byte(`{"seq":5,"at_ms":1,"tasks":"none"}`)
	dir := writeDir(t, snapf(5, appendRecord(nil, keySnapshot, 5, body)), seg(6, segmentBytes(t, evs[5:]...)))
	path := filepath.Join(dir, snapshotName(5))

	s := mustOpen(t, dir, Options{})
	err := s.Load(func(mailbox.Event) error { return nil })
	wantErrorNaming(t, err, "snapshot seq 5 ("+path+") passed its checksum but does not decode", "backup", "missing events 1 to 5")
	if re := (*RecordError)(nil); !errors.As(err, &re) || !re.Snapshot || re.RepairCommand() != "" {
		t.Errorf("Load's error = %#v, want a snapshot *RecordError with no repair command", err)
	}
	s.Close()

	r, err := Check(dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.Problem == nil || !r.Problem.Snapshot || r.Problem.Seq != 5 || r.SnapshotPath != path {
		t.Fatalf("Check = %+v, want the snapshot at seq 5 as its problem", r)
	}
}

// TestCheckWarnsOfWhatTheDaemonFixesItself: a torn last line is a warning,
// not a problem, and Check does not cut it.
func TestCheckWarnsOfWhatTheDaemonFixesItself(t *testing.T) {
	evs := storetest.NewWorkload(93).Events(t, 6)
	whole := segmentBytes(t, evs...)
	starts := lineStarts(whole)
	torn := whole[:len(whole)-9]
	dir := writeDir(t, seg(1, torn), tempf(3, []byte("half a snapshot")))
	path := filepath.Join(dir, segmentName(1))

	r, err := Check(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Healthy() || r.Events != 5 || r.LastSeq != 5 {
		t.Fatalf("Check = %+v, want healthy with 5 events", r)
	}
	all := strings.Join(r.Warnings, "\n")
	wantErrorNaming(t, errors.New(all), path+", line 6 (byte offset "+fmt.Sprint(starts[5])+")", "cut short", "cuts this torn last line", segmentName(1)+".broken",
		snapshotName(3)+tempSuffix, "interrupted compaction")
	if got := readFile(t, path); !bytes.Equal(got, torn) {
		t.Errorf("Check cut the torn line itself")
	}
	if names := dirNames(t, dir); len(names) != 2 {
		t.Errorf("Check changed the dir: %q", names)
	}
}

// TestCheckReportsDamageRepairCannotFix: a checksum failure before the end
// is what Open refuses; Check reports it as damage, not as a record to
// move aside.
func TestCheckReportsDamageRepairCannotFix(t *testing.T) {
	data := segmentBytes(t, storetest.NewWorkload(94).Events(t, 6)...)
	starts := lineStarts(data)
	data[starts[2]+len(`{"seq":3,"crc":`)] ^= 0x01
	dir := writeDir(t, seg(1, data))

	r, err := Check(dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.Healthy() || r.Problem != nil {
		t.Fatalf("Check = %+v, want damage and no record problem", r)
	}
	wantErrorNaming(t, r.Damage, "line 3 ", fmt.Sprintf("byte offset %d)", starts[2]), "checksum")
}

// TestCheckNeedsTheLock: while a store (a daemon) has the dir open, Check
// and SkipRecord refuse, saying why.
func TestCheckNeedsTheLock(t *testing.T) {
	dir := t.TempDir()
	mustOpen(t, dir, Options{})
	_, err := Check(dir)
	wantErrorNaming(t, err, "while no daemon has it open", "data dir "+dir+" is in use", fmt.Sprintf("process %d", os.Getpid()))
	_, err = SkipRecord(dir, 1, "")
	wantErrorNaming(t, err, "while no daemon has it open", "is in use")

	_, err = Check(filepath.Join(dir, "missing"))
	wantErrorNaming(t, err, "no data dir to check", filepath.Join(dir, "missing"))
	if _, serr := os.Stat(filepath.Join(dir, "missing")); serr == nil {
		t.Errorf("Check created the data dir it was asked about")
	}
}

// TestCheckReplaysFromTheSnapshot: a compacted log is replayed from its
// snapshot, through the segments after it, to the same state Load gives.
func TestCheckReplaysFromTheSnapshot(t *testing.T) {
	w := storetest.NewWorkload(99)
	evs := w.Events(t, 30)
	dir := writeDir(t,
		snapf(12, snapshotBytes(t, stateOf(t, evs[:12]...).Snapshot(1))),
		seg(13, segmentBytes(t, evs[12:20]...)),
		seg(21, segmentBytes(t, evs[20:]...)))
	r, err := Check(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, segmentName(13)), filepath.Join(dir, segmentName(21))}
	if !r.Healthy() || r.SnapshotSeq != 12 || r.SnapshotPath != filepath.Join(dir, snapshotName(12)) ||
		fmt.Sprint(r.Segments) != fmt.Sprint(want) || r.Events != 18 || r.LastSeq != 30 || len(r.Warnings) != 0 {
		t.Errorf("Check = %+v, want healthy from snapshot 12 through %q, 18 events to seq 30", r, want)
	}
}
