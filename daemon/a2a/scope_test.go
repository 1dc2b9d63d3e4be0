package a2a_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/internal/sse/ssetest"
	"github.com/mailroom/mailroom/mailbox"
)

// Every task operation under /agents/{agent}/ reaches only the tasks whose
// recipient is {agent}: another agent's task is TaskNotFound there (-32001,
// REST 404), whatever the caller's rights, and nothing changes.

// rpcAnswer reads a JSON-RPC answer, a plain body or the first event of a
// stream.
func rpcAnswer(t *testing.T, r edgeReply) rpcReply {
	t.Helper()
	body := r.body
	if strings.HasPrefix(r.ctype, "text/event-stream") {
		body = nil
		if b, err := ssetest.NewReader(bytes.NewReader(r.body)).NextEvent(); err == nil {
			body = []byte(b.Data)
		}
	}
	var rep rpcReply
	if err := json.Unmarshal(body, &rep); err != nil {
		t.Fatalf("answer %d %s %s: %v", r.status, r.ctype, r.body, err)
	}
	return rep
}

// scopeDaemon registers ag@local and other@local and sends a task to
// other@local; it returns the daemon, the base of ag@local, that of
// other@local and the task's id.
func scopeDaemon(t *testing.T, opts daemontest.Options, tok string) (*interop, string, string, string) {
	t.Helper()
	it := newInterop(t, opts)
	ag := it.register("ag@local")
	other := it.register("other@local")
	h := map[string]string{}
	if tok != "" {
		h = bearer(tok)
	}
	r := post(t, other, h, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"ot","parts":[{"kind":"text","text":"other's work"}]},"configuration":{"blocking":false}}}`)
	rep := rpcAnswer(t, r)
	var task struct {
		ID string `json:"id"`
	}
	if r.status != 200 || rep.Error != nil || json.Unmarshal(rep.Result, &task) != nil {
		t.Fatalf("sending OT to other@local: %d %s", r.status, r.body)
	}
	return it, ag, other, task.ID
}

func TestTasksAreScopedToTheAgentInTheURL(t *testing.T) {
	for _, withTokens := range []bool{false, true} {
		name := "without tokens"
		var opts daemontest.Options
		tok := ""
		if withTokens {
			name, opts, tok = "with an admin token", daemontest.Options{Tokens: edgeTokens}, "tok-admin"
		}
		t.Run(name, func(t *testing.T) {
			it, ag, other, ot := scopeDaemon(t, opts, tok)
			h := map[string]string{}
			if tok != "" {
				h = bearer(tok)
			}
			v1 := map[string]string{"A2A-Version": "1.0"}
			for k, v := range h {
				v1[k] = v
			}
			msg03 := func(method string) string {
				return `{"jsonrpc":"2.0","id":9,"method":"` + method + `","params":{"message":{"kind":"message","role":"user","messageId":"cont-` + method + `","taskId":"` + ot + `","parts":[{"kind":"text","text":"more"}]}}}`
			}
			msg10 := func(method string) string {
				return `{"jsonrpc":"2.0","id":9,"method":"` + method + `","params":{"message":{"role":"ROLE_USER","messageId":"cont-` + method + `","taskId":"` + ot + `","parts":[{"text":"more"}]}}}`
			}
			idCall := func(method string) string {
				return `{"jsonrpc":"2.0","id":9,"method":"` + method + `","params":{"id":"` + ot + `"}}`
			}
			rpcs := []struct {
				name    string
				headers map[string]string
				body    string
			}{
				{"v0.3 tasks/get", h, idCall("tasks/get")},
				{"v0.3 tasks/cancel", h, idCall("tasks/cancel")},
				{"v0.3 tasks/resubscribe", h, idCall("tasks/resubscribe")},
				{"v0.3 message/send with taskId", h, msg03("message/send")},
				{"v0.3 message/stream with taskId", h, msg03("message/stream")},
				{"v1.0 GetTask", v1, idCall("GetTask")},
				{"v1.0 CancelTask", v1, idCall("CancelTask")},
				{"v1.0 SubscribeToTask", v1, idCall("SubscribeToTask")},
				{"v1.0 SendMessage with taskId", v1, msg10("SendMessage")},
				{"v1.0 SendStreamingMessage with taskId", v1, msg10("SendStreamingMessage")},
			}
			before := it.seq()
			for _, c := range rpcs {
				r := post(t, ag, c.headers, c.body)
				rep := rpcAnswer(t, r)
				if rep.Error == nil || rep.Error.Code != -32001 || string(rep.ID) != "9" {
					t.Errorf("%s of other@local's task through /agents/ag@local/: %d %s; want TaskNotFound (-32001) under id 9", c.name, r.status, r.body)
				}
			}
			rests := []struct{ method, path, body string }{
				{"GET", "tasks/" + ot, ""},
				{"POST", "tasks/" + ot + ":cancel", "{}"},
				{"POST", "tasks/" + ot + ":subscribe", ""},
				{"GET", "tasks/" + ot + ":subscribe", ""},
				{"POST", "message:send", `{"message":{"role":"ROLE_USER","messageId":"cont-rest","taskId":"` + ot + `","parts":[{"text":"more"}]}}`},
				{"POST", "message:stream", `{"message":{"role":"ROLE_USER","messageId":"cont-rest-s","taskId":"` + ot + `","parts":[{"text":"more"}]}}`},
			}
			for _, c := range rests {
				var body io.Reader
				if c.body != "" {
					body = strings.NewReader(c.body)
				}
				req, err := http.NewRequestWithContext(t.Context(), c.method, ag+c.path, body)
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Content-Type", "application/json")
				r := do(t, req, v1)
				if r.status != 404 || !bytes.Contains(r.body, []byte(`"reason":"TASK_NOT_FOUND"`)) {
					t.Errorf("REST %s %s through /agents/ag@local/: %d %s; want 404 TASK_NOT_FOUND", c.method, c.path, r.status, r.body)
				}
			}
			// Listing ag@local's tasks does not show other@local's.
			for _, list := range []edgeReply{
				post(t, ag, v1, `{"jsonrpc":"2.0","id":9,"method":"ListTasks","params":{}}`),
				do(t, mustRequest(t, "GET", ag+"tasks"), v1),
			} {
				if list.status != 200 || bytes.Contains(list.body, []byte(ot)) || !bytes.Contains(list.body, []byte(`"tasks":[]`)) {
					t.Errorf("listing ag@local's tasks: %d %s; want none, and not %s", list.status, list.body, ot)
				}
			}
			if after := it.seq(); after != before {
				t.Errorf("refused operations changed the mailbox: seq %d -> %d", before, after)
			}
			q, err := it.native.Queue(it.ctx, mailbox.QueueFilter{})
			if err != nil || len(q.Tasks) != 1 || q.Tasks[0].Task.ID != ot || q.Tasks[0].Task.Recipient != "other@local" {
				t.Fatalf("queue %+v %v: want OT alone, queued for other@local", q.Tasks, err)
			}
			// Through its own agent's URL the same task is there.
			r := post(t, other, h, idCall("tasks/get"))
			if rep := rpcAnswer(t, r); rep.Error != nil || !bytes.Contains(rep.Result, []byte(ot)) {
				t.Fatalf("tasks/get through /agents/other@local/: %d %s; want the task", r.status, r.body)
			}
			r = do(t, mustRequest(t, "GET", other+"tasks/"+ot), v1)
			if r.status != 200 || r.ctype != "application/json" {
				t.Fatalf("REST get through /agents/other@local/: %d %s", r.status, r.body)
			}
			r = post(t, other, h, idCall("tasks/cancel"))
			if rep := rpcAnswer(t, r); rep.Error != nil || !bytes.Contains(rep.Result, []byte(`"canceled"`)) {
				t.Fatalf("tasks/cancel through /agents/other@local/: %d %s; want it canceled", r.status, r.body)
			}
		})
	}
}

// A token that may not read another agent's task learns nothing of it
// through its own agent's URL: TaskNotFound, as for a task that is not
// there, never 403.
func TestScopeSaysNothingOfAnotherAgentsTasks(t *testing.T) {
	it, _, _, ot := scopeDaemon(t, daemontest.Options{Tokens: edgeTokens}, "tok-admin")
	coder := it.register("coder@local")
	before := it.seq()
	for _, method := range []string{"tasks/get", "tasks/cancel"} {
		r := post(t, coder, bearer("tok-alice"), `{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":{"id":"`+ot+`"}}`)
		if rep := rpcAnswer(t, r); r.status != 200 || rep.Error == nil || rep.Error.Code != -32001 {
			t.Errorf("%s of other@local's task by alice through coder@local: %d %s; want TaskNotFound", method, r.status, r.body)
		}
	}
	v1 := map[string]string{"A2A-Version": "1.0", "Authorization": "Bearer tok-alice"}
	for _, method := range []string{"GetTask", "CancelTask"} {
		r := post(t, coder, v1, `{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":{"id":"`+ot+`"}}`)
		if rep := rpcAnswer(t, r); r.status != 200 || rep.Error == nil || rep.Error.Code != -32001 {
			t.Errorf("%s of other@local's task by alice through coder@local: %d %s; want TaskNotFound", method, r.status, r.body)
		}
	}
	for _, c := range []struct{ method, path string }{{"GET", "tasks/" + ot}, {"POST", "tasks/" + ot + ":cancel"}} {
		r := do(t, mustRequest(t, c.method, coder+c.path), v1)
		if r.status != 404 || !bytes.Contains(r.body, []byte("TASK_NOT_FOUND")) {
			t.Errorf("REST %s %s by alice through coder@local: %d %s; want 404 TASK_NOT_FOUND", c.method, c.path, r.status, r.body)
		}
	}
	if after := it.seq(); after != before {
		t.Errorf("seq %d -> %d", before, after)
	}
}
