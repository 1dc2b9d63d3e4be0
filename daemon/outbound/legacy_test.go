package outbound_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	a2aremote "github.com/mailroom/mailroom/daemon/a2a/remote"
	"github.com/mailroom/mailroom/daemon/a2a/wire"
	"github.com/mailroom/mailroom/mailbox"
)

// legacyRemote speaks the legacy tasks/send dialect, written from seed
// 004's shapes (gmf_forge's A2AAdapter): its card at agent.json, tasks/send
// only at {base}/rpc, synchronous, status.message a string, the task id
// the caller's. It acts on the first word of the text: "fail" fails,
// "ask" asks (input-required) and completes on the answer sent with the
// same task id, "slow" answers once released, "hang" until its caller
// hangs up; anything else is done at once. down answers 503, as a remote
// that is failing.
type legacyRemote struct {
	srv     *httptest.Server
	release chan struct{}
	down    atomic.Bool

	mu      sync.Mutex
	asked   map[string]bool
	hanging []string // the tasks whose call hangs now
	hungUp  []string // the tasks whose caller hung up on a hanging call
}

func startLegacy(t *testing.T) *legacyRemote {
	t.Helper()
	l := &legacyRemote{release: make(chan struct{}), asked: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/agent.json", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"name": "search_agent", "description": "searches", "url": l.srv.URL, "version": "0.1.0",
			"skills": []map[string]any{{"id": "search", "name": "Search", "description": "finds papers"}}})
	})
	mux.HandleFunc("POST /rpc", l.rpc)
	l.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if l.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(l.srv.Close)
	return l
}

func (l *legacyRemote) rpc(w http.ResponseWriter, r *http.Request) {
	var body struct {
		ID     any    `json:"id"`
		Method string `json:"method"`
		Params struct {
			ID      string `json:"id"`
			Message struct {
				Parts []struct{ Type, Text string } `json:"parts"`
			} `json:"message"`
		} `json:"params"`
	}
	_ = json.NewDecoder(r.Body).Decode(&body)
	if body.Method != "tasks/send" {
		writeJSON(w, map[string]any{"jsonrpc": "2.0", "id": body.ID, "error": map[string]any{"code": -32601, "message": "Method not found: " + body.Method}})
		return
	}
	text := ""
	if len(body.Params.Message.Parts) > 0 {
		text = body.Params.Message.Parts[0].Text
	}
	l.mu.Lock()
	answering := l.asked[body.Params.ID]
	l.mu.Unlock()
	word, _, _ := strings.Cut(text, " ")
	state, msg, done := "completed", any(nil), "did: "+text
	switch {
	case answering:
		done = "using " + text
	case word == "fail":
		state, msg = "failed", "no results for that query"
	case word == "ask":
		l.mu.Lock()
		l.asked[body.Params.ID] = true
		l.mu.Unlock()
		state, msg = "input-required", "which database?"
	case word == "slow":
		select {
		case <-l.release:
		case <-r.Context().Done():
			return
		}
		done = "slowly done"
	case word == "hang":
		l.mu.Lock()
		l.hanging = append(l.hanging, body.Params.ID)
		l.mu.Unlock()
		<-r.Context().Done()
		l.mu.Lock()
		l.hungUp = append(l.hungUp, body.Params.ID)
		l.mu.Unlock()
		return
	}
	var artifacts []any
	if state == "completed" {
		artifacts = []any{map[string]any{"parts": []any{map[string]any{"type": "text", "text": done}}}}
	}
	writeJSON(w, map[string]any{"jsonrpc": "2.0", "id": body.ID, "result": map[string]any{
		"id": body.Params.ID, "status": map[string]any{"state": state, "message": msg}, "artifacts": artifacts}})
}

func (l *legacyRemote) hangs(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Contains(l.hanging, id)
}

