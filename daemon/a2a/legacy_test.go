package a2a_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/mailbox"
)

// gmf_forge_ai_orchestration's A2AClient (seed 004) speaks the pre-0.2
// dialect. These tests send its exact requests and read the answers
// exactly as its _parse_response does; a worker leases and answers with
// the native API.

// gmfEndpoint is the URL gmf posts to: its endpoint_url with trailing
// slashes cut (rstrip("/")) and "/rpc" appended.
func gmfEndpoint(endpointURL string) string { return strings.TrimRight(endpointURL, "/") + "/rpc" }

// gmfMessage is A2AMessage(parts=[A2APart(type="text", text=task)],
// metadata=context).model_dump(): role defaulted, every part's text and
// data present, data null.
func gmfMessage(text string, context map[string]any) string {
	t, _ := json.Marshal(text)
	c, _ := json.Marshal(context)
	return `{"role": "user", "parts": [{"type": "text", "text": ` + string(t) + `, "data": null}], "metadata": ` + string(c) + `}`
}

// gmfSend is the JsonRpcRequest gmf posts for tasks/send.
func gmfSend(requestID, taskID, message string) string {
	return `{"jsonrpc": "2.0", "id": "` + requestID + `", "method": "tasks/send", "params": {"id": "` + taskID + `", "message": ` + message + `}}`
}

// gmfContext is what an orchestrator forwards as message.metadata.
var gmfContext = map[string]any{"user_assertion": "eyJhbGciOiJSUzI1NiJ9.e30.sig", "obo_token": nil, "locale": "en-US", "language": "en", "session_id": "sess-42"}

