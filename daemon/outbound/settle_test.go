package outbound_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	a2aremote "github.com/mailroom/mailroom/daemon/a2a/remote"
	"github.com/mailroom/mailroom/daemon/a2a/wire"
	"github.com/mailroom/mailroom/daemon/outbound"
	"github.com/mailroom/mailroom/internal/remotetest"
	"github.com/mailroom/mailroom/mailbox"
)

// cutProxy stands between the daemon and a remote and cuts the send of
// one message, as a kill -9 of the daemon mid-send does: "hold" passes
// the send on (the remote gets it) and never answers; "swallow" never
// passes it on. Either way the daemon never records an acceptance. Every
// other request passes.
type cutProxy struct {
	srv   *httptest.Server
	mu    sync.Mutex
	cut   map[string]string // messageId -> hold or swallow
	taken map[string]int    // messageId -> sends cut
	// broken is closed to break the connections of the held sends.
	broken chan struct{}
}

func startCutProxy(t *testing.T, upstream string) *cutProxy {
	t.Helper()
	target, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{cut: map[string]string{}, taken: map[string]int{}, broken: make(chan struct{})}
	rp := httputil.NewSingleHostReverseProxy(target)
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "agent-card.json") {
			// The card names the remote's endpoints: through the proxy.
			resp, err := http.Get(upstream + r.URL.Path)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			card, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(strings.ReplaceAll(string(card), upstream, p.srv.URL)))
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var req struct {
			Method string `json:"method"`
			Params struct {
				Message struct {
					MessageID string `json:"messageId"`
				} `json:"message"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &req)
		p.mu.Lock()
		how := ""
		if req.Method == "SendMessage" || req.Method == "SendStreamingMessage" {
			how = p.cut[req.Params.Message.MessageID]
			if how != "" {
				p.taken[req.Params.Message.MessageID]++
			}
		}
		p.mu.Unlock()
		switch how {
		case "hold":
			rp.ServeHTTP(httptest.NewRecorder(), r.Clone(r.Context()))
			select {
			case <-r.Context().Done():
			case <-p.broken:
				panic(http.ErrAbortHandler) // the connection breaks before the answer
			}
		case "swallow":
			<-r.Context().Done()
		default:
			rp.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *cutProxy) set(messageID, how string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if how == "" {
		delete(p.cut, messageID)
		return
	}
	p.cut[messageID] = how
}

// breakHeld breaks the connections of the sends held.
func (p *cutProxy) breakHeld() { close(p.broken) }

func (p *cutProxy) cuts(messageID string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.taken[messageID]
}

// seenMessages counts the messages the node remote at base received by
// messageId.
func seenMessages(t *testing.T, base, messageID string) int {
	t.Helper()
	resp, err := http.Get(base + "/control/seen")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var seen []struct {
		Message struct {
			MessageID string `json:"messageId"`
		} `json:"message"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&seen); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range seen {
		if s.Message.MessageID == messageID {
			n++
		}
	}
	return n
}

// A task that is not idempotent, whose send reached the remote (@a2a-js/sdk
// 1.3.0, v1.0 JSON-RPC) but whose answer the daemon never got before it
// stopped: after the restart the daemon asks the remote (ListTasks by the
// task's context), finds it, records the acceptance and follows it to its
// result. No operator, and the remote got it once.
func TestRestartSettlesATaskTheRemoteHas(t *testing.T) {
	w := start(t)
	node := remotetest.NodeRemote(t, "v1")
	p := startCutProxy(t, node)
	w.register("coder@remote", p.srv.URL+"/.well-known/agent-card.json", 2)
	w.waitRemote("coder@remote", "healthy", func(st *mailbox.RemoteStatus) bool { return st.State == mailbox.RemoteHealthy })

	id := newTaskID()
	p.set(id, "hold")
	w.sendID(id, "planner@local", "coder@remote", "slow work", false)
	waitFor(t, "the send held", func() bool { return p.cuts(id) == 1 && seenMessages(t, node, id) == 1 }, func() string { return w.logs.String() })
	w.d.Stop()
	p.set(id, "")
	w.d.Restart()
	dl := w.waitDelivery("coder@remote", id, "adopted", func(d mailbox.DeliveryStatus) bool { return d.RemoteTaskID != "" })
	if dl.State == mailbox.DeliveryUnknown || dl.State == mailbox.DeliverySending {
		t.Fatalf("delivery %+v, want the remote's task followed", dl)
	}
	remotetest.Control(t, node, "release")
	if res := w.result("planner@local", id); res.Status != mailbox.StatusOK || text(res) != "slowly done" {
		t.Fatalf("result %+v", res)
	}
	if rec := w.record(id); rec.Remote == nil || rec.Remote.TaskID != dl.RemoteTaskID || rec.Remote.ContextID != a2aremote.ContextIDFor(id) {
		t.Fatalf("record's remote %+v, want the acceptance recorded with the remote's task %s", rec.Remote, dl.RemoteTaskID)
	}
	if n := seenMessages(t, node, id); n != 1 {
		t.Fatalf("the remote got the task %d times, want once", n)
	}
	if n := w.d.Metric(t, `mailroom_remote_settles_total{answer="found"}`); n != 1 {
		t.Errorf(`mailroom_remote_settles_total{answer="found"} = %v, want 1`, n)
	}
}

