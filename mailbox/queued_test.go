package mailbox

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// queuedRepair moves (to != "") or cancels a queued task as the engine
// would, guarded by queuedFor.
func (b *box) queuedRepair(taskID, queuedFor, to string) (RepairOutcome, error) {
	b.t.Helper()
	c := RepairCommand{Action: ActionCancel, QueuedFor: queuedFor}
	if to != "" {
		c = RepairCommand{Action: ActionMove, QueuedFor: queuedFor, Recipient: to}
	}
	req, err := NormalizeRepair(RepairRequest{TaskID: taskID, Reason: "dead agent", Command: c})
	if err != nil {
		return RepairOutcome{}, err
	}
	ev, err := b.s.DecideRepair(req, "oncall", b.now)
	if err != nil {
		return RepairOutcome{}, err
	}
	return b.s.RepairOutcomeOf(b.apply(ev)), nil
}

func TestMoveKeepsTheTasksPlace(t *testing.T) {
	b := newBox(t)
	old := b.send("p", "dead")
	queuedAt := b.s.Snapshot(0).Tasks[0].QueuedAtMs
	newer := b.send("q", "live")
	out, err := b.queuedRepair(old, "dead", "live")
	if err != nil {
		t.Fatal(err)
	}
	if out.Action != OutcomeMoved || out.State != TaskQueued || out.Recipient != "live" || out.TaskID != old {
		t.Fatalf("outcome = %+v", out)
	}
	// The moved task has waited longest: the live agent leases it first.
	if got, _ := b.lease("live"); got != old {
		t.Fatalf("first lease for live = %s, want the moved task %s (not %s, sent after it)", got, old, newer)
	}
	if got, _ := b.lease("dead"); got != "" {
		t.Fatalf("dead still leased %s", got)
	}
	rec, _ := b.s.Task(old)
	if rec.QueuedAtMs != queuedAt || rec.Task.Recipient != "live" {
		t.Fatalf("moved task: queued at %d (want %d, kept), recipient %s", rec.QueuedAtMs, queuedAt, rec.Task.Recipient)
	}
	moved := rec.History[1]
	if moved.Type != EventTaskMoved || moved.Recipient != "live" || moved.Principal != "oncall" || moved.Reason != "dead agent" {
		t.Fatalf("history = %+v", rec.History)
	}
	a := b.s.Audit(old, 10)
	if len(a) != 1 || a[0].Action != OutcomeMoved || a[0].Move() != "dead -> live" || a[0].LeaseID != "" {
		t.Fatalf("audit = %+v", a)
	}
	b.roundTrip()
	b.jsonRoundTrip()
}

func TestMoveCountsTheAgents(t *testing.T) {
	b := newBox(t)
	for range 3 {
		b.send("p", "dead")
	}
	id := b.send("p", "dead")
	if _, err := b.queuedRepair(id, "dead", "live"); err != nil {
		t.Fatal(err)
	}
	got := b.s.Agents(b.now)
	if want := agentsByHand(b.s, b.now, b.log); !reflect.DeepEqual(got, want) {
		t.Fatalf("agents after a move:\n got %+v\nwant %+v", got, want)
	}
	for _, a := range got {
		if a.Agent == "dead" && a.Queued != 3 || a.Agent == "live" && a.Queued != 1 {
			t.Fatalf("agent %s queued %d", a.Agent, a.Queued)
		}
	}
}

func TestCancelGivesTheSenderAnErrorNamingTheReason(t *testing.T) {
	b := newBox(t)
	id := b.send("p", "dead")
	other := b.send("p", "dead")
	out, err := b.queuedRepair(id, "dead", "")
	if err != nil {
		t.Fatal(err)
	}
	if out.Action != OutcomeCanceled || out.State != TaskResultPending || out.Result == nil || !out.Result.Forced {
		t.Fatalf("outcome = %+v", out)
	}
	if msg := out.Result.ErrorMessage; out.Result.Status != StatusError || !strings.Contains(msg, "oncall") || !strings.Contains(msg, "dead agent") || !strings.Contains(msg, "dead") {
		t.Fatalf("result = %+v, want an error naming who, the reason and the recipient", out.Result)
	}
	if got, _ := b.lease("dead"); got != other {
		t.Fatalf("lease for dead = %s, want %s (the canceled task left the queue)", got, other)
	}
	r, ok := b.drain("p")
	if !ok || r.TaskID != id || r.Status != StatusError {
		t.Fatalf("drain = %+v, %v", r, ok)
	}
	a := b.s.Audit(id, 10)
	if len(a) != 1 || a[0].Action != OutcomeCanceled || a[0].Principal != "oncall" || a[0].Reason != "dead agent" {
		t.Fatalf("audit = %+v", a)
	}
	b.roundTrip()
	b.jsonRoundTrip()
	if s := replayJSON(t, b.log); !reflect.DeepEqual(s.Snapshot(0), b.s.Snapshot(0)) {
		t.Fatal("the log read back through JSON replays to another state")
	}
}

