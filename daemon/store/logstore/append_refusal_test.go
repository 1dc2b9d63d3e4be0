package logstore

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/mailroom/mailroom/daemon/store/storetest"
	"github.com/mailroom/mailroom/mailbox"
)

// TestAppendRefusesWhatReplayCannotRead: an event whose value is nested too
// deep is refused when it is appended, not found on the next start. Done
// gets an error naming the event and the cause, nothing reaches the disk,
// and the store is not failed: the same seq is taken by the next event.
func TestAppendRefusesWhatReplayCannotRead(t *testing.T) {
	for _, c := range []struct {
		name  string
		depth int
		cause string
	}{
		// encoding/json's own limit refuses this when it encodes.
		{"nested 20,000 deep", 20000, "exceeded max depth"},
		// This one encodes, but inside the event it is deeper than the
		// decoder reads: before the check it reached the disk and stopped
		// the next start.
		{"nested 9,997 deep", 9997, "replay could not read it back: invalid character '[' exceeded max depth"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := storetest.NewWorkload(97)
			good := w.Events(t, 3)
			dir := t.TempDir()
			s := mustOpen(t, dir, Options{})
			storetest.AppendAll(t, s, good...)
			path := s.segs[0].path
			before := readFile(t, path)

			bad := mailbox.Event{Seq: 4, AtMs: good[2].AtMs + 1, Type: mailbox.EventResultPosted, TaskID: "t-deep",
				Result: &mailbox.Result{TaskID: "t-deep", Status: mailbox.StatusOK,
					Content: []mailbox.Content{{Type: mailbox.ContentJSON, Value: json.RawMessage(nested(c.depth))}}}}
			done := make(chan error, 1)
			s.AppendUnit([]mailbox.Event{bad}, func(err error) { done <- err })
			err := <-done
			wantErrorNaming(t, err, "event 4 (result_posted) cannot be logged", c.cause)
			if got := readFile(t, path); string(got) != string(before) {
				t.Fatalf("the refused event changed the segment: %d bytes, was %d", len(got), len(before))
			}
			if s.LastSeq() != 3 {
				t.Errorf("LastSeq = %d after the refusal, want 3", s.LastSeq())
			}

			// Not failed: seq 4 is still the one expected, and takes a
			// good event.
			next := w.Events(t, 2)
			storetest.AppendAll(t, s, next...)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			st, loaded := reopen(t, dir)
			storetest.SameEvents(t, loaded, append(good, next...))
			storetest.SameState(t, st, w.State)
		})
	}
}

// TestEveryEncodedEventDecodesBack holds encodeEvent to its promise over a
// realistic workload: every line it returns is read back by replay.
func TestEveryEncodedEventDecodesBack(t *testing.T) {
	for i, ev := range storetest.NewWorkload(98).Events(t, 500) {
		line, err := encodeEvent(ev)
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if _, err := parseLine(os.DevNull, rawLine{b: line[:len(line)-1], terminated: true}); err != nil {
			t.Fatal(fmt.Errorf("event %d: %w", i, err))
		}
	}
}
