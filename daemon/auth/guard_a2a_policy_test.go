package auth_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/daemon/engine"
	"github.com/mailroom/mailroom/mailbox"
)

// callers of the A2A policy table: each a principal holding some
// capabilities; "trusted" has no identity at all (no tokens configured, or
// the daemon itself).
func a2aCallers(t *testing.T) map[string]context.Context {
	t.Helper()
	return map[string]context.Context{
		"trusted":   context.Background(),
		"admin":     as(t, "root", auth.CapAdmin),
		"registrar": as(t, "registrar", auth.CapRegister),
		"reader":    as(t, "reader", auth.CapRead),
		"sender":    as(t, "alice@local", auth.CapSendPrefix+"coder@local"),
		"other":     as(t, "bob@local", auth.CapSendPrefix+"*", auth.CapRecv, auth.CapDrain, auth.CapRespondPrefix+"*", auth.CapRequeue, auth.CapForceError, auth.CapCompact),
		"worker":    as(t, "coder@local", auth.CapRecv, auth.CapRespondPrefix+"alice@local"),
	}
}

// wantForbidden requires a 403 naming the capability that was missing.
func wantForbidden(t *testing.T, what string, err error, capability string) {
	t.Helper()
	var e *mailbox.Error
	if !errors.As(err, &e) || e.Code != mailbox.CodeForbidden || e.Details == nil || e.Details.Capability != capability {
		t.Errorf("%s: got %v, want a 403 naming %s", what, err, capability)
	}
}

// sendFrom sends alice@local's A2A task to coder@local as the daemon
// itself, so each row of a table acts on a task of its own.
func sendFrom(t *testing.T, eng *engine.Engine, sender string) string {
	t.Helper()
	id := "m-" + strings.ReplaceAll(t.Name(), "/", "-")
	res, err := eng.Send(context.Background(), mailbox.Task{Sender: sender, Recipient: "coder@local", IntentText: "x",
		A2A: &mailbox.A2AOrigin{Version: "1.0", MessageID: id, ContextID: "c", Message: json.RawMessage(`{}`)}})
	if err != nil {
		t.Fatal(err)
	}
	return res.TaskID
}

// Registering and deregistering need a2a.register (or a2a.admin, or no
// tokens at all); reading a card needs nothing. A refusal changes nothing.
func TestGuardRegistryPolicy(t *testing.T) {
	svc, eng := guarded(t)
	callers := a2aCallers(t)
	bg := context.Background()
	allowed := map[string]bool{"trusted": true, "admin": true, "registrar": true}
	for name, ctx := range callers {
		t.Run(name, func(t *testing.T) {
			agent := name + "@local"
			reg, err := svc.RegisterAgent(ctx, agent, mailbox.AgentCard{Name: "N"})
			if !allowed[name] {
				wantForbidden(t, "register", err, auth.CapRegister)
				if _, err := eng.Registered(bg, agent); mailbox.ErrorCode(err) != mailbox.CodeNotFound {
					t.Errorf("a refused registration registered %s: %v", agent, err)
				}
				// Someone else registers it; the caller may not take it away.
				if _, err := eng.RegisterAgent(bg, agent, mailbox.AgentCard{Name: "N"}); err != nil {
					t.Fatal(err)
				}
				wantForbidden(t, "deregister", svc.DeregisterAgent(ctx, agent), auth.CapRegister)
				if _, err := eng.Registered(bg, agent); err != nil {
					t.Errorf("a refused deregistration removed %s: %v", agent, err)
				}
			} else {
				if err != nil || reg.Agent != agent {
					t.Fatalf("register: %+v, %v", reg, err)
				}
				// The registry records who registered the card.
				want := map[string]string{"trusted": "", "admin": "root", "registrar": "registrar"}[name]
				if reg.Principal != want {
					t.Errorf("registered by principal %q, want %q", reg.Principal, want)
				}
				if err := svc.DeregisterAgent(ctx, agent); err != nil {
					t.Fatalf("deregister: %v", err)
				}
				if _, err := eng.Registered(bg, agent); mailbox.ErrorCode(err) != mailbox.CodeNotFound {
					t.Errorf("still registered after the deregistration: %v", err)
				}
				// Register it again for the readers below.
				if _, err := svc.RegisterAgent(ctx, agent, mailbox.AgentCard{Name: "N"}); err != nil {
					t.Fatal(err)
				}
			}
			// A card is public: every caller reads every card, and an
			// unregistered agent is a 404 for everyone.
			for reader, rctx := range callers {
				if r, err := svc.Registered(rctx, agent); err != nil || r.Agent != agent {
					t.Errorf("%s reading %s's card: %+v, %v", reader, agent, r, err)
				}
				if _, err := svc.Registered(rctx, "nobody@local"); mailbox.ErrorCode(err) != mailbox.CodeNotFound {
					t.Errorf("%s reading an unregistered card: %v", reader, err)
				}
			}
		})
	}
}

