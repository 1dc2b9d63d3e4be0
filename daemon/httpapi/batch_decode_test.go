package httpapi

import (
	"encoding/json"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/mailbox"
)

// decodeBatch decodes a whole batch in one pass only when that pass
// succeeds, and it may only succeed when every item, decoded alone as the
// per-item path does, would succeed too and give the same value: otherwise
// an item the per-item path refuses in its place would be accepted.
// The seeds are the ways an item is refused alone (and some accepted);
// the fuzz target looks for more.
//
//	go test -run '^$' -fuzz FuzzBatchDecodesAsItsItems ./daemon/httpapi
func FuzzBatchDecodesAsItsItems(f *testing.F) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for _, s := range []string{
		`{"tasks":[{"sender":"a@x","recipient":"b@x","intent_text":"do"}]}`,
		`{"tasks":[{"sender":"a@x","recipient":"b@x","intent_text":"do"},{"sender":"a@x","recipient":"b@x","intent_text":"again","task_kind":"k"}]}`,
		`{"tasks":[{"sender":"a@x","recipient":"b@x","intent_text":"do","sender":"c@x"}]}`,
		`{"tasks":[{"Sender":"a@x","recipient":"b@x","intent_text":"do"}]}`,
		`{"tasks":[{"sender":"a@x","recipient":"b@x","intent_text":"do","id":""}]}`,
		`{"tasks":[{"sender":"a@x","recipient":"b@x","intent_text":"do","colour":"red"}]}`,
		`{"tasks":[{"sender":"a@x","recipient":"b@x","intent_text":"do","idempotency":{"duplicate_safety":"idempotent","key":"k","x":1}}]}`,
		`{"tasks":[null]}`,
		`{"tasks":[5]}`,
		`{"tasks":["a"]}`,
		`{"tasks":[{"sender":"a@x"}],"results":[]}`,
		`{"tasks":[{"sender":"a@x","recipient":"b@x","intent_text":"do","deadline_ms":1e3}]}`,
		`{"tasks":[{"sender":"a@x","recipient":"b@x","intent_text":"do","deadline_ms":1.5}]}`,
		`{"tasks":[{"sender":"a@x","recipient":"b@x","intent_text":"\ud800"}]}`,
		`{"tasks":[],"tasks":[{"sender":"a@x"}]}`,
		`{"results":[{"task_id":"t","status":"ok","content":[{"type":"text","text":"done"}]}]}`,
		`{"results":[{"task_id":"t","status":"ok","content":[{"type":"text","text":"done","value":1}]}]}`,
		`{"results":[{"task_id":"t","status":"ok","content":[{"type":"json","value":` + deep(mailbox.MaxValueDepth) + `}]}]}`,
		`{"results":[{"task_id":"t","status":"ok","content":[{"type":"json","value":` + deep(mailbox.MaxValueDepth+1) + `}]}]}`,
		`{"results":[{"task_id":"t","status":"ok","content":[{"type":"json","value":{"a":1,"a":2}}]}]}`,
		`{"results":[{"task_id":"t","status":"ok","content":[{"type":"text","extra":true}]}]}`,
		`{"results":[{"task_id":"t","status":"ok","content":[],"lease_id":""}]}`,
		`{"results":[{"task_id":"t","status":"ok","content":null}]}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		checkWholeMatchesItems[mailbox.Task](t, body, "tasks")
		checkWholeMatchesItems[mailbox.Result](t, body, "results")
	})
}

func checkWholeMatchesItems[T any](t *testing.T, body, list string) {
	t.Helper()
	var whole batchWhole[T]
	if decodeJSON([]byte(body), &whole, "a batch") != nil {
		return // the per-item path decides
	}
	items, other := whole.Tasks, whole.Results
	if list == "results" {
		items, other = whole.Results, whole.Tasks
	}
	if other != nil || len(items) == 0 {
		return // so does it here
	}
	raw, err := readBatch([]byte(body), list, 1<<20)
	if err != nil {
		t.Fatalf("%s decoded whole into %d %s, but its list is refused: %v", body, len(items), list, err)
	}
	if len(raw) != len(items) {
		t.Fatalf("%s decoded whole into %d %s, the list holds %d", body, len(items), list, len(raw))
	}
	for i, b := range raw {
		var alone T
		if err := decodeJSON(b, &alone, "an item"); err != nil {
			t.Fatalf("%s decoded whole, but %s[%d] alone is refused: %v", body, list, i, err)
		}
		if got := items[i]; !reflect.DeepEqual(got, alone) {
			g, _ := json.Marshal(got)
			a, _ := json.Marshal(alone)
			t.Fatalf("%s: %s[%d] decoded whole is %s, alone %s", body, list, i, g, a)
		}
	}
}

// A batch whose items all decode takes the one pass; one bad item sends the
// whole batch down the per-item path, which refuses it in its place.
func TestDecodeBatchTakesOnePassOnlyWhenAllDecode(t *testing.T) {
	for _, c := range []struct {
		body  string
		fast  bool
		items int
	}{
		{`{"tasks":[{"sender":"a@x","recipient":"b@x","intent_text":"one"},{"sender":"a@x","recipient":"b@x","intent_text":"two"}]}`, true, 2},
		{`{"tasks":[{"sender":"a@x","recipient":"b@x","intent_text":"one"},{"sender":"a@x","recipient":"b@x","intent_text":"two","sender":"c@x"}]}`, false, 2},
		{`{"tasks":[{"sender":"a@x","recipient":"b@x","intent_text":"one","sender":"c@x"}]}`, false, 1},
		{`{"tasks":[{"sender":"a@x","recipient":"b@x","intent_text":"one"},"not an object"]}`, false, 2},
		{`{"tasks":[{"sender":"a@x","recipient":"b@x","intent_text":"one","colour":"red"}]}`, false, 1},
	} {
		r := httptest.NewRequest("POST", "/a2a/tasks/batch", strings.NewReader(c.body))
		r.Header.Set("Content-Type", "application/json")
		items, refused, err := decodeBatch[mailbox.Task](httptest.NewRecorder(), r, "tasks", "a task", 100)
		if err != nil {
			t.Fatalf("%s: %v", c.body, err)
		}
		if fast := refused == nil; fast != c.fast || len(items) != c.items {
			t.Errorf("%s: fast %v with %d items, want fast %v with %d", c.body, fast, len(items), c.fast, c.items)
		}
		if !c.fast && len(refused) != len(items) {
			t.Errorf("%s: %d refusals for %d items", c.body, len(refused), len(items))
		}
	}
	// Too many items: the one pass decodes, the size check sends it to
	// readBatch, which refuses it naming batch_max.
	r := httptest.NewRequest("POST", "/a2a/tasks/batch", strings.NewReader(`{"tasks":[null,null,null]}`))
	if _, _, err := decodeBatch[mailbox.Task](httptest.NewRecorder(), r, "tasks", "a task", 2); err == nil || !strings.Contains(err.Error(), "batch_max") {
		t.Fatalf("3 items over a batch_max of 2: %v", err)
	}
}
