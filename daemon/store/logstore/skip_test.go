package logstore

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/mailroom/mailroom/daemon/store/storetest"
	"github.com/mailroom/mailroom/mailbox"
)

// dirBytes is every file of dir but its LOCK, by name.
func dirBytes(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	for _, name := range dirNames(t, dir) {
		files[name] = string(readFile(t, filepath.Join(dir, name)))
	}
	return files
}

// wantUnchanged fails unless dir holds exactly the files of before.
func wantUnchanged(t *testing.T, dir string, before map[string]string) {
	t.Helper()
	after := dirBytes(t, dir)
	for name, data := range before {
		if got, ok := after[name]; !ok || got != data {
			t.Errorf("%s was changed or removed", name)
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			t.Errorf("%s was created", name)
		}
	}
}

// wantSkipped checks a repaired log: it loads, every event but the skipped
// one is as written, and the skipped one is a record_skipped event of its
// seq and time that says what was moved, why and where the original is.
func wantSkipped(t *testing.T, p plantedLog, out SkipOutcome, atMs int64, why ...string) {
	t.Helper()
	if !out.After.Healthy() || out.After.LastSeq != uint64(len(p.evs)) {
		t.Fatalf("the check after the repair = %+v, want healthy to seq %d", out.After, len(p.evs))
	}
	if got := readFile(t, out.KeptAs); !bytes.Equal(got, p.data) {
		t.Errorf("%s is not the segment as it was before the repair", out.KeptAs)
	}
	_, loaded := reopen(t, p.dir)
	if len(loaded) != len(p.evs) {
		t.Fatalf("the repaired log holds %d events, want %d", len(loaded), len(p.evs))
	}
	skipped := loaded[p.bad-1]
	if skipped.Seq != p.bad || skipped.Type != mailbox.EventRecordSkipped || skipped.AtMs != atMs {
		t.Errorf("seq %d is now %+v, want a record_skipped event at %d", p.bad, skipped, atMs)
	}
	storetest.SameEvents(t, []mailbox.Event{skipped}, []mailbox.Event{out.Replacement})
	wantErrorNaming(t, fmt.Errorf("%s", skipped.Reason), append([]string{fmt.Sprintf("record seq %d", p.bad), out.KeptAs}, why...)...)
	storetest.SameEvents(t, loaded[:p.bad-1], p.evs[:p.bad-1])
	storetest.SameEvents(t, loaded[p.bad:], p.evs[p.bad:])

	// Only the record's own line changed.
	repaired := readFile(t, p.path)
	end := p.off + bytes.IndexByte(p.data[p.off:], '\n') + 1
	if !bytes.HasPrefix(repaired, p.data[:p.off]) || !bytes.HasSuffix(repaired, p.data[end:]) {
		t.Errorf("the repair changed bytes outside line %d", p.bad)
	}
}

