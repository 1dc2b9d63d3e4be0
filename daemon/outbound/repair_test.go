package outbound_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	a2aremote "github.com/mailroom/mailroom/daemon/a2a/remote"
	"github.com/mailroom/mailroom/daemon/a2a/wire"
	"github.com/mailroom/mailroom/mailbox"
)

// edge is an A2A sender's client of the daemon's edge for agent.
func (w *world) edge(agent string) *a2aremote.Client {
	w.t.Helper()
	r, _, err := a2aremote.Resolve(w.ctx, nil, a2aremote.Spec{URL: w.d.URL() + "/agents/" + agent + "/"}, a2aremote.Auth{})
	if err != nil {
		w.t.Fatalf("resolving the edge's card of %s: %v", agent, err)
	}
	return r
}

// edgeSend sends intent to the edge without blocking, as an A2A sender.
func (w *world) edgeSend(e *a2aremote.Client, intent string) a2aremote.Task {
	w.t.Helper()
	msg, err := a2aremote.MessageFor(mailbox.Task{ID: uuid.NewString(), IntentText: intent}, nil)
	if err != nil {
		w.t.Fatal(err)
	}
	got, err := e.Send(w.ctx, msg, false)
	if err != nil || got.ID == "" {
		w.t.Fatalf("sending %q through the edge: %+v, %v", intent, got, err)
	}
	return got
}

// edgePoll reads the edge's task until its state satisfies done.
func (w *world) edgePoll(e *a2aremote.Client, id string, done func(a2aremote.Task) bool) a2aremote.Task {
	w.t.Helper()
	var got a2aremote.Task
	waitFor(w.t, "the edge's task "+id, func() bool {
		var err error
		if got, err = e.Get(w.ctx, id); err != nil {
			w.t.Fatalf("Get %s from the edge: %v", id, err)
		}
		return done(got)
	}, func() string { return got.State })
	return got
}

// An A2A sender, through the edge, gets the remote's answer: the message
// it sent goes on to the remote.
func TestA2ASenderGetsTheRemoteResult(t *testing.T) {
	w := start(t)
	g := startGoRemote(t, "Go Coder", false)
	w.register("coder@remote", g.Srv.URL, 2)
	e := w.edge("coder@remote")
	sent := w.edgeSend(e, "hello from A2A")
	got := w.edgePoll(e, sent.ID, a2aremote.Task.Terminal)
	res, _ := got.Outcome()
	if got.State != wire.StateCompleted || len(res.Content) == 0 || !strings.Contains(res.Content[0].Text, "hello from A2A") {
		t.Fatalf("the edge's task %+v, want completed with the remote's echo", got)
	}
}

// An A2A cancel of a task the remote accepted reaches the remote.
func TestCancelReachesTheRemote(t *testing.T) {
	w := start(t)
	g := startGoRemote(t, "Go Coder", false)
	w.register("coder@remote", g.Srv.URL, 2)
	e := w.edge("coder@remote")
	sent := w.edgeSend(e, "hang on")
	dl := w.waitDelivery("coder@remote", sent.ID, "accepted", func(d mailbox.DeliveryStatus) bool { return d.RemoteTaskID != "" })
	if _, err := e.Cancel(w.ctx, sent.ID); err != nil {
		t.Fatalf("canceling through the edge: %v", err)
	}
	waitFor(t, "the remote's executor canceled", func() bool { return g.Executor().WasCanceled(dl.RemoteTaskID) }, func() string { return w.logs.String() })
	w.waitRemote("coder@remote", "the delivery gone", func(st *mailbox.RemoteStatus) bool { return delivery(st, sent.ID) == nil && st.InFlight == 0 })
	if got, _ := e.Get(w.ctx, sent.ID); got.State != wire.StateCanceled {
		t.Fatalf("the edge's task is %s, want canceled", got.State)
	}
}

