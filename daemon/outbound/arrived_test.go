package outbound_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mailroom/mailroom/mailbox"
)

// startCutRemote starts a v0.3 JSON-RPC remote that takes each message
// and then drops the connection without answering, the first time it
// sees the message's id (a crash right after it started the work); a
// message it has seen before is answered with its task, completed.
func startCutRemote(t *testing.T) (*seen, *httptest.Server) {
	return startTestRemote(t, "cutter", "drops its first answer", false, func(w http.ResponseWriter, r *http.Request, c call) {
		if c.N == 1 {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		writeJSON(w, completedTask(c.ID, c.MessageID))
	})
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
