package engine

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/mailroom/mailroom/mailbox"
)

// The registry, cancels and deliveries are events like any other: they
// reach subscribers, and survive a restart and a compaction.
func TestA2AEventsSurviveRestartAndCompaction(t *testing.T) {
	dir := t.TempDir()
	e := open(t, dir, Options{})
	ctx := mailbox.WithPrincipal(context.Background(), "ops")
	after := e.Status().LastSeq
	sub, err := e.Subscribe(context.Background(), &after)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.RegisterAgent(ctx, "coder@local", mailbox.AgentCard{Name: "Coder", Skills: []mailbox.AgentSkill{{ID: "fix", Name: "Fix"}}}); err != nil {
		t.Fatal(err)
	}
	a2a := func(m string) *mailbox.A2AOrigin {
		return &mailbox.A2AOrigin{Version: "1.0", MessageID: m, ContextID: "c", Message: json.RawMessage(`{"messageId":"` + m + `"}`)}
	}
	queued, err := e.Send(ctx, mailbox.Task{Sender: "caller@a2a", Recipient: "coder@local", IntentText: "one", A2A: a2a("m1")})
	if err != nil {
		t.Fatal(err)
	}
	done, err := e.Send(ctx, mailbox.Task{Sender: "caller@a2a", Recipient: "coder@local", IntentText: "two", A2A: a2a("m2")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Cancel(mailbox.WithPrincipal(context.Background(), "caller@a2a"), queued.TaskID, "changed my mind"); err != nil {
		t.Fatal(err)
	}
	task, lease := mustLease(t, e, "coder@local")
	if task.ID != done.TaskID {
		t.Fatalf("leased %s, want %s", task.ID, done.TaskID)
	}
	if err := e.PostResult(ctx, mailbox.Result{TaskID: task.ID, LeaseID: lease.LeaseID, Status: mailbox.StatusOK, Content: []mailbox.Content{{Type: mailbox.ContentText, Text: "ok"}}}); err != nil {
		t.Fatal(err)
	}
	if err := e.Delivered(mailbox.WithPrincipal(context.Background(), "caller@a2a"), task.ID); err != nil {
		t.Fatal(err)
	}
	var types []string
	timeout := time.After(10 * time.Second)
	for len(types) < 7 {
		select {
		case ev := <-sub.Events():
			types = append(types, ev.Type)
		case <-timeout:
			t.Fatalf("subscriber got %v", types)
		}
	}
	sub.Close()
	want := []string{mailbox.EventAgentRegistered, mailbox.EventTaskSent, mailbox.EventTaskSent, mailbox.EventTaskCanceled, mailbox.EventTaskLeased, mailbox.EventResultPosted, mailbox.EventResultDrained}
	if !reflect.DeepEqual(types, want) {
		t.Fatalf("subscriber got %v, want %v", types, want)
	}
	snapshot := func(e *Engine) *mailbox.Snapshot {
		var s *mailbox.Snapshot
		e.View(func(st *mailbox.State) { s = st.Snapshot(0) })
		return s
	}
	before := snapshot(e)
	if len(before.Registry) != 1 {
		t.Fatalf("registry %+v", before.Registry)
	}
	e.Close()

	e = open(t, dir, Options{})
	if got := snapshot(e); !reflect.DeepEqual(got, before) {
		t.Fatalf("after a restart:\n got %+v\nwant %+v", got, before)
	}
	if _, err := e.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	e.Close()
	e = open(t, dir, Options{})
	defer e.Close()
	if got := snapshot(e); !reflect.DeepEqual(got, before) {
		t.Fatalf("after a compaction and a restart:\n got %+v\nwant %+v", got, before)
	}
	rec, err := e.Task(ctx, task.ID)
	if err != nil || rec.Result == nil || rec.State != mailbox.TaskDone {
		t.Fatalf("the delivered A2A task: %+v, %v", rec, err)
	}
	if r, err := e.Registered(ctx, "coder@local"); err != nil || r.Card.Skills[0].ID != "fix" {
		t.Fatalf("registered after compaction: %+v, %v", r, err)
	}
}
