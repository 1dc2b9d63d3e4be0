package remote_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/mailroom/mailroom/daemon/a2a/remote"
	"github.com/mailroom/mailroom/daemon/a2a/remote/clienttest"
	"github.com/mailroom/mailroom/daemon/a2a/wire"
	"github.com/mailroom/mailroom/mailbox"
)

// What a remote task means for the mailbox, and what the daemon sends.

func TestRemoteOutcome(t *testing.T) {
	text := func(s string) remote.Part { return remote.Part{Kind: "text", Text: s} }
	arts := []remote.Artifact{{Parts: []remote.Part{
		text("the answer"),
		{Kind: "data", Data: json.RawMessage(`{"rows":3}`)},
		{Kind: "data", Data: json.RawMessage(`[1,2]`)},
		{Kind: "file", URL: "https://example.test/r.pdf", MediaType: "application/pdf", Name: "r.pdf"},
		{Kind: "file", Raw: "aGVsbG8=", MediaType: "text/plain"},
	}}}
	cases := []struct {
		name    string
		in      remote.Task
		final   bool
		status  string
		content string // contentText of the result
		errMsg  string
	}{
		{"completed", remote.Task{State: wire.StateCompleted, Artifacts: arts}, true, mailbox.StatusOK,
			`the answer|{"rows":3}|[1,2]|{"mediaType":"application/pdf","name":"r.pdf","url":"https://example.test/r.pdf"}|{"mediaType":"text/plain","raw":"aGVsbG8="}`, ""},
		{"completed with its answer in the status", remote.Task{State: wire.StateCompleted, StatusMessage: []remote.Part{text("42")}}, true, mailbox.StatusOK, "42", ""},
		{"completed with nothing", remote.Task{State: wire.StateCompleted}, true, mailbox.StatusOK, "", ""},
		{"a message answered", remote.Task{State: wire.StateCompleted, Direct: true, Artifacts: []remote.Artifact{{Parts: []remote.Part{text("hi")}}}}, true, mailbox.StatusOK, "hi", ""},
		{"failed", remote.Task{State: wire.StateFailed, StatusMessage: []remote.Part{text("disk full"), {Kind: "data", Data: json.RawMessage(`{"code":28}`)}}}, true, mailbox.StatusError, "", "disk full"},
		{"failed without a word", remote.Task{State: wire.StateFailed}, true, mailbox.StatusError, "", "the remote agent reported that the task failed, without saying why"},
		{"rejected", remote.Task{State: wire.StateRejected, StatusMessage: []remote.Part{text("not mine")}}, true, mailbox.StatusRejected, "", "not mine"},
		{"canceled by the remote", remote.Task{State: wire.StateCanceled, StatusMessage: []remote.Part{text("shutting down")}}, true, mailbox.StatusError, "", "the remote agent canceled the task: shutting down"},
		{"canceled without a word", remote.Task{State: wire.StateCanceled}, true, mailbox.StatusError, "", "the remote agent canceled the task"},
		{"input required", remote.Task{State: wire.StateInputRequired, StatusMessage: []remote.Part{text("which db?"), {Kind: "data", Data: json.RawMessage(`{"choices":["a","b"]}`)}}}, true,
			mailbox.StatusInputRequired, `which db?|{"choices":["a","b"]}`, ""},
		{"auth required", remote.Task{State: wire.StateAuthRequired, StatusMessage: []remote.Part{text("sign in")}}, true, mailbox.StatusAuthRequired, "sign in", ""},
		{"a question without words", remote.Task{State: wire.StateInputRequired}, true, mailbox.StatusInputRequired, "the remote agent asks for input without saying what", ""},
		{"submitted", remote.Task{State: wire.StateSubmitted}, false, "", "", ""},
		{"working", remote.Task{State: wire.StateWorking, Artifacts: arts}, false, "", "", ""},
		{"unknown", remote.Task{State: wire.StateUnknown}, false, "", "", ""},
	}
	for _, c := range cases {
		r, final := c.in.Outcome()
		if final != c.final {
			t.Errorf("%s: final %v, want %v", c.name, final, c.final)
			continue
		}
		if !final {
			continue
		}
		r.TaskID = "6f9619ff-8b86-4d11-b42d-00c04fc964ff"
		if _, err := mailbox.NormalizeResult(r); err != nil {
			t.Errorf("%s: the mailbox refuses %+v: %v", c.name, r, err)
		}
		if r.Status != c.status || clienttest.ContentText(r) != c.content || r.ErrorMessage != c.errMsg {
			t.Errorf("%s: Outcome() = %s %q %q, want %s %q %q", c.name, r.Status, clienttest.ContentText(r), r.ErrorMessage, c.status, c.content, c.errMsg)
		}
	}
}

// recorder answers every JSON-RPC call with a completed task (in the
// generation the request's A2A-Version names) and keeps each params.
type recorder struct {
	srv  *httptest.Server
	mu   sync.Mutex
	sent []json.RawMessage
}

