package a2a_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/mailbox"
)

// Marie AI's A2A client (seed 001) sends v0.3 JSON-RPC made by pydantic's
// model_dump(by_alias=True) and serialized by Python's json.dumps: camelCase
// keys, every optional field null, a Message without "kind", parts with a
// null metadata, a configuration with everything null but blocking. These
// are those bytes; the answers are read the way its client reads them: the
// JSON-RPC result of a send, and for a stream each data: line json-parsed.

const marieMessage = `{"role": "user", "parts": [{"kind": "text", "text": "Summarize the Q3 report", "metadata": null}], "messageId": "9a1f0c2e-5b7d-4e8a-9c3f-1d2e3f4a5b6c", "taskId": null, "contextId": null, "metadata": null, "extensions": null, "referenceTaskIds": null}`

const marieSend = `{"id": "7f4e2a10-3c5b-4d6e-8f90-a1b2c3d4e5f6", "jsonrpc": "2.0", "method": "message/send", "params": {"configuration": {"acceptedOutputModes": null, "blocking": true, "historyLength": null, "pushNotificationConfig": null, "extensions": null}, "message": ` + marieMessage + `, "metadata": null}}`

const marieStream = `{"id": "0b9c8d7e-6f5a-4b3c-2d1e-0f9e8d7c6b5a", "jsonrpc": "2.0", "method": "message/stream", "params": {"configuration": {"acceptedOutputModes": null, "blocking": true, "historyLength": null, "pushNotificationConfig": null, "extensions": null}, "message": {"role": "user", "parts": [{"kind": "text", "text": "Stream the Q3 summary", "metadata": null}], "messageId": "4c3b2a19-0817-4f6e-9d5c-4b3a29180706", "taskId": null, "contextId": null}, "metadata": null}}`

// marieResult is what Marie's client takes from a non-streaming answer.
func marieResult(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var rep struct {
		Result map[string]any `json:"result"`
		Error  map[string]any `json:"error"`
	}
	if err := json.Unmarshal(body, &rep); err != nil || rep.Error != nil || rep.Result == nil {
		t.Fatalf("answer %s: want a JSON-RPC result (%v)", body, err)
	}
	return rep.Result
}

// marieEvents reads a stream as Marie's client does: every data: line,
// json-parsed; anything else is skipped.
func marieEvents(t *testing.T, body io.Reader) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data:")
		if !ok {
			continue
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(strings.TrimSpace(line)), &ev); err != nil {
			t.Fatalf("data line %q: %v", line, err)
		}
		out = append(out, ev)
	}
	return out
}

