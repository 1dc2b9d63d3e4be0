package logstore

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/mailroom/mailroom/daemon/store/internal/replay"
	"github.com/mailroom/mailroom/daemon/store/storetest"
	"github.com/mailroom/mailroom/mailbox"
)

// FuzzDecodeMatchesStdlib holds the replay decoder (goccy/go-json, chosen
// for speed) to encoding/json: whatever the standard library decodes, the
// replay decoder must decode to the very same event.
func FuzzDecodeMatchesStdlib(f *testing.F) {
	for _, ev := range storetest.NewWorkload(11).Events(f, 60) {
		b, err := json.Marshal(ev)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"seq":1,"at_ms":2,"type":"task_sent","task":{"id":"x","sender":"a\u00e9\ud83d\ude00","recipient":"b","intent_text":"\"q\"\n","task_kind":"","deadline_ms":-1}}`))
	f.Add([]byte(`{"seq":3,"result":{"task_id":"t","status":"ok","content":[{"type":"json","value":{"a":[1,2,{"b":null}]}},{"type":"text","text":""}]}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var want mailbox.Event
		if json.Unmarshal(body, &want) != nil {
			return
		}
		got, err := decodeEvent(want.Seq, body)
		if err != nil {
			t.Fatalf("encoding/json decodes %q but the replay decoder says %v", body, err)
		}
		if !reflect.DeepEqual(normalizeRaw(got), normalizeRaw(want)) {
			t.Fatalf("decoders disagree on %q:\n got %+v\nwant %+v", body, got, want)
		}
	})
}

// normalizeRaw compacts raw JSON values, which decoders may keep with
// different whitespace.
func normalizeRaw(ev mailbox.Event) mailbox.Event {
	if ev.Result != nil {
		r := *ev.Result
		r.Content = append([]mailbox.Content(nil), r.Content...)
		for i, c := range r.Content {
			if len(c.Value) > 0 {
				var v any
				if json.Unmarshal(c.Value, &v) == nil {
					r.Content[i].Value, _ = json.Marshal(v)
				}
			}
		}
		ev.Result = &r
	}
	return ev
}

// TestSnapshotDecodeMatchesStdlib holds the snapshot decoder
// (replay.DecodeSnapshot, goccy/go-json) to encoding/json on snapshots of
// the shared workload's mailbox at several points, and on the golden v9
// snapshot file: both decode to the same snapshot.
func TestSnapshotDecodeMatchesStdlib(t *testing.T) {
	var bodies [][]byte
	for _, seed := range []uint64{3, 11, 29} {
		s := mailbox.NewState()
		for i, ev := range storetest.NewWorkload(seed).Events(t, 400) {
			if err := s.Apply(ev); err != nil {
				t.Fatal(err)
			}
			if i%100 == 99 {
				b, err := json.Marshal(s.Snapshot(ev.AtMs))
				if err != nil {
					t.Fatal(err)
				}
				bodies = append(bodies, b)
			}
		}
	}
	golden, err := os.ReadFile(filepath.Join("testdata", "v9", "datadir", "snapshot-00000000000000000032.json"))
	if err != nil {
		t.Fatal(err)
	}
	body, err := parseSnapshotFile(golden, 32)
	if err != nil {
		t.Fatal(err)
	}
	bodies = append(bodies, body)
	for i, body := range bodies {
		var want, got mailbox.Snapshot
		if err := json.Unmarshal(body, &want); err != nil {
			t.Fatal(err)
		}
		if err := replay.DecodeSnapshot(body, &got); err != nil {
			t.Fatalf("snapshot %d: %v", i, err)
		}
		if len(got.Tasks) == 0 {
			t.Fatalf("snapshot %d holds no tasks: not a test of anything", i)
		}
		// Raw JSON values may keep different whitespace; encoding them
		// again compacts both.
		wb, _ := json.Marshal(want)
		gb, _ := json.Marshal(got)
		if string(wb) != string(gb) {
			t.Fatalf("snapshot %d: the decoders disagree:\n got %s\nwant %s", i, gb, wb)
		}
	}
}

// TestSnapshotRecordIsTheMarshalledSnapshot holds the snapshot file's
// streaming writer (writeSnapshotRecord, a task at a time) to what it
// replaced: json.Marshal of the whole snapshot in the record frame, byte
// for byte. It covers the shared workload's snapshots, one with no tasks,
// and one whose registered agent's card holds a "tasks":[] of its own
// after the tasks.
func TestSnapshotRecordIsTheMarshalledSnapshot(t *testing.T) {
	var snaps []*mailbox.Snapshot
	for _, seed := range []uint64{5, 17} {
		s := mailbox.NewState()
		for i, ev := range storetest.NewWorkload(seed).Events(t, 300) {
			if err := s.Apply(ev); err != nil {
				t.Fatal(err)
			}
			if i%60 == 0 {
				snaps = append(snaps, s.Snapshot(ev.AtMs))
			}
		}
	}
	snaps = append(snaps, &mailbox.Snapshot{Seq: 9, AtMs: 1, Tasks: []mailbox.TaskRecord{}, Results: []mailbox.PendingResult{}})
	tricky := *snaps[len(snaps)-2]
	tricky.Registry = []mailbox.RegisteredAgent{{Agent: "x@local", Card: mailbox.AgentCard{Name: `"tasks":[]`, Description: "tasks"}}}
	snaps = append(snaps, &tricky)
	for i, snap := range snaps {
		body, err := json.Marshal(snap)
		if err != nil {
			t.Fatal(err)
		}
		want := appendRecord(nil, keySnapshot, snap.Seq, body)
		var got bytes.Buffer
		n, err := writeSnapshotRecord(&got, snap)
		if err != nil {
			t.Fatalf("snapshot %d: %v", i, err)
		}
		if !bytes.Equal(got.Bytes(), want) || n != int64(len(want)) {
			t.Fatalf("snapshot %d (%d tasks): the streamed record (%d bytes, %d said) differs from the marshalled one (%d bytes)", i, len(snap.Tasks), got.Len(), n, len(want))
		}
	}
}
