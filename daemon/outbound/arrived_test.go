package outbound_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/mailroom/mailroom/mailbox"
)

// cutRemote is a v0.3 JSON-RPC remote that takes each message and then
// drops the connection without answering, the first time it sees the
// message's id (a crash right after it started the work); a message it has
// seen before is answered with its task, completed.
type cutRemote struct {
	mu   sync.Mutex
	seen map[string]int
}

func (c *cutRemote) times(messageID string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen[messageID]
}

func startCutRemote(t *testing.T) (*cutRemote, *httptest.Server) {
	c := &cutRemote{seen: map[string]int{}}
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			writeJSON(w, map[string]any{"name": "cutter", "description": "drops its first answer", "version": "1", "url": srv.URL + "/",
				"protocolVersion": "0.3.0", "preferredTransport": "JSONRPC", "capabilities": map[string]any{"streaming": false},
				"defaultInputModes": []string{"text/plain"}, "defaultOutputModes": []string{"text/plain"}, "skills": []any{}})
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Params struct {
				Message struct {
					MessageID string `json:"messageId"`
				} `json:"message"`
			} `json:"params"`
		}
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		id := req.Params.Message.MessageID
		c.mu.Lock()
		c.seen[id]++
		n := c.seen[id]
		c.mu.Unlock()
		if n == 1 {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		writeJSON(w, map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": map[string]any{"kind": "task", "id": "rt-" + id, "contextId": "ctx-" + id,
			"status": map[string]any{"state": "completed"}, "artifacts": []any{map[string]any{"artifactId": "a", "parts": []any{map[string]any{"kind": "text", "text": "done"}}}}}})
	}))
	t.Cleanup(srv.Close)
	return c, srv
}

// A send that got no answer may have reached the remote: a task that is
// not idempotent is then not sent again (it could run twice) but left to
// the operator, marked unknown; an idempotent one is sent again with the
// same messageId and completes.
func TestASendThatMayHaveArrivedIsNotSentAgainUnlessIdempotent(t *testing.T) {
	w := start(t)
	remote, srv := startCutRemote(t)
	w.register("cutter@remote", srv.URL+"/", 2)

	unsafe := w.send("planner@local", "cutter@remote", "charge the card", false)
	d := w.waitDelivery("cutter@remote", unsafe, "left for the operator", func(d mailbox.DeliveryStatus) bool { return d.State == mailbox.DeliveryUnknown })
	if remote.times(unsafe) != 1 {
		t.Errorf("the remote saw the non-idempotent task %d times, want once", remote.times(unsafe))
	}
	if d.LastError == "" {
		t.Errorf("the unknown delivery says nothing of why: %+v", d)
	}

	safe := w.send("planner@local", "cutter@remote", "recompute the index", true)
	if res := w.result("planner@local", safe); res.Status != mailbox.StatusOK || text(res) != "done" {
		t.Fatalf("the idempotent task's result = %+v", res)
	}
	if remote.times(safe) != 2 {
		t.Errorf("the remote saw the idempotent task %d times, want twice (the send again, same messageId)", remote.times(safe))
	}
	// The operator decides for the other: a force-error ends it.
	if e := w.entry(unsafe); e == nil || e.State != mailbox.TaskInFlight {
		t.Fatalf("the unknown task is %+v, want in flight under its lease", e)
	}
	if remote.times(unsafe) != 1 {
		t.Errorf("the non-idempotent task was sent again: %d times", remote.times(unsafe))
	}
}

// The dispatcher follows the engine's events on a subscription of its
// own, which the event-stream gauge does not count: an operator reading
// mailroom_sse_subscribers counts consoles and streams, not the daemon.
func TestTheDispatchersFeedIsNotAnEventStream(t *testing.T) {
	w := start(t)
	_, srv := startCutRemote(t)
	w.register("cutter@remote", srv.URL+"/", 1)
	w.waitRemote("cutter@remote", "resolved", func(st *mailbox.RemoteStatus) bool { return st.State == mailbox.RemoteHealthy })
	if n := w.d.Metric(t, "mailroom_sse_subscribers"); n != 0 {
		t.Errorf("mailroom_sse_subscribers = %v with no stream open, want 0 (the dispatcher's own feed is not one)", n)
	}
}
