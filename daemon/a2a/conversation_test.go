package a2a_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/daemon/a2a"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/internal/sse/ssetest"
	"github.com/mailroom/mailroom/mailbox"
)

// Conversations through the edge: a worker asks (input_required,
// auth_required), the A2A caller sees the question and answers with a
// message carrying the task's id, in every binding; the task's history is
// every turn in order; a message to a task that is not waiting is refused
// and changes nothing.

// convTask is a task in either generation, read as a client would.
type convTask struct {
	ID        string `json:"id"`
	ContextID string `json:"contextId"`
	Status    struct {
		State   string   `json:"state"`
		Message *convMsg `json:"message"`
	} `json:"status"`
	History   []convMsg `json:"history"`
	Artifacts []struct {
		Parts []map[string]any `json:"parts"`
	} `json:"artifacts"`
}

type convMsg struct {
	Role      string           `json:"role"`
	MessageID string           `json:"messageId"`
	TaskID    string           `json:"taskId"`
	Parts     []map[string]any `json:"parts"`
}

// text is a message's text parts, joined.
func (m convMsg) text() string {
	var s []string
	for _, p := range m.Parts {
		if t, ok := p["text"].(string); ok {
			s = append(s, t)
		}
	}
	return strings.Join(s, "\n")
}

// turns is the history as role:text, roles spelled as in v0.3.
func (tk convTask) turns() string {
	var s []string
	for _, m := range tk.History {
		role := strings.ToLower(strings.TrimPrefix(m.Role, "ROLE_"))
		s = append(s, role+":"+m.text())
	}
	return strings.Join(s, " | ")
}

// convBinding is one way to talk to the edge.
type convBinding struct {
	name string
	// message is a text message, continuing taskID when it is not "".
	message func(messageID, taskID, text string) string
	send    func(t *testing.T, base, msg string, blocking bool) edgeReply
	get     func(t *testing.T, base, id, query string) edgeReply
	// state spells a v0.3 state in this binding.
	state func(s string) string
	// task reads the task out of a send's or a get's answer; ok false
	// gives the error's code (JSON-RPC) or status (REST) instead.
	task func(t *testing.T, r edgeReply, send bool) (convTask, int, string)
}

var v1Header = map[string]string{"A2A-Version": "1.0"}

func state10(s string) string {
	return "TASK_STATE_" + strings.ToUpper(strings.ReplaceAll(s, "-", "_"))
}

func rpcTask(t *testing.T, r edgeReply, wrapped bool) (convTask, int, string) {
	t.Helper()
	var rep rpcReply
	if err := json.Unmarshal(r.body, &rep); err != nil {
		t.Fatalf("answer %d %s: %v", r.status, r.body, err)
	}
	if rep.Error != nil {
		return convTask{}, rep.Error.Code, rep.Error.Message
	}
	var tk convTask
	raw := rep.Result
	if wrapped {
		var w struct {
			Task json.RawMessage `json:"task"`
		}
		if err := json.Unmarshal(raw, &w); err != nil {
			t.Fatalf("result %s: %v", raw, err)
		}
		raw = w.Task
	}
	if err := json.Unmarshal(raw, &tk); err != nil || tk.ID == "" {
		t.Fatalf("result %s: want a task (%v)", raw, err)
	}
	return tk, 0, ""
}

