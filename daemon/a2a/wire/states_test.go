package wire

import (
	"testing"

	"github.com/mailroom/mailroom/mailbox"
)

// Every state the edge answers is spelled once per generation, and each
// spelling reads back as the state it spells: the edge, the client and the
// bench share these, so a state cannot drift between them.
func TestStatesReadBackAsSpelled(t *testing.T) {
	answered := []string{StateSubmitted, StateWorking, StateCompleted, StateFailed, StateCanceled, StateRejected, StateInputRequired, StateAuthRequired}
	for _, st := range answered {
		if got, ok := ParseState(V03, st); !ok || got != st {
			t.Errorf("ParseState(v0.3, %q) = %q, %v; want %q", st, got, ok, st)
		}
		spelled, ok := states10[st]
		if !ok {
			t.Errorf("state %q has no v1.0 spelling", st)
			continue
		}
		if got, ok := ParseState(V10, spelled); !ok || got != st {
			t.Errorf("ParseState(v1.0, %q) = %q, %v; want %q", spelled, got, ok, st)
		}
	}
	if len(states10) != len(answered) {
		t.Errorf("v1.0 spells %d states, the edge answers %d", len(states10), len(answered))
	}
	for _, c := range []struct{ v, in, want string }{
		{V03, "cancelled", StateCanceled},
		{V10, "TASK_STATE_UNSPECIFIED", StateUnknown},
		{V03, StateUnknown, StateUnknown},
	} {
		if got, ok := ParseState(c.v, c.in); !ok || got != c.want {
			t.Errorf("ParseState(%s, %q) = %q, %v; want %q", c.v, c.in, got, ok, c.want)
		}
	}
	for _, c := range []struct{ v, in string }{{V03, "TASK_STATE_WORKING"}, {V10, "working"}, {V03, "done"}, {V10, ""}} {
		if got, ok := ParseState(c.v, c.in); ok {
			t.Errorf("ParseState(%s, %q) = %q, true; want a spelling it does not know refused", c.v, c.in, got)
		}
	}
}

// A delivery note shows only on the lease it was set for, only while the
// task is in flight, and goes when cleared; a nil DeliveryNotes holds none.
func TestDeliveryNotesFollowTheirLease(t *testing.T) {
	var n DeliveryNotes
	rec := inFlight("lease-1")
	n.Set("lease-1", "left to the operator: the remote lost it")
	if got := statusText(n.View(rec, nil)); got != "left to the operator: the remote lost it" {
		t.Errorf("the note of the lease in flight reads %q", got)
	}
	if got := statusText(n.View(inFlight("lease-2"), nil)); got != "" {
		t.Errorf("another lease of the task shows %q; want no note", got)
	}
	n.Set("lease-1", "")
	if got := statusText(n.View(rec, nil)); got != "" {
		t.Errorf("a cleared note still reads %q", got)
	}
	var none *DeliveryNotes
	none.Set("lease-1", "x")
	if got := statusText(none.View(rec, nil)); got != "" {
		t.Errorf("a nil DeliveryNotes shows %q", got)
	}
}

// inFlight is a task that came through the edge, leased under lease.
func inFlight(lease string) mailbox.TaskRecord {
	rec := mailbox.TaskRecord{Task: mailbox.Task{ID: "6f9619ff-8b86-4d11-b42d-00c04fc964ff", A2A: &mailbox.A2AOrigin{ContextID: "c-1"}}, State: mailbox.TaskInFlight}
	rec.LeaseID = lease
	return rec
}

// statusText is the text of tv's status message, or "".
func statusText(tv TaskView) string {
	if tv.StatusMessage == nil || len(tv.StatusMessage.Parts) == 0 {
		return ""
	}
	return tv.StatusMessage.Parts[0].Text
}
