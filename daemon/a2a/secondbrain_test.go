package a2a_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/mailbox"
)

// SecondBrain's A2A client (seed 003) speaks v1.0: the A2A-Version: 1.0
// header, HTTP+JSON with application/a2a+json bodies (and JSON-RPC), a
// message whose parts are the task text as text/plain and the JSON payload
// as application/json, its chat session as the contextId, a retry with
// the same messageId expecting the same task, tasks listed by contextId,
// and task streams resumed from the last event it saw. These are its
// requests; the answers are read as its models read them.

const sbMessage = `{"messageId":"sb-msg-0001","contextId":"chat-session-7","role":"ROLE_USER","parts":[{"text":"Summarize latest release notes","mediaType":"text/plain"},{"data":{"topic":"release-notes"},"mediaType":"application/json"}]}`

var sbHeaders = map[string]string{"A2A-Version": "1.0", "Content-Type": "application/a2a+json"}

// sbTask is the part of a v1.0 Task SecondBrain's models read.
type sbTask struct {
	ID        string `json:"id"`
	ContextID string `json:"contextId"`
	Status    struct {
		State string `json:"state"`
	} `json:"status"`
	Artifacts []struct {
		Parts []struct {
			Text      *string         `json:"text"`
			Data      json.RawMessage `json:"data"`
			MediaType string          `json:"mediaType"`
		} `json:"parts"`
	} `json:"artifacts"`
	History []json.RawMessage `json:"history"`
}