// TestSkipRecordMovesAsideExactlyTheRecordCheckFound: the wrong seq is
// refused and changes nothing; the right one makes the log load with every
// other event intact and keeps the original as .broken, without
// overwriting an older .broken.
func TestSkipRecordMovesAsideExactlyTheRecordCheckFound(t *testing.T) {
	for _, c := range undecodable {
		t.Run(c.name, func(t *testing.T) {
			p, at := plantUndecodable(t, c.body)
			if !c.knowsTime {
				at = p.evs[p.bad-2].AtMs // the time of the event before it
			}
			older := p.path + brokenSuffix
			if err := os.WriteFile(older, []byte("an older repair's copy\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			before := dirBytes(t, p.dir)
			for _, wrong := range []uint64{10, 12, 0} {
				_, err := SkipRecord(p.dir, wrong, "")
				wantErrorNaming(t, err, fmt.Sprintf("refusing to move seq %d aside", wrong), "the first record that cannot be replayed is record seq 11 (",
					"'mailroom log repair --data-dir "+p.dir+" --seq 11'")
				wantUnchanged(t, p.dir, before)
			}

			out, err := SkipRecord(p.dir, 11, "a bad deploy wrote it")
			if err != nil {
				t.Fatalf("SkipRecord: %v", err)
			}
			if out.KeptAs == older || filepath.Dir(out.KeptAs) != p.dir {
				t.Errorf("the original was kept as %s, want a new name beside %s", out.KeptAs, older)
			}
			if got := string(readFile(t, older)); got != before[filepath.Base(older)] {
				t.Errorf("the older .broken copy was overwritten")
			}
			if out.Skipped == nil || out.Skipped.Seq != 11 || out.Skipped.Offset != int64(p.off) {
				t.Errorf("Skipped = %+v, want seq 11 at offset %d", out.Skipped, p.off)
			}
			wantSkipped(t, p, out, at, "passed its checksum but does not decode", c.cause, "a bad deploy wrote it")
		})
	}
}

// TestSkipRecordOfARefusedEvent: an event that decodes but that replay
// refuses is found and moved aside the same way.
func TestSkipRecordOfARefusedEvent(t *testing.T) {
	p := sentTwice(t)
	out, err := SkipRecord(p.dir, 3, "")
	if err != nil {
		t.Fatalf("SkipRecord: %v", err)
	}
	wantSkipped(t, p, out, p.evs[2].AtMs, "task_sent, task task-a", "sent twice")
	st, _ := reopen(t, p.dir)
	if rec, ok := st.Task("task-a"); !ok || rec.Task.IntentText != "do task-a" || rec.State != mailbox.TaskQueued {
		t.Errorf("task-a after the repair = %+v, want the first send, still queued", rec)
	}
}

// TestSkipRecordRefuses what it cannot or need not do, changing nothing.
func TestSkipRecordRefuses(t *testing.T) {
	healthy := plantEvents(t, storetest.NewWorkload(95).Events(t, 5), 3, nil)
	evs := storetest.NewWorkload(96).Events(t, 8)
	badSnapshot := writeDir(t, snapf(5, appendRecord(nil, keySnapshot, 5, []byte(`{"seq":5,"tasks":7}`))), seg(6, segmentBytes(t, evs[5:]...)))
	damaged := segmentBytes(t, evs...)
	damaged[lineStarts(damaged)[3]+1] ^= 0x01
	damagedDir := writeDir(t, seg(1, damaged))

	cases := []struct {
		name string
		dir  string
		seq  uint64
		want []string
	}{
		{"a log that replays cleanly", healthy.dir, 3, []string{"refusing to move seq 3 aside", "replays cleanly up to seq 5", "nothing needs moving"}},
		{"a snapshot", badSnapshot, 5, []string{"refusing to move seq 5 aside", "snapshot seq 5", "cannot be moved aside like a log record", "backup"}},
		{"damage a skipped record does not fix", damagedDir, 4, []string{"refusing to move seq 4 aside", "does not fix", "line 4 ", "restore the file from a backup"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := dirBytes(t, c.dir)
			_, err := SkipRecord(c.dir, c.seq, "")
			wantErrorNaming(t, err, c.want...)
			wantUnchanged(t, c.dir, before)
		})
	}
}

// TestSkipRecordShowsTheNextProblem: with two bad records, moving the first
// aside leaves the second, which the check after the repair names.
func TestSkipRecordShowsTheNextProblem(t *testing.T) {
	p := sentTwice(t)
	// Lease task-b twice: the second lease (seq 5) is refused too.
	second := p.evs[3]
	second.Seq = 5
	s := mustOpen(t, p.dir, Options{})
	storetest.AppendAll(t, s, second)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	out, err := SkipRecord(p.dir, 3, "")
	if err != nil {
		t.Fatal(err)
	}
	if q := out.After.Problem; q == nil || q.Seq != 5 || !q.Refused || q.Line != 5 {
		t.Fatalf("the check after the repair found %+v, want the refused lease at seq 5, line 5", q)
	}
	if out.After.LastSeq != 4 {
		t.Errorf("the check after the repair replayed to seq %d, want 4", out.After.LastSeq)
	}
}
