package auth_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/mailbox"
)

// The policy of the calls the A2A edge makes: registering needs
// a2a.register; a task's sender reads it, cancels it and takes delivery of
// its result without further rights, others need a2a.read to read and
// a2a.admin to cancel; a listing without a2a.read holds the caller's own.
func TestGuardA2ACalls(t *testing.T) {
	svc, eng := guarded(t)
	sys := context.Background() // the daemon itself: trusted
	card := mailbox.AgentCard{Name: "Coder"}

	_, err := svc.RegisterAgent(as(t, "reader@local", auth.CapRead), "coder@local", card)
	wantCode(t, "register with a2a.read", err, mailbox.CodeForbidden)
	if _, err := svc.RegisterAgent(as(t, "ops", auth.CapRegister), "coder@local", card); err != nil {
		t.Fatalf("register with a2a.register: %v", err)
	}
	wantCode(t, "deregister with a2a.read", svc.DeregisterAgent(as(t, "reader@local", auth.CapRead), "coder@local"), mailbox.CodeForbidden)
	if _, err := svc.Registered(as(t, "nobody@local", auth.CapRecv), "coder@local"); err != nil {
		t.Fatalf("a card is public: %v", err)
	}

	send := func(sender string) string {
		t.Helper()
		res, err := eng.Send(sys, mailbox.Task{Sender: sender, Recipient: "coder@local", IntentText: "x",
			A2A: &mailbox.A2AOrigin{Version: "0.3", MessageID: "m-" + sender, ContextID: "c", Message: json.RawMessage(`{}`)}})
		if err != nil {
			t.Fatal(err)
		}
		return res.TaskID
	}
	alices := send("alice@local")
	bobs := send("bob@local")
	alice := as(t, "alice@local", auth.CapSendPrefix+"coder@local")
	bob := as(t, "bob@local", auth.CapSendPrefix+"coder@local")

	if _, err := svc.Task(alice, alices); err != nil {
		t.Fatalf("the sender reads its own task without a2a.read: %v", err)
	}
	_, err = svc.Task(bob, alices)
	wantCode(t, "another's task without a2a.read", err, mailbox.CodeForbidden)
	if _, err := svc.Task(as(t, "reader@local", auth.CapRead), alices); err != nil {
		t.Fatalf("a2a.read reads every task: %v", err)
	}

	page, err := svc.AgentTasks(bob, mailbox.AgentTasksQuery{Recipient: "coder@local"})
	if err != nil || page.Total != 1 || page.Tasks[0].Task.ID != bobs {
		t.Fatalf("bob's listing: %+v, %v; want his task only", page, err)
	}
	if page, err := svc.AgentTasks(as(t, "reader@local", auth.CapRead), mailbox.AgentTasksQuery{Recipient: "coder@local"}); err != nil || page.Total != 2 {
		t.Fatalf("a reader's listing: %+v, %v; want both", page, err)
	}

	_, err = svc.Cancel(bob, alices, "")
	wantCode(t, "cancel another's task", err, mailbox.CodeForbidden)
	_, err = svc.Cancel(as(t, "reader@local", auth.CapRead), alices, "")
	wantCode(t, "cancel with a2a.read", err, mailbox.CodeForbidden)
	_, err = svc.Cancel(bob, "6f9619ff-8b86-4d11-b42d-00c04fc964ff", "")
	wantCode(t, "cancel of an unknown task", err, mailbox.CodeNotFound)
	if rec, err := svc.Cancel(alice, alices, ""); err != nil || rec.State != mailbox.TaskCanceled {
		t.Fatalf("the sender cancels its task: %+v, %v", rec, err)
	}
	if rec, err := svc.Cancel(as(t, "ops", auth.CapAdmin), bobs, "on call"); err != nil || rec.State != mailbox.TaskCanceled {
		t.Fatalf("a2a.admin cancels any task: %+v, %v", rec, err)
	}
	wantCode(t, "delivery of another's task", svc.Delivered(alice, bobs), mailbox.CodeForbidden)
	if err := svc.Delivered(bob, bobs); err != nil {
		t.Fatalf("the sender takes delivery: %v", err)
	}
}
