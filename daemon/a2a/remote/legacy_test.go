package remote_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mailroom/mailroom/daemon/a2a/remote"
	"github.com/mailroom/mailroom/daemon/a2a/remote/clienttest"
	"github.com/mailroom/mailroom/daemon/a2a/wire"
	"github.com/mailroom/mailroom/mailbox"
)

// The legacy tasks/send dialect, against a receiver written from seed
// 004's shapes (gmf_forge's A2AAdapter): the card at agent.json, tasks/send
// only at {base}/rpc, synchronous, the first text part is the task and
// message.metadata its context, status.message a string, errors -32601 /
// -32602 / -32603 with the request id echoed only when it is a string.

type legacyReceiver struct {
	srv  *httptest.Server
	mu   sync.Mutex
	got  []json.RawMessage // params as received
	card atomic.Bool
}

func startLegacy(t *testing.T, card bool) *legacyReceiver {
	t.Helper()
	l := &legacyReceiver{}
	l.card.Store(card)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/agent.json", func(w http.ResponseWriter, r *http.Request) {
		if !l.card.Load() {
			http.NotFound(w, r)
			return
		}
		writeJSONBody(w, map[string]any{"name": "search_agent", "description": "searches", "url": l.srv.URL, "version": "0.1.0",
			"skills": []map[string]any{{"id": "search", "name": "Search", "description": "finds papers"}}})
	})
	mux.HandleFunc("POST /rpc", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			ID     any             `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		id, _ := body.ID.(string)
		var rid any
		if id != "" {
			rid = id
		}
		fail := func(code int, msg string) {
			writeJSONBody(w, map[string]any{"jsonrpc": "2.0", "id": rid, "error": map[string]any{"code": code, "message": msg, "data": nil}})
		}
		if body.Method != "tasks/send" {
			fail(-32601, "Method not found: "+body.Method)
			return
		}
		l.mu.Lock()
		l.got = append(l.got, body.Params)
		l.mu.Unlock()
		var p struct {
			ID      string `json:"id"`
			Message struct {
				Parts []struct {
					Type string `json:"type"`
					Text string `json:"text"`
				} `json:"parts"`
				Metadata map[string]any `json:"metadata"`
			} `json:"message"`
		}
		if json.Unmarshal(body.Params, &p) != nil {
			fail(-32602, "Invalid params payload")
			return
		}
		text := ""
		for _, part := range p.Message.Parts {
			if part.Type == "text" {
				text = part.Text
				break
			}
		}
		if text == "crash" {
			fail(-32603, "the agent crashed")
			return
		}
		ctxJSON, _ := json.Marshal(p.Message.Metadata)
		state, msg, output := "completed", any(nil), "did: "+text+" with "+string(ctxJSON)
		if strings.HasPrefix(text, "fail") {
			state, msg, output = "failed", "no results for that query", ""
		}
		var artifacts []any
		if output != "" {
			artifacts = append(artifacts, map[string]any{"parts": []any{map[string]any{"type": "text", "text": output, "data": nil}}})
		}
		writeJSONBody(w, map[string]any{"jsonrpc": "2.0", "id": rid, "result": map[string]any{
			"id": p.ID, "status": map[string]any{"state": state, "message": msg}, "artifacts": artifacts,
			"metadata": map[string]any{"steps": []any{}, "a2a_task_id": p.ID}}})
	})
	l.srv = httptest.NewServer(mux)
	t.Cleanup(l.srv.Close)
	return l
}

func writeJSONBody(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (l *legacyReceiver) params() []json.RawMessage {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]json.RawMessage(nil), l.got...)
}

func TestRemoteLegacyTasksSend(t *testing.T) {
	ctx := clienttest.Ctx(t)
	l := startLegacy(t, true)
	r, card := clienttest.Resolve(t, ctx, remote.Spec{URL: l.srv.URL, Binding: mailbox.BindingLegacy}, remote.Auth{})
	if card.Name != "search_agent" || card.Binding != mailbox.BindingLegacy || card.Streaming || len(card.Skills) != 1 {
		t.Fatalf("card %+v", card)
	}

	// A native task: the intent is the first text part, the context is
	// the metadata the receiver reads; the task id is params.id.
	task := clienttest.NativeTask("find recent AI papers", `{"locale":"fr"}`)
	got, err := r.Send(ctx, clienttest.Outbound(t, task, nil), false)
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	res := clienttest.Outcome(t, got)
	if got.ID != task.ID || res.Status != mailbox.StatusOK || clienttest.ContentText(res) != `did: find recent AI papers with {"locale":"fr"}` {
		t.Fatalf("legacy send answered %+v (%+v)", got, res)
	}

	// A failure's status message is a string.
	got, err = r.Send(ctx, clienttest.Outbound(t, clienttest.NativeTask("fail to find", ""), nil), true)
	if err != nil {
		t.Fatal(err)
	}
	if res := clienttest.Outcome(t, got); res.Status != mailbox.StatusError || res.ErrorMessage != "no results for that query" {
		t.Fatalf("legacy failure %+v", res)
	}

	// An A2A-origin task that came through the legacy edge goes verbatim.
	verbatim := `{"role":"user","parts":[{"type":"text","text":"search verbatim","data":null}],"metadata":{"obo_token":"x"}}`
	task = clienttest.NativeTask("search verbatim", "")
	task.A2A = &mailbox.A2AOrigin{Version: "legacy", MessageID: "client-task-1", ContextID: "c1", Message: json.RawMessage(verbatim)}
	if _, err := r.Send(ctx, clienttest.Outbound(t, task, nil), true); err != nil {
		t.Fatal(err)
	}
	ps := l.params()
	var last struct {
		ID      string          `json:"id"`
		Message json.RawMessage `json:"message"`
	}
	if err := json.Unmarshal(ps[len(ps)-1], &last); err != nil || last.ID != task.ID || !clienttest.SameJSON(t, last.Message, verbatim) {
		t.Fatalf("the receiver got %s, want task id %s and the message verbatim", ps[len(ps)-1], task.ID)
	}

	// A v0.3 message with a file part cannot be said in the dialect.
	task = clienttest.NativeTask("a file", "")
	task.A2A = &mailbox.A2AOrigin{Version: "0.3", MessageID: "m1", ContextID: "c1",
		Message: json.RawMessage(`{"kind":"message","role":"user","messageId":"m1","parts":[{"kind":"file","file":{"uri":"https://example.test/a.pdf"}}]}`)}
	var re *remote.Error
	if _, err := r.Send(ctx, clienttest.Outbound(t, task, nil), true); !errors.As(err, &re) || re.Kind != remote.Unusable || !strings.Contains(err.Error(), "file part") {
		t.Fatalf("Send of a file part to a legacy remote: %v; want an unusable error naming the file part", err)
	}

	// The receiver's refusals: a crash is -32603, tasks/get is not served.
	if _, err := r.Send(ctx, clienttest.Outbound(t, clienttest.NativeTask("crash", ""), nil), true); !errors.As(err, &re) || re.Kind != remote.Refused || re.Code != -32603 {
		t.Fatalf("Send that crashes the agent: %v; want a refusal with code -32603", err)
	}
	if _, err := r.Get(ctx, task.ID); !errors.Is(err, remote.ErrUnsupported) {
		t.Fatalf("Get from a receiver that serves tasks/send only: %v; want ErrRemoteUnsupported", err)
	}
	if _, err := r.Stream(ctx, clienttest.Outbound(t, clienttest.NativeTask("x", ""), nil)); err == nil {
		t.Fatal("Stream to a legacy remote was attempted")
	}
}

func TestRemoteLegacyWithoutCard(t *testing.T) {
	ctx := clienttest.Ctx(t)
	l := startLegacy(t, false)
	r, card := clienttest.Resolve(t, ctx, remote.Spec{URL: l.srv.URL + "/", Binding: mailbox.BindingLegacy}, remote.Auth{})
	if card.Name != "" || card.Endpoint != l.srv.URL+"/" {
		t.Fatalf("card %+v", card)
	}
	got, err := r.Send(ctx, clienttest.Outbound(t, clienttest.NativeTask("hello", ""), nil), true)
	if err != nil || got.State != wire.StateCompleted {
		t.Fatalf("Send: %+v, %v", got, err)
	}
	// Auto never picks the dialect: the receiver's card reads as a v0.3
	// JSON-RPC card, whose url is the base, so a client told "auto" would
	// call message/send there; the operator must ask for legacy.
	l.card.Store(true)
	_, card, err = remote.Resolve(ctx, nil, remote.Spec{URL: l.srv.URL}, remote.Auth{})
	if err != nil || card.Binding != mailbox.BindingJSONRPC03 {
		t.Fatalf("auto on a legacy receiver's card: %+v, %v", card, err)
	}
}
