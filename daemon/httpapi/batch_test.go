package httpapi_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/mailbox"
)

func batch(t *testing.T, d *daemontest.Daemon, path, body string, header map[string]string) (int, mailbox.BatchResponse, reply) {
	t.Helper()
	r := request(t, d, "POST", path, "application/json", body, header)
	var out mailbox.BatchResponse
	if r.status == 200 {
		if err := json.Unmarshal(r.body, &out); err != nil {
			t.Fatalf("%s: %s: %v", path, r.body, err)
		}
	}
	return r.status, out, r
}

// Each item of a batch is answered in its place: the valid ones queued in
// order, the others refused naming their index and field; twins dedupe
// within the batch and across batches.
func TestSendBatchAnswersEachItem(t *testing.T) {
	d := daemontest.Start(t, daemontest.Options{})
	body := `{"tasks":[
		{"sender":"planner@local","recipient":"coder@local","intent_text":"first"},
		{"sender":"planner@local","recipient":"Coder@local","intent_text":"bad recipient"},
		{"sender":"planner@local","recipient":"coder@local","intent_text":"twin","idempotency":{"duplicate_safety":"idempotent","key":"k1"}},
		{"sender":"planner@local","recipient":"coder@local","intent_text":"unknown field","colour":"red"},
		{"sender":"planner@local","recipient":"coder@local","intent_text":"twin","idempotency":{"duplicate_safety":"idempotent","key":"k1"}},
		"not an object",
		{"sender":"planner@local","recipient":"coder@local","intent_text":"last"}
	]}`
	before := d.State(t).Seq
	status, out, r := batch(t, d, "/a2a/tasks/batch", body, nil)
	if status != 200 || out.Kind != mailbox.KindTasksBatch || len(out.Items) != 7 {
		t.Fatalf("batch answered %d %s", status, r.body)
	}
	for i, it := range out.Items {
		if it.Index != i {
			t.Errorf("item %d answered at index %d", i, it.Index)
		}
	}
	for _, c := range []struct {
		i     int
		field string
		want  string
	}{
		{1, "tasks[1].recipient", `tasks[1].recipient: got "Coder@local"`},
		{3, "tasks[3].colour", `unknown field "colour"`},
		{5, "", "tasks[5]: "},
	} {
		it := out.Items[c.i]
		if it.Kind != mailbox.KindError || it.Code != mailbox.CodeInvalid || !strings.Contains(it.Message, c.want) || (c.field != "" && (it.Details == nil || it.Details.Field != c.field)) {
			t.Errorf("item %d: %+v, want invalid naming %q (%s)", c.i, it, c.field, c.want)
		}
	}
	first, twin, dup, last := out.Items[0], out.Items[2], out.Items[4], out.Items[6]
	if !first.OK() || !twin.OK() || twin.Deduplicated || !dup.Deduplicated || dup.TaskID != twin.TaskID || !last.OK() {
		t.Fatalf("accepted items %+v %+v %+v %+v: want three queued, the second twin deduplicated to the first", first, twin, dup, last)
	}
	snap := d.State(t)
	if snap.Seq != before+3 {
		t.Fatalf("the batch appended %d events, want 3", snap.Seq-before)
	}
	var order []string
	for _, tr := range snap.Tasks {
		order = append(order, tr.Task.IntentText)
	}
	if strings.Join(order, ",") != "first,twin,last" {
		t.Fatalf("queued in the order %v", order)
	}
	// A twin in a later batch dedupes too.
	_, out, _ = batch(t, d, "/a2a/tasks/batch", `{"tasks":[{"sender":"planner@local","recipient":"coder@local","intent_text":"twin","idempotency":{"duplicate_safety":"idempotent","key":"k1"}}]}`, nil)
	if it := out.Items[0]; !it.Deduplicated || it.TaskID != twin.TaskID {
		t.Fatalf("a twin across batches: %+v", it)
	}
}

