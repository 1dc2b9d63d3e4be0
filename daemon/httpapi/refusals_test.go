package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/mailbox"
)

const (
	id1 = "6f9619ff-8b86-4d11-b42d-00c04fc964ff"
	id2 = "0b7a5c1e-3d2f-4a6b-9c8d-7e6f5a4b3c2d"
)

// TestRefusals checks that every refusal reaches the caller with the right
// status and code, names the offending field, and says what was expected.
func TestRefusals(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Options{})
	// A refusal must change nothing, so the mailbox is not empty: a queued
	// task, a leased one and one whose result waits for its sender.
	for _, intent := range []string{"queued", "leased", "answered"} {
		sendTask(t, d, task("seed@x", "seed-worker@x", intent))
	}
	for i := range 2 {
		l := leaseTask(t, d, "seed-worker@x")
		if l.Task == nil || l.Lease == nil {
			t.Fatalf("seeding: lease %+v", l)
		}
		if i == 1 {
			call(t, d, "POST", "/a2a/results", mailbox.Result{TaskID: l.Task.ID, Status: mailbox.StatusOK, LeaseID: l.Lease.LeaseID, Content: []mailbox.Content{}}, nil)
		}
	}
	// Every row must leave the mailbox as the seeding did.
	state := stateOf(t, d)
	const js = "application/json"
	tooBig := `{"sender":"a@x","recipient":"b@x","intent_text":"` + strings.Repeat("x", mailbox.MaxBodyBytes) + `"}`
	tests := []struct {
		name         string
		method, path string
		ctype, body  string
		header       map[string]string
		status       int
		field        string   // details.field, "" when none is expected
		msg          []string // substrings of the message
	}{
		// Task validation.
		{"task bad id", "POST", "/a2a/tasks", js, `{"id":"nope","sender":"a@x","recipient":"b@x","intent_text":"do"}`, nil, 400, "id", []string{`id: got "nope"`, "expected a UUID"}},
		{"task empty sender", "POST", "/a2a/tasks", js, `{"sender":"","recipient":"b@x","intent_text":"do"}`, nil, 400, "sender", []string{"sender:", "non-empty agent id"}},
		{"task sender with space", "POST", "/a2a/tasks", js, `{"sender":"a b","recipient":"b@x","intent_text":"do"}`, nil, 400, "sender", []string{`got "a b"`, "' ' (U+0020) at byte 1 is not allowed"}},
		{"task no recipient", "POST", "/a2a/tasks", js, `{"sender":"a@x","intent_text":"do"}`, nil, 400, "recipient", []string{"recipient:"}},
		{"task blank intent", "POST", "/a2a/tasks", js, `{"sender":"a@x","recipient":"b@x","intent_text":"  "}`, nil, 400, "intent_text", []string{"intent_text:", "non-empty description"}},
		{"task empty kind", "POST", "/a2a/tasks", js, `{"sender":"a@x","recipient":"b@x","intent_text":"do","task_kind":""}`, nil, 400, "task_kind", []string{"task_kind:", "non-empty kind"}},
		{"task bad parent", "POST", "/a2a/tasks", js, `{"sender":"a@x","recipient":"b@x","intent_text":"do","parent":"p"}`, nil, 400, "parent", []string{`parent: got "p"`}},
		{"task own parent", "POST", "/a2a/tasks", js, `{"id":"` + id1 + `","sender":"a@x","recipient":"b@x","intent_text":"do","parent":"` + id1 + `"}`, nil, 400, "parent", []string{"own id"}},
		{"task negative deadline", "POST", "/a2a/tasks", js, `{"sender":"a@x","recipient":"b@x","intent_text":"do","deadline_ms":-5}`, nil, 400, "deadline_ms", []string{"deadline_ms: got -5", "unix milliseconds"}},
		{"task deadline of wrong type", "POST", "/a2a/tasks", js, `{"sender":"a@x","recipient":"b@x","intent_text":"do","deadline_ms":"soon"}`, nil, 400, "deadline_ms", []string{"deadline_ms: got a JSON string, expected an integer"}},
		{"task bad duplicate safety", "POST", "/a2a/tasks", js, `{"sender":"a@x","recipient":"b@x","intent_text":"do","idempotency":{"duplicate_safety":"maybe","key":"k"}}`, nil, 400, "idempotency.duplicate_safety", []string{`got "maybe"`, `"unsafe" or "idempotent"`}},
		{"task empty idempotency key", "POST", "/a2a/tasks", js, `{"sender":"a@x","recipient":"b@x","intent_text":"do","idempotency":{"duplicate_safety":"idempotent","key":""}}`, nil, 400, "idempotency.key", []string{"idempotency.key:"}},
		{"task idempotency key of wrong type", "POST", "/a2a/tasks", js, `{"sender":"a@x","recipient":"b@x","intent_text":"do","idempotency":{"duplicate_safety":"idempotent","key":5}}`, nil, 400, "idempotency.key", []string{"idempotency.key: got a JSON number, expected a string"}},

		// Body decoding.
		{"unknown field", "POST", "/a2a/tasks", js, `{"sender":"a@x","recipient":"b@x","intent_text":"do","colour":"red"}`, nil, 400, "colour", []string{`unknown field "colour"`, "a task"}},
		{"unknown nested field", "POST", "/a2a/tasks", js, `{"sender":"a@x","recipient":"b@x","intent_text":"do","idempotency":{"duplicate_safety":"idempotent","key":"k","ttl":3}}`, nil, 400, "ttl", []string{`unknown field "ttl"`}},
		{"array body", "POST", "/a2a/tasks", js, `[1,2]`, nil, 400, "", []string{"got a JSON array, expected a JSON object (a task)"}},
		{"trailing data", "POST", "/a2a/tasks", js, `{"sender":"a@x","recipient":"b@x","intent_text":"do"} {}`, nil, 400, "", []string{"unexpected data after the JSON object"}},
		{"truncated JSON", "POST", "/a2a/tasks", js, `{"sender":"a@x"`, nil, 400, "", []string{"ends early"}},
		{"malformed JSON", "POST", "/a2a/tasks", js, `{"sender" "a@x"}`, nil, 400, "", []string{"invalid JSON at byte offset"}},
		{"empty body", "POST", "/a2a/tasks", js, ``, nil, 400, "", []string{"request body: empty"}},
		{"invalid UTF-8", "POST", "/a2a/tasks", js, "{\"sender\":\"a@x\",\"recipient\":\"b@x\",\"intent_text\":\"d\xffo\"}", nil, 400, "", []string{"invalid UTF-8 at byte offset 50"}},
		{"wrong content type", "POST", "/a2a/tasks", "text/plain", `{}`, nil, 400, "Content-Type", []string{`Content-Type: got "text/plain"`, "application/json"}},
		{"content type in another charset", "POST", "/a2a/tasks", "application/json; charset=latin1", `{}`, nil, 400, "Content-Type", []string{"UTF-8"}},
		{"json content type with charset", "POST", "/a2a/tasks", "application/json; charset=utf-8", `{"sender":"","recipient":"b@x","intent_text":"do"}`, nil, 400, "sender", nil},
		{"body over 1 MiB", "POST", "/a2a/tasks", js, tooBig, nil, 413, "", []string{"larger than the limit of 1048576 bytes"}},

		// Result validation.
		{"result bad task id", "POST", "/a2a/results", js, `{"task_id":"t","status":"ok","content":[]}`, nil, 400, "task_id", []string{`task_id: got "t"`}},
		{"result bad status", "POST", "/a2a/results", js, `{"task_id":"` + id1 + `","status":"done","content":[]}`, nil, 400, "status", []string{`status: got "done"`, `"ok", "error", "partial", "rejected", or "input_required" or "auth_required"`}},
		{"result unknown part type", "POST", "/a2a/results", js, `{"task_id":"` + id1 + `","status":"ok","content":[{"type":"image"}]}`, nil, 400, "content[0].type", []string{`content[0].type: got "image"`}},
		{"result json part without value", "POST", "/a2a/results", js, `{"task_id":"` + id1 + `","status":"ok","content":[{"type":"text","text":"a"},{"type":"json"}]}`, nil, 400, "content[1].value", []string{"content[1].value: missing"}},
		{"result text part with value", "POST", "/a2a/results", js, `{"task_id":"` + id1 + `","status":"ok","content":[{"type":"text","value":1}]}`, nil, 400, "content[0].value", nil},
		{"result json part with text", "POST", "/a2a/results", js, `{"task_id":"` + id1 + `","status":"ok","content":[{"type":"json","value":1,"text":"a"}]}`, nil, 400, "content[0].text", nil},
		{"result unknown part field", "POST", "/a2a/results", js, `{"task_id":"` + id1 + `","status":"ok","content":[{"type":"text","text":"a","lang":"en"}]}`, nil, 400, "lang", []string{`unknown field "lang"`}},
		{"result content not an array", "POST", "/a2a/results", js, `{"task_id":"` + id1 + `","status":"ok","content":"hi"}`, nil, 400, "content", []string{"content: got a JSON string, expected an array"}},
		{"result bad lease id", "POST", "/a2a/results", js, `{"task_id":"` + id1 + `","status":"ok","content":[],"lease_id":"L"}`, nil, 400, "lease_id", []string{`lease_id: got "L"`}},
		{"result for unknown task", "POST", "/a2a/results", js, `{"task_id":"` + id1 + `","status":"ok","content":[]}`, nil, 404, "task_id", []string{"never sent through this daemon"}},

		// Repair validation.
		{"repair bad task id", "POST", "/a2a/repair", js, `{"task_id":"x","reason":"r","command":{"action":"requeue","duplicate_risk":"operator_accepted"}}`, nil, 400, "task_id", nil},
		{"repair blank reason", "POST", "/a2a/repair", js, `{"task_id":"` + id1 + `","reason":" ","command":{"action":"requeue","duplicate_risk":"operator_accepted"}}`, nil, 400, "reason", []string{"reason:", "non-empty reason"}},
		{"repair unknown action", "POST", "/a2a/repair", js, `{"task_id":"` + id1 + `","reason":"r","command":{"action":"retry"}}`, nil, 400, "command.action", []string{`command.action: got "retry"`}},
		{"requeue without posture", "POST", "/a2a/repair", js, `{"task_id":"` + id1 + `","reason":"r","command":{"action":"requeue"}}`, nil, 400, "command.duplicate_risk", []string{`"idempotent" or "operator_accepted"`}},
		{"requeue with message", "POST", "/a2a/repair", js, `{"task_id":"` + id1 + `","reason":"r","command":{"action":"requeue","duplicate_risk":"operator_accepted","message":"m"}}`, nil, 400, "command.message", nil},
		{"force error without message", "POST", "/a2a/repair", js, `{"task_id":"` + id1 + `","reason":"r","command":{"action":"force_error"}}`, nil, 400, "command.message", []string{"non-empty error message"}},
		{"force error with posture", "POST", "/a2a/repair", js, `{"task_id":"` + id1 + `","reason":"r","command":{"action":"force_error","message":"m","duplicate_risk":"idempotent"}}`, nil, 400, "command.duplicate_risk", nil},
		{"repair bad lease id", "POST", "/a2a/repair", js, `{"task_id":"` + id1 + `","reason":"r","command":{"action":"force_error","message":"m","lease_id":"L"}}`, nil, 400, "command.lease_id", nil},
		{"force error with a recipient", "POST", "/a2a/repair", js, `{"task_id":"` + id1 + `","reason":"r","command":{"action":"force_error","message":"m","recipient":"b@x"}}`, nil, 400, "command.recipient", []string{`not allowed with action "force_error"`}},
		{"requeue to an empty recipient", "POST", "/a2a/repair", js, `{"task_id":"` + id1 + `","reason":"r","command":{"action":"requeue","duplicate_risk":"operator_accepted","recipient":""}}`, nil, 400, "command.recipient", []string{`got ""`, "omit the field"}},
		{"requeue to a bad agent id", "POST", "/a2a/repair", js, `{"task_id":"` + id1 + `","reason":"r","command":{"action":"requeue","duplicate_risk":"operator_accepted","recipient":"B@x"}}`, nil, 400, "command.recipient", []string{`got "B@x"`, "lowercase"}},
		{"requeue to another recipient, unknown task", "POST", "/a2a/repair", js, `{"task_id":"` + id2 + `","reason":"r","command":{"action":"requeue","duplicate_risk":"operator_accepted","recipient":"b@x"}}`, nil, 404, "task_id", nil},
		{"repair unknown task", "POST", "/a2a/repair", js, `{"task_id":"` + id2 + `","reason":"r","command":{"action":"force_error","message":"m"}}`, nil, 404, "task_id", nil},

		// One task: read and cancel.
		{"get task bad id", "GET", "/a2a/tasks/nope", "", "", nil, 400, "task_id", []string{`task_id: got "nope"`}},
		{"get task unknown", "GET", "/a2a/tasks/" + id2, "", "", nil, 404, "task_id", nil},
		{"get task with a query", "GET", "/a2a/tasks/" + id2 + "?limit=1", "", "", nil, 400, "limit", []string{"unknown query parameter"}},
		{"cancel without a body", "POST", "/a2a/tasks/" + id2 + "/cancel", js, "", nil, 400, "", []string{"request body: empty"}},
		{"cancel unknown field", "POST", "/a2a/tasks/" + id2 + "/cancel", js, `{"reson":"x"}`, nil, 400, "reson", nil},
		{"cancel unknown task", "POST", "/a2a/tasks/" + id2 + "/cancel", js, `{"reason":"x"}`, nil, 404, "task_id", nil},
		// Query parameters.
		{"limit not a number", "GET", "/a2a/tasks/recent?limit=abc", "", "", nil, 400, "limit", []string{`limit: got "abc"`, "from 1 to 10000"}},
		{"limit over the cap", "GET", "/a2a/results/recent?limit=10001", "", "", nil, 400, "limit", []string{"limit: got 10001", "from 1 to 10000"}},
		{"negative limit", "GET", "/a2a/queue?limit=-1", "", "", nil, 400, "limit", nil},
		{"limit given twice", "GET", "/a2a/tasks/recent?limit=1&limit=2", "", "", nil, 400, "limit", []string{"given 2 times"}},
		{"unknown state", "GET", "/a2a/queue?state=done", "", "", nil, 400, "state", []string{`state: got "done"`, `"queued", "in_flight" or "waiting"`}},
		{"empty state", "GET", "/a2a/queue?state=", "", "", nil, 400, "state", []string{`state: got ""`, `"queued", "in_flight" or "waiting"`, "omit the parameter"}},
		{"negative lease age", "GET", "/a2a/queue?min_lease_age_ms=-5", "", "", nil, 400, "min_lease_age_ms", []string{`got "-5"`, "expected milliseconds from 0 to 3153600000000"}},
		{"deadline window not a number", "GET", "/a2a/queue?deadline_within_ms=soon", "", "", nil, 400, "deadline_within_ms", nil},
		{"empty agent filter", "GET", "/a2a/queue?agent=", "", "", nil, 400, "agent", []string{`agent: got ""`, "omit the parameter for any agent"}},
		{"agent filter not an agent id", "GET", "/a2a/queue?agent=no%20spaces", "", "", nil, 400, "agent", []string{"agent"}},
		{"misspelt recipient", "POST", "/a2a/tasks/next?recipent=w@x", "", "", nil, 400, "recipent", []string{"unknown query parameter", "only recipient"}},
		{"empty recipient", "POST", "/a2a/tasks/next?recipient=", "", "", nil, 400, "recipient", nil},
		{"max zero", "POST", "/a2a/tasks/next?recipient=w@x&max=0", "", "", nil, 400, "max", []string{`max: got "0"`, "1 to 100"}},
		{"max over the cap", "POST", "/a2a/tasks/next?max=101", "", "", nil, 400, "max", []string{`max: got "101"`, "batch_max"}},
		{"max not a number", "POST", "/a2a/results/next?max=all", "", "", nil, 400, "max", []string{`max: got "all"`}},
		{"negative wait", "POST", "/a2a/tasks/next?wait_ms=-1", "", "", nil, 400, "wait_ms", []string{"wait_ms: got -1", "0 to 20000"}},
		{"wait over the cap", "POST", "/a2a/results/next?sender=p@x&wait_ms=20001", "", "", nil, 400, "wait_ms", []string{"wait_ms: got 20001"}},
		{"wait not a number", "GET", "/a2a/tasks/next?wait_ms=soon", "", "", nil, 400, "wait_ms", []string{`wait_ms: got "soon"`}},
		{"sender with space", "GET", "/a2a/results/next?sender=a%20b", "", "", nil, 400, "sender", nil},
		{"bad query escape", "GET", "/a2a/queue?limit=%zz", "", "", nil, 400, "", []string{"not a valid URL query"}},
		{"bad Last-Event-ID", "GET", "/a2a/events", "", "", map[string]string{"Last-Event-ID": "abc"}, 400, "Last-Event-ID", []string{`Last-Event-ID: got "abc"`}},
		{"bad last_event_id", "GET", "/a2a/events?last_event_id=-1", "", "", nil, 400, "last_event_id", nil},
		{"bad agents switch", "GET", "/a2a/events?agents=maybe", "", "", nil, 400, "agents", []string{`agents: got "maybe"`, "true or false"}},
		{"agents filter empty", "GET", "/a2a/agents?skill=", "", "", nil, 400, "skill", []string{`skill: got ""`, "expected a skill id"}},
		{"agents filter NUL", "GET", "/a2a/agents?skill=%00", "", "", nil, 400, "skill", []string{"U+0000", "control character"}},
		{"agents filter escape", "GET", "/a2a/agents?skill=a%1B%5B2J", "", "", nil, 400, "skill", []string{"U+001B"}},
		{"agents filter not UTF-8", "GET", "/a2a/agents?skill=%FF", "", "", nil, 400, "skill", []string{"not UTF-8"}},
		{"register a dot-dot agent", "PUT", "/a2a/agents/%2E%2E", js, `{"name":"Up"}`, nil, 400, "agent", []string{`dot segment ".."`}},
		{"send to a dot agent", "POST", "/a2a/tasks", js, `{"sender":"a@local","recipient":".","intent_text":"x"}`, nil, 400, "recipient", []string{`dot segment "."`}},
		{"send to a path of dot segments", "POST", "/a2a/tasks", js, `{"sender":"a@local","recipient":"../../a2a/queue","intent_text":"x"}`, nil, 400, "recipient", []string{`dot segment ".."`}},
		{"send from a dot-dot sender", "POST", "/a2a/tasks", js, `{"sender":"x/..","recipient":"b@local","intent_text":"x"}`, nil, 400, "sender", []string{`dot segment ".."`}},
		{"lease for a dot-dot recipient", "POST", "/a2a/tasks/next?recipient=..", "", "", nil, 400, "recipient", []string{`dot segment ".."`}},
		{"context an array", "POST", "/a2a/tasks", js, `{"sender":"a@local","recipient":"b@local","intent_text":"x","context":[1]}`, nil, 400, "context", []string{"got an array", "expected a JSON object"}},
		{"context a string", "POST", "/a2a/tasks", js, `{"sender":"a@local","recipient":"b@local","intent_text":"x","context":"repo"}`, nil, 400, "context", []string{"got a string", "expected a JSON object"}},
		{"context too deep", "POST", "/a2a/tasks", js, `{"sender":"a@local","recipient":"b@local","intent_text":"x","context":` + strings.Repeat(`{"a":`, 40) + `1` + strings.Repeat(`}`, 40) + `}`, nil, 400, "context", []string{"context"}},
		{"context with a key twice", "POST", "/a2a/tasks", js, `{"sender":"a@local","recipient":"b@local","intent_text":"x","context":{"a":1,"a":2}}`, nil, 400, "context.a", []string{"twice"}},
		{"agents filter unknown parameter", "GET", "/a2a/agents?skills=code", "", "", nil, 400, "skills", []string{"unknown query parameter"}},
		{"register without a name", "PUT", "/a2a/agents/coder@local", js, `{"skills":[]}`, nil, 400, "name", []string{`name: got ""`}},
		{"register a skill without an id", "PUT", "/a2a/agents/coder@local", js, `{"name":"Coder","skills":[{"name":"Code"}]}`, nil, 400, "skills[0].id", []string{`skills[0].id: got ""`}},
		{"register duplicate skill ids", "PUT", "/a2a/agents/coder@local", js, `{"name":"Coder","skills":[{"id":"a","name":"A"},{"id":"a","name":"B"}]}`, nil, 400, "skills[1].id", []string{"skills[0] already has"}},
		{"register an unknown card field", "PUT", "/a2a/agents/coder@local", js, `{"name":"Coder","url":"http://x"}`, nil, 400, "url", []string{"unknown field"}},
		{"register a capitalised agent", "PUT", "/a2a/agents/Coder@local", js, `{"name":"Coder"}`, nil, 400, "agent", []string{"expected lowercase"}},
		{"deregister an unregistered agent", "DELETE", "/a2a/agents/nobody@local", "", "", nil, 404, "agent", []string{"nobody@local is not registered", "mailroom agent register"}},
		{"deregister with a body", "DELETE", "/a2a/agents/coder@local", js, `{}`, nil, 400, "", []string{"takes no body"}},
		{"native send with an a2a origin", "POST", "/a2a/tasks", js, `{"sender":"a@local","recipient":"b@local","intent_text":"x","a2a":{"version":"0.3","message_id":"m","context_id":"c","message":{}}}`, nil, 400, "a2a", []string{"set only by the A2A edge"}},
		{"native send with a covenant origin", "POST", "/a2a/tasks", js, `{"sender":"a@local","recipient":"b@local","intent_text":"x","covenant":{"sender_pubkey":"11111111111111111111111111111111","recipient_pubkey":"11111111111111111111111111111111"}}`, nil, 400, "covenant", []string{"set only by Covenant's dialect", "/compat/covenant/a2a/tasks"}},
		{"agents with a body", "GET", "/a2a/agents", js, `{"skill":"code"}`, nil, 400, "", []string{"takes no body"}},

		// Routing.
		{"unknown route", "GET", "/a2a/nope", "", "", nil, 404, "", []string{"GET /a2a/nope: no such route"}},
		{"wrong method", "DELETE", "/a2a/tasks", "", "", nil, 405, "", []string{"method not allowed", "POST"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := request(t, d, tt.method, tt.path, tt.ctype, tt.body, tt.header)
			if after := stateOf(t, d); after != state {
				t.Errorf("the refused request changed the mailbox:\nbefore %s\nafter  %s", state, after)
				state = after
			}
			if r.status != tt.status {
				t.Fatalf("%s %s = %d %s, want %d", tt.method, tt.path, r.status, r.body, tt.status)
			}
			e := errorBody(t, r)
			var field string
			if e.Details != nil {
				field = e.Details.Field
			}
			if tt.field != "" && field != tt.field {
				t.Errorf("details.field = %q, want %q (message %q)", field, tt.field, e.Message)
			}
			for _, s := range tt.msg {
				if !strings.Contains(e.Message, s) {
					t.Errorf("message %q does not say %q", e.Message, s)
				}
			}
			if tt.field != "" && !strings.Contains(e.Message, tt.field) {
				t.Errorf("message %q does not name the field %q", e.Message, tt.field)
			}
		})
	}
	if r := request(t, d, "DELETE", "/a2a/tasks", "", "", nil); !strings.Contains(r.header.Get("Allow"), http.MethodPost) {
		t.Errorf("405 Allow = %q, want it to list POST", r.header.Get("Allow"))
	}
}
