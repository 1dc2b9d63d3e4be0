package auth_test

import (
	"context"
	"errors"
	"testing"

	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/daemon/engine"
	"github.com/mailroom/mailroom/daemon/store/logstore"
	"github.com/mailroom/mailroom/mailbox"
)

// guarded opens a real engine on a log in a temporary directory and puts
// the guard in front of it, as the daemon does.
func guarded(t *testing.T) (mailbox.Service, *engine.Engine) {
	t.Helper()
	st, err := logstore.Open(t.TempDir(), logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.Open(st, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	return auth.Guard(eng), eng
}

// as returns a context whose caller is principal holding caps.
func as(t *testing.T, principal string, caps ...string) context.Context {
	t.Helper()
	a, err := auth.New([]auth.Token{{Principal: principal, Token: "t-" + principal, Caps: caps}})
	if err != nil {
		t.Fatal(err)
	}
	id, err := a.Authenticate("Bearer t-" + principal)
	if err != nil {
		t.Fatal(err)
	}
	return auth.WithIdentity(context.Background(), id)
}

func wantCode(t *testing.T, what string, err error, code string) {
	t.Helper()
	if got := mailbox.ErrorCode(err); got != code {
		t.Fatalf("%s: got %v (code %q), want code %q", what, err, got, code)
	}
}

// TestGuardHoldsTheWholePolicy drives the guarded service in process, as
// the demo, a protocol edge or a batch route would: every call is decided
// by the caller's identity, with no HTTP layer in between.
func TestGuardHoldsTheWholePolicy(t *testing.T) {
	svc, eng := guarded(t)
	bg := context.Background()
	planner := as(t, "planner@local", "a2a.send.worker@local", auth.CapDrain)
	worker := as(t, "worker@local", auth.CapRecv, "a2a.respond.planner@local")
	stranger := as(t, "stranger@local", auth.CapRecv, "a2a.respond.someone@local")
	reader := as(t, "reader", auth.CapRead)
	operator := as(t, "operator", auth.CapRequeue)

	// Send: as yourself, to a recipient your token names.
	if _, err := svc.Send(planner, mailbox.Task{Sender: "mallory@local", Recipient: "worker@local", IntentText: "x"}); true {
		wantCode(t, "send as someone else", err, mailbox.CodeForbidden)
	}
	if _, err := svc.Send(planner, mailbox.Task{Sender: "planner@local", Recipient: "other@local", IntentText: "x"}); true {
		wantCode(t, "send to a recipient the token does not name", err, mailbox.CodeForbidden)
	}
	// Bad input is a 400 before missing rights are a 403.
	if _, err := svc.Send(reader, mailbox.Task{Sender: "Bad Sender", Recipient: "worker@local", IntentText: "x"}); true {
		wantCode(t, "malformed sender", err, mailbox.CodeInvalid)
	}
	sent, err := svc.Send(planner, mailbox.Task{Sender: "planner@local", Recipient: "worker@local", IntentText: "index the docs"})
	if err != nil {
		t.Fatal(err)
	}

	// Lease: a caller without a2a.admin leases only its own tasks,
	// whatever it asks for.
	if task, _, err := svc.Lease(stranger, "worker@local"); err != nil || task != nil {
		t.Fatalf("a stranger leasing worker@local's tasks got %v, %v; want nothing (its own queue is empty)", task, err)
	}
	if _, _, err := svc.Lease(reader, ""); true {
		wantCode(t, "lease without a2a.recv", err, mailbox.CodeForbidden)
	}
	task, lease, err := svc.Lease(worker, "")
	if err != nil || task == nil || task.ID != sent.TaskID {
		t.Fatalf("the worker's lease: %v %v", task, err)
	}

	// Results: only for tasks from senders the token may answer; a made-up
	// task id is a 404 before any capability is looked at.
	res := mailbox.Result{TaskID: task.ID, Status: mailbox.StatusOK, LeaseID: lease.LeaseID}
	wantCode(t, "a result for planner@local's task from a stranger", svc.PostResult(stranger, res), mailbox.CodeForbidden)
	wantCode(t, "a result for a made-up task", svc.PostResult(stranger, mailbox.Result{TaskID: "0b7a5c1e-3d2f-4a6b-9c8d-7e6f5a4b3c2d", Status: mailbox.StatusOK}), mailbox.CodeNotFound)

	// Reads and repairs need their capabilities.
	for name, call := range map[string]func(ctx context.Context) error{
		"queue":   func(ctx context.Context) error { _, err := svc.Queue(ctx, mailbox.QueueFilter{}); return err },
		"recent":  func(ctx context.Context) error { _, err := svc.RecentTasks(ctx, 0); return err },
		"results": func(ctx context.Context) error { _, err := svc.RecentResults(ctx, 0); return err },
		"audit":   func(ctx context.Context) error { _, err := svc.Audit(ctx, "", 0); return err },
		"task":    func(ctx context.Context) error { _, err := svc.Task(ctx, task.ID); return err },
		"dry run": func(ctx context.Context) error {
			_, err := svc.RetryStale(ctx, mailbox.DefaultRetryPolicy())
			return err
		},
		"subscribe": func(ctx context.Context) error { s, err := svc.Subscribe(ctx, nil); closeSub(s); return err },
		"agents":    func(ctx context.Context) error { _, err := svc.Agents(ctx); return err },
		"compact":   func(ctx context.Context) error { _, err := svc.Compact(ctx); return err },
		"force_error": func(ctx context.Context) error {
			_, err := svc.Repair(ctx, repair(task.ID, mailbox.ActionForceError))
			return err
		},
	} {
		wantCode(t, name+" by the worker", call(worker), mailbox.CodeForbidden)
	}
	if _, err := svc.Queue(reader, mailbox.QueueFilter{}); err != nil {
		t.Fatalf("a reader reading the queue: %v", err)
	}
	if _, err := svc.Repair(operator, repair(task.ID, mailbox.ActionForceError)); true {
		wantCode(t, "force_error with only a2a.repair.requeue", err, mailbox.CodeForbidden)
	}
	if out, err := svc.Repair(operator, repair(task.ID, mailbox.ActionRequeue)); err != nil || out.Action != mailbox.OutcomeRequeued {
		t.Fatalf("a requeue by the operator: %+v %v", out, err)
	}
	// The repair is audited under the operator's name.
	recs, err := eng.Audit(bg, task.ID, 0)
	if err != nil || len(recs) != 1 || recs[0].Principal != "operator" {
		t.Fatalf("audit after the requeue: %+v %v", recs, err)
	}

	// Without an identity (no tokens configured, or the daemon itself) the
	// caller may do everything.
	if _, err := svc.Compact(bg); err != nil {
		t.Fatalf("an unauthenticated compact: %v", err)
	}
	// Forbidden refusals change nothing.
	if c := eng.Stats().Counts; c.Queued != 1 || c.InFlight != 0 {
		t.Fatalf("counts after the refusals: %+v", c)
	}
}

func repair(taskID, action string) mailbox.RepairRequest {
	req := mailbox.RepairRequest{TaskID: taskID, Reason: "worker gone", Command: mailbox.RepairCommand{Action: action}}
	if action == mailbox.ActionRequeue {
		req.Command.DuplicateRisk = mailbox.RiskOperatorAccepted
	} else {
		req.Command.Message = "gave up"
	}
	return req
}

func closeSub(s mailbox.Subscription) {
	if s != nil {
		s.Close()
	}
}

// A forbidden error is a *mailbox.Error that names the capability.
func TestGuardNamesTheMissingCapability(t *testing.T) {
	svc, _ := guarded(t)
	_, err := svc.Compact(as(t, "reader", auth.CapRead))
	var e *mailbox.Error
	if !errors.As(err, &e) || e.Details == nil || e.Details.Capability != auth.CapCompact {
		t.Fatalf("got %v, want a 403 naming %s", err, auth.CapCompact)
	}
}

// TestGuardRequeueToAnotherRecipient: handing a task to another recipient
// needs the requeue capability and the right to send that recipient tasks
// (admin has both); a malformed request is a 400 before any 403.
func TestGuardRequeueToAnotherRecipient(t *testing.T) {
	svc, eng := guarded(t)
	bg := context.Background()
	sent, err := svc.Send(bg, mailbox.Task{Sender: "planner@local", Recipient: "worker@local", IntentText: "x"})
	if err != nil {
		t.Fatal(err)
	}
	_, lease, err := svc.Lease(bg, "worker@local")
	if err != nil || lease == nil {
		t.Fatalf("lease: %v %v", lease, err)
	}
	to := func(recipient string) mailbox.RepairRequest {
		req := repair(sent.TaskID, mailbox.ActionRequeue)
		req.Command.LeaseID, req.Command.Recipient = lease.LeaseID, recipient
		return req
	}
	requeuer := as(t, "operator", auth.CapRequeue, "a2a.send.other@local")
	_, err = svc.Repair(requeuer, to("worker2@local"))
	wantCode(t, "a requeue to a recipient the token may not send to", err, mailbox.CodeForbidden)
	var e *mailbox.Error
	if !errors.As(err, &e) || e.Details == nil || e.Details.Capability != "a2a.send.worker2@local" {
		t.Errorf("refusal %v, want it to name a2a.send.worker2@local", err)
	}
	_, err = svc.Repair(as(t, "sender", "a2a.send.*"), to("worker2@local"))
	wantCode(t, "a requeue to another recipient without a2a.repair.requeue", err, mailbox.CodeForbidden)
	_, err = svc.Repair(requeuer, to("Worker2"))
	wantCode(t, "a requeue to a malformed recipient", err, mailbox.CodeInvalid)
	if rec, _ := eng.Task(bg, sent.TaskID); rec.State != mailbox.TaskInFlight || rec.Task.Recipient != "worker@local" {
		t.Fatalf("the refusals changed the task: %s for %s", rec.State, rec.Task.Recipient)
	}

	move := to("worker2@local")
	move.Command.NewAgent = true // worker2@local has not been heard of yet
	out, err := svc.Repair(as(t, "operator", auth.CapRequeue, "a2a.send.worker2@local"), move)
	if err != nil || out.Recipient != "worker2@local" {
		t.Fatalf("a requeue by a token that may send to worker2@local: %+v %v", out, err)
	}
	_, lease, err = svc.Lease(bg, "worker2@local")
	if err != nil || lease == nil {
		t.Fatalf("worker2@local's lease: %v %v", lease, err)
	}
	move = to("worker3@local")
	move.Command.NewAgent = true
	if out, err := svc.Repair(as(t, "root", auth.CapAdmin), move); err != nil || out.Recipient != "worker3@local" {
		t.Fatalf("a requeue by admin: %+v %v", out, err)
	}
}
