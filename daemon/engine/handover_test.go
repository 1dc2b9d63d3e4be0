package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/mailbox"
)

// A drain waiting for the new sender is woken by a hand-over of a result
// to it; an unknown new sender is refused naming the close match unless
// new_agent confirms it; the hand-over survives a restart.
func TestHandOverWakesTheNewSendersDrain(t *testing.T) {
	dir := t.TempDir()
	e := open(t, dir, Options{AgentsInterval: -1})
	bg := context.Background()
	id := mustSend(t, e, "coder@local", "worker@local")
	mustSend(t, e, "reviewer@local", "worker@local") // reviewer@local is known
	task, lease := mustLease(t, e, "worker@local")
	if task.ID != id {
		t.Fatalf("leased %s, want %s", task.ID, id)
	}
	if err := e.PostResult(bg, mailbox.Result{TaskID: id, Status: mailbox.StatusOK, LeaseID: lease.LeaseID}); err != nil {
		t.Fatal(err)
	}
	req := func(to string, newAgent bool) mailbox.RepairRequest {
		return mailbox.RepairRequest{TaskID: id, Reason: "coder@local is gone",
			Command: mailbox.RepairCommand{Action: mailbox.ActionHandOver, SentBy: "coder@local", Sender: to, NewAgent: newAgent}}
	}
	_, err := e.Repair(bg, req("reveiwer", false))
	if mailbox.ErrorCode(err) != mailbox.CodeInvalid || !strings.Contains(err.Error(), `command.sender: got "reveiwer", an agent the mailbox does not know`) ||
		!strings.Contains(err.Error(), "did you mean reviewer@local") {
		t.Fatalf("a hand-over to a typo: %v", err)
	}

	got := make(chan []mailbox.PendingResult, 1)
	go func() {
		rs, err := e.DrainN(bg, "reviewer@local", 10, mailbox.MaxWaitMs*time.Millisecond)
		if err != nil {
			t.Error(err)
		}
		got <- rs
	}()
	for e.waiting.count() == 0 {
		time.Sleep(time.Millisecond)
	}
	out, err := e.Repair(bg, req("reviewer@local", false))
	if err != nil || out.Action != mailbox.OutcomeHandedOver || out.Sender != "reviewer@local" || out.State != mailbox.TaskResultPending {
		t.Fatalf("hand-over = %+v, %v", out, err)
	}
	if rs := <-got; len(rs) != 1 || rs[0].TaskID != id || rs[0].Sender != "reviewer@local" {
		t.Fatalf("reviewer@local's waiting drain got %+v, want the result handed over", rs)
	}

	// A second task, handed to an agent nobody knew, confirmed; kept
	// across a restart.
	id2 := mustSend(t, e, "coder@local", "worker2@local")
	_, lease = mustLease(t, e, "worker2@local")
	if err := e.PostResult(bg, mailbox.Result{TaskID: id2, Status: mailbox.StatusOK, LeaseID: lease.LeaseID}); err != nil {
		t.Fatal(err)
	}
	id = id2
	if _, err := e.Repair(bg, req("desk@local", true)); err != nil {
		t.Fatal(err)
	}
	e.Close()
	e = open(t, dir, Options{AgentsInterval: -1})
	r, err := e.Drain(bg, "desk@local")
	if err != nil || r == nil || r.TaskID != id2 {
		t.Fatalf("desk@local drained %+v, %v after a restart", r, err)
	}
}
