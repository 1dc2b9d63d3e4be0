package outbound_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/mailroom/mailroom/daemon/outbound"
	"github.com/mailroom/mailroom/mailbox"
)

// A send that fails after it may have reached the remote (here: the
// remote takes the message and answers after the call's timeout) is not
// sent again when the task is not idempotent: its lease is left for the
// operator, marked unknown, as after a restart. An idempotent one is sent
// again, with the same messageId.
func TestASendThatMayHaveReachedTheRemoteIsNotSentAgainUnlessIdempotent(t *testing.T) {
	received, srv := startTestRemote(t, "Slow Coder", "answers too late", false, func(w http.ResponseWriter, r *http.Request, c call) {
		// The remote works on it, and answers after the daemon gave up.
		select {
		case <-r.Context().Done():
		case <-time.After(2 * time.Second):
		}
		http.Error(w, "too late", http.StatusGatewayTimeout)
	})
	count := received.times
	w := startWith(t, func(o *outbound.Options) { o.CallTimeout = 100 * time.Millisecond; o.FailuresToOpen = 100 })
	w.register("coder@remote", srv.URL, 2)
	once := w.send("planner@local", "coder@remote", "charge the card", false)
	twice := w.send("planner@local", "coder@remote", "read the file", true)

	dl := w.waitDelivery("coder@remote", once, "unknown", func(d mailbox.DeliveryStatus) bool { return d.State == mailbox.DeliveryUnknown })
	waitFor(t, "the idempotent task sent again", func() bool { return count(twice) >= 2 }, func() string { return w.logs.String() })
	if n := count(once); n != 1 {
		t.Fatalf("the remote received the task that is not idempotent %d times, want once", n)
	}
	if e := w.entry(once); e == nil || e.State != mailbox.TaskInFlight || e.LeaseID != dl.LeaseID {
		t.Fatalf("queue entry %+v, want its lease left for the operator", e)
	}
	if _, err := w.c.Repair(w.ctx, mailbox.RepairRequest{TaskID: once, Reason: "the card was charged once",
		Command: mailbox.RepairCommand{Action: mailbox.ActionForceError, LeaseID: dl.LeaseID, Message: "check the card"}}); err != nil {
		t.Fatalf("force error: %v", err)
	}
	w.waitRemote("coder@remote", "the unknown delivery gone", func(st *mailbox.RemoteStatus) bool { return delivery(st, once) == nil })
	if res := w.result("planner@local", once); res.Status != mailbox.StatusError || res.ErrorMessage != "check the card" {
		t.Fatalf("result %+v, want the operator's error", res)
	}
}