var convBindings = []convBinding{
	{
		name: "v0.3 JSON-RPC",
		message: func(id, taskID, text string) string {
			task := ""
			if taskID != "" {
				task = `,"taskId":"` + taskID + `"`
			}
			return `{"kind":"message","role":"user","messageId":"` + id + `"` + task + `,"parts":[{"kind":"text","text":` + strconv.Quote(text) + `}]}`
		},
		send: func(t *testing.T, base, msg string, blocking bool) edgeReply {
			return post(t, base, nil, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":`+msg+`,"configuration":{"blocking":`+strconv.FormatBool(blocking)+`}}}`)
		},
		get: func(t *testing.T, base, id, query string) edgeReply {
			return post(t, base, nil, `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"`+id+`"`+query+`}}`)
		},
		state: func(s string) string { return s },
		task:  func(t *testing.T, r edgeReply, _ bool) (convTask, int, string) { return rpcTask(t, r, false) },
	},
	{
		name: "v1.0 JSON-RPC",
		message: func(id, taskID, text string) string {
			task := ""
			if taskID != "" {
				task = `,"taskId":"` + taskID + `"`
			}
			return `{"role":"ROLE_USER","messageId":"` + id + `"` + task + `,"parts":[{"text":` + strconv.Quote(text) + `}]}`
		},
		send: func(t *testing.T, base, msg string, blocking bool) edgeReply {
			return post(t, base, v1Header, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":`+msg+`,"configuration":{"returnImmediately":`+strconv.FormatBool(!blocking)+`}}}`)
		},
		get: func(t *testing.T, base, id, query string) edgeReply {
			return post(t, base, v1Header, `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"`+id+`"`+query+`}}`)
		},
		state: state10,
		task:  func(t *testing.T, r edgeReply, send bool) (convTask, int, string) { return rpcTask(t, r, send) },
	},
	{
		name: "v1.0 HTTP+JSON",
		message: func(id, taskID, text string) string {
			task := ""
			if taskID != "" {
				task = `,"taskId":"` + taskID + `"`
			}
			return `{"role":"ROLE_USER","messageId":"` + id + `"` + task + `,"parts":[{"text":` + strconv.Quote(text) + `}]}`
		},
		send: func(t *testing.T, base, msg string, blocking bool) edgeReply {
			return post(t, base+"message:send", v1Header, `{"message":`+msg+`,"configuration":{"returnImmediately":`+strconv.FormatBool(!blocking)+`}}`)
		},
		get: func(t *testing.T, base, id, query string) edgeReply {
			// query is JSON-RPC params (`,"historyLength":1`): as a
			// query string here.
			q := ""
			if n, ok := strings.CutPrefix(query, `,"historyLength":`); ok {
				q = "?historyLength=" + n
			}
			return do(t, mustRequest(t, "GET", base+"tasks/"+id+q), v1Header)
		},
		state: state10,
		task: func(t *testing.T, r edgeReply, send bool) (convTask, int, string) {
			t.Helper()
			if r.status != 200 {
				var e struct {
					Error struct {
						Message string `json:"message"`
					} `json:"error"`
				}
				_ = json.Unmarshal(r.body, &e)
				return convTask{}, r.status, e.Error.Message
			}
			raw := r.body
			if send {
				var w struct {
					Task json.RawMessage `json:"task"`
				}
				if err := json.Unmarshal(raw, &w); err != nil {
					t.Fatalf("answer %s: %v", raw, err)
				}
				raw = w.Task
			}
			var tk convTask
			if err := json.Unmarshal(raw, &tk); err != nil || tk.ID == "" {
				t.Fatalf("answer %s: want a task (%v)", raw, err)
			}
			return tk, 0, ""
		},
	},
}

// mustTask reads a task from an answer that must be one.
func (b convBinding) mustTask(t *testing.T, r edgeReply, send bool, what string) convTask {
	t.Helper()
	tk, code, msg := b.task(t, r, send)
	if code != 0 {
		t.Fatalf("%s %s: error %d %s", b.name, what, code, msg)
	}
	return tk
}

// ask posts the worker's question on a leased task.
func (it *interop) ask(task *mailbox.Task, lease *mailbox.Lease, status, question string) {
	it.t.Helper()
	if err := it.native.PostResult(it.ctx, mailbox.Result{TaskID: task.ID, LeaseID: lease.LeaseID, Status: status,
		Content: []mailbox.Content{{Type: mailbox.ContentText, Text: question}}}); err != nil {
		it.t.Fatalf("asking %q on %s: %v", question, task.ID, err)
	}
}

func TestConversationThroughEachBinding(t *testing.T) {
	for _, b := range convBindings {
		t.Run(b.name, func(t *testing.T) {
			it := newInterop(t, daemontest.Options{})
			base := it.register("coder@local")
			sent := b.mustTask(t, b.send(t, base, b.message("c1", "", "migrate the schema"), false), true, "send")

			// The worker asks: the caller sees input-required, the
			// question as the status message and as the newest turn.
			task, lease := it.lease("coder@local")
			it.ask(task, lease, mailbox.StatusInputRequired, "which database?")
			got := b.mustTask(t, b.get(t, base, sent.ID, ""), false, "get")
			if got.Status.State != b.state("input-required") || got.Status.Message == nil || got.Status.Message.text() != "which database?" ||
				!strings.Contains(strings.ToLower(got.Status.Message.Role), "agent") {
				t.Fatalf("a task whose worker asked reads %+v; want %s with the question from the agent", got.Status, b.state("input-required"))
			}
			if want := "user:migrate the schema | agent:which database?"; got.turns() != want {
				t.Fatalf("history %q, want %q", got.turns(), want)
			}
			// The caller read the question: nobody is left to drain it.
			if rs, err := it.native.RecentResults(it.ctx, 0); err != nil || len(rs) != 0 {
				t.Fatalf("pending results after the caller read the question: %+v, %v; want none", rs, err)
			}

			// The answer, with the task's id, queues the task again.
			answered := b.mustTask(t, b.send(t, base, b.message("c2", sent.ID, "use staging"), false), true, "continue")
			if answered.ID != sent.ID || answered.ContextID != sent.ContextID || answered.Status.State != b.state("submitted") {
				t.Fatalf("the answer made %+v; want task %s submitted again in its context", answered, sent.ID)
			}
			if want := "user:migrate the schema | agent:which database? | user:use staging"; answered.turns() != want {
				t.Fatalf("history after the answer %q, want %q", answered.turns(), want)
			}
			if m := answered.History[2]; m.MessageID != "c2" || m.TaskID != sent.ID {
				t.Fatalf("the answer in the history %+v; want the message as sent (c2) on task %s", m, sent.ID)
			}

			// The worker's next lease carries both turns; the answer is
			// text content, and the message as sent.
			task, lease = it.lease("coder@local")
			if len(task.Turns) != 2 || task.Turns[1].Role != mailbox.RoleSender || len(task.Turns[1].Content) != 1 || task.Turns[1].Content[0].Text != "use staging" ||
				task.Turns[1].A2A == nil || task.Turns[1].A2A.MessageID != "c2" || task.Turns[1].Agent != a2a.AnonymousSender {
				t.Fatalf("the next lease carries turns %+v; want the question and the answer", task.Turns)
			}
			it.answer(task, lease, mailbox.StatusOK, "migrated on staging")
			done := b.mustTask(t, b.get(t, base, sent.ID, ""), false, "get")
			if done.Status.State != b.state("completed") || len(done.Artifacts) != 1 || done.Artifacts[0].Parts[0]["text"] != "migrated on staging" {
				t.Fatalf("the finished task reads %+v", done)
			}
			if want := "user:migrate the schema | agent:which database? | user:use staging"; done.turns() != want {
				t.Fatalf("history of the finished task %q, want %q", done.turns(), want)
			}
			last := b.mustTask(t, b.get(t, base, sent.ID, `,"historyLength":1`), false, "get")
			if last.turns() != "user:use staging" {
				t.Fatalf("historyLength 1 gave %q, want the newest turn alone", last.turns())
			}
		})
	}
}

// streamStates reads a v0.3 JSON-RPC stream to its end as kind:state
// (final marked !), with each event's id.
func streamStates(t *testing.T, body io.Reader) (states []string, ids []string) {
	t.Helper()
	rd := ssetest.NewReader(body)
	for {
		b, err := rd.NextEvent()
		if err == io.EOF {
			return states, ids
		}
		if err != nil {
			t.Fatal(err)
		}
		var ev struct {
			Result struct {
				Kind   string `json:"kind"`
				Final  bool   `json:"final"`
				Status struct {
					State   string   `json:"state"`
					Message *convMsg `json:"message"`
				} `json:"status"`
				History []convMsg `json:"history"`
			} `json:"result"`
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal([]byte(b.Data), &ev); err != nil || ev.Error != nil {
			t.Fatalf("event %s: %v", b.Data, err)
		}
		s := ev.Result.Kind + ":" + ev.Result.Status.State
		if ev.Result.Final {
			s += "!"
		}
		states, ids = append(states, s), append(ids, b.ID)
	}
}

// A stream ends at the question, final; the answer sent as a stream
// follows the next turn to the end; a stream resumed from the question's
// event id replays the turn it missed.
func TestConversationStreamsFollowTheTurns(t *testing.T) {
	it := newInterop(t, daemontest.Options{})
	base := it.register("coder@local")
	wait := it.worker("coder@local", mailbox.StatusInputRequired, "which database?")
	resp := openStream(t, base, `{"jsonrpc":"2.0","id":"s1","method":"message/stream","params":{"message":{"kind":"message","role":"user","messageId":"s1","parts":[{"kind":"text","text":"migrate"}]}}}`)
	states, ids := streamStates(t, resp.Body)
	resp.Body.Close()
	wait()
	if want := "task:submitted status-update:working status-update:input-required!"; strings.Join(states, " ") != want {
		t.Fatalf("the first turn's stream: %v, want %s", states, want)
	}
	q, err := it.native.Queue(it.ctx, mailbox.QueueFilter{State: mailbox.TaskWaiting})
	if err != nil || len(q.Tasks) != 1 {
		t.Fatalf("waiting tasks %+v, %v; want the one", q.Tasks, err)
	}
	id := q.Tasks[0].Task.ID

	// A resubscribe to the waiting task shows it and ends: nothing more
	// happens until its caller answers.
	resp = openStream(t, base, `{"jsonrpc":"2.0","id":"r1","method":"tasks/resubscribe","params":{"id":"`+id+`"}}`)
	if got, _ := streamStates(t, resp.Body); strings.Join(got, " ") != "task:input-required status-update:input-required!" {
		t.Fatalf("resubscribe to a waiting task: %v; want the task, then the final input-required", got)
	}
	resp.Body.Close()

	wait = it.worker("coder@local", mailbox.StatusOK, "migrated")
	resp = openStream(t, base, `{"jsonrpc":"2.0","id":"s2","method":"message/stream","params":{"message":{"kind":"message","role":"user","messageId":"s2","taskId":"`+id+`","parts":[{"kind":"text","text":"staging"}]}}}`)
	second, _ := streamStates(t, resp.Body)
	resp.Body.Close()
	wait()
	if want := "task:submitted status-update:working artifact-update: status-update:completed!"; strings.Join(second, " ") != want {
		t.Fatalf("the answer's stream: %v, want %s", second, want)
	}

	// Resumed from the question's event: the second turn, replayed.
	req := mustRequest(t, "POST", base)
	req.Body = io.NopCloser(strings.NewReader(`{"jsonrpc":"2.0","id":"r2","method":"tasks/resubscribe","params":{"id":"` + id + `"}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Last-Event-ID", ids[len(ids)-1])
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	replayed, _ := streamStates(t, res.Body)
	res.Body.Close()
	if want := "status-update:submitted status-update:working artifact-update: status-update:completed!"; strings.Join(replayed, " ") != want {
		t.Fatalf("resumed after the question: %v, want %s", replayed, want)
	}
}

// A blocking send answers at the question; a blocking answer waits for
// the task's end.
func TestConversationBlockingSendsWaitForTheTurn(t *testing.T) {
	for _, b := range convBindings {
		t.Run(b.name, func(t *testing.T) {
			it := newInterop(t, daemontest.Options{})
			base := it.register("coder@local")
			wait := it.worker("coder@local", mailbox.StatusAuthRequired, "sign in at https://id.example/device")
			asked := b.mustTask(t, b.send(t, base, b.message("b1", "", "deploy"), true), true, "blocking send")
			wait()
			if asked.Status.State != b.state("auth-required") || asked.Status.Message == nil || asked.Status.Message.text() != "sign in at https://id.example/device" {
				t.Fatalf("a blocking send whose worker asked answered %+v; want auth-required with the question", asked.Status)
			}
			wait = it.worker("coder@local", mailbox.StatusRejected, "")
			done := b.mustTask(t, b.send(t, base, b.message("b2", asked.ID, "done, signed in"), true), true, "blocking answer")
			wait()
			if done.Status.State != b.state("rejected") || done.Status.Message == nil || done.Status.Message.text() != "the agent rejected the task" {
				t.Fatalf("a blocking answer answered %+v; want the task as its worker left it (rejected)", done.Status)
			}
		})
	}
}

// An answer to a task that is not waiting on its caller is refused, in
// every binding, and changes nothing: UnsupportedOperation (-32004, REST
// 400), or TaskNotFound for a task that is not there.
func TestConversationRefusals(t *testing.T) {
	for _, b := range convBindings {
		t.Run(b.name, func(t *testing.T) {
			it := newInterop(t, daemontest.Options{})
			base := it.register("coder@local")
			send := func(id string) string {
				return b.mustTask(t, b.send(t, base, b.message(id, "", "work "+id), false), true, "send").ID
			}
			canceled := send("canceled")
			call03(t, base, "tasks/cancel", `{"id":"`+canceled+`"}`)
			finished := send("finished")
			task, lease := it.lease("coder@local")
			it.answer(task, lease, mailbox.StatusOK, "done")
			inflight := send("inflight")
			it.lease("coder@local")
			queued := send("queued")

			unsupported, notFound := -32004, -32001
			if b.name == "v1.0 HTTP+JSON" {
				unsupported, notFound = 400, 404
			}
			for _, c := range []struct {
				name, taskID, contextID string
				code                    int
				says                    string
			}{
				{"queued", queued, "", unsupported, "it is queued"},
				{"in flight", inflight, "", unsupported, "it is in flight"},
				{"finished", finished, "", unsupported, "it is finished"},
				{"canceled", canceled, "", unsupported, "it was canceled"},
				{"unknown", "6f9619ff-8b86-4d11-b42d-00c04fc964ff", "", notFound, "not found"},
			} {
				before := it.seq()
				_, code, msg := b.task(t, b.send(t, base, b.message("answer-"+c.name, c.taskID, "more"), false), true)
				if code != c.code || !strings.Contains(msg, c.says) {
					t.Errorf("an answer to a %s task: %d %q; want %d saying %q", c.name, code, msg, c.code, c.says)
				}
				if after := it.seq(); after != before {
					t.Errorf("the refused answer to a %s task changed the mailbox: seq %d -> %d", c.name, before, after)
				}
			}

			// A waiting task in another context is refused too, naming
			// both.
			task, lease = it.lease("coder@local")
			if task.ID != queued {
				t.Fatalf("leased %s, want the queued task %s", task.ID, queued)
			}
			it.ask(task, lease, mailbox.StatusInputRequired, "which one?")
			before := it.seq()
			msg := strings.Replace(b.message("elsewhere", queued, "that one"), `"messageId"`, `"contextId":"ctx-other","messageId"`, 1)
			if _, code, text := b.task(t, b.send(t, base, msg, false), true); code == 0 || !strings.Contains(text, "message.contextId") || !strings.Contains(text, "ctx-other") {
				t.Errorf("an answer in another context: %d %q; want a refusal naming message.contextId", code, text)
			}
			if after := it.seq(); after != before {
				t.Errorf("the refused answer changed the mailbox: seq %d -> %d", before, after)
			}

			// The same answer twice is one turn.
			first := b.mustTask(t, b.send(t, base, b.message("once", queued, "that one"), false), true, "answer")
			again := b.mustTask(t, b.send(t, base, b.message("once", queued, "that one"), false), true, "retried answer")
			if first.turns() != again.turns() || len(again.History) != 3 {
				t.Errorf("a retried answer: history %q then %q; want the one answer", first.turns(), again.turns())
			}
		})
	}
}

// With tokens, only the task's sender (or an admin) answers it; another
// caller is refused, naming why, and nothing changes.
func TestConversationWithTokens(t *testing.T) {
	it := newInterop(t, daemontest.Options{Tokens: edgeTokens})
	base := it.register("coder@local")
	msg := func(id, taskID string) string {
		task := ""
		if taskID != "" {
			task = `,"taskId":"` + taskID + `"`
		}
		return `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"` + id + `"` + task + `,"parts":[{"kind":"text","text":"hi"}]},"configuration":{"blocking":false}}}`
	}
	st, rep := rpc(t, base, "tok-alice", msg("a1", ""))
	var sent convTask
	if st != 200 || rep.Error != nil || json.Unmarshal(rep.Result, &sent) != nil {
		t.Fatalf("alice's send: %d %+v", st, rep.Error)
	}
	task, lease := it.lease("coder@local")
	it.ask(task, lease, mailbox.StatusInputRequired, "which branch?")
	for _, c := range []struct {
		tok    string
		status int
		says   string
	}{
		{"tok-bob", 403, "a2a.read"},
		{"tok-reader", 403, "only its sender"},
		{"tok-eve", 403, "a2a.read"},
	} {
		before := it.seq()
		st, rep := rpc(t, base, c.tok, msg("x-"+c.tok, sent.ID))
		if st != c.status || rep.Error == nil || !strings.Contains(rep.Error.Message, c.says) {
			t.Errorf("%s answers alice's task: %d %+v; want %d saying %q", c.tok, st, rep.Error, c.status, c.says)
		}
		if after := it.seq(); after != before {
			t.Errorf("%s's refused answer changed the mailbox: seq %d -> %d", c.tok, before, after)
		}
	}
	st, rep = rpc(t, base, "tok-alice", msg("a2", sent.ID))
	var answered convTask
	if st != 200 || rep.Error != nil || json.Unmarshal(rep.Result, &answered) != nil || answered.Status.State != "submitted" {
		t.Fatalf("alice answers her task: %d %+v %s", st, rep.Error, rep.Result)
	}
	task, lease = it.lease("coder@local")
	if len(task.Turns) != 2 || task.Turns[1].Agent != "alice@local" {
		t.Fatalf("turns %+v; want alice's answer", task.Turns)
	}
	// Alice's answer retried by another caller is refused all the same.
	before := it.seq()
	if st, rep := rpc(t, base, "tok-reader", msg("a2", sent.ID)); st != 403 || rep.Error == nil {
		t.Errorf("reader@local retries alice's answer: %d %+v; want 403", st, rep.Error)
	}
	if after := it.seq(); after != before {
		t.Errorf("the refused retry changed the mailbox: seq %d -> %d", before, after)
	}
	// An admin answers in the sender's name.
	it.ask(task, lease, mailbox.StatusInputRequired, "and the tag?")
	if st, rep = rpc(t, base, "tok-admin", msg("ops1", sent.ID)); st != 200 || rep.Error != nil {
		t.Fatalf("an admin answers alice's task: %d %+v", st, rep.Error)
	}
}

// ListTasks filters by the interrupted states, in both bindings.
func TestListTasksByInterruptedState(t *testing.T) {
	it := newInterop(t, daemontest.Options{})
	base := it.register("coder@local")
	ids := map[string]string{}
	for _, st := range []string{mailbox.StatusInputRequired, mailbox.StatusAuthRequired, mailbox.StatusRejected} {
		ids[st] = sendV03(t, base, "l-"+st, "work")
		task, lease := it.lease("coder@local")
		it.ask(task, lease, st, "about "+st)
	}
	sendV03(t, base, "l-queued", "work")
	for st, want := range map[string]string{"TASK_STATE_INPUT_REQUIRED": ids[mailbox.StatusInputRequired], "TASK_STATE_AUTH_REQUIRED": ids[mailbox.StatusAuthRequired], "TASK_STATE_REJECTED": ids[mailbox.StatusRejected]} {
		for _, r := range []edgeReply{
			post(t, base, v1Header, `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"status":"`+st+`"}}`),
			do(t, mustRequest(t, "GET", base+"tasks?status="+st), v1Header),
		} {
			var list struct {
				Tasks []convTask `json:"tasks"`
			}
			var rep rpcReply
			body := r.body
			if json.Unmarshal(r.body, &rep) == nil && rep.Result != nil {
				body = rep.Result
			}
			if r.status != 200 || json.Unmarshal(body, &list) != nil || len(list.Tasks) != 1 || list.Tasks[0].ID != want || list.Tasks[0].Status.State != st {
				t.Errorf("ListTasks status %s: %d %s; want task %s alone", st, r.status, r.body, want)
			}
		}
	}
}

// A task waiting on its caller may be canceled instead of answered; an
// answer after that is refused.
func TestCancelAWaitingTask(t *testing.T) {
	it := newInterop(t, daemontest.Options{})
	base := it.register("coder@local")
	id := sendV03(t, base, "w1", "work")
	task, lease := it.lease("coder@local")
	it.ask(task, lease, mailbox.StatusInputRequired, "which one?")
	if got := call03(t, base, "tasks/cancel", `{"id":"`+id+`"}`); got.Status.State != "canceled" {
		t.Fatalf("cancel of a waiting task: %+v; want canceled", got.Status)
	}
	before := it.seq()
	r := post(t, base, nil, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"w2","taskId":"`+id+`","parts":[{"kind":"text","text":"that one"}]}}}`)
	if rep := rpcAnswer(t, r); rep.Error == nil || rep.Error.Code != -32004 || !strings.Contains(rep.Error.Message, "canceled") {
		t.Fatalf("an answer to the canceled task: %s; want -32004 saying it was canceled", r.body)
	}
	if after := it.seq(); after != before {
		t.Fatalf("the refused answer changed the mailbox: seq %d -> %d", before, after)
	}
}