func TestCancelWithAMessage(t *testing.T) {
	b := newBox(t)
	id := b.send("p", "dead")
	req, err := NormalizeRepair(RepairRequest{TaskID: id, Reason: "r", Command: RepairCommand{Action: ActionCancel, Message: "send it to live@x instead"}})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := b.s.DecideRepair(req, "", b.now)
	if err != nil {
		t.Fatal(err)
	}
	if out := b.s.RepairOutcomeOf(b.apply(ev)); out.Result.ErrorMessage != "send it to live@x instead" {
		t.Fatalf("result = %+v", out.Result)
	}
}

// A cancel frees an idempotent task's key: the same work may be sent
// again, and is not answered with the canceled one.
func TestCancelFreesTheIdempotencyKey(t *testing.T) {
	b := newBox(t)
	task := idem("key-1")
	task.Recipient = "dead"
	_, id, _ := b.sendTask(task)
	if _, err := b.queuedRepair(id, "dead", ""); err != nil {
		t.Fatal(err)
	}
	ev, _, replayed := b.sendTask(task)
	if replayed || ev.Type != EventTaskSent {
		t.Fatalf("a send after the cancel = %s (replayed %v), want a new task", ev.Type, replayed)
	}
}

func TestQueuedRepairGuards(t *testing.T) {
	b := newBox(t)
	leased := b.send("p", "dead")
	_, l := b.lease("dead")
	moved := b.send("p", "dead")
	if _, err := b.queuedRepair(moved, "dead", "live"); err != nil {
		t.Fatal(err)
	}
	done := b.send("p", "w")
	_, dl := b.lease("w")
	if err := b.post(done, dl.LeaseID); err != nil {
		t.Fatal(err)
	}
	twin := idem("k1")
	twin.Recipient = "dead"
	_, twinID, _ := b.sendTask(twin)
	twin.Recipient = "live"
	b.sendTask(twin)

	before := stateJSON(t, b.s, true)
	for _, c := range []struct {
		name, id, queuedFor, to string
		code, field, says       string
	}{
		{"leased since", leased, "dead", "live", CodeConflict, "", "leased by dead under lease " + l.LeaseID},
		{"moved since", moved, "dead", "other", CodeConflict, "command.queued_for", "queued for live now"},
		{"cancel moved since", moved, "dead", "", CodeConflict, "command.queued_for", "queued for live now"},
		{"has a result", done, "w", "", CodeConflict, "", "already has a result"},
		{"unknown task", "00000000-0000-4000-8000-999999999999", "dead", "live", CodeNotFound, "task_id", "never sent"},
		{"same recipient", moved, "", "live", CodeInvalid, "command.recipient", "already queued for"},
		{"twin queued there", twinID, "dead", "live", CodeConflict, "command.recipient", "idempotent twin"},
	} {
		_, err := b.queuedRepair(c.id, c.queuedFor, c.to)
		var me *Error
		if !errors.As(err, &me) || me.Code != c.code || !strings.Contains(me.Message, c.says) {
			t.Fatalf("%s: err = %v, want %s saying %q", c.name, err, c.code, c.says)
		}
		if c.field != "" && (me.Details == nil || me.Details.Field != c.field) {
			t.Fatalf("%s: details = %+v, want field %s", c.name, me.Details, c.field)
		}
		if c.name == "moved since" && (me.Details.ExpectedRecipient != "dead" || me.Details.ActualRecipient != "live") {
			t.Fatalf("%s: details = %+v", c.name, me.Details)
		}
		if c.name == "leased since" && (me.Details.TaskState != TaskInFlight || me.Details.ActualLeaseID != l.LeaseID) {
			t.Fatalf("%s: details = %+v", c.name, me.Details)
		}
	}
	if after := stateJSON(t, b.s, true); after != before {
		t.Fatal("a refused repair changed the state")
	}
}