// A remote killed mid-task comes back without it: the lease stays,
// marked lost, and an operator's requeue to a healthy agent repairs it.
func TestRemoteThatLostATaskIsRepairedByTheOperator(t *testing.T) {
	w := start(t)
	g := startGoRemote(t, "Go Coder", false)
	w.register("coder@remote", g.Srv.URL, 1)
	id := w.send("planner@local", "coder@remote", "hang on", false)
	w.waitDelivery("coder@remote", id, "followed", func(d mailbox.DeliveryStatus) bool { return d.State == mailbox.DeliveryPolling })
	g.Restart(false)
	dl := w.waitDelivery("coder@remote", id, "lost", func(d mailbox.DeliveryStatus) bool { return d.State == mailbox.DeliveryLost })
	if !strings.Contains(dl.LastError, "lost") {
		t.Errorf("delivery %+v, want it to say the remote lost the task", dl)
	}
	e := w.entry(id)
	if e == nil || e.State != mailbox.TaskInFlight || e.LeasedTo != "coder@remote" || e.LeaseID != dl.LeaseID {
		t.Fatalf("queue entry %+v, want the lease held by coder@remote, left for the operator", e)
	}
	// A lost delivery holds no slot: the remote takes new work.
	next := w.send("planner@local", "coder@remote", "hello again", false)
	if res := w.result("planner@local", next); res.Status != mailbox.StatusOK {
		t.Fatalf("the next task's result %+v", res)
	}
	w.requeueTo(id, dl.LeaseID, "worker@local", "done here")
}

// requeueTo is the operator's repair of a remote's lease: the task is
// requeued to agent, an agent that polls, which leases it and answers
// text; the remote's delivery of it ends and the sender gets the answer.
func (w *world) requeueTo(id, leaseID, agent, text string) {
	w.t.Helper()
	rec := w.record(id)
	if _, err := w.c.Repair(w.ctx, mailbox.RepairRequest{TaskID: id, Reason: "the remote cannot finish it",
		Command: mailbox.RepairCommand{Action: mailbox.ActionRequeue, LeaseID: leaseID, DuplicateRisk: mailbox.RiskOperatorAccepted, Recipient: agent, NewAgent: true}}); err != nil {
		w.t.Fatalf("requeue: %v", err)
	}
	w.waitRemote(rec.Task.Recipient, "the repaired delivery gone", func(st *mailbox.RemoteStatus) bool { return delivery(st, id) == nil })
	got, err := w.c.LeaseN(w.ctx, agent, 1, 5*time.Second)
	if err != nil || len(got) != 1 || got[0].Task.ID != id {
		w.t.Fatalf("%s leased %+v, %v; want the repaired task", agent, got, err)
	}
	if err := w.c.PostResult(w.ctx, mailbox.Result{TaskID: id, LeaseID: got[0].Lease.LeaseID, Status: mailbox.StatusOK,
		Content: []mailbox.Content{{Type: mailbox.ContentText, Text: text}}}); err != nil {
		w.t.Fatal(err)
	}
	if res := w.result(rec.Task.Sender, id); res.Status != mailbox.StatusOK || res.Content[0].Text != text {
		w.t.Fatalf("result %+v, want %q from %s", res, text, agent)
	}
}