// A task that is not idempotent, whose send never reached the remote
// before the daemon stopped: after the restart the remote lists no task
// of its context (and has shown that it keeps the context it is sent), so
// the daemon sends it: it never arrived, so this is no second send.
func TestRestartSendsATaskTheRemoteNeverGot(t *testing.T) {
	w := start(t)
	node := remotetest.NodeRemote(t, "v1")
	p := startCutProxy(t, node)
	w.register("coder@remote", p.srv.URL+"/.well-known/agent-card.json", 2)
	// A task the remote finished, its result not yet drained: it shows
	// the remote keeps the context id it is sent.
	first := w.send("planner@local", "coder@remote", "hello", false)
	waitFor(t, "the first task's result", func() bool { return w.record(first).State == mailbox.TaskResultPending }, func() string { return w.logs.String() })

	id := newTaskID()
	p.set(id, "swallow")
	w.sendID(id, "planner@local", "coder@remote", "fix it", false)
	waitFor(t, "the send swallowed", func() bool { return p.cuts(id) == 1 }, func() string { return w.logs.String() })
	w.d.Stop()
	p.set(id, "")
	w.d.Restart()
	if res := w.result("planner@local", id); res.Status != mailbox.StatusOK || text(res) != "fix it" {
		t.Fatalf("result %+v", res)
	}
	if n := seenMessages(t, node, id); n != 1 {
		t.Fatalf("the remote got the task %d times, want once", n)
	}
	if n := w.d.Metric(t, `mailroom_remote_settles_total{answer="absent"}`); n != 1 {
		t.Errorf(`mailroom_remote_settles_total{answer="absent"} = %v, want 1`, n)
	}
	if res := w.result("planner@local", first); res.Status != mailbox.StatusOK {
		t.Fatalf("first result %+v", res)
	}
}

// A send cut before its answer (no restart): the remote is asked, and the
// task it holds is followed rather than sent again, even when idempotent.
func TestCutSendIsSettledWithoutAResend(t *testing.T) {
	w := start(t)
	node := remotetest.NodeRemote(t, "v1")
	p := startCutProxy(t, node)
	w.register("coder@remote", p.srv.URL+"/.well-known/agent-card.json", 2)
	w.waitRemote("coder@remote", "healthy", func(st *mailbox.RemoteStatus) bool { return st.State == mailbox.RemoteHealthy })
	id := newTaskID()
	p.set(id, "hold")
	w.sendID(id, "planner@local", "coder@remote", "slow work", true)
	waitFor(t, "the send held", func() bool { return p.cuts(id) == 1 && seenMessages(t, node, id) == 1 }, func() string { return w.logs.String() })
	p.set(id, "")
	p.breakHeld()
	w.waitDelivery("coder@remote", id, "adopted", func(d mailbox.DeliveryStatus) bool { return d.RemoteTaskID != "" })
	remotetest.Control(t, node, "release")
	if res := w.result("planner@local", id); res.Status != mailbox.StatusOK || text(res) != "slowly done" {
		t.Fatalf("result %+v", res)
	}
	if n := seenMessages(t, node, id); n != 1 {
		t.Fatalf("the remote got the idempotent task %d times, want once", n)
	}
}