func startRecorder(t *testing.T) *recorder {
	t.Helper()
	rec := &recorder{}
	rec.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var env struct {
			ID     json.RawMessage `json:"id"`
			Params struct {
				Message json.RawMessage `json:"message"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &env)
		rec.mu.Lock()
		rec.sent = append(rec.sent, env.Params.Message)
		rec.mu.Unlock()
		result := `{"kind":"task","id":"r1","contextId":"c1","status":{"state":"completed"}}`
		if r.Header.Get("A2A-Version") == "1.0" {
			result = `{"task":{"id":"r1","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED"}}}`
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(env.ID) + `,"result":` + result + `}`))
	}))
	t.Cleanup(rec.srv.Close)
	return rec
}

func (rec *recorder) last() string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return string(rec.sent[len(rec.sent)-1])
}

func TestRemoteMessageBuilding(t *testing.T) {
	ctx := clienttest.Ctx(t)
	rec := startRecorder(t)
	client := func(binding string) *remote.Client {
		r, err := remote.New(nil, remote.Card{Binding: binding, Endpoint: rec.srv.URL}, remote.Auth{})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	v03, v10 := client(mailbox.BindingJSONRPC03), client(mailbox.BindingJSONRPC10)

	send := func(r *remote.Client, task mailbox.Task, ref *remote.Ref) string {
		t.Helper()
		if _, err := r.Send(ctx, clienttest.Outbound(t, task, ref), true); err != nil {
			t.Fatalf("Send: %v", err)
		}
		return rec.last()
	}

	native := clienttest.NativeTask("fix the bug", `{"repo":"mailroom"}`)
	for _, c := range []struct {
		r    *remote.Client
		want string
	}{
		{v03, `{"kind":"message","messageId":"` + native.ID + `","contextId":"` + remote.ContextIDFor(native.ID) + `","parts":[{"kind":"text","text":"fix the bug"},{"data":{"repo":"mailroom"},"kind":"data"}],"role":"user"}`},
		{v10, `{"messageId":"` + native.ID + `","contextId":"` + remote.ContextIDFor(native.ID) + `","parts":[{"text":"fix the bug"},{"data":{"repo":"mailroom"}}],"role":"ROLE_USER"}`},
	} {
		if got := send(c.r, native, nil); !clienttest.SameJSON(t, json.RawMessage(got), c.want) {
			t.Errorf("native task sent as %s, want %s", got, c.want)
		}
	}

	// An A2A-origin v0.3 message: verbatim to a v0.3 remote (but its
	// messageId, and without the caller's ids), re-encoded for v1.0.
	origin := `{"kind":"message","role":"user","messageId":"caller-1","contextId":"caller-ctx","taskId":null,"metadata":{"k":"v"},"extensions":["urn:x"],"referenceTaskIds":["mailroom-task"],
		"parts":[{"kind":"text","text":"summarize","metadata":null},{"kind":"file","file":{"name":"a.pdf","mimeType":"application/pdf","uri":"https://example.test/a.pdf"}},{"kind":"data","data":{"x":1}}]}`
	a2aTask := clienttest.NativeTask("summarize", `{"x":1}`)
	a2aTask.A2A = &mailbox.A2AOrigin{Version: "0.3", MessageID: "caller-1", ContextID: "caller-ctx", Message: json.RawMessage(origin)}
	// Its context id is the one the daemon derives from the task, not the
	// caller's: the remote is asked for its tasks of that context later.
	cid := remote.ContextIDFor(a2aTask.ID)
	want03 := `{"kind":"message","role":"user","messageId":"` + a2aTask.ID + `","contextId":"` + cid + `","metadata":{"k":"v"},"extensions":["urn:x"],
		"parts":[{"kind":"text","text":"summarize","metadata":null},{"kind":"file","file":{"name":"a.pdf","mimeType":"application/pdf","uri":"https://example.test/a.pdf"}},{"kind":"data","data":{"x":1}}]}`
	if got := send(v03, a2aTask, nil); !clienttest.SameJSON(t, json.RawMessage(got), want03) {
		t.Errorf("v0.3 origin to v0.3 sent as %s, want %s", got, want03)
	}
	want10 := `{"role":"ROLE_USER","messageId":"` + a2aTask.ID + `","contextId":"` + cid + `","metadata":{"k":"v"},"extensions":["urn:x"],
		"parts":[{"text":"summarize"},{"url":"https://example.test/a.pdf","filename":"a.pdf","mediaType":"application/pdf"},{"data":{"x":1}}]}`
	if got := send(v10, a2aTask, nil); !clienttest.SameJSON(t, json.RawMessage(got), want10) {
		t.Errorf("v0.3 origin to v1.0 sent as %s, want %s", got, want10)
	}

	// A continuation: the newest answer's parts, the remote's ids, a
	// message id of the turn.
	a2aTask.Turns = []mailbox.Turn{
		{Seq: 4, Role: mailbox.RoleWorker, Agent: "coder@local", Status: mailbox.StatusInputRequired, Content: []mailbox.Content{{Type: mailbox.ContentText, Text: "which part?"}}},
		{Seq: 5, Role: mailbox.RoleSender, Agent: "planner@local", Content: []mailbox.Content{{Type: mailbox.ContentText, Text: "chapter 2"}, {Type: mailbox.ContentJSON, Value: json.RawMessage(`{"page":7}`)}}},
	}
	ref := &remote.Ref{TaskID: "remote-task", ContextID: "remote-ctx"}
	msg := clienttest.Outbound(t, a2aTask, ref)
	got := send(v10, a2aTask, ref)
	want := `{"role":"ROLE_USER","messageId":"` + msg.MessageID + `","taskId":"remote-task","contextId":"remote-ctx","parts":[{"text":"chapter 2"},{"data":{"page":7}}]}`
	if !clienttest.SameJSON(t, json.RawMessage(got), want) || msg.MessageID == a2aTask.ID {
		t.Errorf("continuation sent as %s, want %s", got, want)
	}
	// An answer that came through the edge goes verbatim.
	a2aTask.Turns[1].A2A = &mailbox.A2AOrigin{Version: "1.0", MessageID: "ans-1", ContextID: "caller-ctx",
		Message: json.RawMessage(`{"role":"ROLE_USER","messageId":"ans-1","contextId":"caller-ctx","taskId":"mailroom-task","parts":[{"text":"chapter 2, please","mediaType":"text/plain"}]}`)}
	got = send(v10, a2aTask, ref)
	want = `{"role":"ROLE_USER","messageId":"` + msg.MessageID + `","taskId":"remote-task","contextId":"remote-ctx","parts":[{"text":"chapter 2, please","mediaType":"text/plain"}]}`
	if !clienttest.SameJSON(t, json.RawMessage(got), want) {
		t.Errorf("verbatim continuation sent as %s, want %s", got, want)
	}
	got = send(v03, a2aTask, ref)
	want = `{"kind":"message","role":"user","messageId":"` + msg.MessageID + `","taskId":"remote-task","contextId":"remote-ctx","parts":[{"kind":"text","text":"chapter 2, please"}]}`
	if !clienttest.SameJSON(t, json.RawMessage(got), want) {
		t.Errorf("v1.0 answer to a v0.3 remote sent as %s, want %s", got, want)
	}
	// A conversation the remote never saw (another agent asked) goes
	// along with the first message.
	got = send(v03, a2aTask, nil)
	want = `{"kind":"message","role":"user","messageId":"` + a2aTask.ID + `","contextId":"` + cid + `","metadata":{"k":"v"},"extensions":["urn:x"],"parts":[
		{"kind":"text","text":"summarize"},{"kind":"file","file":{"name":"a.pdf","mimeType":"application/pdf","uri":"https://example.test/a.pdf"}},{"kind":"data","data":{"x":1}},
		{"kind":"text","text":"coder@local asked (input_required):"},{"kind":"text","text":"which part?"},
		{"kind":"text","text":"planner@local answered:"},{"kind":"text","text":"chapter 2, please"}]}`
	if !clienttest.SameJSON(t, json.RawMessage(got), want) {
		t.Errorf("a task handed on with its conversation sent as %s, want %s", got, want)
	}
	if _, err := remote.MessageFor(a2aTask, &remote.Ref{}); err == nil || !strings.Contains(err.Error(), "remote's task id") {
		t.Errorf("a continuation without the remote's task id: %v", err)
	}
}

// The official a2a-python SDK (Marie AI's server) writes its pydantic
// models with every optional field null; the client reads them so.
func TestRemoteReadsPythonShapedAnswers(t *testing.T) {
	ctx := clienttest.Ctx(t)
	task := `{"kind":"task","id":"p1","contextId":"pc","metadata":null,"history":null,
		"status":{"state":"input-required","timestamp":null,"message":{"kind":"message","role":"agent","messageId":"s1","contextId":null,"taskId":null,"metadata":null,"extensions":null,"referenceTaskIds":null,
			"parts":[{"kind":"text","text":"which year?","metadata":null}]}},
		"artifacts":[{"artifactId":"a1","name":null,"description":null,"metadata":null,"extensions":null,
			"parts":[{"kind":"data","data":{"draft":true},"metadata":null},{"kind":"file","file":{"bytes":"aGk=","mimeType":null,"name":null},"metadata":null}]}]}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var env struct {
			ID json.RawMessage `json:"id"`
		}
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &env)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(env.ID) + `,"result":` + task + `}`))
	}))
	defer srv.Close()
	r, err := remote.New(nil, remote.Card{Binding: mailbox.BindingJSONRPC03, Endpoint: srv.URL}, remote.Auth{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.Get(ctx, "p1")
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	res := clienttest.Outcome(t, got)
	if got.State != wire.StateInputRequired || res.Status != mailbox.StatusInputRequired || clienttest.ContentText(res) != "which year?" ||
		len(got.Artifacts) != 1 || len(got.Artifacts[0].Parts) != 2 || got.Artifacts[0].Parts[1].Raw != "aGk=" {
		t.Fatalf("read %+v (%+v)", got, res)
	}
}