// A remote that keeps failing opens its circuit: no task is leased for
// it (they stay queued); it closes once a probe is answered, and the
// tasks are delivered.
func TestCircuitOpensAndCloses(t *testing.T) {
	w := start(t)
	g := startGoRemote(t, "Go Coder", false)
	w.register("coder@remote", g.Srv.URL, 2)
	w.waitRemote("coder@remote", "healthy", func(st *mailbox.RemoteStatus) bool { return st.State == mailbox.RemoteHealthy })
	g.Down.Store(true)
	a := w.send("planner@local", "coder@remote", "first", false)
	st := w.waitRemote("coder@remote", "circuit open", func(st *mailbox.RemoteStatus) bool { return st.State == mailbox.RemoteCircuitOpen })
	if !strings.Contains(st.LastError, "503") || st.NextProbeMs == 0 {
		t.Errorf("status %+v, want the last error and the next probe", st)
	}
	if n := w.d.Metric(t, "mailroom_remote_circuits_open"); n != 1 {
		t.Errorf("mailroom_remote_circuits_open = %v, want 1", n)
	}
	b := w.send("planner@local", "coder@remote", "second", false)
	if e := w.entry(b); e == nil || e.State != mailbox.TaskQueued {
		t.Fatalf("task sent while the circuit is open: %+v, want it queued", e)
	}
	g.Down.Store(false)
	for _, id := range []string{a, b} {
		if res := w.result("planner@local", id); res.Status != mailbox.StatusOK {
			t.Fatalf("result %+v", res)
		}
	}
	w.waitRemote("coder@remote", "healthy again", func(st *mailbox.RemoteStatus) bool { return st.State == mailbox.RemoteHealthy })
	if n := w.d.Metric(t, "mailroom_remote_circuits_open"); n != 0 {
		t.Errorf("mailroom_remote_circuits_open = %v, want 0", n)
	}
	// A delivery is counted once its result is posted, which the sender
	// may drain first.
	waitFor(t, "both deliveries counted ok", func() bool { return w.d.Metric(t, `mailroom_remote_deliveries_total{outcome="ok"}`) == 2 },
		func() string { return fmt.Sprint(w.d.Metric(t, `mailroom_remote_deliveries_total{outcome="ok"}`)) })
}

// After a restart, an accepted task is followed, never sent again.
func TestRestartFollowsAnAcceptedTask(t *testing.T) {
	w := start(t)
	g := startGoRemote(t, "Go Coder", false)
	w.register("coder@remote", g.Srv.URL, 1)
	id := w.send("planner@local", "coder@remote", "slow work", false)
	w.waitDelivery("coder@remote", id, "accepted", func(d mailbox.DeliveryStatus) bool { return d.RemoteTaskID != "" })
	w.d.Restart()
	w.waitDelivery("coder@remote", id, "followed after the restart", func(d mailbox.DeliveryStatus) bool { return d.State == mailbox.DeliveryPolling })
	close(g.Executor().Release)
	if res := w.result("planner@local", id); res.Status != mailbox.StatusOK || text(res) != "slowly done" {
		t.Fatalf("result %+v", res)
	}
	if n := g.Executor().Sent(id); n != 1 {
		t.Fatalf("the remote got the task %d times, want once", n)
	}
}

