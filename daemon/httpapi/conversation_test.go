package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/mailbox"
)

// asked leases the oldest task for worker (as the authed worker) and asks
// its sender a question; it returns the task id.
func (a *authed) asked(t *testing.T, worker string) string {
	t.Helper()
	id, lease := a.leasedBy(t, worker)
	err := a.client(t, worker).PostResult(context.Background(), mailbox.Result{TaskID: id, LeaseID: lease, Status: mailbox.StatusInputRequired,
		Content: []mailbox.Content{{Type: mailbox.ContentText, Text: "which database?"}}})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// The whole loop on the native wire: the worker asks, the sender drains
// the question (its task id is what it answers), replies, and the worker
// leases the task again with both turns, and finishes.
func TestConversationOnTheWire(t *testing.T) {
	d := daemontest.Start(t, daemontest.Options{})
	id := sendTask(t, d, task("planner@local", "coder@local", "migrate the schema"))
	first := leaseTask(t, d, "coder@local")
	call(t, d, "POST", "/a2a/results", map[string]any{"task_id": id, "lease_id": first.Lease.LeaseID, "status": "input_required",
		"content": []map[string]any{{"type": "text", "text": "which database?"}, {"type": "json", "value": map[string]any{"choices": []string{"staging", "production"}}}}}, nil)

	var waiting mailbox.QueueResponse
	call(t, d, "GET", "/a2a/queue?state=waiting", nil, &waiting)
	if len(waiting.Tasks) != 1 || waiting.Tasks[0].State != mailbox.TaskWaiting || waiting.Tasks[0].WaitingSinceMs == 0 || len(waiting.Tasks[0].Task.Turns) != 1 {
		t.Fatalf("GET /a2a/queue?state=waiting = %+v, want the task waiting, with its question as its one turn", waiting.Tasks)
	}

	var drained mailbox.ResultOptResponse
	call(t, d, "GET", "/a2a/results/next?sender=planner@local", nil, &drained)
	if drained.Result == nil || drained.Result.TaskID != id || drained.Result.Status != mailbox.StatusInputRequired || len(drained.Result.Content) != 2 {
		t.Fatalf("drained %+v, want the question", drained.Result)
	}

	r := request(t, d, "POST", "/a2a/tasks/"+id+"/reply", "application/json", `{"sender":"planner@local","content":[{"type":"text","text":"staging"}]}`, nil)
	if r.status != http.StatusOK {
		t.Fatalf("reply = %d %s", r.status, r.body)
	}
	var replied mailbox.TaskRepliedResponse
	if err := json.Unmarshal(r.body, &replied); err != nil || replied.Kind != mailbox.KindTaskReplied || replied.State != mailbox.TaskQueued || replied.Turns != 2 || replied.TaskID != id {
		t.Fatalf("reply answered %s", r.body)
	}
	// The same request again (a client retrying) is answered without a change.
	again := request(t, d, "POST", "/a2a/tasks/"+strings.ToUpper(id)+"/reply", "application/json", `{"sender":"planner@local","content":[{"type":"text","text":"staging"}]}`, nil)
	if again.status != http.StatusOK || !strings.Contains(string(again.body), `"duplicate":true`) {
		t.Errorf("the reply retried = %d %s, want 200 with duplicate", again.status, again.body)
	}

	second := leaseTask(t, d, "coder@local")
	if second.Task == nil || second.Task.ID != id || second.Lease.Attempt != 2 {
		t.Fatalf("second lease = %+v, want the task again at attempt 2", second)
	}
	turns := second.Task.Turns
	if len(turns) != 2 || turns[0].Role != mailbox.RoleWorker || turns[0].Status != mailbox.StatusInputRequired || turns[0].Agent != "coder@local" ||
		turns[1].Role != mailbox.RoleSender || turns[1].Agent != "planner@local" || turns[1].Content[0].Text != "staging" {
		t.Errorf("the lease carries turns %+v, want the question then the answer", turns)
	}
	call(t, d, "POST", "/a2a/results", map[string]any{"task_id": id, "lease_id": second.Lease.LeaseID, "status": "ok", "content": []map[string]any{{"type": "text", "text": "migrated"}}}, nil)
	call(t, d, "GET", "/a2a/results/next?sender=planner@local", nil, &drained)
	if drained.Result == nil || drained.Result.Status != mailbox.StatusOK {
		t.Fatalf("drained %+v, want the final result", drained.Result)
	}
}

// Refusals of the reply route: each names what is wrong, answers the
// right status, and changes nothing.
func TestReplyRefusals(t *testing.T) {
	d := daemontest.Start(t, daemontest.Options{Config: func(c *config.Config) { c.MaxTurns = 2 }})
	inFlight := sendTask(t, d, task("planner@local", "coder@local", "in flight"))
	leaseTask(t, d, "coder@local")
	queued := sendTask(t, d, task("planner@local", "coder@local", "queued"))
	waiting := sendTask(t, d, task("planner@local", "other@local", "waiting"))
	l := leaseTask(t, d, "other@local")
	call(t, d, "POST", "/a2a/results", map[string]any{"task_id": waiting, "lease_id": l.Lease.LeaseID, "status": "auth_required",
		"content": []map[string]any{{"type": "text", "text": "log in at https://auth.example.test"}}}, nil)
	reply := func(id string) string { return "/a2a/tasks/" + id + "/reply" }
	const good = `{"sender":"planner@local","content":[{"type":"text","text":"done"}]}`

	cases := []struct {
		name, path, body string
		status           int
		field            string
		says             []string
	}{
		{"in flight", reply(inFlight), good, 409, "", []string{"cannot reply to task " + inFlight, "it is in flight", "only a task waiting on its sender"}},
		{"queued", reply(queued), good, 409, "", []string{"it is queued"}},
		{"unknown", reply("6f9619ff-8b86-4d11-b42d-00c04fc964ff"), good, 404, "task_id", []string{"never sent"}},
		{"not a uuid", reply("nope"), good, 400, "task_id", []string{`task_id: got "nope"`}},
		{"another sender", reply(waiting), `{"sender":"coder@local","content":[{"type":"text","text":"x"}]}`, 403, "sender", []string{`was sent by "planner@local"`}},
		{"no sender", reply(waiting), `{"content":[{"type":"text","text":"x"}]}`, 400, "sender", []string{"sender"}},
		{"no content", reply(waiting), `{"sender":"planner@local"}`, 400, "content", []string{"content: got no parts"}},
		{"bad part", reply(waiting), `{"sender":"planner@local","content":[{"type":"image"}]}`, 400, "content[0].type", []string{`got "image"`}},
		{"a2a field", reply(waiting), `{"sender":"planner@local","content":[{"type":"text","text":"x"}],"a2a":{"version":"1.0","message_id":"m","context_id":"c","message":{}}}`, 400, "a2a", []string{"set only by the A2A edge"}},
		{"task_id in the body", reply(waiting), `{"task_id":"` + waiting + `","sender":"planner@local","content":[{"type":"text","text":"x"}]}`, 400, "task_id", []string{"task_id"}},
		{"turns on a send", "/a2a/tasks", `{"sender":"planner@local","recipient":"coder@local","intent_text":"x","turns":[]}`, 400, "turns", []string{"turns: set only by the daemon"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := d.State(t)
			r := request(t, d, "POST", tc.path, "application/json", tc.body, nil)
			if r.status != tc.status {
				t.Fatalf("%s = %d %s, want %d", tc.path, r.status, r.body, tc.status)
			}
			e := errorBody(t, r)
			if tc.field != "" && (e.Details == nil || e.Details.Field != tc.field) {
				t.Errorf("details %+v, want field %q", e.Details, tc.field)
			}
			for _, s := range tc.says {
				if !strings.Contains(e.Message, s) {
					t.Errorf("message %q does not say %q", e.Message, s)
				}
			}
			if after := d.State(t); after.Seq != before.Seq {
				t.Errorf("a refused request moved the log from seq %d to %d", before.Seq, after.Seq)
			}
		})
	}

	// max_turns 2: the answer is the second turn; a second question would
	// be the third, refused to the worker, whose lease stays.
	call(t, d, "POST", reply(waiting), json.RawMessage(good), nil)
	l = leaseTask(t, d, "other@local")
	r := request(t, d, "POST", "/a2a/results", "application/json", fmt.Sprintf(`{"task_id":%q,"lease_id":%q,"status":"input_required","content":[{"type":"text","text":"and the port?"}]}`, waiting, l.Lease.LeaseID), nil)
	if e := errorBody(t, r); r.status != 400 || !strings.Contains(e.Message, "max_turns is 2") {
		t.Errorf("a question past max_turns = %d %s, want 400 naming max_turns", r.status, r.body)
	}
	var q mailbox.QueueResponse
	call(t, d, "GET", "/a2a/queue?state=in_flight", nil, &q)
	found := false
	for _, e := range q.Tasks {
		found = found || (e.Task.ID == waiting && e.LeaseID == l.Lease.LeaseID)
	}
	if !found {
		t.Errorf("after the refused question the task is not in flight under its lease: %+v", q.Tasks)
	}
}

// With tokens: only the task's sender replies, and only one that may send
// its recipient work; the worker cannot answer its own question.
func TestReplyWithTokens(t *testing.T) {
	tokens := map[string]auth.Token{
		"root":          {Principal: "root", Caps: []string{auth.CapAdmin}},
		"planner@local": {Principal: "planner@local", Caps: []string{"a2a.send.worker@local", auth.CapDrain}},
		"worker@local":  {Principal: "worker@local", Caps: []string{auth.CapRecv, "a2a.respond.planner@local", "a2a.send.worker@local"}},
		"mallory@local": {Principal: "mallory@local", Caps: []string{"a2a.send.worker@local"}},
		"muted@local":   {Principal: "muted@local", Caps: []string{auth.CapDrain}},
		"reader":        {Principal: "reader", Caps: []string{auth.CapRead}},
	}
	a := startWithTokens(t, tokens)
	id := a.asked(t, "worker@local")
	body := func(sender string) string {
		return fmt.Sprintf(`{"sender":%q,"content":[{"type":"text","text":"staging"}]}`, sender)
	}
	for _, tc := range []struct {
		who, sender string
		status      int
		says        string
	}{
		{"worker@local", "planner@local", 403, `this token speaks for \"worker@local\"`},
		{"worker@local", "worker@local", 403, `was sent by \"planner@local\"`},
		{"mallory@local", "mallory@local", 403, `was sent by \"planner@local\"`},
		{"muted@local", "muted@local", 403, "a2a.send.worker@local"},
	} {
		seq := a.seq(t)
		status, got := a.as(t, tc.who, "POST", "/a2a/tasks/"+id+"/reply", body(tc.sender))
		if status != tc.status || !strings.Contains(got, tc.says) {
			t.Errorf("%s replying as %s = %d %s, want %d saying %q", tc.who, tc.sender, status, got, tc.status, tc.says)
		}
		if a.seq(t) != seq {
			t.Errorf("%s's refused reply changed the log", tc.who)
		}
	}
	if status, got := a.as(t, "planner@local", "POST", "/a2a/tasks/"+id+"/reply", body("planner@local")); status != 200 {
		t.Fatalf("the sender's reply = %d %s", status, got)
	}
	// The worker finishes it; an admin answers the next question for the
	// sender.
	task, lease, err := a.client(t, "worker@local").Lease(context.Background(), "")
	if err != nil || task == nil || task.ID != id {
		t.Fatalf("lease after the reply = %v, %v", task, err)
	}
	if err := a.client(t, "worker@local").PostResult(context.Background(), mailbox.Result{TaskID: id, LeaseID: lease.LeaseID, Status: mailbox.StatusOK}); err != nil {
		t.Fatal(err)
	}
	id2 := a.asked(t, "worker@local")
	if status, got := a.as(t, "root", "POST", "/a2a/tasks/"+id2+"/reply", body("planner@local")); status != 200 {
		t.Errorf("an admin's reply = %d %s", status, got)
	}
}

// The route is in the access matrix's terms: no token 401, a token that
// does not speak for the sender 403, the sender and an admin 200.
func TestReplyRouteIsGuarded(t *testing.T) {
	a := startAuthed(t)
	for _, tc := range []struct {
		authz  string
		status int
	}{
		{"", http.StatusUnauthorized},
		{"Bearer " + a.tokens["reader"], http.StatusForbidden},
		{"Bearer " + a.tokens["planner@local"], http.StatusOK},
	} {
		id := a.asked(t, "worker@local")
		status, body := a.do(t, "POST", "/a2a/tasks/"+id+"/reply", `{"sender":"planner@local","content":[{"type":"text","text":"x"}]}`, tc.authz)
		if status != tc.status {
			t.Errorf("%q: reply = %d %s, want %d", tc.authz, status, body, tc.status)
		}
	}
}