func TestMarieAIClientReplay(t *testing.T) {
	it := newInterop(t, daemontest.Options{})
	base := it.register("marie@local")

	// message/send, blocking: answered once the worker has answered. The
	// worker gets the message as Marie sent it.
	type answer struct {
		status int
		body   []byte
		err    error
	}
	answered := make(chan answer, 1)
	go func() {
		resp, err := http.Post(base, "application/json", strings.NewReader(marieSend))
		if err != nil {
			answered <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		answered <- answer{resp.StatusCode, b, err}
	}()
	leased, lease := it.lease("marie@local")
	var want bytes.Buffer
	if err := json.Compact(&want, []byte(marieMessage)); err != nil {
		t.Fatal(err)
	}
	if leased.A2A == nil || !bytes.Equal(leased.A2A.Message, want.Bytes()) || leased.IntentText != "Summarize the Q3 report" {
		t.Fatalf("leased %+v; want the message as sent, %s", leased, want.Bytes())
	}
	it.answer(leased, lease, mailbox.StatusOK, "Q3: revenue up 4%")
	a := <-answered
	if a.err != nil || a.status != 200 {
		t.Fatalf("send: %d %s %v", a.status, a.body, a.err)
	}
	task := marieResult(t, a.body)
	status, _ := task["status"].(map[string]any)
	if task["kind"] != "task" || status["state"] != "completed" || task["contextId"] == "" || task["id"] != leased.ID {
		t.Fatalf("send answered %v, want the completed task %s", task, leased.ID)
	}
	arts, _ := task["artifacts"].([]any)
	if len(arts) != 1 || !strings.Contains(string(mustJSON(t, arts[0])), `"text":"Q3: revenue up 4%"`) {
		t.Fatalf("artifacts %v, want the worker's text", task["artifacts"])
	}
	id := leased.ID

	// What was stored reads back: tasks/get (Marie's {id, historyLength:
	// null}) shows the message as sent.
	r := post(t, base, nil, `{"id": "g1", "jsonrpc": "2.0", "method": "tasks/get", "params": {"id": "`+id+`", "historyLength": null, "metadata": null}}`)
	got := marieResult(t, r.body)
	hist, _ := got["history"].([]any)
	if len(hist) != 1 {
		t.Fatalf("tasks/get history %v, want the message", got["history"])
	}
	h, _ := hist[0].(map[string]any)
	parts, _ := h["parts"].([]any)
	if h["messageId"] != "9a1f0c2e-5b7d-4e8a-9c3f-1d2e3f4a5b6c" || h["role"] != "user" || len(parts) != 1 ||
		parts[0].(map[string]any)["text"] != "Summarize the Q3 report" {
		t.Fatalf("tasks/get history %v, want Marie's message as sent", hist[0])
	}

	// message/stream: every data: line parses, and the last one is the
	// final completed status.
	wait := it.worker("marie@local", mailbox.StatusOK, "streamed summary")
	resp := openStream(t, base, marieStream)
	events := marieEvents(t, resp.Body)
	resp.Body.Close()
	wait()
	if len(events) < 3 {
		t.Fatalf("stream events %v, want the task, its changes and the final status", events)
	}
	for _, ev := range events {
		if ev["error"] != nil || ev["result"] == nil || ev["id"] != "0b9c8d7e-6f5a-4b3c-2d1e-0f9e8d7c6b5a" {
			t.Fatalf("stream event %v, want a result under the request's id", ev)
		}
	}
	first, _ := events[0]["result"].(map[string]any)
	last, _ := events[len(events)-1]["result"].(map[string]any)
	lastStatus, _ := last["status"].(map[string]any)
	if first["kind"] != "task" || last["kind"] != "status-update" || last["final"] != true || lastStatus["state"] != "completed" {
		t.Fatalf("stream began %v and ended %v; want the task, then a final completed status", first, last)
	}

	// tasks/cancel of the finished task: Marie maps -32002 to its
	// TaskNotCancelableError.
	r = post(t, base, nil, `{"id": "c1", "jsonrpc": "2.0", "method": "tasks/cancel", "params": {"id": "`+id+`", "metadata": null}}`)
	var rep rpcReply
	if json.Unmarshal(r.body, &rep) != nil || rep.Error == nil || rep.Error.Code != -32002 {
		t.Fatalf("cancel of a finished task: %s; want -32002", r.body)
	}

	// A stream refused before it begins still reads as a stream: Marie's
	// client finds the error on a data: line instead of nothing.
	before := it.seq()
	bad := strings.Replace(marieStream, `"pushNotificationConfig": null`, `"pushNotificationConfig": {"url": "ftp://marie.example/hook", "token": null, "id": null, "authentication": null}`, 1)
	req, err := http.NewRequestWithContext(t.Context(), "POST", base, strings.NewReader(bad))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	events = marieEvents(t, resp.Body)
	resp.Body.Close()
	if len(events) != 1 || events[0]["error"] == nil || events[0]["error"].(map[string]any)["code"] != float64(-32602) {
		t.Fatalf("a refused stream gave %v; want one data: line holding error -32602", events)
	}
	if after := it.seq(); after != before {
		t.Fatalf("the refused stream changed the mailbox: seq %d -> %d", before, after)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Keys the edge does not know (a later minor version's, a vendor's) are
// accepted, as the SDK servers accept them, and kept: the worker reads the
// message exactly as it was sent.
func TestUnknownKeysAreAcceptedAndKept(t *testing.T) {
	it := newInterop(t, daemontest.Options{})
	base := it.register("coder@local")
	v1 := map[string]string{"A2A-Version": "1.0"}
	msgs := []struct {
		url     string
		headers map[string]string
		wrap    func(msg string) string
		msg     string
	}{
		{base, nil, func(m string) string {
			return `{"jsonrpc":"2.0","id":1,"method":"message/send","futureTop":1,"params":{"message":` + m + `,"configuration":{"blocking":false,"futureCfg":"x"},"futureParam":[1]}}`
		}, `{"kind":"message","role":"user","messageId":"u1","parts":[{"kind":"text","text":"hi","x-vendor":{"a":1}}],"x-trace":"abc"}`},
		{base, v1, func(m string) string {
			return `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":` + m + `,"configuration":{"returnImmediately":true},"tenant":""}}`
		}, `{"role":"ROLE_USER","messageId":"u2","parts":[{"text":"hi","x-vendor":true}],"x-trace":"def"}`},
		{base + "message:send", v1, func(m string) string {
			return `{"message":` + m + `,"configuration":{"returnImmediately":true,"futureCfg":{}}}`
		}, `{"role":"ROLE_USER","messageId":"u3","parts":[{"text":"hi"}],"x-trace":"ghi"}`},
	}
	for _, m := range msgs {
		r := post(t, m.url, m.headers, m.wrap(m.msg))
		if r.status != 200 || bytes.Contains(r.body, []byte(`"error"`)) {
			t.Fatalf("send with unknown keys: %d %s", r.status, r.body)
		}
	}
	q, err := it.native.Queue(it.ctx, mailbox.QueueFilter{})
	if err != nil || len(q.Tasks) != len(msgs) {
		t.Fatalf("queue %+v %v: want %d tasks", q, err, len(msgs))
	}
	stored := map[string]string{}
	for _, rec := range q.Tasks {
		stored[rec.Task.A2A.MessageID] = string(rec.Task.A2A.Message)
	}
	for i, m := range msgs {
		id := "u" + string(rune('1'+i))
		if stored[id] != m.msg {
			t.Errorf("message %s stored as %s, want %s", id, stored[id], m.msg)
		}
	}
}

// marieContinue is send_message(content, task_id=...) as Marie's client
// sends it: the same pydantic dump, with the task's id and no context.
func marieContinue(requestID, messageID, taskID, text, method string) string {
	return `{"id": "` + requestID + `", "jsonrpc": "2.0", "method": "` + method + `", "params": {"configuration": {"acceptedOutputModes": null, "blocking": true, "historyLength": null, "pushNotificationConfig": null, "extensions": null}, "message": {"role": "user", "parts": [{"kind": "text", "text": ` + strconv.Quote(text) + `, "metadata": null}], "messageId": "` + messageID + `", "taskId": "` + taskID + `", "contextId": null, "metadata": null, "extensions": null, "referenceTaskIds": null}, "metadata": null}}`
}

// Marie's multi-turn: its blocking send answered at the worker's
// question, send_message(task_id=...) answering it (blocking), and
// stream_message(task_id=...) answering the next question on a stream,
// each read as its client reads it.
func TestMarieAIClientContinuation(t *testing.T) {
	it := newInterop(t, daemontest.Options{})
	base := it.register("marie@local")
	wait := it.worker("marie@local", mailbox.StatusInputRequired, "Which quarter?")
	r := post(t, base, nil, marieSend)
	wait()
	asked := marieResult(t, r.body)
	status, _ := asked["status"].(map[string]any)
	msg, _ := status["message"].(map[string]any)
	if status["state"] != "input-required" || !strings.Contains(string(mustJSON(t, msg)), `"text":"Which quarter?"`) {
		t.Fatalf("send answered %v; want input-required with the question", asked)
	}
	id, _ := asked["id"].(string)

	answered := make(chan edgeReply, 1)
	go func() {
		answered <- post(t, base, nil, marieContinue("7f4e2a10-0000-4d6e-8f90-a1b2c3d4e5f6", "5d2c1b0a-9f8e-4d7c-8b6a-5f4e3d2c1b0a", id, "Q3, please", "message/send"))
	}()
	task, lease := it.lease("marie@local")
	if task.ID != id || len(task.Turns) != 2 || task.Turns[1].Content[0].Text != "Q3, please" {
		t.Fatalf("the worker leased %s with turns %+v; want the answer", task.ID, task.Turns)
	}
	it.ask(task, lease, mailbox.StatusInputRequired, "Revenue or costs?")
	a := <-answered
	again := marieResult(t, a.body)
	if st, _ := again["status"].(map[string]any); a.status != 200 || again["id"] != id || st["state"] != "input-required" {
		t.Fatalf("send_message(task_id=...) answered %d %v; want the task at its next question", a.status, again)
	}
	hist, _ := again["history"].([]any)
	if len(hist) != 4 {
		t.Fatalf("history %v; want the message, the question, the answer, the next question", again["history"])
	}

	// stream_message(task_id=...): every data: line parses, the stream
	// ends on the final completed status.
	wait = it.worker("marie@local", mailbox.StatusOK, "Q3 revenue up 4%")
	resp := openStream(t, base, marieContinue("0b9c8d7e-0000-4b3c-2d1e-0f9e8d7c6b5a", "6e3d2c1b-0a9f-4e8d-7c6b-5a4f3e2d1c0b", id, "Revenue", "message/stream"))
	events := marieEvents(t, resp.Body)
	resp.Body.Close()
	wait()
	if len(events) < 3 {
		t.Fatalf("stream events %v, want the task, its changes and the final status", events)
	}
	first, _ := events[0]["result"].(map[string]any)
	last, _ := events[len(events)-1]["result"].(map[string]any)
	lastStatus, _ := last["status"].(map[string]any)
	if first["kind"] != "task" || first["id"] != id || last["final"] != true || lastStatus["state"] != "completed" {
		t.Fatalf("the answer's stream began %v and ended %v; want task %s, then a final completed status", first, last, id)
	}
}