// Cancel and Delivered are for the task's sender, or a2a.admin; nothing
// else (reading, repairing, answering) grants them.
func TestGuardCancelAndDeliveredPolicy(t *testing.T) {
	svc, eng := guarded(t)
	callers := a2aCallers(t)
	bg := context.Background()
	allowed := map[string]bool{"trusted": true, "admin": true, "sender": true}
	for name, ctx := range callers {
		t.Run(name, func(t *testing.T) {
			// Cancel, from the queue.
			id := sendFrom(t, eng, "alice@local")
			rec, err := svc.Cancel(ctx, id, "")
			if allowed[name] {
				if err != nil || rec.State != mailbox.TaskCanceled {
					t.Fatalf("cancel: %+v, %v", rec, err)
				}
				// A task that has finished is a conflict, for whoever may
				// cancel it.
				_, err := svc.Cancel(ctx, id, "")
				if mailbox.ErrorCode(err) != mailbox.CodeConflict {
					t.Errorf("a second cancel: %v, want a conflict", err)
				}
			} else {
				wantForbidden(t, "cancel", err, auth.CapAdmin)
				if err != nil && !strings.Contains(err.Error(), "alice@local") {
					t.Errorf("the refusal %v does not say whose task it is", err)
				}
				if rec, _ := eng.Task(bg, id); rec.State != mailbox.TaskQueued {
					t.Errorf("a refused cancel left the task %s", rec.State)
				}
				// Another's finished task is a 403 too: the state of
				// another's task is not the caller's to learn.
				if _, err := eng.Cancel(bg, id, ""); err != nil {
					t.Fatal(err)
				}
				_, err := svc.Cancel(ctx, id, "")
				wantForbidden(t, "cancel of another's finished task", err, auth.CapAdmin)
			}
			// Whoever the caller, a malformed id is a 400 and an unknown
			// task a 404, before any right is looked at.
			_, err = svc.Cancel(ctx, "not-a-uuid", "")
			wantCode(t, "cancel of a malformed id", err, mailbox.CodeInvalid)
			_, err = svc.Cancel(ctx, "6f9619ff-8b86-4d11-b42d-00c04fc964ff", "")
			wantCode(t, "cancel of an unknown task", err, mailbox.CodeNotFound)

			// Delivered, of a pending result.
			id = sendFrom(t, eng, "alice@local")
			task, lease, err := eng.Lease(bg, "coder@local")
			if err != nil || task == nil || task.ID != id {
				t.Fatalf("lease: %v %v", task, err)
			}
			if err := eng.PostResult(bg, mailbox.Result{TaskID: id, LeaseID: lease.LeaseID, Status: mailbox.StatusOK}); err != nil {
				t.Fatal(err)
			}
			err = svc.Delivered(ctx, id)
			if allowed[name] {
				if err != nil {
					t.Fatalf("delivered: %v", err)
				}
				if rec, _ := eng.Task(bg, id); rec.State != mailbox.TaskDone || rec.Result == nil {
					t.Errorf("after the delivery the task is %s with result %+v", rec.State, rec.Result)
				}
			} else {
				wantForbidden(t, "delivered", err, auth.CapAdmin)
				if _, ok := pendingFor(t, eng, id); !ok {
					t.Errorf("a refused delivery took the result")
				}
				if err := eng.Delivered(bg, id); err != nil {
					t.Fatal(err)
				}
			}
			wantCode(t, "delivered of a malformed id", svc.Delivered(ctx, "nope"), mailbox.CodeInvalid)
			if err := svc.Delivered(ctx, "6f9619ff-8b86-4d11-b42d-00c04fc964ff"); err != nil {
				t.Errorf("delivered of an unknown task: %v, want nothing done", err)
			}
		})
	}
}

