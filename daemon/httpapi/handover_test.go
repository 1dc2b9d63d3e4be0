package httpapi_test

import (
	"strings"
	"testing"

	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/mailbox"
)

// TestHandOverOverHTTP hands what a dead sender owes (a question its
// worker asked, a result it never drained) to a live agent over HTTP with
// tokens: who may, what is refused (changing nothing), the event on the
// stream, the audit, the agents listing before and after, and that it all
// survives compaction and a restart; the new sender then drains both and
// answers the question.
func TestHandOverOverHTTP(t *testing.T) {
	t.Parallel()
	tokens := map[string][]string{
		"coder@local":    {"a2a.send.worker@local", auth.CapDrain},
		"reviewer@local": {"a2a.send.worker@local", auth.CapDrain},
		"worker@local":   {auth.CapRecv, "a2a.respond.coder@local", "a2a.respond.reviewer@local"},
		"requeuer":       {auth.CapRequeue},
		"canceler":       {auth.CapForceError},
		"reader":         {auth.CapRead},
		"root":           {auth.CapAdmin},
	}
	d, do := asTokens(t, tokens)
	send := func(from, intent string) string {
		t.Helper()
		var sent mailbox.TaskQueuedResponse
		if r := do(from, "POST", "/a2a/tasks", `{"sender":"`+from+`","recipient":"worker@local","intent_text":"`+intent+`"}`, &sent); r.status != 200 {
			t.Fatalf("send = %d %s", r.status, r.body)
		}
		return sent.TaskID
	}
	answer := func(status string) string {
		t.Helper()
		var next mailbox.TaskOptResponse
		do("worker@local", "POST", "/a2a/tasks/next?recipient=worker@local", "", &next)
		if next.Task == nil {
			t.Fatal("worker leased nothing")
		}
		body := `{"task_id":"` + next.Task.ID + `","lease_id":"` + next.Lease.LeaseID + `","status":"` + status + `","content":[{"type":"text","text":"which branch?"}]}`
		if r := do("worker@local", "POST", "/a2a/results", body, nil); r.status != 200 {
			t.Fatalf("result = %d %s", r.status, r.body)
		}
		return next.Task.ID
	}
	send("coder@local", "finish it")
	done := answer(mailbox.StatusOK)
	send("coder@local", "ask me")
	asked := answer(mailbox.StatusInputRequired)
	send("reviewer@local", "reviewer is known")

	s := openStream(t, testContext(t), d, "", map[string]string{"Authorization": "Bearer t-reader"})
	if snap := s.nextEvent(t); snap.Type != mailbox.EventSnapshot {
		t.Fatalf("first event = %+v", snap)
	}
	agent := func(id string) mailbox.AgentInfo {
		t.Helper()
		var list mailbox.AgentsResponse
		do("reader", "GET", "/a2a/agents", "", &list)
		for _, a := range list.Agents {
			if a.Agent == id {
				return a
			}
		}
		return mailbox.AgentInfo{Agent: id}
	}
	if a := agent("coder@local"); a.Waiting != 1 || a.Undrained != 1 || a.Owes() != 2 {
		t.Fatalf("coder@local before = %+v, want one question and one undrained result", a)
	}

	repair := func(id, command string) string {
		return `{"task_id":"` + id + `","reason":"coder@local is gone","command":` + command + `}`
	}
	queue := func() string {
		t.Helper()
		return string(do("reader", "GET", "/a2a/queue", "", nil).body)
	}
	before := queue()
	refusals := []struct {
		name, as, id, command string
		status                int
		text                  string
	}{
		{"without a2a.repair.requeue", "canceler", asked, `{"action":"hand_over","sent_by":"coder@local","sender":"reviewer@local"}`, 403, auth.CapRequeue},
		{"a reader", "reader", asked, `{"action":"hand_over","sent_by":"coder@local","sender":"reviewer@local"}`, 403, auth.CapRequeue},
		{"to an agent nobody knows", "requeuer", asked, `{"action":"hand_over","sent_by":"coder@local","sender":"reveiwer@local"}`, 400,
			`command.sender: got \"reveiwer@local\", an agent the mailbox does not know (never registered, heard from, or holding tasks); did you mean reviewer@local`},
		{"without a sender", "requeuer", asked, `{"action":"hand_over","sent_by":"coder@local"}`, 400, "command.sender: missing"},
		{"with a lease guard", "requeuer", asked, `{"action":"hand_over","lease_id":"00000000-0000-4000-8000-000000000001","sender":"reviewer@local"}`, 400,
			`command.lease_id: not allowed with action \"hand_over\"`},
		{"a stale guard", "requeuer", asked, `{"action":"hand_over","sent_by":"planner@local","sender":"reviewer@local"}`, 409,
			"command.sent_by: cannot hand task " + asked + " over as sent by planner@local: its sender is coder@local now"},
	}
	for _, r := range refusals {
		got := do(r.as, "POST", "/a2a/repair", repair(r.id, r.command), nil)
		if got.status != r.status || !strings.Contains(string(got.body), r.text) {
			t.Errorf("%s: %d %s, want %d naming %s", r.name, got.status, got.body, r.status, r.text)
		}
		if after := queue(); after != before {
			t.Errorf("the refused %s changed the queue:\n%s\n%s", r.name, before, after)
		}
	}

	for _, id := range []string{asked, done} {
		var out mailbox.RepairedResponse
		if r := do("requeuer", "POST", "/a2a/repair", repair(id, `{"action":"hand_over","sent_by":"coder@local","sender":"reviewer@local"}`), &out); r.status != 200 {
			t.Fatalf("hand over = %d %s", r.status, r.body)
		}
		if o := out.Outcome; o.Action != mailbox.OutcomeHandedOver || o.Sender != "reviewer@local" || o.Result == nil || o.Result.Sender != "reviewer@local" {
			t.Fatalf("outcome = %+v", o)
		}
		ev := s.nextEvent(t)
		if ev.Type != mailbox.EventTaskHandedOver || ev.TaskID != id || ev.Sender != "reviewer@local" || ev.Agent != "coder@local" ||
			ev.Principal != "requeuer" || ev.Reason != "coder@local is gone" {
			t.Fatalf("event = %+v, want task_handed_over of %s", ev, id)
		}
	}
	// Done twice: the guard says who the sender is now.
	if r := do("requeuer", "POST", "/a2a/repair", repair(asked, `{"action":"hand_over","sent_by":"coder@local","sender":"reviewer@local"}`), nil); r.status != 409 ||
		!strings.Contains(string(r.body), "its sender is reviewer@local now") {
		t.Fatalf("a second hand over = %d %s", r.status, r.body)
	}

	check := func(when string) {
		t.Helper()
		if a := agent("coder@local"); a.Owes() != 0 || a.ResultsPending != 0 {
			t.Errorf("%s: coder@local = %+v, want it to owe nothing", when, a)
		}
		if a := agent("reviewer@local"); a.Waiting != 1 || a.Undrained != 1 {
			t.Errorf("%s: reviewer@local = %+v, want the question and the result", when, a)
		}
		var audit mailbox.AuditResponse
		do("reader", "GET", "/a2a/audit", "", &audit)
		if len(audit.Repairs) != 2 {
			t.Fatalf("%s: audit = %+v", when, audit)
		}
		for _, a := range audit.Repairs {
			if a.Action != mailbox.OutcomeHandedOver || a.Move() != "sender coder@local -> reviewer@local" || a.Principal != "requeuer" || a.Reason != "coder@local is gone" {
				t.Errorf("%s: audit = %+v", when, a)
			}
		}
	}
	check("before compaction")
	if r := do("root", "POST", "/a2a/compact", "", nil); r.status != 200 {
		t.Fatalf("compact = %d %s", r.status, r.body)
	}
	d.Restart()
	check("after compaction and a restart")

	var drained mailbox.ResultsResponse
	if r := do("reviewer@local", "POST", "/a2a/results/next?sender=reviewer@local&max=10", "", &drained); r.status != 200 {
		t.Fatalf("drain = %d %s", r.status, r.body)
	}
	if len(drained.Results) != 2 || drained.Results[0].TaskID != done || drained.Results[1].TaskID != asked {
		t.Fatalf("reviewer drained %+v, want %s then %s", drained.Results, done, asked)
	}
	if r := do("reviewer@local", "POST", "/a2a/tasks/"+asked+"/reply", `{"sender":"reviewer@local","content":[{"type":"text","text":"main"}]}`, nil); r.status != 200 {
		t.Fatalf("reviewer's answer = %d %s", r.status, r.body)
	}
}