// After a restart, a task the remote may or may not have (the send never
// got an answer), at a v0.3 remote (which cannot be asked whether it
// holds it), is sent again if idempotent, else left for the operator,
// marked unknown, saying why it could not be settled.
func TestRestartWithUnansweredSends(t *testing.T) {
	w := start(t)
	g := startGoRemote(t, "Go Coder", false)
	w.register("coder@remote", g.Srv.URL, 2)
	w.waitRemote("coder@remote", "healthy", func(st *mailbox.RemoteStatus) bool { return st.State == mailbox.RemoteHealthy })
	g.Down.Store(true)
	once := w.send("planner@local", "coder@remote", "charge the card", false)
	twice := w.send("planner@local", "coder@remote", "read the file", true)
	for _, id := range []string{once, twice} {
		w.waitDelivery("coder@remote", id, "retried", func(d mailbox.DeliveryStatus) bool { return d.State == mailbox.DeliveryRetrying })
	}
	w.d.Restart()
	// While the remote is still down, the leases are shown, waiting to
	// ask it.
	for _, id := range []string{once, twice} {
		w.waitDelivery("coder@remote", id, "checking while the remote is down", func(d mailbox.DeliveryStatus) bool {
			return d.State == mailbox.DeliveryChecking && d.LastError == "waiting for the remote's card"
		})
	}
	g.Down.Store(false)
	if res := w.result("planner@local", twice); res.Status != mailbox.StatusOK || !strings.Contains(text(res), "read the file") {
		t.Fatalf("the idempotent task's result %+v", res)
	}
	dl := w.waitDelivery("coder@remote", once, "unknown", func(d mailbox.DeliveryStatus) bool { return d.State == mailbox.DeliveryUnknown })
	if !strings.Contains(dl.LastError, "A2A v0.3, which has no way to list tasks") || !strings.Contains(dl.LastError, "not idempotent") {
		t.Errorf("the unknown delivery's last error %q does not say why it could not be settled", dl.LastError)
	}
	if e := w.entry(once); e == nil || e.State != mailbox.TaskInFlight || e.LeaseID != dl.LeaseID {
		t.Fatalf("queue entry %+v, want its lease left for the operator", e)
	}
	if n := g.Executor().Sent(once); n != 0 {
		t.Fatalf("the non-idempotent task reached the remote %d times after the restart, want never", n)
	}
	if _, err := w.c.Repair(w.ctx, mailbox.RepairRequest{TaskID: once, Reason: "the card was not charged",
		Command: mailbox.RepairCommand{Action: mailbox.ActionForceError, LeaseID: dl.LeaseID, Message: "not sent: check the card"}}); err != nil {
		t.Fatalf("force error: %v", err)
	}
	w.waitRemote("coder@remote", "the unknown delivery gone", func(st *mailbox.RemoteStatus) bool { return delivery(st, once) == nil })
	if res := w.result("planner@local", once); res.Status != mailbox.StatusError {
		t.Fatalf("result %+v, want the operator's error", res)
	}
}

// An operator's move or force-error of a task the remote is working on
// ends its delivery and cancels the remote's task.
func TestOperatorRepairsCancelTheRemoteTask(t *testing.T) {
	w := start(t)
	g := startGoRemote(t, "Go Coder", false)
	w.register("coder@remote", g.Srv.URL, 2)
	moved := w.send("planner@local", "coder@remote", "hang on", false)
	forced := w.send("planner@local", "coder@remote", "hang on too", false)
	m := w.waitDelivery("coder@remote", moved, "accepted", func(d mailbox.DeliveryStatus) bool { return d.RemoteTaskID != "" })
	f := w.waitDelivery("coder@remote", forced, "accepted", func(d mailbox.DeliveryStatus) bool { return d.RemoteTaskID != "" })

	if _, err := w.c.Repair(w.ctx, mailbox.RepairRequest{TaskID: moved, Reason: "another agent will do it",
		Command: mailbox.RepairCommand{Action: mailbox.ActionRequeue, LeaseID: m.LeaseID, DuplicateRisk: mailbox.RiskOperatorAccepted, Recipient: "worker@local", NewAgent: true}}); err != nil {
		t.Fatalf("move: %v", err)
	}
	if _, err := w.c.Repair(w.ctx, mailbox.RepairRequest{TaskID: forced, Reason: "not needed",
		Command: mailbox.RepairCommand{Action: mailbox.ActionForceError, LeaseID: f.LeaseID, Message: "not needed any more"}}); err != nil {
		t.Fatalf("force error: %v", err)
	}
	for _, id := range []string{m.RemoteTaskID, f.RemoteTaskID} {
		waitFor(t, "the remote task "+id+" canceled", func() bool { return g.Executor().WasCanceled(id) }, func() string { return w.logs.String() })
	}
	w.waitRemote("coder@remote", "both deliveries gone", func(st *mailbox.RemoteStatus) bool { return len(st.Deliveries) == 0 && st.InFlight == 0 })
	if res := w.result("planner@local", forced); res.Status != mailbox.StatusError || res.ErrorMessage != "not needed any more" {
		t.Fatalf("result %+v, want the operator's", res)
	}
	if e := w.entry(moved); e == nil || e.State != mailbox.TaskQueued || e.Task.Recipient != "worker@local" {
		t.Fatalf("entry %+v, want the task queued for worker@local", e)
	}
}
