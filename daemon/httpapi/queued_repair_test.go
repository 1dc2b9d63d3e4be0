package httpapi_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/mailbox"
)

// TestMoveAndCancelQueuedTasks repairs a dead agent's queued backlog over
// HTTP with tokens: who may move and cancel, what is refused (changing
// nothing), what follows (the live agent leases the moved task ahead of
// its own, the sender drains the cancel's error), what the audit trail
// says, and that all of it survives a restart.
func TestMoveAndCancelQueuedTasks(t *testing.T) {
	t.Parallel()
	tokens := map[string][]string{
		"planner@local": {"a2a.send.dead@local", "a2a.send.live@local", auth.CapDrain},
		"live@local":    {auth.CapRecv, "a2a.respond.planner@local"},
		"mover":         {auth.CapRequeue, "a2a.send.live@local"},
		"requeuer":      {auth.CapRequeue},
		"canceler":      {auth.CapForceError},
		"reader":        {auth.CapRead},
		"root":          {auth.CapAdmin},
	}
	d, do := asTokens(t, tokens)
	send := func(to, intent string) string {
		t.Helper()
		var sent mailbox.TaskQueuedResponse
		if r := do("planner@local", "POST", "/a2a/tasks", `{"sender":"planner@local","recipient":"`+to+`","intent_text":"`+intent+`"}`, &sent); r.status != 200 {
			t.Fatalf("send = %d %s", r.status, r.body)
		}
		return sent.TaskID
	}
	stuck := send("dead@local", "stuck 1")
	doomed := send("dead@local", "stuck 2")
	own := send("live@local", "its own work, sent later")
	repair := func(id, command string) string {
		return `{"task_id":"` + id + `","reason":"dead@local is gone","command":` + command + `}`
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
		{"a move without a2a.send.live@local", "requeuer", stuck, `{"action":"move","queued_for":"dead@local","recipient":"live@local"}`, 403, "a2a.send.live@local"},
		{"a move without a2a.requeue", "canceler", stuck, `{"action":"move","queued_for":"dead@local","recipient":"live@local"}`, 403, auth.CapRequeue},
		{"a cancel without a2a.force_error", "mover", doomed, `{"action":"cancel","queued_for":"dead@local"}`, 403, auth.CapForceError},
		{"a move to an agent nobody knows", "root", stuck, `{"action":"move","queued_for":"dead@local","recipient":"liev@local"}`, 400, `did you mean live@local`},
		{"a move guarded by a lease", "mover", stuck, `{"action":"move","lease_id":"00000000-0000-4000-8000-000000000001","recipient":"live@local"}`, 400, `command.lease_id: not allowed with action \"move\"`},
		{"a move without a recipient", "mover", stuck, `{"action":"move","queued_for":"dead@local"}`, 400, "command.recipient: missing"},
		{"a move of a task queued for another", "mover", own, `{"action":"move","queued_for":"dead@local","recipient":"live@local"}`, 409, "it is queued for live@local now"},
		{"a cancel without a reason", "canceler", doomed, `{"action":"cancel"}`, 400, "reason"},
		{"an action nobody knows", "canceler", doomed, `{"action":"withdraw"}`, 400, `\"move\" or \"cancel\" (for a queued task)`},
	}
	for _, r := range refusals {
		body := repair(r.id, r.command)
		if r.name == "a cancel without a reason" {
			body = `{"task_id":"` + r.id + `","reason":"","command":` + r.command + `}`
		}
		got := do(r.as, "POST", "/a2a/repair", body, nil)
		if got.status != r.status || !strings.Contains(string(got.body), r.text) {
			t.Errorf("%s: %d %s, want %d naming %s", r.name, got.status, got.body, r.status, r.text)
		}
		if after := queue(); after != before {
			t.Errorf("the refused %s changed the queue:\n%s\n%s", r.name, before, after)
		}
	}
	// The guard's conflict names the recipient seen and the one now.
	var conflict mailbox.Error
	r := do("root", "POST", "/a2a/repair", repair(own, `{"action":"move","queued_for":"dead@local","recipient":"planner@local"}`), nil)
	if err := json.Unmarshal(r.body, &conflict); err != nil || r.status != 409 || conflict.Details == nil ||
		conflict.Details.ExpectedRecipient != "dead@local" || conflict.Details.ActualRecipient != "live@local" || conflict.Details.Field != "command.queued_for" {
		t.Fatalf("conflict = %s, want expected_recipient dead@local, actual_recipient live@local", r.body)
	}

	var moved mailbox.RepairedResponse
	if r := do("mover", "POST", "/a2a/repair", repair(stuck, `{"action":"move","queued_for":"dead@local","recipient":"live@local"}`), &moved); r.status != 200 {
		t.Fatalf("move = %d %s", r.status, r.body)
	}
	if o := moved.Outcome; o.Action != mailbox.OutcomeMoved || o.State != mailbox.TaskQueued || o.Recipient != "live@local" {
		t.Fatalf("move outcome = %+v", o)
	}
	var canceled mailbox.RepairedResponse
	if r := do("canceler", "POST", "/a2a/repair", repair(doomed, `{"action":"cancel","queued_for":"dead@local"}`), &canceled); r.status != 200 {
		t.Fatalf("cancel = %d %s", r.status, r.body)
	}
	if o := canceled.Outcome; o.Action != mailbox.OutcomeCanceled || o.State != mailbox.TaskResultPending || o.Result == nil || o.Result.Status != mailbox.StatusError {
		t.Fatalf("cancel outcome = %+v", o)
	}
	// Done twice: the second says what happened.
	if r := do("canceler", "POST", "/a2a/repair", repair(doomed, `{"action":"cancel","queued_for":"dead@local"}`), nil); r.status != 409 || !strings.Contains(string(r.body), "already has a result") {
		t.Fatalf("a second cancel = %d %s", r.status, r.body)
	}

	check := func(when string) {
		t.Helper()
		var audit mailbox.AuditResponse
		do("reader", "GET", "/a2a/audit", "", &audit)
		if len(audit.Repairs) != 2 {
			t.Fatalf("%s: audit = %+v, want the cancel and the move", when, audit)
		}
		c, m := audit.Repairs[0], audit.Repairs[1]
		if c.Action != mailbox.OutcomeCanceled || c.TaskID != doomed || c.Principal != "canceler" || c.Reason != "dead@local is gone" {
			t.Errorf("%s: audit[0] = %+v, want canceler's cancel of %s", when, c, doomed)
		}
		if m.Action != mailbox.OutcomeMoved || m.TaskID != stuck || m.Move() != "dead@local -> live@local" || m.Principal != "mover" {
			t.Errorf("%s: audit[1] = %+v, want mover's move of %s from dead@local to live@local", when, m, stuck)
		}
	}
	check("before a restart")
	d.Restart()
	check("after a restart")

	// The moved task waited longest: the live agent leases it before its own.
	var next mailbox.TaskOptResponse
	do("live@local", "POST", "/a2a/tasks/next", "", &next)
	if next.Task == nil || next.Task.ID != stuck || next.Task.Recipient != "live@local" {
		t.Fatalf("live@local leased %+v, want the moved task %s before its own %s", next.Task, stuck, own)
	}
	var drained mailbox.ResultOptResponse
	do("planner@local", "POST", "/a2a/results/next", "", &drained)
	if res := drained.Result; res == nil || res.TaskID != doomed || res.Status != mailbox.StatusError || !res.Forced ||
		!strings.Contains(res.ErrorMessage, "canceler") || !strings.Contains(res.ErrorMessage, "dead@local is gone") {
		t.Fatalf("planner drained %+v, want the cancel's error naming who and why", drained.Result)
	}
}