func TestQueuedRepairRefusals(t *testing.T) {
	id := "00000000-0000-4000-8000-000000000001"
	lease := "00000000-0000-4000-8000-000000000002"
	for _, c := range []struct {
		cmd   RepairCommand
		field string
	}{
		{RepairCommand{Action: ActionMove}, "command.recipient"},
		{RepairCommand{Action: ActionMove, Recipient: "bad agent"}, "command.recipient"},
		{RepairCommand{Action: ActionMove, Recipient: "b", LeaseID: lease}, "command.lease_id"},
		{RepairCommand{Action: ActionMove, Recipient: "b", DuplicateRisk: RiskIdempotent}, "command.duplicate_risk"},
		{RepairCommand{Action: ActionMove, Recipient: "b", Message: "m"}, "command.message"},
		{RepairCommand{Action: ActionMove, Recipient: "b", QueuedFor: "a b"}, "command.queued_for"},
		{RepairCommand{Action: ActionCancel, Recipient: "b"}, "command.recipient"},
		{RepairCommand{Action: ActionCancel, Message: "   "}, "command.message"},
		{RepairCommand{Action: ActionRequeue, DuplicateRisk: RiskIdempotent, QueuedFor: "a"}, "command.queued_for"},
		{RepairCommand{Action: ActionForceError, Message: "m", QueuedFor: "a"}, "command.queued_for"},
		{RepairCommand{Action: "withdraw"}, "command.action"},
	} {
		_, err := NormalizeRepair(RepairRequest{TaskID: id, Reason: "r", Command: c.cmd})
		var me *Error
		if !errors.As(err, &me) || me.Code != CodeInvalid || me.Details == nil || me.Details.Field != c.field {
			t.Fatalf("%+v: err = %v, want invalid %s", c.cmd, err, c.field)
		}
		if !strings.Contains(me.Message, c.field) {
			t.Fatalf("%+v: message %q does not name %s", c.cmd, me.Message, c.field)
		}
	}
}

// A move or withdraw the state cannot apply is refused on replay, never
// half applied.
func TestQueuedRepairEventsRefusedWhenTheyDoNotFit(t *testing.T) {
	b := newBox(t)
	id := b.send("p", "a")
	b.lease("a")
	before := stateJSON(t, b.s, true)
	for _, ev := range []Event{
		{Seq: b.s.Seq + 1, Type: EventTaskMoved, TaskID: id, Recipient: "b"},
		{Seq: b.s.Seq + 1, Type: EventTaskWithdrawn, TaskID: id, Result: &Result{TaskID: id, Status: StatusError}},
	} {
		if err := b.s.Apply(ev); err == nil {
			t.Fatalf("%s of a leased task applied", ev.Type)
		}
		if after := stateJSON(t, b.s, true); after != before {
			t.Fatalf("%s of a leased task: a refused event changed the state", ev.Type)
		}
	}
	id2 := b.send("p", "a")
	before = stateJSON(t, b.s, true)
	for _, ev := range []Event{
		{Seq: b.s.Seq + 1, Type: EventTaskMoved, TaskID: id2, Recipient: "not an id"},
		{Seq: b.s.Seq + 1, Type: EventTaskMoved, TaskID: id2, Recipient: "a"},
		{Seq: b.s.Seq + 1, Type: EventTaskWithdrawn, TaskID: id2},
		{Seq: b.s.Seq + 1, Type: EventTaskWithdrawn, TaskID: id2, Result: &Result{TaskID: id2, Status: StatusOK}},
	} {
		if err := b.s.Apply(ev); err == nil {
			t.Fatalf("%+v applied", ev)
		}
		if after := stateJSON(t, b.s, true); after != before {
			t.Fatalf("%+v: a refused event changed the state", ev)
		}
	}
}