// legacyPost posts body to url as httpx does (json=..., the client's
// headers) and returns the status and the body.
func legacyPost(t *testing.T, url string, headers map[string]string, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// gmfResult is the AgentResult gmf's _parse_response builds.
type gmfResult struct {
	output   string
	success  bool
	err      *string // error=task.status.message when not completed
	metadata map[string]any
}

// gmfRPCError is gmf's A2AClientError for a JSON-RPC error answer.
type gmfRPCError struct {
	code int
	msg  string
}

func (e *gmfRPCError) Error() string { return fmt.Sprintf("A2A JSON-RPC error %d: %s", e.code, e.msg) }

// gmfParse is A2AClient._call_remote's status check and _parse_response,
// with the pydantic models' validation (JsonRpcResponse, A2ATask,
// A2ATaskStatus.message Optional[str], A2APart.data Optional[dict], id a
// str, metadata a dict; unknown fields ignored).
func gmfParse(status int, body []byte) (gmfResult, error) {
	if status != 200 {
		return gmfResult{}, fmt.Errorf("Remote agent returned HTTP %d: %.200s", status, body)
	}
	var env map[string]any
	if err := json.Unmarshal(body, &env); err != nil {
		return gmfResult{}, fmt.Errorf("Remote agent returned non-JSON body: %.200s", body)
	}
	if e, ok := env["error"]; ok {
		eo, ok := e.(map[string]any)
		code, okc := eo["code"].(float64)
		msg, okm := eo["message"].(string)
		if _, idOK := env["id"].(string); !ok || !okc || !okm || (env["id"] != nil && !idOK) {
			return gmfResult{}, fmt.Errorf("JsonRpcErrorResponse validation: %s", body)
		}
		return gmfResult{}, &gmfRPCError{code: int(code), msg: msg}
	}
	malformed := func(what string) (gmfResult, error) {
		return gmfResult{}, fmt.Errorf("Malformed A2A response: %s in %s", what, body)
	}
	if _, ok := env["id"].(string); !ok {
		return malformed("id is not a str")
	}
	task, ok := env["result"].(map[string]any)
	if !ok {
		return malformed("result is not an A2ATask")
	}
	if _, ok := task["id"].(string); !ok {
		return malformed("result.id is not a str")
	}
	st, ok := task["status"].(map[string]any)
	if !ok {
		return malformed("result.status is not an A2ATaskStatus")
	}
	state, ok := st["state"].(string)
	if !ok {
		return malformed("result.status.state is not a str")
	}
	var statusMsg *string
	switch m := st["message"].(type) {
	case nil:
	case string:
		statusMsg = &m
	default:
		return malformed("result.status.message is not Optional[str]")
	}
	var output string
	if arts, present := task["artifacts"]; present {
		list, ok := arts.([]any)
		if !ok {
			return malformed("result.artifacts is not a list")
		}
		for _, a := range list {
			ao, ok := a.(map[string]any)
			if !ok {
				return malformed("an artifact is not an A2AArtifact")
			}
			if n, present := ao["name"]; present {
				if _, ok := n.(string); !ok {
					return malformed("artifact.name is not a str")
				}
			}
			parts, _ := ao["parts"].([]any)
			if _, present := ao["parts"]; present && parts == nil {
				return malformed("artifact.parts is not a list")
			}
			for _, p := range parts {
				po, ok := p.(map[string]any)
				if !ok {
					return malformed("a part is not an A2APart")
				}
				typ := "text"
				if v, present := po["type"]; present {
					if typ, ok = v.(string); !ok {
						return malformed("part.type is not a str")
					}
				}
				if v := po["text"]; v != nil {
					if _, ok := v.(string); !ok {
						return malformed("part.text is not Optional[str]")
					}
				}
				if v := po["data"]; v != nil {
					if _, ok := v.(map[string]any); !ok {
						return malformed("part.data is not Optional[Dict]")
					}
				}
				if typ == "text" && output == "" {
					output, _ = po["text"].(string)
				}
			}
		}
	}
	meta := map[string]any{}
	if v, present := task["metadata"]; present {
		m, ok := v.(map[string]any)
		if !ok {
			return malformed("result.metadata is not a dict")
		}
		meta = m
	}
	if _, ok := meta["steps"]; ok {
		return malformed("metadata.steps, which the daemon never sends")
	}
	meta["a2a_task_id"] = task["id"]
	r := gmfResult{output: output, success: state == "completed", metadata: meta}
	if !r.success {
		r.err = statusMsg
	}
	return r, nil
}

// gmfCard is AgentCard.model_validate of what GET .../.well-known/agent.json
// answers: name, description and url required strings, version a string,
// skills each with id, name and description.
func gmfCard(t *testing.T, url string) map[string]any {
	t.Helper()
	status, body := legacyGet(t, url)
	var c map[string]any
	if status != 200 || json.Unmarshal(body, &c) != nil {
		t.Fatalf("card: %d %s", status, body)
	}
	for _, k := range []string{"name", "description", "url", "version"} {
		if _, ok := c[k].(string); !ok {
			t.Fatalf("card.%s = %v, want a string (gmf's AgentCard)", k, c[k])
		}
	}
	skills, _ := c["skills"].([]any)
	for i, s := range skills {
		so, _ := s.(map[string]any)
		for _, k := range []string{"id", "name", "description"} {
			if _, ok := so[k].(string); !ok {
				t.Fatalf("card.skills[%d].%s = %v, want a string (gmf's AgentSkill)", i, k, so[k])
			}
		}
	}
	return c
}

func legacyGet(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(mustRequest(t, "GET", url))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// sendInBackground posts a blocking tasks/send from another goroutine;
// the func it returns waits for the answer.
func sendInBackground(t *testing.T, url string, headers map[string]string, body string) func() (int, []byte) {
	type answer struct {
		status int
		body   []byte
		err    error
	}
	c := make(chan answer, 1)
	go func() {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
		if err != nil {
			c <- answer{err: err}
			return
		}
		req.Header.Set("Content-Type", "application/json")
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			c <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		c <- answer{resp.StatusCode, b, err}
	}()
	return func() (int, []byte) {
		t.Helper()
		a := <-c
		if a.err != nil {
			t.Fatalf("tasks/send: %v", a.err)
		}
		return a.status, a.body
	}
}

func mailroomTaskID(t *testing.T, r gmfResult) string {
	t.Helper()
	mr, _ := r.metadata["mailroom"].(map[string]any)
	id, _ := mr["task_id"].(string)
	if id == "" {
		t.Fatalf("metadata %v: no mailroom.task_id", r.metadata)
	}
	return id
}

func compactJSON(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// The whole of gmf's path: discovery, tasks/send from the card's url,
// a worker's result, the answer parsed as gmf parses it; a retry is the
// same task; the task's A2A origin reads back exactly from the lease, the
// event stream, a restart and a compaction.
func TestGmfForgeClientReplay(t *testing.T) {
	it := newInterop(t, daemontest.Options{})
	it.register("coder@local")
	configured := it.base + "/agents/coder@local" // as an orchestrator is configured

	// A2AClient.fetch_agent_card(base_url).
	card := gmfCard(t, strings.TrimRight(configured, "/")+"/.well-known/agent.json")
	if card["name"] != "Coder" || card["description"] != "writes code" {
		t.Fatalf("card %v", card)
	}
	// A2AClient(endpoint_url=card["url"]) and A2AClient(endpoint_url=configured)
	// post to the same URL.
	endpoint := gmfEndpoint(card["url"].(string))
	if endpoint != gmfEndpoint(configured) || endpoint != it.base+"/agents/coder@local/rpc" {
		t.Fatalf("gmf posts to %s from the card and %s as configured, want both %s/agents/coder@local/rpc", endpoint, gmfEndpoint(configured), it.base)
	}

	const requestID, taskID = "0b9a3c52-2f64-4e8e-a7a5-1d1f0b0c7a01", "7d7c6f0e-4a8e-4d8a-9a0c-3f7a2b1e9c55"
	msg := gmfMessage("Find recent AI papers", gmfContext)
	before := it.seq()
	wait := sendInBackground(t, endpoint, nil, gmfSend(requestID, taskID, msg))
	task, lease := it.lease("coder@local")
	wantOrigin := mailbox.A2AOrigin{Version: "legacy", MessageID: taskID, Message: json.RawMessage(compactJSON(t, msg))}
	if task.IntentText != "Find recent AI papers" || task.A2A == nil || task.A2A.Version != wantOrigin.Version ||
		task.A2A.MessageID != wantOrigin.MessageID || string(task.A2A.Message) != string(wantOrigin.Message) || task.A2A.ContextID == "" {
		t.Fatalf("leased task %+v (a2a %+v), want intent_text and the message verbatim %s", task, task.A2A, wantOrigin.Message)
	}
	wantOrigin.ContextID = task.A2A.ContextID
	it.answer(task, lease, mailbox.StatusOK, "3 papers found")
	res, err := gmfParse(wait())
	if err != nil {
		t.Fatal(err)
	}
	if !res.success || res.output != "3 papers found" || res.err != nil || res.metadata["a2a_task_id"] != taskID || mailroomTaskID(t, res) != task.ID {
		t.Fatalf("gmf read %+v, want success with the worker's text, a2a_task_id %s and mailroom.task_id %s", res, taskID, task.ID)
	}

	// A retry (gmf's RETRY_SENTINEL path resends with the same ids when
	// a caller reuses them) is the same task, answered at once, and queues
	// nothing.
	seq := it.seq()
	res2, err := gmfParse(legacyPost(t, endpoint, nil, gmfSend("another-request", taskID, msg)))
	if err != nil || !res2.success || res2.output != "3 papers found" || mailroomTaskID(t, res2) != task.ID {
		t.Fatalf("retry: %+v %v, want the same finished task %s", res2, err, task.ID)
	}
	if it.seq() != seq {
		t.Fatalf("a retry moved the log from %d to %d", seq, it.seq())
	}

	// The origin reads back exactly: from the event stream, ...
	sub := it.native.Subscribe(it.ctx, before, nil)
	found := false
	for ev := range sub {
		if ev.Type == mailbox.EventTaskSent && ev.Task != nil && ev.Task.ID == task.ID {
			found = true
			if got := *ev.Task.A2A; got.Version != wantOrigin.Version || got.MessageID != wantOrigin.MessageID || got.ContextID != wantOrigin.ContextID || string(got.Message) != string(wantOrigin.Message) {
				t.Fatalf("the stream's task_sent carries %+v, want %+v", got, wantOrigin)
			}
			break
		}
	}
	if !found {
		t.Fatalf("the event stream ended without the task_sent of %s", task.ID)
	}
	// ... and after a restart (replay) and a compaction (snapshot).
	check := func(when string) {
		t.Helper()
		for _, rec := range it.d.State(t).Tasks {
			if rec.Task.ID != task.ID {
				continue
			}
			got := rec.Task.A2A
			if got == nil || got.Version != wantOrigin.Version || got.MessageID != wantOrigin.MessageID || got.ContextID != wantOrigin.ContextID || string(got.Message) != string(wantOrigin.Message) {
				t.Fatalf("%s: the task's origin is %+v, want %+v", when, got, wantOrigin)
			}
			// And tasks/get by gmf's id reads the same task.
			r, err := gmfParse(legacyPost(t, endpoint, nil, `{"jsonrpc":"2.0","id":"g","method":"tasks/get","params":{"id":"`+taskID+`"}}`))
			if err != nil || !r.success || r.output != "3 papers found" || mailroomTaskID(t, r) != task.ID {
				t.Fatalf("%s: tasks/get %+v %v", when, r, err)
			}
			return
		}
		t.Fatalf("%s: task %s is gone", when, task.ID)
	}
	it.d.Restart()
	check("after a restart")
	if _, err := it.native.Compact(it.ctx); err != nil {
		t.Fatal(err)
	}
	it.d.Restart()
	check("after a compaction and a restart")

	// The other bindings read the legacy task too, its message as history.
	st, body := legacyPost(t, it.base+"/agents/coder@local/", nil, `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"`+task.ID+`"}}`)
	if st != 200 || !strings.Contains(string(body), `"state":"completed"`) || !strings.Contains(string(body), `"messageId":"`+taskID+`"`) {
		t.Fatalf("v0.3 tasks/get of the legacy task: %d %s", st, body)
	}
}

// An error result is a failed task whose status.message gmf reports as
// its error; a data result is a data part with an object.
func TestLegacyErrorAndDataResults(t *testing.T) {
	it := newInterop(t, daemontest.Options{})
	it.register("coder@local")
	endpoint := gmfEndpoint(it.base + "/agents/coder@local/")

	wait := sendInBackground(t, endpoint, nil, gmfSend("r1", "task-err", gmfMessage("search", gmfContext)))
	task, lease := it.lease("coder@local")
	it.answer(task, lease, mailbox.StatusError, "the index is unavailable")
	res, err := gmfParse(wait())
	if err != nil || res.success || res.err == nil || *res.err != "the index is unavailable" || res.output != "" {
		t.Fatalf("error result read as %+v %v, want failure with the worker's message", res, err)
	}
	st, body := legacyPost(t, endpoint, nil, `{"jsonrpc":"2.0","id":"g","method":"tasks/get","params":{"id":"task-err"}}`)
	if !strings.Contains(string(body), `"state":"failed"`) {
		t.Fatalf("tasks/get of a failed task: %d %s", st, body)
	}

	wait = sendInBackground(t, endpoint, nil, gmfSend("r2", "task-data", gmfMessage("count", gmfContext)))
	task, lease = it.lease("coder@local")
	if err := it.native.PostResult(it.ctx, mailbox.Result{TaskID: task.ID, Status: mailbox.StatusOK, LeaseID: lease.LeaseID,
		Content: []mailbox.Content{{Type: mailbox.ContentJSON, Value: json.RawMessage(`42`)}, {Type: mailbox.ContentText, Text: "forty-two"}}}); err != nil {
		t.Fatal(err)
	}
	st, body = wait()
	res, err = gmfParse(st, body)
	var rep struct {
		Result struct {
			Artifacts []struct {
				Parts []map[string]any `json:"parts"`
			} `json:"artifacts"`
		} `json:"result"`
	}
	if err != nil || !res.success || res.output != "forty-two" || json.Unmarshal(body, &rep) != nil || len(rep.Result.Artifacts) != 1 || len(rep.Result.Artifacts[0].Parts) != 2 {
		t.Fatalf("data result: %s -> %+v %v", body, res, err)
	}
	if p := rep.Result.Artifacts[0].Parts[0]; p["type"] != "data" || p["text"] != nil || fmt.Sprint(p["data"]) != "map[value:42]" {
		t.Fatalf("the json content's part is %v, want {type: data, text: null, data: {value: 42}}", p)
	}
}

// A task that does not finish within the blocking timeout is answered as
// it stands, not completed, with a status message saying so; tasks/get
// follows it and tasks/cancel cancels it, once.
func TestLegacyTimeoutGetCancel(t *testing.T) {
	it := newInterop(t, daemontest.Options{Config: func(c *config.Config) { c.A2ABlockingTimeout = 100 * time.Millisecond }})
	it.register("coder@local")
	endpoint := gmfEndpoint(it.base + "/agents/coder@local")
	get := func() (gmfResult, []byte) {
		t.Helper()
		st, body := legacyPost(t, endpoint, nil, `{"jsonrpc":"2.0","id":"g","method":"tasks/get","params":{"id":"slow-1"}}`)
		r, err := gmfParse(st, body)
		if err != nil {
			t.Fatal(err)
		}
		return r, body
	}

	st, body := legacyPost(t, endpoint, nil, gmfSend("r1", "slow-1", gmfMessage("take your time", gmfContext)))
	res, err := gmfParse(st, body)
	if err != nil || res.success || res.err == nil || !strings.Contains(*res.err, "blocking timeout") || !strings.Contains(string(body), `"state":"submitted"`) {
		t.Fatalf("unfinished send: %s -> %+v %v, want submitted with a message naming the timeout", body, res, err)
	}
	if r, body := get(); r.success || !strings.Contains(string(body), `"state":"submitted"`) {
		t.Fatalf("tasks/get of a queued task: %s", body)
	}
	task, _ := it.lease("coder@local")
	if r, body := get(); r.success || r.err != nil || !strings.Contains(string(body), `"state":"working"`) || mailroomTaskID(t, r) != task.ID {
		t.Fatalf("tasks/get of a leased task: %s", body)
	}
	st, body = legacyPost(t, endpoint, nil, `{"jsonrpc":"2.0","id":"c","method":"tasks/cancel","params":{"id":"slow-1"}}`)
	res, err = gmfParse(st, body)
	if err != nil || res.success || res.err == nil || !strings.Contains(*res.err, "canceled by") || !strings.Contains(string(body), `"state":"canceled"`) {
		t.Fatalf("tasks/cancel: %s -> %+v %v", body, res, err)
	}
	if r, body := get(); r.success || !strings.Contains(string(body), `"state":"canceled"`) {
		t.Fatalf("tasks/get of a canceled task: %s", body)
	}
	seq := it.seq()
	_, err = gmfParse(legacyPost(t, endpoint, nil, `{"jsonrpc":"2.0","id":"c","method":"tasks/cancel","params":{"id":"slow-1"}}`))
	if e, ok := err.(*gmfRPCError); !ok || e.code != -32002 || !strings.Contains(e.msg, "already canceled") {
		t.Fatalf("canceling again: %v, want TaskNotCancelable", err)
	}
	if it.seq() != seq {
		t.Fatal("a refused cancel changed the log")
	}
}

// tasks/get and tasks/cancel under /agents/{agent}/rpc reach only the
// agent's A2A tasks: another agent's, or a native task, is TaskNotFound,
// by gmf's id or by the mailbox's, and nothing changes.
func TestLegacyScopesToTheAgent(t *testing.T) {
	it := newInterop(t, daemontest.Options{Config: func(c *config.Config) { c.A2ABlockingTimeout = 50 * time.Millisecond }})
	it.register("coder@local")
	it.register("other@local")
	coder, other := gmfEndpoint(it.base+"/agents/coder@local"), gmfEndpoint(it.base+"/agents/other@local")
	res, err := gmfParse(legacyPost(t, coder, nil, gmfSend("r1", "scoped-1", gmfMessage("hi", gmfContext))))
	if err != nil {
		t.Fatal(err)
	}
	mailboxID := mailroomTaskID(t, res)
	native, err := it.native.Send(it.ctx, mailbox.Task{Sender: "ops@local", Recipient: "coder@local", IntentText: "native"})
	if err != nil {
		t.Fatal(err)
	}
	seq := it.seq()
	for _, tc := range []struct{ endpoint, method, id string }{
		{other, "tasks/get", "scoped-1"},
		{other, "tasks/get", mailboxID},
		{other, "tasks/cancel", "scoped-1"},
		{other, "tasks/cancel", mailboxID},
		{coder, "tasks/get", native.TaskID},
		{coder, "tasks/cancel", native.TaskID},
		{coder, "tasks/get", "never-sent"},
	} {
		_, err := gmfParse(legacyPost(t, tc.endpoint, nil, `{"jsonrpc":"2.0","id":"x","method":"`+tc.method+`","params":{"id":"`+tc.id+`"}}`))
		if e, ok := err.(*gmfRPCError); !ok || e.code != -32001 || !strings.Contains(e.msg, tc.id) {
			t.Errorf("%s %s at %s: %v, want TaskNotFound naming the id", tc.method, tc.id, tc.endpoint, err)
		}
	}
	if it.seq() != seq {
		t.Fatalf("refused calls moved the log from %d to %d", seq, it.seq())
	}
	// The agent's own endpoint reaches it by either id.
	for _, id := range []string{"scoped-1", mailboxID} {
		r, err := gmfParse(legacyPost(t, coder, nil, `{"jsonrpc":"2.0","id":"x","method":"tasks/get","params":{"id":"`+id+`"}}`))
		if err != nil || r.metadata["a2a_task_id"] != "scoped-1" || mailroomTaskID(t, r) != mailboxID {
			t.Fatalf("tasks/get %s at its agent: %+v %v", id, r, err)
		}
	}
}

// A malformed request is refused with a JSON-RPC error naming the field,
// the value and what was expected, never a 5xx, and changes nothing.
func TestLegacyRefusals(t *testing.T) {
	it := newInterop(t, daemontest.Options{})
	it.register("coder@local")
	endpoint := gmfEndpoint(it.base + "/agents/coder@local")
	send := func(params string) string {
		return `{"jsonrpc":"2.0","id":"r","method":"tasks/send","params":` + params + `}`
	}
	msg := func(parts string) string {
		return send(`{"id":"t","message":{"role":"user","parts":` + parts + `,"metadata":{}}}`)
	}
	seq := it.seq()
	for _, tc := range []struct {
		name, body string
		code       int
		want       string // in the message
		field      string // error.data.field, "" for none
	}{
		{"not JSON", `{`, -32700, "not valid JSON", ""},
		{"a batch", `[` + msg(`[{"type":"text","text":"hi","data":null}]`) + `]`, -32600, "batches are not supported", ""},
		{"no jsonrpc", `{"id":"r","method":"tasks/send","params":{}}`, -32600, `jsonrpc: missing, expected "2.0"`, "jsonrpc"},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":"r","method":"tasks/send","params":{}}`, -32600, `jsonrpc: got "1.0", expected "2.0"`, "jsonrpc"},
		{"an object id", `{"jsonrpc":"2.0","id":{},"method":"tasks/send","params":{}}`, -32600, "id: got {}, expected a string, a number or null", "id"},
		{"no method", `{"jsonrpc":"2.0","id":"r","params":{}}`, -32600, "method: missing", "method"},
		{"message/send", `{"jsonrpc":"2.0","id":"r","method":"message/send","params":{}}`, -32601, `method: got "message/send", expected tasks/send, tasks/get or tasks/cancel`, "method"},
		{"params an array", `{"jsonrpc":"2.0","id":"r","method":"tasks/send","params":[1]}`, -32602, "params: got [1], expected an object", "params"},
		{"no params", `{"jsonrpc":"2.0","id":"r","method":"tasks/send"}`, -32602, "params: missing, expected an object", "params"},
		{"no task id", send(`{"message":{"role":"user","parts":[{"type":"text","text":"hi","data":null}]}}`), -32602, "params.id: missing", "params.id"},
		{"a numeric task id", send(`{"id":7,"message":{"role":"user","parts":[{"type":"text","text":"hi","data":null}]}}`), -32602, "params.id: got 7, expected a string", "params.id"},
		{"a blank task id", send(`{"id":" ","message":{"role":"user","parts":[{"type":"text","text":"hi","data":null}]}}`), -32602, `params.id: got " ", expected a non-blank id`, "params.id"},
		{"a long task id", send(`{"id":"` + strings.Repeat("x", 257) + `","message":{"role":"user","parts":[{"type":"text","text":"hi","data":null}]}}`), -32602, "params.id: got 257 bytes, expected at most 256", "params.id"},
		{"an unknown param", send(`{"id":"t","sessionid":"s","message":{"role":"user","parts":[{"type":"text","text":"hi","data":null}]}}`), -32602, "params.sessionid: unknown field", "params.sessionid"},
		{"a push config", send(`{"id":"t","pushNotification":{"url":"http://hook"},"message":{"role":"user","parts":[{"type":"text","text":"hi","data":null}]}}`), -32003, "params.pushNotification: the pre-0.2 dialect takes no push notifications", "params.pushNotification"},
		{"output modes not a list", send(`{"id":"t","acceptedOutputModes":"text","message":{"role":"user","parts":[{"type":"text","text":"hi","data":null}]}}`), -32602, `params.acceptedOutputModes: got "text", expected an array`, "params.acceptedOutputModes"},
		{"an id out of a double's range", `{"jsonrpc":"2.0","id":1.5e400,"method":"tasks/get","params":{"id":"t"}}`, -32600, "id: got 1.5e400, expected a string, or a number within a double's range", "id"},
		{"no message", send(`{"id":"t"}`), -32602, "params.message: missing", "params.message"},
		{"a string message", send(`{"id":"t","message":"hi"}`), -32602, `params.message: got "hi", expected an object`, "params.message"},
		{"a system role", send(`{"id":"t","message":{"role":"system","parts":[{"type":"text","text":"hi","data":null}]}}`), -32602, `params.message.role: got "system", expected "user" or "agent"`, "params.message.role"},
		{"metadata a list", send(`{"id":"t","message":{"role":"user","parts":[{"type":"text","text":"hi","data":null}],"metadata":[]}}`), -32602, "params.message.metadata: got [], expected an object", "params.message.metadata"},
		{"no parts", send(`{"id":"t","message":{"role":"user"}}`), -32602, "params.message.parts: missing", "params.message.parts"},
		{"empty parts", msg(`[]`), -32602, "params.message.parts: got an empty array", "params.message.parts"},
		{"a file part", msg(`[{"type":"file","text":null,"data":null}]`), -32602, `params.message.parts[0].type: got "file", expected "text" or "data"`, "params.message.parts[0].type"},
		{"a part without type", msg(`[{"text":"hi"}]`), -32602, `params.message.parts[0].type: missing`, "params.message.parts[0].type"},
		{"a v0.3 part", msg(`[{"kind":"text","text":"hi"}]`), -32602, "params.message.parts[0].type: missing", "params.message.parts[0].type"},
		{"a null text", msg(`[{"type":"text","text":null,"data":null}]`), -32602, "params.message.parts[0].text: missing, expected a string", "params.message.parts[0].text"},
		{"a numeric text", msg(`[{"type":"text","text":5,"data":null}]`), -32602, "params.message.parts[0].text: got 5, expected a string", "params.message.parts[0].text"},
		{"data in a text part", msg(`[{"type":"text","text":"hi","data":{"a":1}}]`), -32602, `params.message.parts[0].data: got {"a":1}, expected null in a text part`, "params.message.parts[0].data"},
		{"a list as data", msg(`[{"type":"data","text":null,"data":[1]}]`), -32602, "params.message.parts[0].data: got [1], expected an object", "params.message.parts[0].data"},
		{"only blank text", msg(`[{"type":"text","text":"  ","data":null}]`), -32602, "params.message.parts: no text and no data", "params.message.parts"},
		{"a duplicate key", send(`{"id":"t","id":"u","message":{"role":"user","parts":[{"type":"text","text":"hi","data":null}]}}`), -32600, "params.id", ""},
		{"get without id", `{"jsonrpc":"2.0","id":"r","method":"tasks/get","params":{}}`, -32602, "params.id: missing", "params.id"},
		{"get with a bad historyLength", `{"jsonrpc":"2.0","id":"r","method":"tasks/get","params":{"id":"t","historyLength":"all"}}`, -32602, `params.historyLength: got "all", expected a non-negative integer or null`, "params.historyLength"},
		{"cancel with an unknown param", `{"jsonrpc":"2.0","id":"r","method":"tasks/cancel","params":{"id":"t","reason":"x"}}`, -32602, "params.reason: unknown field", "params.reason"},
	} {
		st, body := legacyPost(t, endpoint, nil, tc.body)
		var rep struct {
			Error *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
				Data    *struct {
					Field string `json:"field"`
				} `json:"data"`
			} `json:"error"`
		}
		if st >= 500 || json.Unmarshal(body, &rep) != nil || rep.Error == nil {
			t.Errorf("%s: %d %s, want a JSON-RPC error", tc.name, st, body)
			continue
		}
		field := ""
		if rep.Error.Data != nil {
			field = rep.Error.Data.Field
		}
		if rep.Error.Code != tc.code || !strings.Contains(rep.Error.Message, tc.want) || field != tc.field {
			t.Errorf("%s: %d %s, want code %d with %q naming field %q", tc.name, st, body, tc.code, tc.want, tc.field)
		}
		// gmf reads every one of them as its A2AClientError.
		if _, err := gmfParse(st, body); err == nil {
			t.Errorf("%s: gmf would read %s as a task", tc.name, body)
		}
	}
	// Not a POST: 405, in the JSON-RPC shape.
	if st, body := legacyGet(t, endpoint); st != 405 || !strings.Contains(string(body), "by POST") {
		t.Errorf("GET %s: %d %s, want 405", endpoint, st, body)
	}
	// An agent nobody registered.
	if st, body := legacyPost(t, gmfEndpoint(it.base+"/agents/nobody@local"), nil, msg(`[{"type":"text","text":"hi","data":null}]`)); st != 404 || !strings.Contains(string(body), `"error"`) || !strings.Contains(string(body), `"id":"r"`) {
		t.Errorf("tasks/send to an unregistered agent: %d %s, want 404 with a JSON-RPC error echoing the id", st, body)
	}
	if it.seq() != seq {
		t.Fatalf("refused requests moved the log from %d to %d", seq, it.seq())
	}
}

var legacyTokens = []auth.Token{
	{Principal: "ops@local", Token: "tok-admin", Caps: []string{auth.CapAdmin}},
	{Principal: "alice@local", Token: "tok-alice", Caps: []string{auth.CapSendPrefix + "coder@local"}},
	{Principal: "bob@local", Token: "tok-bob", Caps: []string{auth.CapSendPrefix + "coder@local"}},
	{Principal: "eve@local", Token: "tok-eve", Caps: []string{auth.CapSendPrefix + "other@local"}},
}

// With tokens the binding asks what the rest of the edge asks: a bearer
// token (gmf sends it among its headers), a2a.send.<agent> to send, and
// the caller's own tasks (or a2a.admin) to read or cancel; the card stays
// public.
func TestLegacyWithTokens(t *testing.T) {
	it := newInterop(t, daemontest.Options{Tokens: legacyTokens, Config: func(c *config.Config) { c.A2ABlockingTimeout = 50 * time.Millisecond }})
	it.register("coder@local")
	configured := it.base + "/agents/coder@local/"
	card := gmfCard(t, strings.TrimRight(configured, "/")+"/.well-known/agent.json")
	endpoint := gmfEndpoint(card["url"].(string))
	as := func(tok string) map[string]string {
		if tok == "" {
			return nil
		}
		return map[string]string{"Authorization": "Bearer " + tok}
	}
	body := gmfSend("r1", "tok-task", gmfMessage("hi", map[string]any{"mailroom.sender": "ops@local"}))
	seq := it.seq()
	for _, tc := range []struct {
		tok    string
		status int
		want   string
	}{
		{"", 401, "token"},
		{"nope", 401, "token"},
		{"tok-eve", 403, "a2a.send.coder@local"},
	} {
		st, b := legacyPost(t, endpoint, as(tc.tok), body)
		if st != tc.status || !strings.Contains(string(b), `"error"`) || !strings.Contains(string(b), tc.want) || !strings.Contains(string(b), `"id":"r1"`) {
			t.Errorf("tasks/send with token %q: %d %s, want %d naming %s, echoing the id", tc.tok, st, b, tc.status, tc.want)
		}
	}
	if it.seq() != seq {
		t.Fatal("refused sends changed the log")
	}
	res, err := gmfParse(legacyPost(t, endpoint, as("tok-alice"), body))
	if err != nil {
		t.Fatal(err)
	}
	mailboxID := mailroomTaskID(t, res)
	if task, _ := it.lease("coder@local"); task.ID != mailboxID || task.Sender != "alice@local" {
		t.Fatalf("leased %s from %q, want %s from the token's principal alice@local, whatever the metadata says", task.ID, task.Sender, mailboxID)
	}
	get := func(tok, id string) (gmfResult, error) {
		return gmfParse(legacyPost(t, endpoint, as(tok), `{"jsonrpc":"2.0","id":"g","method":"tasks/get","params":{"id":"`+id+`"}}`))
	}
	if r, err := get("tok-alice", "tok-task"); err != nil || mailroomTaskID(t, r) != mailboxID {
		t.Fatalf("alice's tasks/get of her task: %+v %v", r, err)
	}
	// Bob's "tok-task" is his own id space: not alice's task.
	if _, err := get("tok-bob", "tok-task"); !isRPC(err, -32001) {
		t.Fatalf("bob's tasks/get of alice's client id: %v, want TaskNotFound", err)
	}
	// By the mailbox id, bob may not read it (403), the admin may.
	if st, b := legacyPost(t, endpoint, as("tok-bob"), `{"jsonrpc":"2.0","id":"g","method":"tasks/get","params":{"id":"`+mailboxID+`"}}`); st != 403 {
		t.Fatalf("bob's tasks/get by the mailbox id: %d %s, want 403", st, b)
	}
	if st, b := legacyPost(t, endpoint, as("tok-bob"), `{"jsonrpc":"2.0","id":"c","method":"tasks/cancel","params":{"id":"`+mailboxID+`"}}`); st != 403 {
		t.Fatalf("bob's tasks/cancel by the mailbox id: %d %s, want 403", st, b)
	}
	if r, err := get("tok-admin", mailboxID); err != nil || r.metadata["a2a_task_id"] != "tok-task" {
		t.Fatalf("the admin's tasks/get by the mailbox id: %+v %v", r, err)
	}
	if _, err := gmfParse(legacyPost(t, endpoint, as("tok-alice"), `{"jsonrpc":"2.0","id":"c","method":"tasks/cancel","params":{"id":"tok-task"}}`)); err != nil {
		t.Fatalf("alice's tasks/cancel of her task: %v", err)
	}
}

func isRPC(err error, code int) bool {
	e, ok := err.(*gmfRPCError)
	return ok && e.code == code
}

// What the dialect's own receiver accepts is accepted: keys it does not
// name, in the message or its parts, the optional params of tasks/send,
// a message of data alone. The message is kept verbatim, so all of it
// reaches the worker exactly.
func TestLegacyKeepsTheMessageVerbatim(t *testing.T) {
	it := newInterop(t, daemontest.Options{Config: func(c *config.Config) { c.A2ABlockingTimeout = 50 * time.Millisecond }})
	it.register("coder@local")
	endpoint := gmfEndpoint(it.base + "/agents/coder@local")
	for _, tc := range []struct {
		name, params, message, intent string
		context                       string // the task's context: its first data part
	}{
		{"extra keys", `"sessionId": "sess-1", "historyLength": 0, "acceptedOutputModes": ["text/plain"], "pushNotification": null`,
			`{"role": "user", "messageId": "m-1", "parts": [{"type": "text", "text": "hi", "data": null, "metadata": {"lang": "en"}, "x-trace": 7}], "metadata": {}}`, "hi", ""},
		{"data alone", `"sessionId": null`,
			`{"role": "user", "parts": [{"type": "data", "text": null, "data": {"query": "papers", "limit": 3}}], "metadata": null}`, "(an A2A message with 1 data part)", `{"query":"papers","limit":3}`},
	} {
		st, body := legacyPost(t, endpoint, nil, `{"jsonrpc": "2.0", "id": "r", "method": "tasks/send", "params": {"id": "`+tc.name+`", `+tc.params+`, "message": `+tc.message+`}}`)
		if _, err := gmfParse(st, body); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		task, _ := it.lease("coder@local")
		if task.A2A == nil || task.A2A.MessageID != tc.name || string(task.A2A.Message) != compactJSON(t, tc.message) || task.IntentText != tc.intent {
			t.Fatalf("%s: leased %+v with a2a %+v, want the message verbatim and intent_text %q", tc.name, task, task.A2A, tc.intent)
		}
		if got := string(task.Context); (got == "" && tc.context != "") || (got != "" && compactJSON(t, got) != tc.context) {
			t.Fatalf("%s: the task's context is %s, want %s", tc.name, got, tc.context)
		}
		if tc.name == "extra keys" && task.A2A.ContextID != "sess-1" {
			t.Fatalf("%s: context_id %q, want the sessionId", tc.name, task.A2A.ContextID)
		}
	}
}

// No body posted to the legacy binding is answered with a 5xx, and every
// refusal leaves the log as it was.
func FuzzLegacyRPC(f *testing.F) {
	for _, b := range []string{
		gmfSend("r", "t", gmfMessage("hi", gmfContext)),
		`{"jsonrpc":"2.0","id":"r","method":"tasks/get","params":{"id":"t"}}`,
		`{"jsonrpc":"2.0","id":"r","method":"tasks/cancel","params":{"id":"t"}}`,
		`{"jsonrpc":"2.0","id":1.5e400,"method":"tasks/get","params":{"id":"t"}}`,
		`{"jsonrpc":"2.0","id":"r","method":"tasks/send","params":{"id":"t","message":{"parts":[{"type":"data","data":[1]}]}}}`,
		`[{"jsonrpc":"2.0"}]`, `{`, `null`, `"x"`,
	} {
		f.Add(b)
	}
	d := daemontest.Start(f, daemontest.Options{Config: func(c *config.Config) { c.A2ABlockingTimeout = 10 * time.Millisecond }})
	c, err := client.New(d.Addr())
	if err != nil {
		f.Fatal(err)
	}
	if _, err := c.RegisterAgent(f.Context(), "coder@local", mailbox.AgentCard{Name: "Coder", Description: "writes code"}); err != nil {
		f.Fatal(err)
	}
	endpoint := gmfEndpoint(d.URL() + "/agents/coder@local")
	lastSeq := func(t *testing.T) uint64 {
		st, err := c.Status(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return st.LastSeq
	}
	f.Fuzz(func(t *testing.T, body string) {
		seq := lastSeq(t)
		st, answer := legacyPost(t, endpoint, nil, body)
		if st >= 500 {
			t.Fatalf("%q: %d %s", body, st, answer)
		}
		var rep struct {
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(answer, &rep); err != nil {
			t.Fatalf("%q: %d %s is not a JSON-RPC answer", body, st, answer)
		}
		if now := lastSeq(t); rep.Error != nil && now != seq {
			t.Fatalf("%q was refused (%s) but the log moved from %d to %d", body, rep.Error, seq, now)
		}
	})
}

// In the legacy dialect the answer to a question is a tasks/send with the
// task's id and a new message: gmf reads the question as the status
// message of an input-required task, and its answer runs the next turn to
// the end. The first message sent again is a retry; a new message for a
// task that is not waiting is refused and changes nothing.
func TestLegacyContinuesAWaitingTask(t *testing.T) {
	it := newInterop(t, daemontest.Options{})
	base := it.register("gmf@local")
	url := gmfEndpoint(base)
	first := gmfSend("r1", "task-7", gmfMessage("deploy the service", gmfContext))
	wait := it.worker("gmf@local", mailbox.StatusInputRequired, "which region?")
	res, err := gmfParse(legacyPost(t, url, nil, first))
	wait()
	if err != nil || res.success || res.err == nil || *res.err != "which region?" {
		t.Fatalf("tasks/send whose worker asked: %+v %v; want not completed, the question as the status message", res, err)
	}
	status, body := legacyPost(t, url, nil, first)
	if !strings.Contains(string(body), `"state":"input-required"`) {
		t.Fatalf("the first message again: %d %s; want the waiting task, as a retry", status, body)
	}

	answer := gmfSend("r2", "task-7", gmfMessage("eu-west-1", gmfContext))
	answered := sendInBackground(t, url, nil, answer)
	task, lease := it.lease("gmf@local")
	if len(task.Turns) != 2 || task.Turns[1].Content[0].Text != "eu-west-1" || task.Turns[1].A2A == nil ||
		task.Turns[1].A2A.Version != "legacy" || string(task.Turns[1].A2A.Message) != compactJSON(t, gmfMessage("eu-west-1", gmfContext)) {
		t.Fatalf("the next lease's turns %+v; want the question and the answer as sent", task.Turns)
	}
	it.answer(task, lease, mailbox.StatusOK, "deployed to eu-west-1")
	res, err = gmfParse(answered())
	if err != nil || !res.success || res.output != "deployed to eu-west-1" {
		t.Fatalf("the answer: %+v %v; want the completed task's output", res, err)
	}

	// The answer again is a retry; a new message is refused: the task is
	// finished.
	if res, err := gmfParse(legacyPost(t, url, nil, answer)); err != nil || !res.success {
		t.Fatalf("the answer again: %+v %v; want the finished task", res, err)
	}
	before := it.seq()
	_, err = gmfParse(legacyPost(t, url, nil, gmfSend("r3", "task-7", gmfMessage("and eu-central-1", gmfContext))))
	if !isRPC(err, -32004) || !strings.Contains(err.Error(), "params.id") || !strings.Contains(err.Error(), "it is finished") {
		t.Fatalf("a new message for the finished task: %v; want -32004 naming params.id and why", err)
	}
	if after := it.seq(); after != before {
		t.Fatalf("the refused message changed the mailbox: seq %d -> %d", before, after)
	}
}

// A task sent and answered in the legacy dialect reads in v0.3 with every
// turn, each message under an id of its own.
func TestLegacyConversationReadsInV03(t *testing.T) {
	it := newInterop(t, daemontest.Options{})
	base := it.register("gmf@local")
	url := gmfEndpoint(base)
	wait := it.worker("gmf@local", mailbox.StatusInputRequired, "which region?")
	res, err := gmfParse(legacyPost(t, url, nil, gmfSend("r1", "task-8", gmfMessage("deploy", gmfContext))))
	wait()
	if err != nil {
		t.Fatal(err)
	}
	id := mailroomTaskID(t, res)
	answered := sendInBackground(t, url, nil, gmfSend("r2", "task-8", gmfMessage("eu-west-1", gmfContext)))
	task, lease := it.lease("gmf@local")
	it.answer(task, lease, mailbox.StatusOK, "deployed")
	if _, err := gmfParse(answered()); err != nil {
		t.Fatal(err)
	}
	got := call03(t, base, "tasks/get", `{"id":"`+id+`"}`)
	var ids []string
	var texts []string
	for _, raw := range got.History {
		var m convMsg
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		ids, texts = append(ids, m.MessageID), append(texts, m.Role+":"+m.text())
	}
	if want := "user:deploy agent:which region? user:eu-west-1"; strings.Join(texts, " ") != want {
		t.Fatalf("history %v, want %s", texts, want)
	}
	if ids[0] != "task-8" || ids[2] == ids[0] || ids[2] == ids[1] {
		t.Fatalf("history message ids %v; want the client's id first and an id of its own for each turn", ids)
	}
}
