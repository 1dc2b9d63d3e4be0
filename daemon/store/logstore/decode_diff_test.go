package logstore

import (
	"encoding/json"
	"reflect"
	"testing"

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
