package covenant_test

import (
	"bytes"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/daemon/covenant"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/mailbox"
)

// Every malformed request is refused in Covenant's error shape, exactly
// {"kind":"error","message":...} and nothing more, with a message naming
// the field, what it got and what was expected; it changes nothing, and
// never gets a 5xx.
func TestRefusals(t *testing.T) {
	d := daemontest.Start(t, daemontest.Options{})
	p := newPeer(t, d, "")
	const id = "a2a5eede-0000-4000-8000-0000000000c1"
	// One task in flight, one queued and one with its result pending (a
	// result posted for a queued task leases it and posts in one step),
	// for the requests that need them.
	call[cvTaskQueued](p, "POST", "/a2a/tasks", covenantTask(id, "leased"), "a2_a_task_queued")
	call[cvTaskOpt](p, "GET", "/a2a/tasks/next", "", "a2_a_task_opt")
	call[cvTaskQueued](p, "POST", "/a2a/tasks", covenantTask("a2a5eede-0000-4000-8000-0000000000c2", "queued"), "a2_a_task_queued")
	const resulted = "a2a5eede-0000-4000-8000-0000000000c3"
	call[cvTaskQueued](p, "POST", "/a2a/tasks", covenantTask(resulted, "resulted"), "a2_a_task_queued")
	call[cvResultPosted](p, "POST", "/a2a/results", `{"task_id":"`+resulted+`","status":"ok"}`, "a2_a_result_posted")

	task := func(edit func(string) string) string {
		return edit(covenantTask("a2a5eede-0000-4000-8000-0000000000c9", "new"))
	}
	swap := func(old, new string) func(string) string {
		return func(s string) string {
			if !strings.Contains(s, old) {
				t.Fatalf("%s holds no %s", s, old)
			}
			return strings.Replace(s, old, new, 1)
		}
	}
	tests := []struct {
		name         string
		method, path string
		contentType  string
		body         string
		status       int
		code         string
		want         []string
	}{
		// Mailroom's own routes refused this one (400 sender: got a JSON
		// object); here it is the other way round.
		{"sender as a string", "POST", "/a2a/tasks", "", task(swap(`{"display":"alice@local","pubkey":"`+alicePK+`"}`, `"alice@local"`)), 200, "invalid",
			[]string{"sender: got a JSON string, expected an object"}},
		{"no sender", "POST", "/a2a/tasks", "", task(swap(`"sender":{"display":"alice@local","pubkey":"`+alicePK+`"},`, "")), 200, "invalid",
			[]string{"sender: missing, expected an AgentId"}},
		{"null recipient", "POST", "/a2a/tasks", "", task(swap(`{"display":"bob@local","pubkey":"`+bobPK+`"}`, "null")), 200, "invalid",
			[]string{"recipient: missing"}},
		{"pubkey not base58", "POST", "/a2a/tasks", "", task(swap(alicePK, "0OIl"+alicePK[4:])), 200, "invalid",
			[]string{"sender.pubkey: got \"0OIl", "not base58", "expected a base58 ed25519 public key"}},
		{"pubkey of 31 bytes", "POST", "/a2a/tasks", "", task(swap(bobPK, "4uQeVj5tqViQh7yWWGStvkEG1Zmhx6uasJtWCJziofL")), 200, "invalid",
			[]string{"recipient.pubkey:", "decodes to 31 bytes", "32 bytes"}},
		{"pubkey too long", "POST", "/a2a/tasks", "", task(swap(bobPK, strings.Repeat("z", 300))), 200, "invalid",
			[]string{"recipient.pubkey: got 300 characters"}},
		{"no pubkey", "POST", "/a2a/tasks", "", task(swap(`,"pubkey":"`+alicePK+`"`, "")), 200, "invalid",
			[]string{"sender.pubkey: got \"\""}},
		{"pubkey a number", "POST", "/a2a/tasks", "", task(swap(`"`+alicePK+`"`, "7")), 200, "invalid",
			[]string{"sender.pubkey: got a JSON number, expected a string"}},
		{"capital display", "POST", "/a2a/tasks", "", task(swap(`"bob@local"`, `"Bob@local"`)), 200, "invalid",
			[]string{`recipient.display: got "Bob@local"`, "expected lowercase"}},
		{"display with a space", "POST", "/a2a/tasks", "", task(swap(`"bob@local"`, `"bob @local"`)), 200, "invalid",
			[]string{`recipient.display: got "bob @local"`}},
		{"display without a host", "POST", "/a2a/tasks", "", task(swap(`"bob@local"`, `"bob"`)), 200, "invalid",
			[]string{`recipient.display: got "bob", expected <local>@<host>`}},
		{"display with two @", "POST", "/a2a/tasks", "", task(swap(`"alice@local"`, `"alice@local@x"`)), 200, "invalid",
			[]string{`sender.display: got "alice@local@x"`}},
		{"display with a slash", "POST", "/a2a/tasks", "", task(swap(`"alice@local"`, `"team/alice@local"`)), 200, "invalid",
			[]string{`sender.display: got "team/alice@local"`}},
		{"no id", "POST", "/a2a/tasks", "", task(swap(`"id":"a2a5eede-0000-4000-8000-0000000000c9",`, "")), 200, "invalid",
			[]string{"id: missing", "UUID"}},
		{"bad id", "POST", "/a2a/tasks", "", task(swap("a2a5eede-0000-4000-8000-0000000000c9", "nope")), 200, "invalid",
			[]string{`id: got "nope", expected a UUID`}},
		{"blank intent", "POST", "/a2a/tasks", "", task(swap(`"intent_text":"new"`, `"intent_text":" "`)), 200, "invalid",
			[]string{"intent_text:", "non-empty description"}},
		{"empty parent", "POST", "/a2a/tasks", "", task(swap(`"intent_text":"new"`, `"intent_text":"new","parent":""`)), 200, "invalid",
			[]string{`parent: got ""`}},
		{"negative deadline", "POST", "/a2a/tasks", "", task(swap(`"intent_text":"new"`, `"intent_text":"new","deadline_ms":-1`)), 200, "invalid",
			[]string{"deadline_ms: got -1"}},
		{"bad duplicate safety", "POST", "/a2a/tasks", "", task(swap(`"intent_text":"new"`, `"intent_text":"new","idempotency":{"duplicate_safety":"maybe","key":"k"}`)), 200, "invalid",
			[]string{`idempotency.duplicate_safety: got "maybe"`}},
		{"unknown field", "POST", "/a2a/tasks", "", task(swap(`"intent_text":"new"`, `"intent_text":"new","priority":"high"`)), 200, "invalid",
			[]string{`unknown field "priority"`}},
		{"unknown AgentId field", "POST", "/a2a/tasks", "", task(swap(`"display":"bob@local"`, `"display":"bob@local","host":"x"`)), 200, "invalid",
			[]string{`unknown field "host"`}},
		{"a key twice", "POST", "/a2a/tasks", "", task(swap(`"intent_text":"new"`, `"intent_text":"new","intent_text":"other"`)), 200, "invalid",
			[]string{"intent_text"}},
		{"a key in another case", "POST", "/a2a/tasks", "", task(swap(`"intent_text"`, `"Intent_Text"`)), 200, "invalid",
			[]string{"Intent_Text"}},
		{"a mailroom covenant field", "POST", "/a2a/tasks", "", task(swap(`"intent_text":"new"`, `"intent_text":"new","covenant":{}`)), 200, "invalid",
			[]string{`unknown field "covenant"`}},
		{"invalid JSON", "POST", "/a2a/tasks", "", `{"id":`, 200, "invalid", []string{"the JSON ends early"}},
		{"not an object", "POST", "/a2a/tasks", "", `[1]`, 200, "invalid", []string{"got a JSON array, expected a JSON object (an A2ATask)"}},
		{"wrong content type", "POST", "/a2a/tasks", "text/plain", task(func(s string) string { return s }), 200, "invalid", []string{"Content-Type: got \"text/plain\""}},
		{"too large", "POST", "/a2a/tasks", "", task(swap(`"intent_text":"new"`, `"intent_text":"`+strings.Repeat("x", mailbox.MaxBodyBytes)+`"`)), 413, "too_large",
			[]string{"larger than the limit"}},

		{"result bad status", "POST", "/a2a/results", "", `{"task_id":"` + id + `","status":"done","content":[]}`, 200, "invalid",
			[]string{`status: got "done", expected "ok", "error", "partial", "rejected"`}},
		{"result bad content", "POST", "/a2a/results", "", `{"task_id":"` + id + `","status":"ok","content":[{"type":"image","data":"x"}]}`, 200, "invalid",
			[]string{"data"}},
		{"result lease_id", "POST", "/a2a/results", "", `{"task_id":"` + id + `","status":"ok","lease_id":"x"}`, 200, "invalid",
			[]string{`unknown field "lease_id"`}},
		{"result for an unknown task", "POST", "/a2a/results", "", `{"task_id":"a2a5eede-0000-4000-8000-00000000dead","status":"ok"}`, 200, "not_found",
			[]string{"a2a5eede-0000-4000-8000-00000000dead"}},
		{"result for a task already resulted", "POST", "/a2a/results", "", `{"task_id":"a2a5eede-0000-4000-8000-0000000000c3","status":"ok"}`, 200, "conflict",
			[]string{"result"}},

		{"repair without a command", "POST", "/a2a/repair", "", `{"task_id":"` + id + `","reason":"x"}`, 200, "invalid", []string{"command: missing"}},
		{"repair bad action", "POST", "/a2a/repair", "", `{"task_id":"` + id + `","command":{"action":"retry"},"reason":"x"}`, 200, "invalid",
			[]string{`command.action: got "retry"`}},
		{"requeue without a posture", "POST", "/a2a/repair", "", `{"task_id":"` + id + `","command":{"action":"requeue"},"reason":"x"}`, 200, "invalid",
			[]string{"command.duplicate_risk"}},
		{"repair without a reason", "POST", "/a2a/repair", "", `{"task_id":"` + id + `","command":{"action":"force_error","message":"m"},"reason":""}`, 200, "invalid",
			[]string{"reason:"}},
		{"repair empty lease guard", "POST", "/a2a/repair", "", `{"task_id":"` + id + `","command":{"action":"force_error","lease_id":"","message":"m"},"reason":"r"}`, 200, "invalid",
			[]string{`command.lease_id: got ""`}},
		{"repair to another recipient", "POST", "/a2a/repair", "", `{"task_id":"` + id + `","command":{"action":"requeue","duplicate_risk":"idempotent","recipient":"carol@local"},"reason":"r"}`, 200, "invalid",
			[]string{`unknown field "recipient"`}},

		{"queue bad state filter", "GET", "/a2a/queue?state_filter=leased", "", "", 200, "invalid", []string{`state_filter: got "leased", expected "queued" or "in_flight"`}},
		{"queue bad age", "GET", "/a2a/queue?min_lease_age_ms=soon", "", "", 200, "invalid", []string{`min_lease_age_ms: got "soon"`}},
		{"queue limit too large", "GET", "/a2a/queue?limit=100000", "", "", 200, "invalid", []string{"limit: got 100000"}},
		{"recent limit zero", "GET", "/a2a/tasks/recent?limit=0", "", "", 200, "invalid", []string{`limit: got "0"`}},
		{"recent limit twice", "GET", "/a2a/results/recent?limit=1&limit=2", "", "", 200, "invalid", []string{"limit: given 2 times"}},
		{"lease for someone", "GET", "/a2a/tasks/next?recipient=bob@local", "", "", 200, "invalid", []string{"recipient: unknown query parameter"}},
		{"lease with a body", "GET", "/a2a/tasks/next", "", `{"recipient":"bob@local"}`, 200, "invalid", []string{"takes no body"}},
		{"drain with a body", "GET", "/a2a/results/next", "", `{}`, 200, "invalid", []string{"takes no body"}},

		{"unknown route", "GET", "/a2a/nope", "", "", 404, "not_found", []string{"no such route", "POST /compat/covenant/a2a/tasks"}},
		{"compact is not served", "POST", "/a2a/compact", "", "", 404, "not_found", []string{"no such route"}},
		{"wrong method", "DELETE", "/a2a/tasks", "", "", 405, "method_not_allowed", []string{"accepts POST"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := d.State(t).Seq
			req, err := http.NewRequest(tc.method, p.base+tc.path, bytes.NewReader([]byte(tc.body)))
			if err != nil {
				t.Fatal(err)
			}
			ct := tc.contentType
			if ct == "" && tc.body != "" {
				ct = "application/json"
			}
			if ct != "" {
				req.Header.Set("Content-Type", ct)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status || resp.Header.Get(covenant.HeaderErrorCode) != tc.code {
				t.Fatalf("%s %s = %d (%s) %s, want %d (%s)", tc.method, tc.path, resp.StatusCode, resp.Header.Get(covenant.HeaderErrorCode), b, tc.status, tc.code)
			}
			e := strict[cvError](t, b)
			if e.Kind != "error" {
				t.Fatalf("kind %q, want \"error\"", e.Kind)
			}
			if ks := keys(t, b); !slices.Equal(ks, []string{"kind", "message"}) {
				t.Errorf("the error has keys %v, want Covenant's kind and message only", ks)
			}
			for _, w := range tc.want {
				if !strings.Contains(e.Message, w) {
					t.Errorf("message %q does not say %q", e.Message, w)
				}
			}
			if after := d.State(t).Seq; after != before {
				t.Errorf("the refused request appended %d events", after-before)
			}
		})
	}
}

// Null is how serde reads an absent Option, and clients written from
// Covenant's documentation send it (parent: uuid | null): accepted, and
// answered without the keys.
func TestNullOptionalFieldsAreAbsent(t *testing.T) {
	d := daemontest.Start(t, daemontest.Options{})
	p := newPeer(t, d, "")
	const id = "a2a5eede-0000-4000-8000-0000000000d1"
	body := strings.Replace(covenantTask(id, "with nulls"), `"intent_text"`, `"task_kind":null,"parent":null,"deadline_ms":null,"idempotency":null,"intent_text"`, 1)
	call[cvTaskQueued](p, "POST", "/a2a/tasks", body, "a2_a_task_queued")
	_, _, raw := p.do("GET", "/a2a/tasks/next", "")
	if ks := keys(t, raw, "task"); !slices.Equal(ks, []string{"id", "intent_text", "recipient", "sender"}) {
		t.Fatalf("leased %s: nulls must be kept as absent", raw)
	}
	call[cvResultPosted](p, "POST", "/a2a/results", `{"task_id":"`+id+`","status":"partial","content":[],"error_message":null}`, "a2_a_result_posted")
	_, _, raw = p.do("GET", "/a2a/results/next", "")
	if ks := keys(t, raw, "result"); !slices.Equal(ks, []string{"content", "status", "task_id"}) {
		t.Fatalf("drained %s", raw)
	}
}
