package bench

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/daemon/a2a/remote"
	"github.com/mailroom/mailroom/daemon/a2a/wire"
	"github.com/mailroom/mailroom/mailbox"
)

// TestA2AServerWithTheOutboundClient: the daemon's outbound client reads
// the server's card as a v0.3 JSON-RPC agent that does not stream, and
// every call it makes is answered as it expects: a completed task with
// "done" at once (blocking or not), the same task for a resent message,
// tasks/get, and the errors it tells apart (task not found, not
// cancelable).
func TestA2AServerWithTheOutboundClient(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(NewA2AServer())
	defer srv.Close()
	ctx := t.Context()

	r, card, err := remote.Resolve(ctx, srv.Client(), remote.Spec{URL: srv.URL, Binding: mailbox.BindingAuto}, remote.Auth{})
	if err != nil {
		t.Fatalf("ResolveRemote: %v", err)
	}
	if card.Binding != mailbox.BindingJSONRPC03 || card.Endpoint != srv.URL+"/" || card.Streaming || card.Name != "bench-echo" || len(card.Skills) != 1 {
		t.Errorf("card = %+v; want jsonrpc-0.3 at %s/, not streaming, named bench-echo with one skill", card, srv.URL)
	}

	msg := func(id string) remote.Message {
		t.Helper()
		m, err := remote.MessageFor(mailbox.Task{ID: id, IntentText: "hello", Context: json.RawMessage(`{"k":1}`)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	ids := map[string]bool{}
	for _, blocking := range []bool{false, true} {
		task, err := r.Send(ctx, msg("m-"+map[bool]string{true: "b", false: "nb"}[blocking]), blocking)
		if err != nil {
			t.Fatalf("Send(blocking %v): %v", blocking, err)
		}
		res, final := task.Outcome()
		if task.ID == "" || task.ContextID == "" || task.Direct || !final || res.Status != mailbox.StatusOK || len(res.Content) != 1 || res.Content[0].Text != "done" {
			t.Errorf("Send(blocking %v) = %+v, outcome %+v; want a completed task answering done", blocking, task, res)
		}
		ids[task.ID] = true
	}
	if len(ids) != 2 {
		t.Errorf("two messages made tasks %v, want two tasks", ids)
	}

	first, err := r.Send(ctx, msg("again"), false)
	if err != nil {
		t.Fatal(err)
	}
	second, err := r.Send(ctx, msg("again"), false)
	if err != nil || second.ID != first.ID {
		t.Errorf("a resent messageId got task %q (%v), want the first one's, %q", second.ID, err, first.ID)
	}

	got, err := r.Get(ctx, first.ID)
	if err != nil || got.ID != first.ID || got.State != wire.StateCompleted {
		t.Errorf("Get(%s) = %+v, %v; want it completed", first.ID, got, err)
	}
	if _, err := r.Get(ctx, "no-such-task"); !errors.Is(err, remote.ErrTaskNotFound) {
		t.Errorf("Get of an unknown task: %v, want task not found", err)
	}
	if _, err := r.Cancel(ctx, first.ID); !errors.Is(err, remote.ErrNotCancelable) {
		t.Errorf("Cancel of a completed task: %v, want not cancelable", err)
	}
	if _, err := r.Cancel(ctx, "no-such-task"); !errors.Is(err, remote.ErrTaskNotFound) {
		t.Errorf("Cancel of an unknown task: %v, want task not found", err)
	}
	cont := msg("continued")
	cont.TaskID = first.ID
	if _, err := r.Send(ctx, cont, true); err == nil || remote.Retryable(err) {
		t.Errorf("a message continuing a completed task: %v, want a refusal", err)
	}
}

// TestA2AServerProtocolErrors: what is not a valid v0.3 JSON-RPC request
// gets the JSON-RPC error that says why, with the request's id when it
// has one.
func TestA2AServerProtocolErrors(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(NewA2AServer())
	defer srv.Close()
	msg := `{"kind":"message","role":"user","messageId":"m1","parts":[{"kind":"text","text":"hi"}]}`
	tests := []struct {
		body   string
		code   int
		id     string
		saying string
	}{
		{`{not json`, -32700, "null", "not JSON"},
		{`[{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"x"}}]`, -32600, "null", "not a JSON-RPC request object"},
		{`{"jsonrpc":"2.0","id":1,"method":7}`, -32600, "null", "not a JSON-RPC request object"},
		{`{"jsonrpc":"2.0","method":"tasks/get","params":{"id":"x"}}`, -32600, "null", "id"},
		{`{"jsonrpc":"1.0","id":1,"method":"tasks/get","params":{"id":"x"}}`, -32600, "1", `"jsonrpc": "2.0"`},
		{`{"jsonrpc":"2.0","id":"a","method":"tasks/list"}`, -32601, `"a"`, "tasks/list"},
		{`{"jsonrpc":"2.0","id":2,"method":"message/stream","params":{"message":` + msg + `}}`, -32004, "2", "not supported"},
		{`{"jsonrpc":"2.0","id":3,"method":"message/send","params":{}}`, -32602, "3", "params"},
		{`{"jsonrpc":"2.0","id":4,"method":"message/send","params":{"message":{"role":"user","parts":[{"kind":"text","text":"hi"}]}}}`, -32602, "4", "messageId"},
		{`{"jsonrpc":"2.0","id":5,"method":"message/send","params":{"message":{"role":"robot","messageId":"m","parts":[{"kind":"text","text":"hi"}]}}}`, -32602, "5", "role"},
		{`{"jsonrpc":"2.0","id":6,"method":"message/send","params":{"message":{"role":"user","messageId":"m","parts":[{"kind":"text"}]}}}`, -32602, "6", "parts[0]"},
		{`{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{}}`, -32602, "7", "params.id"},
	}
	for _, tt := range tests {
		resp, err := http.Post(srv.URL+"/", "application/json", strings.NewReader(tt.body))
		if err != nil {
			t.Fatal(err)
		}
		var out struct {
			ID    json.RawMessage `json:"id"`
			Error *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		err = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if err != nil || out.Error == nil || out.Error.Code != tt.code || string(out.ID) != tt.id || !strings.Contains(out.Error.Message, tt.saying) {
			t.Errorf("POST %s = id %s, error %+v (%v); want id %s, code %d saying %q", tt.body, out.ID, out.Error, err, tt.id, tt.code, tt.saying)
		}
	}

	resp, err := http.Post(srv.URL+"/", "text/plain", strings.NewReader(`{}`))
	if err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), "-32005") {
			t.Errorf("a text/plain request got %s, want a content type error (-32005)", b)
		}
	}
	for _, path := range []string{"/.well-known/agent-card.json", "/.well-known/agent.json"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		var card struct {
			URL                string `json:"url"`
			ProtocolVersion    string `json:"protocolVersion"`
			PreferredTransport string `json:"preferredTransport"`
		}
		json.NewDecoder(resp.Body).Decode(&card)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || card.URL != srv.URL+"/" || card.ProtocolVersion != "0.3.0" || card.PreferredTransport != "JSONRPC" {
			t.Errorf("GET %s = %d, %+v", path, resp.StatusCode, card)
		}
	}
	for _, c := range []struct{ method, path string }{{http.MethodGet, "/"}, {http.MethodPost, "/.well-known/agent-card.json"}} {
		req, _ := http.NewRequest(c.method, srv.URL+c.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s %s = %d, want 405", c.method, c.path, resp.StatusCode)
		}
	}
}

// TestA2AServerForgetsTheOldest: the task store keeps the newest
// a2aKeepTasks tasks, so a long run does not grow it without end.
func TestA2AServerForgetsTheOldest(t *testing.T) {
	t.Parallel()
	s := NewA2AServer()
	for i := range a2aKeepTasks + 10 {
		s.keep(&a2aTask{id: "t" + strconv.Itoa(i), messageID: "m" + strconv.Itoa(i)})
	}
	if len(s.tasks) != a2aKeepTasks || len(s.byMsg) != a2aKeepTasks {
		t.Errorf("kept %d tasks and %d message ids, want %d", len(s.tasks), len(s.byMsg), a2aKeepTasks)
	}
	if _, ok := s.byMsg["m0"]; ok {
		t.Error("the oldest task is still kept")
	}
	if _, ok := s.byMsg["m"+strconv.Itoa(a2aKeepTasks+9)]; !ok {
		t.Error("the newest task is not kept")
	}
}