func pendingFor(t *testing.T, eng *engine.Engine, id string) (mailbox.PendingResult, bool) {
	t.Helper()
	var pr mailbox.PendingResult
	var ok bool
	eng.View(func(s *mailbox.State) { pr, ok = s.PendingResult(id) })
	return pr, ok
}

// A task is readable by its sender without a2a.read, and by every caller
// with it; a listing of an agent's tasks holds every task for a caller
// with a2a.read and only its own for anyone else, whatever it asked.
func TestGuardTaskReadsAndListingsPolicy(t *testing.T) {
	svc, eng := guarded(t)
	callers := a2aCallers(t)
	alices := sendFrom(t, eng, "alice@local")
	bobs := sendFrom(t, eng, "bob@local")
	// coder@local sends one to itself: a worker sees it, not others'.
	workers := sendFrom(t, eng, "coder@local")
	readers := map[string]bool{"trusted": true, "admin": true, "reader": true}
	own := map[string]string{"sender": alices, "other": bobs, "worker": workers}
	for name, ctx := range callers {
		for _, id := range []string{alices, bobs, workers} {
			rec, err := svc.Task(ctx, id)
			switch {
			case readers[name] || own[name] == id:
				if err != nil || rec.Task.ID != id {
					t.Errorf("%s reading task %s: %+v, %v", name, id, rec, err)
				}
			default:
				wantForbidden(t, name+" reading another's task", err, auth.CapRead)
			}
		}
		for _, asked := range []string{"", "alice@local", "bob@local"} {
			page, err := svc.AgentTasks(ctx, mailbox.AgentTasksQuery{Recipient: "coder@local", Sender: asked})
			if err != nil {
				t.Errorf("%s listing coder@local's tasks from %q: %v", name, asked, err)
				continue
			}
			var want []string
			switch {
			case !readers[name] && own[name] != "":
				want = []string{own[name]}
			case !readers[name]:
				want = nil // the caller sent none
			case asked == "":
				want = []string{workers, bobs, alices}
			default:
				want = []string{map[string]string{"alice@local": alices, "bob@local": bobs}[asked]}
			}
			var got []string
			for _, r := range page.Tasks {
				got = append(got, r.Task.ID)
			}
			if strings.Join(got, ",") != strings.Join(want, ",") || page.Total != len(want) {
				t.Errorf("%s listing coder@local's tasks from %q: %v (total %d), want %v", name, asked, got, page.Total, want)
			}
		}
	}
	// A malformed listing is a 400 for every caller.
	for name, ctx := range callers {
		_, err := svc.AgentTasks(ctx, mailbox.AgentTasksQuery{Recipient: "Coder"})
		wantCode(t, name+" listing a malformed recipient", err, mailbox.CodeInvalid)
	}
}

func TestRegisterIsACapability(t *testing.T) {
	if err := auth.ValidateCap(auth.CapRegister); err != nil || auth.CapRegister != "a2a.register" {
		t.Fatalf("%s: %v", auth.CapRegister, err)
	}
	err := auth.ValidateCap("a2a.registe")
	if err == nil || !strings.Contains(err.Error(), "a2a.register") {
		t.Fatalf("an unknown capability: %v, want the list to name a2a.register", err)
	}
}
