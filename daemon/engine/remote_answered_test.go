package engine

import (
	"context"
	"testing"

	"github.com/mailroom/mailroom/mailbox"
)

// A remote that answered at once has its acceptance and its answer
// recorded as one unit; a refusal of either records neither.
func TestRemoteAnsweredIsOneUnit(t *testing.T) {
	dir := t.TempDir()
	e := open(t, dir, Options{})
	ctx := context.Background()
	id := mustSend(t, e, "p@local", "r@remote")
	task, lease := mustLease(t, e, "r@remote")
	if task.ID != id {
		t.Fatalf("leased %s, want %s", task.ID, id)
	}
	ref := mailbox.RemoteRef{TaskID: "rt-1", ContextID: "c-1", Binding: mailbox.BindingJSONRPC03}
	ok := mailbox.Result{Status: mailbox.StatusOK, Content: []mailbox.Content{{Type: mailbox.ContentText, Text: "done"}}}

	seq := e.DurableSeq()
	other := "00000000-0000-4000-8000-0000000000ff"
	if err := e.Remote().Answered(ctx, id, other, ref, ok); mailbox.ErrorCode(err) != mailbox.CodeConflict {
		t.Errorf("an answer under another lease: %v, want a conflict", err)
	}
	// The acceptance would go; the answer is refused (another agent's
	// lease): neither is recorded.
	intruder := mailbox.WithActing(ctx, mailbox.Acting{Agent: "someone@else"})
	if err := e.Remote().Answered(intruder, id, lease.LeaseID, ref, ok); mailbox.ErrorCode(err) != mailbox.CodeForbidden {
		t.Errorf("an answer from another agent: %v, want forbidden", err)
	}
	bad := mailbox.Result{Status: mailbox.StatusInputRequired} // a question without its content
	if err := e.Remote().Answered(ctx, id, lease.LeaseID, ref, bad); mailbox.ErrorCode(err) != mailbox.CodeInvalid {
		t.Errorf("an answer the mailbox refuses: %v, want invalid", err)
	}
	if e.DurableSeq() != seq {
		t.Fatalf("refused answers moved the log from seq %d to %d: the acceptance went without its answer", seq, e.DurableSeq())
	}

	if err := e.Remote().Answered(ctx, id, lease.LeaseID, ref, ok); err != nil {
		t.Fatal(err)
	}
	evs, err := e.st.EventsSince(seq, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[0].Type != mailbox.EventRemoteAccepted || evs[0].Unit != 2 || evs[1].Type != mailbox.EventResultPosted {
		t.Fatalf("events = %+v, want remote_accepted then result_posted, one unit of 2", evs)
	}
	rec, err := e.Task(ctx, id)
	if err != nil || rec.State != mailbox.TaskResultPending || rec.Remote == nil || rec.Remote.TaskID != "rt-1" {
		t.Errorf("task after the answer = %+v, %v; want its result pending and its remote task kept", rec, err)
	}
}