// The items a batch accepted are one unit in the log: its first event
// says how many, and the stream carries the same bytes.
func TestBatchIsOneUnit(t *testing.T) {
	d := daemontest.Start(t, daemontest.Options{})
	var tasks []string
	for i := range 5 {
		tasks = append(tasks, fmt.Sprintf(`{"sender":"planner@local","recipient":"coder@local","intent_text":"t%d"}`, i))
	}
	tasks = append(tasks, `{"sender":"","recipient":"coder@local","intent_text":"refused"}`)
	before := d.State(t).Seq
	batch(t, d, "/a2a/tasks/batch", `{"tasks":[`+strings.Join(tasks, ",")+`]}`, nil)
	data, err := os.ReadFile(filepath.Join(d.Dir, fmt.Sprintf("log-%020d.jsonl", 1)))
	if err != nil {
		t.Fatal(err)
	}
	var units []int
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var rec struct {
			Seq   uint64        `json:"seq"`
			Event mailbox.Event `json:"event"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Seq > before {
			units = append(units, rec.Event.Unit)
		}
	}
	if fmt.Sprint(units) != "[5 0 0 0 0]" {
		t.Fatalf("the batch's events in the log carry units %v, want [5 0 0 0 0]", units)
	}
}

func TestPostResultsAnswersEachItem(t *testing.T) {
	d := daemontest.Start(t, daemontest.Options{})
	var leases mailbox.TasksLeasedResponse
	_, sent, _ := batch(t, d, "/a2a/tasks/batch", `{"tasks":[
		{"sender":"planner@local","recipient":"coder@local","intent_text":"a"},
		{"sender":"planner@local","recipient":"coder@local","intent_text":"b"}]}`, nil)
	call(t, d, "POST", "/a2a/tasks/next?recipient=coder@local&max=2", nil, &leases)
	a, b := leases.Leases[0], leases.Leases[1]
	body := fmt.Sprintf(`{"results":[
		{"task_id":%q,"status":"ok","content":[],"lease_id":%q},
		{"task_id":%q,"status":"ok","content":[],"lease_id":"6f9619ff-8b86-4d11-b42d-00c04fc964ff"},
		{"task_id":%q,"status":"done","content":[]}]}`, a.Task.ID, a.Lease.LeaseID, b.Task.ID, sent.Items[0].TaskID)
	status, out, r := batch(t, d, "/a2a/results/batch", body, nil)
	if status != 200 || out.Kind != mailbox.KindResultsBatch || len(out.Items) != 3 {
		t.Fatalf("results batch answered %d %s", status, r.body)
	}
	if !out.Items[0].OK() || out.Items[0].TaskID != a.Task.ID {
		t.Errorf("item 0: %+v", out.Items[0])
	}
	if it := out.Items[1]; it.Code != mailbox.CodeConflict || it.Details == nil || it.Details.Field != "results[1].lease_id" {
		t.Errorf("item 1, under a lease not its own: %+v", it)
	}
	if it := out.Items[2]; it.Code != mailbox.CodeInvalid || !strings.HasPrefix(it.Message, "results[2].status:") {
		t.Errorf("item 2, a bad status: %+v", it)
	}
	view := d.State(t)
	pending := 0
	for _, tr := range view.Tasks {
		if tr.State == mailbox.TaskResultPending {
			pending++
		}
	}
	if pending != 1 {
		t.Fatalf("%d results pending after the batch, want 1", pending)
	}
}

func TestBatchRefusals(t *testing.T) {
	d := daemontest.Start(t, daemontest.Options{})
	many := strings.Repeat(`{"sender":"a@x","recipient":"b@x","intent_text":"x"},`, mailbox.DefaultBatchMax+1)
	for _, c := range []struct {
		path, body, field, want string
	}{
		{"/a2a/tasks/batch", `{"tasks":[]}`, "tasks", "got 0 items, expected 1 to 100"},
		{"/a2a/tasks/batch", `{"tasks":[` + strings.TrimSuffix(many, ",") + `]}`, "tasks", "got 101 items"},
		{"/a2a/tasks/batch", `{}`, "tasks", "tasks: missing"},
		{"/a2a/tasks/batch", `{"results":[{}]}`, "tasks", `takes "tasks"`},
		{"/a2a/tasks/batch", `{"tasks":{}}`, "tasks", "expected an array"},
		{"/a2a/results/batch", `{"tasks":[{}]}`, "results", `takes "results"`},
		// Valid tasks beside the other route's list, even an empty one:
		// refused whole.
		{"/a2a/tasks/batch", `{"tasks":[{"sender":"a@x","recipient":"b@x","intent_text":"x"}],"results":[]}`, "tasks", `takes "tasks"`},
		{"/a2a/results/batch", `{"results":[{"task_id":"0b7a5c1e-3d2f-4a6b-9c8d-7e6f5a4b3c2d","status":"ok","content":[]}],"tasks":[]}`, "results", `takes "results"`},
		{"/a2a/tasks/batch", `[]`, "", "expected a JSON object"},
	} {
		before := d.State(t).Seq
		r := request(t, d, "POST", c.path, "application/json", c.body, nil)
		e := errorBody(t, r)
		if r.status != 400 || (c.field != "" && (e.Details == nil || e.Details.Field != c.field)) || !strings.Contains(e.Message, c.want) {
			t.Errorf("POST %s %.60s: %d %s; want 400 naming %q (%s)", c.path, c.body, r.status, r.body, c.field, c.want)
		}
		if after := d.State(t).Seq; after != before {
			t.Errorf("a refused batch changed the mailbox")
		}
	}
}

// The access policy holds for every item: an item the token may not send
// is refused in its place, 403 naming the capability; the others go.
func TestBatchItemsMeetThePolicy(t *testing.T) {
	d := daemontest.Start(t, daemontest.Options{Tokens: []auth.Token{
		{Principal: "planner@local", Token: "tok", Caps: []string{auth.CapSendPrefix + "coder@local"}}}})
	body := `{"tasks":[
		{"sender":"planner@local","recipient":"coder@local","intent_text":"allowed"},
		{"sender":"planner@local","recipient":"writer@local","intent_text":"not allowed"},
		{"sender":"someone@local","recipient":"coder@local","intent_text":"not as myself"},
		{"sender":"planner@local","recipient":"BAD","intent_text":"malformed first"}]}`
	status, out, r := batch(t, d, "/a2a/tasks/batch", body, map[string]string{"Authorization": "Bearer tok"})
	if status != 200 {
		t.Fatalf("%d %s", status, r.body)
	}
	if !out.Items[0].OK() {
		t.Errorf("the allowed item: %+v", out.Items[0])
	}
	if it := out.Items[1]; it.Code != mailbox.CodeForbidden || it.Details == nil || it.Details.Capability != "a2a.send.writer@local" || !strings.HasPrefix(it.Message, "tasks[1]") {
		t.Errorf("the item to writer@local: %+v", it)
	}
	if it := out.Items[2]; it.Code != mailbox.CodeForbidden || it.Details == nil || it.Details.Field != "tasks[2].sender" {
		t.Errorf("the item sent as another: %+v", it)
	}
	if it := out.Items[3]; it.Code != mailbox.CodeInvalid {
		t.Errorf("a malformed item is a 400 before any right is looked at: %+v", it)
	}
}

// batch_max bounds a batch's items and a lease's max, naming itself.
func TestBatchMaxIsConfigured(t *testing.T) {
	d := daemontest.Start(t, daemontest.Options{Config: func(c *config.Config) { c.BatchMax = 2 }})
	three := `{"tasks":[{"sender":"a@x","recipient":"b@x","intent_text":"1"},{"sender":"a@x","recipient":"b@x","intent_text":"2"},{"sender":"a@x","recipient":"b@x","intent_text":"3"}]}`
	r := request(t, d, "POST", "/a2a/tasks/batch", "application/json", three, nil)
	if e := errorBody(t, r); r.status != 400 || !strings.Contains(e.Message, "got 3 items, expected 1 to 2 (the daemon's batch_max)") {
		t.Fatalf("three items under batch_max 2: %d %s", r.status, r.body)
	}
	r = request(t, d, "POST", "/a2a/tasks/next?recipient=b@x&max=3", "", "", nil)
	if e := errorBody(t, r); r.status != 400 || e.Details == nil || e.Details.Field != "max" || !strings.Contains(e.Message, "1 to 2") {
		t.Fatalf("max=3 under batch_max 2: %d %s", r.status, r.body)
	}
	if status, out, r := batch(t, d, "/a2a/tasks/batch", `{"tasks":[{"sender":"a@x","recipient":"b@x","intent_text":"1"},{"sender":"a@x","recipient":"b@x","intent_text":"2"}]}`, nil); status != 200 || len(out.Items) != 2 {
		t.Fatalf("two items under batch_max 2: %d %s", status, r.body)
	}
}

// An item is held to exactly its single request's rules, and refused in
// its place: a key given twice, a content value nested too deep, or one
// just within the depth bound, answer as POST /a2a/tasks or /a2a/results
// answers them, beside an item that goes through.
func TestBatchItemsFollowTheirSingleRequestsRules(t *testing.T) {
	d := daemontest.Start(t, daemontest.Options{})
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	ok := `{"sender":"planner@local","recipient":"coder@local","intent_text":"fine"}`
	for _, c := range []struct {
		list, single, item string
	}{
		{"tasks", "/a2a/tasks", `{"sender":"planner@local","recipient":"coder@local","intent_text":"twice","sender":"x@local"}`},
		{"tasks", "/a2a/tasks", `{"sender":"planner@local","recipient":"coder@local","intent_text":"case","Recipient":"x@local"}`},
		{"results", "/a2a/results", `{"task_id":"6f9619ff-8b86-4d11-b42d-00c04fc964ff","status":"ok","content":[{"type":"json","value":` + deep(mailbox.MaxValueDepth+1) + `}]}`},
		{"results", "/a2a/results", `{"task_id":"6f9619ff-8b86-4d11-b42d-00c04fc964ff","status":"ok","content":[{"type":"json","value":` + deep(mailbox.MaxValueDepth) + `}]}`},
		{"results", "/a2a/results", `{"task_id":"6f9619ff-8b86-4d11-b42d-00c04fc964ff","status":"ok","content":[{"type":"json","value":{"a":1,"a":2}}]}`},
	} {
		alone := request(t, d, "POST", c.single, "application/json", c.item, nil)
		if alone.status == 200 {
			t.Fatalf("%s alone was accepted; the case needs a refusal to compare", c.item)
		}
		want := errorBody(t, alone).Message
		other := ok
		if c.list == "results" {
			other = `{"task_id":"0b7a5c1e-3d2f-4a6b-9c8d-7e6f5a4b3c2d","status":"ok","content":[]}`
		}
		status, out, r := batch(t, d, "/a2a/"+c.list+"/batch", `{"`+c.list+`":[`+other+`,`+c.item+`]}`, nil)
		if status != 200 || len(out.Items) != 2 {
			t.Fatalf("%s in a batch: %d %s, want each item answered", c.item, status, r.body)
		}
		got := out.Items[1]
		at := c.list + "[1]"
		if got.OK() || (got.Message != at+": "+want && got.Message != at+"."+want) {
			t.Errorf("%s in a batch: %q, want the single request's %q at %s", c.item, got.Message, want, at)
		}
		if c.list == "tasks" && !out.Items[0].OK() {
			t.Errorf("the valid task beside %s: %+v, want queued", c.item, out.Items[0])
		}
	}
}

// A batch item carrying a covenant origin is refused in its place, as the
// single route refuses it: only Covenant's dialect sets it.
func TestSendBatchRefusesACovenantOrigin(t *testing.T) {
	d := daemontest.Start(t, daemontest.Options{})
	const pk = "11111111111111111111111111111111"
	status, out, r := batch(t, d, "/a2a/tasks/batch", `{"tasks":[
		{"sender":"planner@local","recipient":"coder@local","intent_text":"native"},
		{"sender":"planner@local","recipient":"coder@local","intent_text":"smuggled","covenant":{"sender_pubkey":"`+pk+`","recipient_pubkey":"`+pk+`"}}
	]}`, nil)
	if status != 200 || len(out.Items) != 2 {
		t.Fatalf("batch answered %d %s", status, r.body)
	}
	if it := out.Items[1]; it.Code != mailbox.CodeInvalid || it.Details == nil || it.Details.Field != "tasks[1].covenant" || !strings.Contains(it.Message, "set only by Covenant's dialect") {
		t.Errorf("the covenant item: %+v, want it refused naming tasks[1].covenant", it)
	}
	if !out.Items[0].OK() {
		t.Errorf("the native item: %+v, want it queued", out.Items[0])
	}
	for _, tr := range d.State(t).Tasks {
		if tr.Task.Covenant != nil {
			t.Fatalf("task %s kept a covenant origin sent on the native route", tr.Task.ID)
		}
	}
}