// An answer given on the native route (mailroom reply) reads in the A2A
// history as a user message made of its content, under an id of its own.
func TestNativeReplyReadsInTheHistory(t *testing.T) {
	it := newInterop(t, daemontest.Options{})
	base := it.register("coder@local")
	id := sendV03(t, base, "n1", "work")
	task, lease := it.lease("coder@local")
	it.ask(task, lease, mailbox.StatusInputRequired, "which one?")
	if _, err := it.native.Reply(it.ctx, mailbox.Reply{TaskID: id, Sender: a2a.AnonymousSender,
		Content: []mailbox.Content{{Type: mailbox.ContentText, Text: "that one"}, {Type: mailbox.ContentJSON, Value: json.RawMessage(`{"n":1}`)}}}); err != nil {
		t.Fatal(err)
	}
	got := call03(t, base, "tasks/get", `{"id":"`+id+`"}`)
	if got.Status.State != "submitted" || len(got.History) != 3 {
		t.Fatalf("the task after a native reply: %+v; want submitted with three turns", got)
	}
	var m struct {
		convMsg
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(got.History[2], &m); err != nil {
		t.Fatal(err)
	}
	if m.Role != "user" || len(m.Parts) != 2 || m.Parts[0]["text"] != "that one" || m.Parts[1]["kind"] != "data" || !strings.HasPrefix(m.MessageID, "turn-"+id+"-") || m.TaskID != id {
		t.Fatalf("the native answer in the history: %s; want a user message with its text and data parts, on the task", got.History[2])
	}
}
