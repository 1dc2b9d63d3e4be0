package outbound

import (
	"context"
	"testing"
	"time"

	"github.com/mailroom/mailroom/daemon/engine"
	"github.com/mailroom/mailroom/daemon/store/logstore"
	"github.com/mailroom/mailroom/mailbox"
)

// A delivery that recovery follows is listed as accepted, with the
// remote's task id, from the moment it is listed: never as sending, which
// tells the operator watching a restart that the task is sent again. (The
// kill -9 suite of remote delivery saw it listed as sending.)
func TestARecoveredAcceptedDeliveryIsListedAcceptedAtOnce(t *testing.T) {
	st, err := logstore.Open(t.TempDir(), logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.Open(st, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	ctx, agent := t.Context(), "coder@remote"
	sent, err := eng.Send(ctx, mailbox.Task{Sender: "planner@local", Recipient: agent, IntentText: "charge the card"})
	if err != nil {
		t.Fatal(err)
	}
	leased, err := eng.LeaseN(mailbox.WithPrincipal(ctx, agent), agent, 1, time.Millisecond)
	if err != nil || len(leased) != 1 {
		t.Fatalf("leasing: %v, %d tasks", err, len(leased))
	}
	lease := leased[0].Lease.LeaseID
	if err := eng.Remote().Accepted(ctx, sent.TaskID, lease, mailbox.RemoteRef{TaskID: "remote-7", Binding: mailbox.BindingJSONRPC03}); err != nil {
		t.Fatal(err)
	}

	d := New(eng, eng.Remote(), Options{})
	r := newRemote(d, mailbox.RegisteredAgent{Agent: agent, Card: mailbox.AgentCard{Remote: &mailbox.RemoteSpec{URL: "http://127.0.0.1:9/", Concurrency: 1}}})
	rctx, cancel := context.WithCancel(ctx)
	defer r.wg.Wait()
	defer cancel()
	r.recover(rctx)
	got := r.status().Deliveries
	if len(got) != 1 || got[0].LeaseID != lease || got[0].State != mailbox.DeliveryAccepted || got[0].RemoteTaskID != "remote-7" {
		t.Fatalf("deliveries after recovery %+v, want the lease %s accepted as remote-7", got, lease)
	}
}
