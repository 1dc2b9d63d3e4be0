package tui

import (
	"testing"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/mailbox"
)

func TestModelFollowsTheStream(t *testing.T) {
	src := newSource(t)
	m := newModel()
	m.receive(src.snapshot())
	a := src.send("worker-a@local", withKind("summarize"), withIntent("summarize the report"))
	b := src.send("worker-b@local")
	for _, ev := range []mailbox.Event{a, b, src.lease("worker-a@local")} {
		m.receive(ev)
	}
	m.receive(src.post(a.Task.ID, mailbox.StatusError, "upstream 503"))

	r := m.rows()
	if got := len(r.queued); got != 1 || r.queued[0].Task.ID != b.Task.ID {
		t.Fatalf("queued = %+v, want only %s", r.queued, b.Task.ID)
	}
	if len(r.leases) != 0 {
		t.Fatalf("leases = %+v, want none", r.leases)
	}
	if len(r.results) != 1 {
		t.Fatalf("results = %+v, want one", r.results)
	}
	res := r.results[0]
	if res.TaskID != a.Task.ID || res.kind != "summarize" || res.intent != "summarize the report" || res.ErrorMessage != "upstream 503" {
		t.Errorf("result row = %+v, want task %s with its kind, intent and error", res, a.Task.ID)
	}
	if st := m.status(); st.seq != src.s.Seq || st.applied != 5 || !st.synced || st.gap != nil {
		t.Errorf("status = %+v, want seq %d, 5 applied, synced, no gap", st, src.s.Seq)
	}

	m.receive(src.drain("planner@local"))
	if r := m.rows(); len(r.results) != 0 {
		t.Errorf("results after drain = %+v, want none", r.results)
	}
}

func TestModelGapAsksForAFreshSnapshot(t *testing.T) {
	src := newSource(t)
	m := newModel()
	m.receive(src.snapshot())
	m.receive(src.send("worker-a@local"))
	src.send("worker-a@local") // lost on the way
	third := src.send("worker-a@local")
	m.receive(third)

	st := m.status()
	if st.gap == nil {
		t.Fatal("a skipped seq was not noticed")
	}
	select {
	case <-m.resync:
	default:
		t.Fatal("a gap did not ask the stream reader to resync")
	}
	m.receive(src.send("worker-a@local"))
	if got := len(m.rows().queued); got != 1 {
		t.Fatalf("queued after gap = %d, want the 1 task applied before it (nothing applied past a gap)", got)
	}

	m.receive(src.snapshot())
	st = m.status()
	if st.gap != nil || st.seq != src.s.Seq {
		t.Fatalf("after snapshot: gap %v seq %d, want no gap at seq %d", st.gap, st.seq, src.s.Seq)
	}
	if got := len(m.rows().queued); got != 4 {
		t.Errorf("queued after snapshot = %d, want 4", got)
	}
}

func TestModelSkipsAnEventItAlreadyHas(t *testing.T) {
	src := newSource(t)
	m := newModel()
	m.receive(src.snapshot())
	ev := src.send("worker-a@local")
	m.receive(ev)
	m.receive(ev)
	if st := m.status(); st.gap != nil || st.applied != 2 {
		t.Fatalf("status = %+v, want the double ignored without a gap", st)
	}
}

func TestModelPauseHoldsEventsAndResumeAppliesThem(t *testing.T) {
	src := newSource(t)
	m := newModel()
	m.receive(src.snapshot())
	m.setPaused(true)
	for range 3 {
		m.receive(src.send("worker-a@local"))
	}
	m.receive(src.lease("worker-a@local"))
	if st := m.status(); !st.paused || st.held != 4 {
		t.Fatalf("paused status = %+v, want paused with 4 held", st)
	}
	if r := m.rows(); len(r.queued) != 0 {
		t.Fatalf("queued while paused = %d, want the screen's state to stay put", len(r.queued))
	}
	m.setPaused(false)
	r := m.rows()
	if len(r.queued) != 2 || len(r.leases) != 1 {
		t.Fatalf("after resume: %d queued %d leased, want 2 and 1", len(r.queued), len(r.leases))
	}
	if st := m.status(); st.paused || st.held != 0 || st.seq != src.s.Seq {
		t.Errorf("resumed status = %+v, want live at seq %d", st, src.s.Seq)
	}
}

func TestModelRecordsConnectionState(t *testing.T) {
	m := newModel()
	if m.status().connSeen {
		t.Fatal("a new model claims to have seen a connection state")
	}
	m.setConn(client.ConnState{Attempt: 3})
	st := m.status()
	if !st.connSeen || st.conn.Live || st.conn.Attempt != 3 || st.connVer == 0 {
		t.Errorf("status = %+v, want reconnecting attempt 3", st)
	}
}

func TestModelDetail(t *testing.T) {
	src := newSource(t)
	m := newModel()
	m.receive(src.snapshot())
	parent := src.send("worker-a@local")
	child := src.send("worker-b@local", withParent(parent.Task.ID))
	for _, ev := range []mailbox.Event{parent, child, src.lease("worker-a@local"), src.post(parent.Task.ID, mailbox.StatusOK, "")} {
		m.receive(ev)
	}
	d := m.detail(parent.Task.ID)
	if !d.known || d.record.State != mailbox.TaskResultPending {
		t.Fatalf("detail = %+v, want a known task with a pending result", d)
	}
	if len(d.children) != 1 || d.children[0] != child.Task.ID {
		t.Errorf("children = %v, want [%s]", d.children, child.Task.ID)
	}
	if d.result == nil || d.result.Status != mailbox.StatusOK {
		t.Errorf("pending result = %+v, want ok", d.result)
	}
	if got := len(d.record.History); got != 3 {
		t.Errorf("history has %d entries, want sent, leased, posted", got)
	}
}

// A question drained by its sender does not finish the task: the Results
// pane still knows its kind and intent when the final result comes.
func TestModelKeepsAWaitingTaskOpenWhenItsQuestionIsDrained(t *testing.T) {
	src := newSource(t)
	m := newModel()
	m.receive(src.snapshot())
	sent := src.send("worker-a@local", withKind("migrate"), withIntent("migrate the schemas"))
	m.receive(sent)
	m.receive(src.lease("worker-a@local"))
	m.receive(src.emit(src.s.DecidePostResult(mailbox.Result{TaskID: sent.Task.ID, Status: mailbox.StatusInputRequired,
		Content: []mailbox.Content{{Type: mailbox.ContentText, Text: "which database?"}}}, src.nowMs)))
	m.receive(src.drain("planner@local"))
	ev, _, ok, err := src.s.DecideReply(mailbox.Reply{TaskID: sent.Task.ID, Sender: "planner@local",
		Content: []mailbox.Content{{Type: mailbox.ContentText, Text: "billing"}}}, "", src.nowMs)
	if !ok {
		t.Fatalf("reply refused: %v", err)
	}
	m.receive(src.emit(ev, err))
	m.receive(src.lease("worker-a@local"))
	m.receive(src.post(sent.Task.ID, mailbox.StatusOK, ""))
	r := m.rows()
	if len(r.results) != 1 || r.results[0].kind != "migrate" || r.results[0].intent != "migrate the schemas" {
		t.Errorf("results = %+v, want the final result with its task's kind and intent", r.results)
	}
}