// An idempotent task whose every send fails after it may have reached a
// v0.3 remote (which cannot be asked whether it holds it) is sent again
// with backoff at most remote_resend_max times; then its lease is left to
// the operator, saying why. The count and the cap show in the delivery
// and in /metrics.
func TestResendsAreCapped(t *testing.T) {
	w := startWith(t, func(o *outbound.Options) { o.ResendMax = 2 })
	s, srv := startTestRemote(t, "Flaky", "fails after taking the message", false, func(rw http.ResponseWriter, r *http.Request, c call) {
		http.Error(rw, "upstream timed out after taking the message", http.StatusGatewayTimeout)
	})
	w.register("flaky@remote", srv.URL, 1)
	id := w.send("planner@local", "flaky@remote", "read the file", true)
	dl := w.waitDelivery("flaky@remote", id, "left for the operator", func(d mailbox.DeliveryStatus) bool { return d.State == mailbox.DeliveryUnknown })
	if n := s.times(id); n != 3 {
		t.Fatalf("the remote got the task %d times, want 3 (the send and 2 resends)", n)
	}
	if dl.Resends != 2 || dl.ResendMax != 2 || !strings.Contains(dl.LastError, "remote_resend_max 2") || !strings.Contains(dl.LastError, "A2A v0.3") {
		t.Fatalf("delivery %+v, want 2 resends of 2, the last error naming remote_resend_max and why the remote could not be asked", dl)
	}
	if n := w.d.Metric(t, "mailroom_remote_resends_total"); n != 2 {
		t.Errorf("mailroom_remote_resends_total = %v, want 2", n)
	}
	if n := w.d.Metric(t, "mailroom_remote_resend_max"); n != 2 {
		t.Errorf("mailroom_remote_resend_max = %v, want 2", n)
	}
	if e := w.entry(id); e == nil || e.State != mailbox.TaskInFlight || e.LeaseID != dl.LeaseID {
		t.Fatalf("queue entry %+v, want its lease left for the operator", e)
	}
}

// The A2A caller of a task whose delivery is left to the operator sees
// why in the task's status message; its state stays working.
func TestUnknownDeliveryShowsInTheA2AStatus(t *testing.T) {
	w := start(t)
	_, srv := startTestRemote(t, "Flaky", "fails after taking the message", false, func(rw http.ResponseWriter, r *http.Request, c call) {
		http.Error(rw, "upstream timed out after taking the message", http.StatusGatewayTimeout)
	})
	w.register("flaky@remote", srv.URL, 1)
	e := w.edge("flaky@remote")
	sent := w.edgeSend(e, "charge the card")
	w.waitDelivery("flaky@remote", sent.ID, "unknown", func(d mailbox.DeliveryStatus) bool { return d.State == mailbox.DeliveryUnknown })
	got, err := e.Get(w.ctx, sent.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != wire.StateWorking || !strings.Contains(got.StatusText(), "left to the operator") || !strings.Contains(got.StatusText(), "not idempotent") {
		t.Fatalf("the A2A caller sees %s %q, want working with a status message saying the delivery is left to the operator and why", got.State, got.StatusText())
	}
}

// A remote that comes back without an idempotent task it had accepted
// (its in-memory store restarted) is sent it again, a resend counted
// against remote_resend_max; a task that is not idempotent stays lost for
// the operator, and its A2A caller reads why in its status message.
func TestLostIdempotentTaskIsSentAgain(t *testing.T) {
	w := start(t)
	g := startGoRemote(t, "Go Coder", false)
	w.register("coder@remote", g.Srv.URL, 2)
	id := w.send("planner@local", "coder@remote", "slow work", true)
	e := w.edge("coder@remote")
	sent := w.edgeSend(e, "slow work too")
	for _, task := range []string{id, sent.ID} {
		w.waitDelivery("coder@remote", task, "followed", func(d mailbox.DeliveryStatus) bool { return d.State == mailbox.DeliveryPolling })
	}
	g.Restart(false)
	dl := w.waitDelivery("coder@remote", id, "sent again", func(d mailbox.DeliveryStatus) bool { return d.Resends == 1 && d.State == mailbox.DeliveryPolling })
	if dl.ResendMax != outbound.DefaultResendMax {
		t.Errorf("delivery %+v, want the cap shown", dl)
	}
	w.waitDelivery("coder@remote", sent.ID, "lost", func(d mailbox.DeliveryStatus) bool { return d.State == mailbox.DeliveryLost })
	got, err := e.Get(w.ctx, sent.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != wire.StateWorking || !strings.Contains(got.StatusText(), "lost this task") {
		t.Fatalf("the A2A caller of the lost task sees %s %q, want working with a status message saying the remote lost it", got.State, got.StatusText())
	}
	close(g.Executor().Release)
	if res := w.result("planner@local", id); res.Status != mailbox.StatusOK || text(res) != "slowly done" {
		t.Fatalf("result %+v", res)
	}
	if n := g.Executor().Sent(id); n != 1 {
		t.Fatalf("the restarted remote got the task %d times, want once", n)
	}
}
