package outbound_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/daemon/outbound"
	"github.com/mailroom/mailroom/mailbox"
)

// startSilentStreamer starts a v0.3 JSON-RPC remote whose card says it
// streams. The first time it sees a message it opens the stream (status
// 200, the event-stream headers) and then sends nothing until the caller
// hangs up; a message it has seen before gets its task, completed, as the
// stream's one event.
func startSilentStreamer(t *testing.T) (*seen, *httptest.Server) {
	return startTestRemote(t, "mute", "opens its stream and says nothing", true, func(w http.ResponseWriter, r *http.Request, c call) {
		if c.Method != "message/stream" {
			http.Error(w, fmt.Sprintf("want message/stream, got %q", c.Method), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		if c.N == 1 {
			<-r.Context().Done()
			return
		}
		ev, _ := json.Marshal(completedTask(c.ID, c.MessageID))
		fmt.Fprintf(w, "data: %s\n\n", ev)
	})
}

// A remote that opens its stream and then says nothing does not hold the
// lease for ever: past the call bound the stream is cut, and as after a
// send that may have arrived, a task that is not idempotent is left for
// the operator (unknown, saying why, never sent again) while an
// idempotent one is sent again with the same messageId and completes.
func TestASilentStreamIsCutAtTheCallBound(t *testing.T) {
	w := startWith(t, func(o *outbound.Options) { o.CallTimeout = 300 * time.Millisecond })
	remote, srv := startSilentStreamer(t)
	w.register("mute@remote", srv.URL+"/", 2)

	unsafe := w.send("planner@local", "mute@remote", "charge the card", false)
	d := w.waitDelivery("mute@remote", unsafe, "left for the operator", func(d mailbox.DeliveryStatus) bool { return d.State == mailbox.DeliveryUnknown })
	if !strings.Contains(d.LastError, "sent nothing on its stream within 300ms") {
		t.Errorf("the unknown delivery says %q; want it to say the stream stayed silent", d.LastError)
	}
	if e := w.entry(unsafe); e == nil || e.State != mailbox.TaskInFlight {
		t.Fatalf("the task is %+v, want in flight under its lease for the operator", e)
	}

	safe := w.send("planner@local", "mute@remote", "recompute the index", true)
	if res := w.result("planner@local", safe); res.Status != mailbox.StatusOK || text(res) != "done" {
		t.Fatalf("the idempotent task's result = %+v", res)
	}
	if remote.times(safe) != 2 {
		t.Errorf("the remote saw the idempotent task %d times, want twice (cut, then sent again with the same messageId)", remote.times(safe))
	}
	if remote.times(unsafe) != 1 {
		t.Errorf("the remote saw the non-idempotent task %d times, want once", remote.times(unsafe))
	}
}