func (l *legacyRemote) hungUpOn(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Contains(l.hungUp, id)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// A legacy remote, case by case: a native sender's task done and one
// failed, its card served; an A2A sender's; a question and the sender's
// answer, sent with the same task id; slow work; an A2A cancel, which
// hangs up the synchronous call (the dialect has no tasks/cancel); a
// remote killed mid-task, whose lease stays for the operator (the call
// may have reached it, the task is not idempotent: marked unknown) until
// a requeue to an agent that polls; and failing, the circuit opened and
// closed.
func TestLegacyRemote(t *testing.T) {
	w := start(t)
	l := startLegacy(t)
	if _, err := w.c.RegisterAgent(w.ctx, "search@remote", mailbox.AgentCard{Remote: &mailbox.RemoteSpec{URL: l.srv.URL, Binding: mailbox.BindingLegacy}}); err != nil {
		t.Fatal(err)
	}
	id := w.send("planner@local", "search@remote", "find papers on leases", false)
	if res := w.result("planner@local", id); res.Status != mailbox.StatusOK || text(res) != "did: find papers on leases" {
		t.Fatalf("result %+v", res)
	}
	if rec := w.record(id); rec.Remote == nil || rec.Remote.Binding != mailbox.BindingLegacy || rec.Remote.TaskID != id {
		t.Fatalf("remote %+v, want the legacy task, its id the task id", rec.Remote)
	}
	id = w.send("planner@local", "search@remote", "fail this", false)
	if res := w.result("planner@local", id); res.Status != mailbox.StatusError || res.ErrorMessage != "no results for that query" {
		t.Fatalf("result %+v", res)
	}
	if c := w.info("search@remote").Card; c == nil || c.Name != "search_agent" || !c.HasSkill("search") {
		t.Fatalf("card %+v, want the legacy remote's", c)
	}

	// An A2A sender.
	e := w.edge("search@remote")
	sent := w.edgeSend(e, "find papers through the edge")
	if got := w.edgePoll(e, sent.ID, a2aremote.Task.Terminal); got.State != wire.StateCompleted {
		t.Fatalf("the edge's task %+v", got)
	}

	// A question, and the answer on the same task.
	id = w.send("planner@local", "search@remote", "ask which database", false)
	if q := w.result("planner@local", id); q.Status != mailbox.StatusInputRequired || text(q) != "which database?" {
		t.Fatalf("result %+v, want the question", q)
	}
	if _, err := w.c.Reply(w.ctx, mailbox.Reply{TaskID: id, Sender: "planner@local", Content: []mailbox.Content{{Type: mailbox.ContentText, Text: "mysql"}}}); err != nil {
		t.Fatal(err)
	}
	if res := w.result("planner@local", id); res.Status != mailbox.StatusOK || text(res) != "using mysql" {
		t.Fatalf("result %+v, want the answer used", res)
	}

	// Slow work.
	id = w.send("planner@local", "search@remote", "slow search", false)
	w.waitDelivery("search@remote", id, "sending", func(d mailbox.DeliveryStatus) bool { return d.State == mailbox.DeliverySending })
	close(l.release)
	if res := w.result("planner@local", id); res.Status != mailbox.StatusOK || text(res) != "slowly done" {
		t.Fatalf("result %+v", res)
	}

	// An A2A cancel hangs up the call the remote is working on.
	sent = w.edgeSend(e, "hang on")
	waitFor(t, "the remote working on "+sent.ID, func() bool { return l.hangs(sent.ID) }, func() string { return w.logs.String() })
	if _, err := e.Cancel(w.ctx, sent.ID); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	waitFor(t, "the remote's call hung up", func() bool { return l.hungUpOn(sent.ID) }, func() string { return w.logs.String() })
	if got, _ := e.Get(w.ctx, sent.ID); got.State != wire.StateCanceled {
		t.Fatalf("the edge's task is %s, want canceled", got.State)
	}

	// Killed mid-task: the call is cut. It may have reached the remote,
	// so the task (not idempotent) is not sent again: its lease waits
	// for the operator, who requeues it to an agent that polls.
	id = w.send("planner@local", "search@remote", "hang on", false)
	waitFor(t, "the remote working on "+id, func() bool { return l.hangs(id) }, func() string { return w.logs.String() })
	l.srv.CloseClientConnections()
	dl := w.waitDelivery("search@remote", id, "unknown", func(d mailbox.DeliveryStatus) bool { return d.State == mailbox.DeliveryUnknown })
	if e := w.entry(id); e == nil || e.State != mailbox.TaskInFlight || e.LeaseID != dl.LeaseID {
		t.Fatalf("queue entry %+v, want the lease left for the operator", e)
	}
	w.requeueTo(id, dl.LeaseID, "worker@local", "found them by hand")

	// Failing: the circuit opens, and closes when the remote answers.
	l.down.Store(true)
	a := w.send("planner@local", "search@remote", "first", false)
	w.waitRemote("search@remote", "circuit open", func(st *mailbox.RemoteStatus) bool { return st.State == mailbox.RemoteCircuitOpen })
	b := w.send("planner@local", "search@remote", "second", false)
	if e := w.entry(b); e == nil || e.State != mailbox.TaskQueued {
		t.Fatalf("a task sent while the circuit is open: %+v, want it queued", e)
	}
	l.down.Store(false)
	for _, id := range []string{a, b} {
		if res := w.result("planner@local", id); res.Status != mailbox.StatusOK {
			t.Fatalf("result %+v after the circuit closed", res)
		}
	}
}