func TestSecondBrainClientReplay(t *testing.T) {
	it := newInterop(t, daemontest.Options{})
	base := it.register("researcher@local")

	// SendMessage over HTTP+JSON, not waiting: the task is submitted in the
	// chat session's context.
	send := `{"message":` + sbMessage + `,"configuration":{"returnImmediately":true,"acceptedOutputModes":["text/plain","application/json"]}}`
	r := post(t, base+"message:send", sbHeaders, send)
	var sent struct {
		Task sbTask `json:"task"`
	}
	if r.status != 200 || !strings.HasPrefix(r.ctype, "application/a2a+json") || json.Unmarshal(r.body, &sent) != nil ||
		sent.Task.ContextID != "chat-session-7" || sent.Task.Status.State != "TASK_STATE_SUBMITTED" {
		t.Fatalf("message:send = %d %s %s", r.status, r.ctype, r.body)
	}
	id := sent.Task.ID

	// A retry with the same messageId is the same task and queues nothing.
	seq := it.seq()
	r = post(t, base+"message:send", sbHeaders, send)
	var again struct {
		Task sbTask `json:"task"`
	}
	if r.status != 200 || json.Unmarshal(r.body, &again) != nil || again.Task.ID != id || it.seq() != seq {
		t.Fatalf("the retry = %d %s; want task %s and nothing new in the log", r.status, r.body, id)
	}

	// Its tasks in the chat session, by contextId.
	req := mustRequest(t, "GET", base+"tasks?contextId=chat-session-7")
	r = do(t, req, map[string]string{"A2A-Version": "1.0"})
	var listed struct {
		Tasks []sbTask `json:"tasks"`
	}
	if r.status != 200 || json.Unmarshal(r.body, &listed) != nil || len(listed.Tasks) != 1 || listed.Tasks[0].ID != id {
		t.Fatalf("tasks?contextId = %d %s", r.status, r.body)
	}

	// A stream of the task: its first event, with an id, and the client
	// hangs up; a native worker takes the task, with the payload as its
	// context, and answers; the client resumes from the id it saw and
	// gets what followed, ending with the completed task.
	first := sbStream(t, base+"tasks/"+id+":subscribe", "", 1)
	if len(first) != 1 || first[0].id == "" {
		t.Fatalf("subscribe gave %+v; want a first event with an id", first)
	}
	task, lease := it.lease("researcher@local")
	if task.ID != id || task.IntentText != "Summarize latest release notes" || string(task.Context) != `{"topic":"release-notes"}` {
		t.Fatalf("the worker leased %s %q with context %s", task.ID, task.IntentText, task.Context)
	}
	if err := it.native.PostResult(it.ctx, mailbox.Result{TaskID: id, LeaseID: lease.LeaseID, Status: mailbox.StatusOK,
		Content: []mailbox.Content{{Type: mailbox.ContentText, Text: "3 releases"}, {Type: mailbox.ContentJSON, Value: json.RawMessage(`{"count":3}`)}}}); err != nil {
		t.Fatal(err)
	}
	rest := sbStream(t, base+"tasks/"+id+":subscribe", first[0].id, 0)
	if len(rest) == 0 || !strings.Contains(rest[len(rest)-1].data, "TASK_STATE_COMPLETED") {
		t.Fatalf("the resumed stream %+v; want it to end with the completed task", rest)
	}
	for _, ev := range rest {
		if ev.id == first[0].id {
			t.Fatalf("the resumed stream repeated event %s", ev.id)
		}
	}

	// GetTask: completed, the text and the JSON payload as parts.
	r = do(t, mustRequest(t, "GET", base+"tasks/"+id), map[string]string{"A2A-Version": "1.0"})
	var got sbTask
	if r.status != 200 || json.Unmarshal(r.body, &got) != nil || got.Status.State != "TASK_STATE_COMPLETED" || len(got.Artifacts) != 1 {
		t.Fatalf("tasks/{id} = %d %s", r.status, r.body)
	}
	parts := got.Artifacts[0].Parts
	if len(parts) != 2 || parts[0].Text == nil || *parts[0].Text != "3 releases" || string(parts[1].Data) != `{"count":3}` {
		t.Fatalf("the artifact's parts: %s", r.body)
	}

	// The same message over JSON-RPC (SendMessage at the base URL, v1.0),
	// as its JSON-RPC route sends it, with a new messageId.
	rpc := `{"jsonrpc":"2.0","id":"sb-1","method":"SendMessage","params":{"message":` + strings.Replace(sbMessage, "sb-msg-0001", "sb-msg-0002", 1) + `,"configuration":{"returnImmediately":true}}}`
	r = post(t, base, map[string]string{"A2A-Version": "1.0"}, rpc)
	var rep struct {
		ID     string `json:"id"`
		Result struct {
			Task sbTask `json:"task"`
		} `json:"result"`
	}
	if r.status != 200 || json.Unmarshal(r.body, &rep) != nil || rep.ID != "sb-1" || rep.Result.Task.ContextID != "chat-session-7" || rep.Result.Task.ID == id {
		t.Fatalf("SendMessage = %d %s", r.status, r.body)
	}
}

type sbEvent struct{ id, data string }

// sbStream POSTs a v1.0 subscribe and reads its events, resuming after
// lastID when given, until n events (0: until the stream ends).
func sbStream(t *testing.T, url, lastID string, n int) []sbEvent {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("A2A-Version", "1.0")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("subscribe = %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var out []sbEvent
	var cur sbEvent
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id:"):
			cur.id = strings.TrimSpace(strings.TrimPrefix(line, "id:"))
		case strings.HasPrefix(line, "data:"):
			cur.data = strings.TrimSpace(strings.TrimPrefix(line, "data:"))
		case line == "" && cur.data != "":
			out = append(out, cur)
			cur = sbEvent{}
			if n > 0 && len(out) == n {
				return out
			}
		}
	}
	return out
}

