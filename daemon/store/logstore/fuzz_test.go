package logstore

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/mailbox"
)

// FuzzRecordDecode feeds arbitrary lines to the log line decoder (the frame
// parser and the event decoder, exactly as Load and recovery use them).
// It must never panic; it must accept only a line that is the canonical
// record of its event bytes (so it carries their checksum and its seq
// agrees with the event's); what it accepts must re-encode to a line that
// decodes to the same event; and flipping any single bit of an accepted
// line must get it refused, which is what lets recovery tell a torn or
// damaged record from a whole one.
//
//	go test -run '^$' -fuzz FuzzRecordDecode ./daemon/store/logstore
func FuzzRecordDecode(f *testing.F) {
	for _, ev := range sampleEvents() {
		line, err := encodeEvent(ev)
		if err != nil {
			f.Fatal(err)
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		f.Add(line)
		f.Add(line[:len(line)/2])                                          // torn
		f.Add(bytes.Replace(line, []byte(`"crc":`), []byte(`"crc":0`), 1)) // non-canonical crc
		f.Add(bytes.Replace(line, []byte(`{"seq":`), []byte(`{"seq": `), 1))
	}
	snap, err := encodeSnapshot(&mailbox.Snapshot{Seq: 3})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(bytes.TrimSuffix(snap, []byte("\n"))) // a snapshot record where an event belongs
	f.Add(appendRecord(nil, keyEvent, 7, []byte(`{"seq":8,"at_ms":1,"type":"task_leased"}`)))
	f.Add(appendRecord(nil, keyEvent, 0, []byte(`[]`)))
	f.Add(appendRecord(nil, keyEvent, 1, []byte(`{"seq":1,"type":"result_posted","result":{"task_id":"t","status":"ok","content":[{"type":"json","value": {"a" : [1, 2]} }]}}`)))
	f.Add([]byte(`{"seq":18446744073709551616,"crc":1,"event":{}}`))
	f.Add([]byte(`{"seq":1,"crc":4294967296,"event":{}}`))
	f.Add([]byte{})

	f.Fuzz(func(t *testing.T, data []byte) {
		checkLine(t, data)
		// A random line almost never carries its checksum, so the input is
		// also tried as an event body in a correct frame: that is how the
		// fuzzer reaches the event decoder.
		var head struct{ Seq uint64 }
		if json.Unmarshal(data, &head) == nil && len(data) > 0 {
			checkLine(t, bytes.TrimSuffix(appendRecord(nil, keyEvent, head.Seq, data), []byte("\n")))
		}
	})
}

// checkLine holds the decoder's properties for one line.
func checkLine(t *testing.T, line []byte) {
	t.Helper()
	ev, ok := decodeLine(line)
	if !ok {
		return
	}
	// Only the canonical record of its own bytes is accepted.
	seq, body, _ := parseRecord(line, keyEvent)
	if want := bytes.TrimSuffix(appendRecord(nil, keyEvent, seq, body), []byte("\n")); !bytes.Equal(line, want) {
		t.Fatalf("accepted a line that is not the canonical record of its event:\n got %q\nwant %q", line, want)
	}
	if ev.Seq != seq {
		t.Fatalf("accepted seq %d for an event saying %d", seq, ev.Seq)
	}
	// The newline is part of a whole record.
	if _, err := parseLine("", rawLine{b: line}); err == nil {
		t.Fatalf("accepted a line without its newline: %q", line)
	}
	if again, err := parseLine("", rawLine{b: line, terminated: true}); err != nil || !sameEvent(t, again, ev) {
		t.Fatalf("parseLine disagrees with the decoder on %q: %v", line, err)
	}

	// What was accepted round-trips: re-encoded, it decodes to the same
	// event, and encoding is then a fixed point.
	re, err := encodeEvent(ev)
	if err != nil {
		t.Fatalf("an accepted event does not re-encode: %v\nline %q", err, line)
	}
	ev2, ok := decodeLine(bytes.TrimSuffix(re, []byte("\n")))
	if !ok || !sameEvent(t, ev2, ev) {
		t.Fatalf("re-encoded event does not decode back:\n line %q\n   re %q", line, re)
	}
	if re2, err := encodeEvent(ev2); err != nil || !bytes.Equal(re2, re) {
		t.Fatalf("encoding is not stable: %q then %q (%v)", re, re2, err)
	}

	// Any single flipped bit is refused.
	flipped := bytes.Clone(line)
	for i := range flipped {
		for _, bit := range []byte{0x01, 0x20, 0x80} {
			flipped[i] ^= bit
			if _, ok := decodeLine(flipped); ok {
				t.Fatalf("accepted %q, which is %q with bit %#x of byte %d flipped", flipped, line, bit, i)
			}
			flipped[i] ^= bit
		}
	}
}

// decodeLine is the log line decoder as Load uses it, for a line without
// its newline.
func decodeLine(line []byte) (mailbox.Event, bool) {
	seq, body, err := parseRecord(line, keyEvent)
	if err != nil {
		return mailbox.Event{}, false
	}
	ev, err := decodeEvent(seq, body)
	return ev, err == nil
}

// sameEvent compares events by their encoding: decoding normalises what
// an event may hold (raw JSON values are compacted, invalid UTF-8 replaced)
// so identical events may differ in memory but never on the wire.
func sameEvent(t *testing.T, a, b mailbox.Event) bool {
	t.Helper()
	ja, erra := json.Marshal(a)
	jb, errb := json.Marshal(b)
	if erra != nil || errb != nil {
		t.Fatalf("encoding events: %v, %v", erra, errb)
	}
	return bytes.Equal(ja, jb)
}

// sampleEvents is one event of every type, as the engine writes them.
func sampleEvents() []mailbox.Event {
	const task, lease = "6f9619ff-8b86-4d11-b42d-00c04fc964ff", "0b7a5c1e-3d2f-4a6b-9c8d-7e6f5a4b3c2d"
	kind, deadline := "summarize", int64(1_800_000_000_000)
	t := &mailbox.Task{ID: task, Sender: "planner@local", Recipient: "coder@local", IntentText: "fix the flaky test\n\t\"quoted\" ünïcode",
		TaskKind: &kind, DeadlineMs: &deadline, Idempotency: &mailbox.Idempotency{DuplicateSafety: mailbox.DuplicateIdempotent, Key: "k1"}}
	res := &mailbox.Result{TaskID: task, Status: mailbox.StatusPartial, LeaseID: lease, ErrorMessage: "half",
		Content: []mailbox.Content{{Type: mailbox.ContentText, Text: ""}, {Type: mailbox.ContentJSON, Value: json.RawMessage(`{"k":[1,2.5,null,"s"]}`)}}}
	at := int64(1_700_000_000_000)
	return []mailbox.Event{
		{Seq: 1, AtMs: at, Type: mailbox.EventTaskSent, Task: t},
		{Seq: 2, AtMs: at, Type: mailbox.EventTaskLeased, TaskID: task, LeaseID: lease, LeasedTo: "coder@local", Attempt: 1},
		{Seq: 3, AtMs: at, Type: mailbox.EventTaskRequeued, TaskID: task, LeaseID: lease, LeasedTo: "coder@local", Attempt: 1,
			Principal: "ops", Reason: strings.Repeat("why ", 8), DuplicateRisk: mailbox.RiskIdempotent, Auto: true},
		{Seq: 14, AtMs: at, Type: mailbox.EventResultPosted, TaskID: task, LeaseID: lease, LeasedTo: "coder@local", Attempt: 2, Result: res},
		{Seq: 15, AtMs: at, Type: mailbox.EventTaskForceErrored, TaskID: task, LeaseID: lease, Attempt: 2, Reason: "gone",
			Result: &mailbox.Result{TaskID: task, Status: mailbox.StatusError, Content: []mailbox.Content{}, ErrorMessage: "agent gone", LeaseID: lease}},
		{Seq: 160, AtMs: at, Type: mailbox.EventResultDrained, TaskID: task, Attempt: 2},
		{Seq: 1 << 40, AtMs: at, Type: mailbox.EventResultReplayed, Task: t, Result: res, ReplayedFrom: lease},
	}
}
