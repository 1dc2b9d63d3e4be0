package client_test

import (
	"errors"
	"testing"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/mailbox"
)

var forbidden = &mailbox.Error{Code: mailbox.CodeForbidden}

// TestTaskReadAndCancel: GET /a2a/tasks/{id} and POST .../cancel, through
// the guard: the sender reads and cancels its own task without a2a.read;
// another agent may neither, and a second cancel is a conflict naming the
// state.
func TestTaskReadAndCancel(t *testing.T) {
	sender, senderHash, _ := auth.NewToken()
	other, otherHash, _ := auth.NewToken()
	d := daemontest.Start(t, daemontest.Options{Tokens: []auth.Token{
		{Principal: "planner@local", SHA256: senderHash, Caps: []string{"a2a.send.*", "a2a.drain"}},
		{Principal: "coder@local", SHA256: otherHash, Caps: []string{"a2a.recv", "a2a.respond.*"}},
	}})
	c, _ := client.New(d.Addr(), client.WithToken(sender))
	o, _ := client.New(d.Addr(), client.WithToken(other))
	ctx := t.Context()
	q, err := c.Send(ctx, mailbox.Task{Sender: "planner@local", Recipient: "coder@local", IntentText: "fix it"})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := c.Task(ctx, q.TaskID)
	if err != nil || rec.State != mailbox.TaskQueued || rec.Task.IntentText != "fix it" {
		t.Fatalf("Task = %+v, %v; want the queued task", rec, err)
	}
	if _, err := o.Task(ctx, q.TaskID); !errors.Is(err, forbidden) {
		t.Errorf("another agent's Task: err %v, want forbidden", err)
	}
	if _, err := o.Cancel(ctx, q.TaskID, "mine now"); !errors.Is(err, forbidden) {
		t.Errorf("another agent's Cancel: err %v, want forbidden", err)
	}
	rec, err = c.Cancel(ctx, q.TaskID, "not needed")
	if err != nil || rec.State != mailbox.TaskCanceled {
		t.Fatalf("Cancel = %+v, %v; want canceled", rec, err)
	}
	if _, err := c.Cancel(ctx, q.TaskID, "again"); !errors.Is(err, mailbox.ErrConflict) {
		t.Errorf("second Cancel: err %v, want conflict", err)
	}
}