// SecondBrain's `--task-id` continues a task in place: a v1.0 message
// with the task's id in its chat session's context, over HTTP+JSON (not
// waiting, then following the task's stream from the last event it saw)
// and over JSON-RPC (waiting, with --wait); a repeated continuation does
// not add to the task's history.
func TestSecondBrainClientContinuation(t *testing.T) {
	it := newInterop(t, daemontest.Options{})
	base := it.register("researcher@local")
	r := post(t, base+"message:send", sbHeaders, `{"message":`+sbMessage+`,"configuration":{"returnImmediately":true}}`)
	var sent struct {
		Task sbTask `json:"task"`
	}
	if r.status != 200 || json.Unmarshal(r.body, &sent) != nil {
		t.Fatalf("message:send = %d %s", r.status, r.body)
	}
	id := sent.Task.ID
	task, lease := it.lease("researcher@local")
	it.ask(task, lease, mailbox.StatusInputRequired, "Which product line?")

	// Its stream of the task ends at the question.
	asked := sbStream(t, base+"tasks/"+id+":subscribe", "", 0)
	if len(asked) == 0 || !strings.Contains(asked[len(asked)-1].data, "TASK_STATE_INPUT_REQUIRED") || !strings.Contains(asked[len(asked)-1].data, "Which product line?") {
		t.Fatalf("subscribe to the waiting task: %+v; want it to end at the question", asked)
	}

	// sb chat --task-id: the answer, not waiting; the same message again
	// (a retry) is the same task and adds nothing.
	cont := `{"message":{"messageId":"sb-msg-0002","contextId":"chat-session-7","taskId":"` + id + `","role":"ROLE_USER","parts":[{"text":"The mobile app","mediaType":"text/plain"},{"data":{"product":"mobile"},"mediaType":"application/json"}]},"configuration":{"returnImmediately":true}}`
	for range 2 {
		r = post(t, base+"message:send", sbHeaders, cont)
		var got struct {
			Task sbTask `json:"task"`
		}
		if r.status != 200 || json.Unmarshal(r.body, &got) != nil || got.Task.ID != id || got.Task.Status.State != "TASK_STATE_SUBMITTED" || len(got.Task.History) != 3 {
			t.Fatalf("the continuation = %d %s; want task %s submitted again with three turns", r.status, r.body, id)
		}
	}
	// The worker reads the answer: text, and the payload as json.
	task, lease = it.lease("researcher@local")
	if len(task.Turns) != 2 || len(task.Turns[1].Content) != 2 || task.Turns[1].Content[0].Text != "The mobile app" || string(task.Turns[1].Content[1].Value) != `{"product":"mobile"}` {
		t.Fatalf("the next lease's turns %+v; want the answer's text and payload", task.Turns)
	}
	it.ask(task, lease, mailbox.StatusInputRequired, "Since which release?")

	// The stream resumed from the last event it saw replays the turn it
	// missed, to the next question.
	resumed := sbStream(t, base+"tasks/"+id+":subscribe", asked[len(asked)-1].id, 0)
	if len(resumed) < 3 || !strings.Contains(resumed[0].data, "TASK_STATE_SUBMITTED") || !strings.Contains(resumed[len(resumed)-1].data, "Since which release?") {
		t.Fatalf("the resumed stream %+v; want the answer's turn, from submitted to the next question", resumed)
	}

	// sb chat --task-id --wait, over JSON-RPC: answered with the finished
	// task.
	wait := it.worker("researcher@local", mailbox.StatusOK, "4 releases since 2.0")
	rpc := `{"jsonrpc":"2.0","id":"sb-2","method":"SendMessage","params":{"message":{"messageId":"sb-msg-0003","contextId":"chat-session-7","taskId":"` + id + `","role":"ROLE_USER","parts":[{"text":"Since 2.0","mediaType":"text/plain"}]}}}`
	r = post(t, base, map[string]string{"A2A-Version": "1.0"}, rpc)
	wait()
	var rep struct {
		Result struct {
			Task sbTask `json:"task"`
		} `json:"result"`
	}
	if r.status != 200 || json.Unmarshal(r.body, &rep) != nil || rep.Result.Task.ID != id || rep.Result.Task.Status.State != "TASK_STATE_COMPLETED" || len(rep.Result.Task.History) != 5 {
		t.Fatalf("SendMessage with taskId, waiting = %d %s; want the completed task with five turns", r.status, r.body)
	}
}
