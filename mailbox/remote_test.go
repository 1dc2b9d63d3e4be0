package mailbox

import (
	"strings"
	"testing"
)

// A remote agent's registration: where it is, how it is called, how many
// of its tasks may be in flight; every refusal names the field.
func TestNormalizeRemote(t *testing.T) {
	c, err := NormalizeCard(AgentCard{Remote: &RemoteSpec{URL: " http://127.0.0.1:9999/ "}})
	if err != nil {
		t.Fatalf("a remote agent without a name: %v (its name is the remote's)", err)
	}
	if r := c.Remote; r.URL != "http://127.0.0.1:9999/" || r.Binding != BindingAuto || r.Concurrency != DefaultRemoteConcurrency {
		t.Errorf("normalized remote = %+v, want the URL trimmed, binding auto, concurrency %d", r, DefaultRemoteConcurrency)
	}
	if _, err := NormalizeCard(AgentCard{}); err == nil || !strings.Contains(err.Error(), "name") {
		t.Errorf("a local agent without a name: %v, want refused", err)
	}
	for _, tc := range []struct {
		spec  RemoteSpec
		field string
		says  string
	}{
		{RemoteSpec{}, "remote.url", "expected the agent's base URL"},
		{RemoteSpec{URL: "ftp://x/"}, "remote.url", `scheme "ftp"`},
		{RemoteSpec{URL: "/relative"}, "remote.url", "absolute http or https URL"},
		{RemoteSpec{URL: "http://u:p@host/"}, "remote.url", "credentials"},
		{RemoteSpec{URL: "http://host/#x"}, "remote.url", "fragment"},
		{RemoteSpec{URL: "http://host/\x1b[2J"}, "remote.url", "U+001B"},
		{RemoteSpec{URL: "http://" + strings.Repeat("h", MaxRemoteURLBytes) + "/"}, "remote.url", "at most 2048 bytes"},
		{RemoteSpec{URL: "http://host/", Binding: "grpc"}, "remote.binding", `got "grpc"`},
		{RemoteSpec{URL: "http://host/", Concurrency: 65}, "remote.concurrency", "1 to 64"},
		{RemoteSpec{URL: "http://host/", Concurrency: -1}, "remote.concurrency", "got -1"},
	} {
		_, err := NormalizeCard(AgentCard{Name: "R", Remote: &tc.spec})
		var e *Error
		if !isCode(err, CodeInvalid) || !asError(err, &e) || e.Details == nil || e.Details.Field != tc.field || !strings.Contains(e.Message, tc.says) {
			t.Errorf("remote %+v: %v, want invalid %s saying %q", tc.spec, err, tc.field, tc.says)
		}
	}
}

func asError(err error, e **Error) bool {
	x, ok := err.(*Error)
	*e = x
	return ok
}

// A remote's acceptance is recorded under the lease it was delivered
// under, refused like a late result once that lease is gone, and kept on
// the task through snapshots and replay.
func TestRemoteAccepted(t *testing.T) {
	b := newBox(t)
	id := b.send("planner@local", "remote@local")
	_, l := b.lease("remote@local")
	ref := RemoteRef{TaskID: "r-1", ContextID: "ctx-1", Binding: BindingJSONRPC03}
	if _, err := b.s.DecideRemoteAccepted(id, "", ref, b.now); err == nil {
		t.Error("an acceptance without a lease was recorded")
	}
	if _, err := b.s.DecideRemoteAccepted(id, l.LeaseID, RemoteRef{TaskID: "r-1", Binding: "auto"}, b.now); !isCode(err, CodeInvalid) {
		t.Errorf("an acceptance naming binding auto: %v, want invalid (the binding used is a real one)", err)
	}
	if _, err := b.s.DecideRemoteAccepted(id, l.LeaseID, RemoteRef{Binding: BindingJSONRPC03}, b.now); !isCode(err, CodeInvalid) {
		t.Errorf("an acceptance without the remote's task id: %v, want invalid", err)
	}
	ev, err := b.s.DecideRemoteAccepted(id, l.LeaseID, ref, b.now)
	if err != nil {
		t.Fatal(err)
	}
	b.apply(ev)
	rec, _ := b.s.Task(id)
	if !rec.AcceptedUnder(l.LeaseID) || rec.Remote.TaskID != "r-1" || rec.Remote.Agent != "remote@local" || rec.Remote.ContextID != "ctx-1" {
		t.Errorf("the task's remote delivery = %+v, want r-1 accepted under %s by remote@local", rec.Remote, l.LeaseID)
	}
	if h := rec.History[len(rec.History)-1]; h.Type != EventRemoteAccepted || h.RemoteTaskID != "r-1" {
		t.Errorf("history ends with %+v, want the acceptance naming r-1", h)
	}
	// After an operator's requeue the old lease's acceptance is refused.
	if _, err := b.repair(id, l.LeaseID, ActionRequeue); err != nil {
		t.Fatal(err)
	}
	if _, err := b.s.DecideRemoteAccepted(id, l.LeaseID, ref, b.now); !isCode(err, CodeConflict) {
		t.Errorf("an acceptance under a requeued lease: %v, want a conflict", err)
	}
	_, l2 := b.lease("remote@local")
	rec, _ = b.s.Task(id)
	if rec.AcceptedUnder(l2.LeaseID) || rec.Remote == nil {
		t.Errorf("after a new lease the delivery = %+v: kept, but not accepted under the new lease", rec.Remote)
	}
	checkRestores(t, b)
}
