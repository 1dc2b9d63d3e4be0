package httpapi_test

import (
	"strings"
	"testing"

	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/mailbox"
)

// nested returns a JSON value of depth arrays around 1.
func nested(depth int) string {
	return strings.Repeat("[", depth) + "1" + strings.Repeat("]", depth)
}

// TestInputHoles holds one row per hole found by the hostile-input trial of
// issue 9: every one was answered 2xx (or quietly meant something else)
// before, and each is now a 400 that names the field and changes nothing.
func TestInputHoles(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Options{})
	// One leased task whose lease the repair rows aim at, one queued.
	taskID := sendTask(t, d, task("seed@x", "seed-worker@x", "leased"))
	lease := leaseTask(t, d, "seed-worker@x")
	if lease.Task == nil || lease.Task.ID != taskID || lease.Lease == nil {
		t.Fatalf("lease = %+v, want task %s", lease, taskID)
	}
	queued := task("seed@x", "seed-worker@x", "queued")
	queued.Idempotency = &mailbox.Idempotency{DuplicateSafety: mailbox.DuplicateIdempotent, Key: "k"}
	sendTask(t, d, queued)
	leaseID := lease.Lease.LeaseID
	const wrongLease = "0b7a5c1e-3d2f-4a6b-9c8d-7e6f5a4b3c2d"
	// Every row must leave the mailbox as the seeding did.
	state := stateOf(t, d)
	result := func(value string) string {
		return `{"task_id":"` + taskID + `","status":"ok","content":[{"type":"json","value":` + value + `}],"lease_id":"` + leaseID + `"}`
	}
	repair := func(command string) string {
		return `{"task_id":"` + taskID + `","reason":"stuck","command":` + command + `}`
	}
	const js = "application/json"
	tests := []struct {
		name         string
		method, path string
		body         string
		field        string
		msg          []string
	}{
		// Poison values: a value that decodes here but not once stored.
		{"result value nested 9,997 deep", "POST", "/a2a/results", result(nested(9997)), "content[0].value", []string{"nested more than 32 levels", "at most 32"}},
		{"result value one level too deep", "POST", "/a2a/results", result(nested(mailbox.MaxValueDepth + 1)), "content[0].value", []string{"at most 32"}},
		{"result value with half a surrogate pair", "POST", "/a2a/results", result(`"\ud800"`), "content[0].value", []string{`\ud800`, "jq refuse"}},
		{"result value objects too deep", "POST", "/a2a/results", result(strings.Repeat(`{"a":`, 33) + "1" + strings.Repeat("}", 33)), "content[0].value", []string{"at most 32"}},

		// Duplicate keys: the last one used to win.
		{"repair lease guard given twice", "POST", "/a2a/repair", repair(`{"action":"requeue","duplicate_risk":"operator_accepted","lease_id":"` + wrongLease + `","lease_id":"` + leaseID + `"}`), "command.lease_id", []string{"given twice"}},
		{"retry-stale enabled given twice", "POST", "/a2a/retry-stale", `{"enabled":false,"min_lease_age_ms":0,"enabled":true}`, "enabled", []string{"given twice"}},
		{"duplicate key spelt with an escape", "POST", "/a2a/tasks", `{"sender":"a@x","s\u0065nder":"b@x","recipient":"c@x","intent_text":"do"}`, "sender", []string{"given twice"}},
		{"duplicate key inside a result value", "POST", "/a2a/results", result(`{"approve":false,"approve":true}`), "content[0].value.approve", []string{"given twice"}},

		// Keys in another letter case used to be taken as the field.
		{"Sender for sender", "POST", "/a2a/tasks", `{"Sender":"a@x","recipient":"c@x","intent_text":"do"}`, "Sender", []string{"unknown field", `did you mean "sender"`}},
		{"LEASE_ID in a repair", "POST", "/a2a/repair", repair(`{"action":"requeue","duplicate_risk":"operator_accepted","LEASE_ID":"` + wrongLease + `"}`), "command.LEASE_ID", []string{`did you mean "lease_id"`}},
		{"Enabled in retry-stale", "POST", "/a2a/retry-stale", `{"Enabled":true,"min_lease_age_ms":0}`, "Enabled", []string{`did you mean "enabled"`}},

		// Numbers out of range used to overflow or mean something else.
		{"deadline_within_ms at int64 max", "GET", "/a2a/queue?deadline_within_ms=9223372036854775807", "", "deadline_within_ms", []string{"from 0 to 3153600000000"}},
		{"deadline_within_ms past 100 years", "GET", "/a2a/queue?deadline_within_ms=9000000000000000000", "", "deadline_within_ms", []string{"from 0 to 3153600000000"}},
		{"min_lease_age_ms past 100 years", "GET", "/a2a/queue?min_lease_age_ms=3153600000001", "", "min_lease_age_ms", []string{"from 0 to 3153600000000"}},
		{"deadline_ms past year 9999", "POST", "/a2a/tasks", `{"sender":"a@x","recipient":"c@x","intent_text":"do","deadline_ms":9223372036854775807}`, "deadline_ms", []string{"from 1 to 253402300799999"}},
		{"retry-stale max_attempts huge", "POST", "/a2a/retry-stale", `{"max_attempts":1099511627776}`, "max_attempts", []string{"from 1 to 1000000"}},
		{"retry-stale min_lease_age_ms huge", "POST", "/a2a/retry-stale", `{"min_lease_age_ms":9223372036854775807}`, "min_lease_age_ms", []string{"from 0 to 3153600000000"}},
		{"retry-stale max_requeues huge", "POST", "/a2a/retry-stale", `{"max_requeues":10001}`, "max_requeues", []string{"from 0 to 10000"}},

		// An optional id given as "" used to mean "absent".
		{"repair with an empty lease guard", "POST", "/a2a/repair", repair(`{"action":"requeue","duplicate_risk":"operator_accepted","lease_id":""}`), "command.lease_id", []string{`got ""`, "omit the field to repair without a guard"}},
		{"result with an empty lease guard", "POST", "/a2a/results", `{"task_id":"` + taskID + `","status":"ok","content":[],"lease_id":""}`, "lease_id", []string{`got ""`, "omit the field"}},
		{"task with an empty id", "POST", "/a2a/tasks", `{"id":"","sender":"a@x","recipient":"c@x","intent_text":"do"}`, "id", []string{`got ""`, "omit the field to let the daemon assign one"}},
		{"task with an empty parent", "POST", "/a2a/tasks", `{"parent":"","sender":"a@x","recipient":"c@x","intent_text":"do"}`, "parent", []string{`got ""`, "omit the field"}},

		// A body on a route that reads none used to be ignored.
		{"lease with the recipient in the body", "POST", "/a2a/tasks/next", `{"recipient":"seed-worker@x"}`, "", []string{"takes no body", "?recipient="}},
		{"drain with the sender in the body", "POST", "/a2a/results/next", `{"sender":"seed@x"}`, "", []string{"takes no body", "?sender="}},
		{"queue with a body", "GET", "/a2a/queue", `{"limit":1}`, "", []string{"takes no body"}},
		{"compact with a body", "POST", "/a2a/compact", `{}`, "", []string{"takes no body"}},

		// Agent ids that only look alike used to be distinct agents.
		{"Cyrillic a in an agent id", "POST", "/a2a/tasks", `{"sender":"pl` + "\u0430" + `nner@local","recipient":"c@x","intent_text":"do"}`, "sender", []string{"U+0430", "at byte 2", "lowercase ASCII letters"}},
		{"zero-width space in an agent id", "POST", "/a2a/tasks", `{"sender":"a@x","recipient":"cod` + "\u200b" + `er@local","intent_text":"do"}`, "recipient", []string{"U+200B"}},
		{"capitals in an agent id", "POST", "/a2a/tasks", `{"sender":"Planner@local","recipient":"c@x","intent_text":"do"}`, "sender", []string{"expected lowercase", `"planner@local"`}},
		{"capitals in a lease query", "POST", "/a2a/tasks/next?recipient=Seed-Worker@x", "", "recipient", []string{"expected lowercase"}},
		{"agent id of 201 bytes", "POST", "/a2a/tasks", `{"sender":"` + strings.Repeat("a", 201) + `","recipient":"c@x","intent_text":"do"}`, "sender", []string{"at most 200 bytes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctype := ""
			if tt.body != "" {
				ctype = js
			}
			r := request(t, d, tt.method, tt.path, ctype, tt.body, nil)
			if after := stateOf(t, d); after != state {
				t.Errorf("the refused request changed the mailbox:\nbefore %s\nafter  %s", state, after)
				state = after
			}
			if r.status != 400 {
				t.Fatalf("%s %s = %d %s, want 400", tt.method, tt.path, r.status, r.body)
			}
			e := errorBody(t, r)
			if e.Code != mailbox.CodeInvalid {
				t.Errorf("code = %q, want %q", e.Code, mailbox.CodeInvalid)
			}
			var field string
			if e.Details != nil {
				field = e.Details.Field
			}
			if field != tt.field {
				t.Errorf("details.field = %q, want %q (message %q)", field, tt.field, e.Message)
			}
			if tt.field != "" && !strings.Contains(e.Message, tt.field) {
				t.Errorf("message %q does not name the field %q", e.Message, tt.field)
			}
			for _, s := range tt.msg {
				if !strings.Contains(e.Message, s) {
					t.Errorf("message %q does not say %q", e.Message, s)
				}
			}
		})
	}

	// What the limits still let through is accepted: a value exactly
	// MaxValueDepth deep, a lease with an empty body, and the guard given
	// once.
	if r := request(t, d, "POST", "/a2a/tasks/next?recipient=seed-worker@x", "", "  \n", nil); r.status != 200 {
		t.Fatalf("lease with a blank body = %d %s", r.status, r.body)
	}
	if r := request(t, d, "POST", "/a2a/results", js, result(nested(mailbox.MaxValueDepth)), nil); r.status != 200 {
		t.Fatalf("result %d deep = %d %s", mailbox.MaxValueDepth, r.status, r.body)
	}
}
