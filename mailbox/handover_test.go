package mailbox

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// handOver hands a task to another sender as the engine would.
func (b *box) handOver(taskID, sentBy, to string) (RepairOutcome, error) {
	b.t.Helper()
	req, err := NormalizeRepair(RepairRequest{TaskID: taskID, Reason: "coder is dead",
		Command: RepairCommand{Action: ActionHandOver, Sender: to, SentBy: sentBy}})
	if err != nil {
		return RepairOutcome{}, err
	}
	ev, err := b.s.DecideRepair(req, "oncall", b.now)
	if err != nil {
		return RepairOutcome{}, err
	}
	return b.s.RepairOutcomeOf(b.apply(ev)), nil
}

// asked leaves a task from sender to worker waiting on its sender's answer.
func (b *box) asked(sender, worker string) string {
	b.t.Helper()
	id := b.send(sender, worker)
	got, l := b.lease(worker)
	if got != id {
		b.t.Fatalf("leased %s, want %s", got, id)
	}
	if err := b.result(id, l.LeaseID, StatusInputRequired, text("which branch?"), worker); err != nil {
		b.t.Fatal(err)
	}
	return id
}

// finished leaves a task from sender to worker with its result undrained.
func (b *box) finished(sender, worker string) string {
	b.t.Helper()
	id := b.send(sender, worker)
	got, l := b.lease(worker)
	if got != id {
		b.t.Fatalf("leased %s, want %s", got, id)
	}
	if err := b.post(id, l.LeaseID); err != nil {
		b.t.Fatal(err)
	}
	return id
}

func agentInfo(t *testing.T, s *State, now int64, agent string) AgentInfo {
	t.Helper()
	for _, a := range s.Agents(now) {
		if a.Agent == agent {
			return a
		}
	}
	return AgentInfo{Agent: agent}
}

// A dead sender's question and undrained results go to the agent that
// takes its work: it drains them (the result in its old place, ahead of
// its own newer one), answers the question, and the dead one owes nothing.
func TestHandOverMovesQuestionsAndResults(t *testing.T) {
	b := newBox(t)
	older := b.finished("coder", "w")
	question := b.asked("coder", "w")
	own := b.finished("reviewer", "w")

	dead := agentInfo(t, b.s, b.now, "coder")
	if dead.Waiting != 1 || dead.Undrained != 1 || dead.ResultsPending != 2 || dead.Owes() != 2 {
		t.Fatalf("coder before: %+v (owes %d), want 1 question and 1 undrained result", dead, dead.Owes())
	}
	if got := b.s.Agents(b.now); !reflect.DeepEqual(got, agentsByHand(b.s, b.now, b.log)) {
		t.Fatalf("agents: %+v\nby hand %+v", got, agentsByHand(b.s, b.now, b.log))
	}

	for _, id := range []string{older, question} {
		out, err := b.handOver(id, "coder", "reviewer")
		if err != nil {
			t.Fatal(err)
		}
		if out.Action != OutcomeHandedOver || out.Sender != "reviewer" || out.TaskID != id {
			t.Fatalf("outcome = %+v", out)
		}
	}
	mustState(t, b.s, older, TaskResultPending)
	rec := mustState(t, b.s, question, TaskWaiting)
	if rec.Task.Sender != "reviewer" {
		t.Fatalf("question's sender = %s", rec.Task.Sender)
	}
	h := rec.History[len(rec.History)-1]
	if h.Type != EventTaskHandedOver || h.Sender != "reviewer" || h.Principal != "oncall" || h.Reason != "coder is dead" {
		t.Fatalf("history = %+v", h)
	}
	a := b.s.Audit(question, 1)
	if len(a) != 1 || a[0].Action != OutcomeHandedOver || a[0].FromSender != "coder" || a[0].ToSender != "reviewer" || a[0].Move() != "sender coder -> reviewer" {
		t.Fatalf("audit = %+v", a)
	}

	dead = agentInfo(t, b.s, b.now, "coder")
	if dead.Owes() != 0 || dead.ResultsPending != 0 {
		t.Fatalf("coder after: %+v, owes %d", dead, dead.Owes())
	}
	if got := b.s.Agents(b.now); !reflect.DeepEqual(got, agentsByHand(b.s, b.now, b.log)) {
		t.Fatalf("agents: %+v\nby hand %+v", got, agentsByHand(b.s, b.now, b.log))
	}
	b.roundTrip()
	b.jsonRoundTrip()

	if _, ok := b.drain("coder"); ok {
		t.Fatal("coder still drained a result")
	}
	// reviewer drains in posting order: coder's old result, the question,
	// then its own.
	for _, want := range []string{older, question, own} {
		r, ok := b.drain("reviewer")
		if !ok || r.TaskID != want {
			t.Fatalf("reviewer drained %+v (%v), want %s", r, ok, want)
		}
	}
	if _, err := b.reply(question, "coder", "", text("main")); err == nil {
		t.Fatal("coder still answered the question")
	}
	if out, err := b.reply(question, "reviewer", "", text("main")); err != nil || out.State != TaskQueued {
		t.Fatalf("reviewer's answer: %+v, %v", out, err)
	}
	b.roundTrip()
}

func TestHandOverRefusals(t *testing.T) {
	b := newBox(t)
	queued := b.send("coder", "w0")
	done := b.finished("coder", "w")
	b.drain("coder")
	q := b.asked("coder", "w2")
	seq := b.s.Seq

	conflict := func(err error, field, want string) {
		t.Helper()
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeConflict || !strings.Contains(e.Message, want) || field != "" && e.Details.Field != field {
			t.Fatalf("got %v, want a conflict on %q saying %q", err, field, want)
		}
	}
	_, err := b.handOver(queued, "coder", "reviewer")
	conflict(err, "", "it is queued for w0, and nothing waits on its sender; move or cancel it instead")
	_, err = b.handOver(done, "coder", "reviewer")
	conflict(err, "", "its sender already drained its result")
	_, err = b.handOver(q, "someone", "reviewer")
	conflict(err, "command.sent_by", "command.sent_by: cannot hand task "+q+" over as sent by someone: its sender is coder now")

	invalid := func(c RepairCommand, field, want string) {
		t.Helper()
		_, err := NormalizeRepair(RepairRequest{TaskID: q, Reason: "r", Command: c})
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeInvalid || e.Details.Field != field || !strings.Contains(e.Message, want) {
			t.Fatalf("%+v: got %v, want %s: %s", c, err, field, want)
		}
	}
	invalid(RepairCommand{Action: ActionHandOver}, "command.sender", "command.sender: missing, expected the agent id of the task's new sender")
	invalid(RepairCommand{Action: ActionHandOver, Sender: "bad agent"}, "command.sender", "command.sender")
	invalid(RepairCommand{Action: ActionHandOver, Sender: "r", QueuedFor: "w"}, "command.queued_for", "not allowed with action \"hand_over\"")
	invalid(RepairCommand{Action: ActionHandOver, Sender: "r", Message: "m"}, "command.message", "not allowed with action \"hand_over\"")
	invalid(RepairCommand{Action: ActionHandOver, Sender: "r", Recipient: "x"}, "command.recipient", "name it in command.sender")
	invalid(RepairCommand{Action: ActionMove, Recipient: "x", Sender: "r"}, "command.sender", "command.sender: not allowed with action \"move\"")
	invalid(RepairCommand{Action: ActionForceError, Message: "m", SentBy: "r"}, "command.sent_by", "command.sent_by: not allowed with action \"force_error\"")

	req, _ := NormalizeRepair(RepairRequest{TaskID: q, Reason: "r", Command: RepairCommand{Action: ActionHandOver, Sender: "coder"}})
	if _, err := b.s.DecideRepair(req, "", b.now); err == nil || !strings.Contains(err.Error(), `command.sender: got "coder", already the sender of task`) {
		t.Fatalf("hand over to its own sender: %v", err)
	}
	if b.s.Seq != seq {
		t.Fatalf("refusals changed the state: seq %d, was %d", b.s.Seq, seq)
	}
	// An event that does not fit is refused on replay.
	if err := b.s.Apply(Event{Seq: seq + 1, Type: EventTaskHandedOver, TaskID: queued, Sender: "x", Agent: "coder"}); err == nil {
		t.Fatal("a hand over of a queued task applied")
	}
	if err := b.s.Apply(Event{Seq: seq + 1, Type: EventTaskHandedOver, TaskID: q, Sender: "x", Agent: "other"}); err == nil {
		t.Fatal("a hand over from a sender the task does not have applied")
	}
}

// A result handed to a sender with a webhook is told to its webhook, as a
// new result would be; a dead letter of it marks that agent's webhook as
// failing in the agents listing.
func TestHandOverTellsTheNewSendersWebhook(t *testing.T) {
	b := newBox(t)
	b.registerCard("reviewer", AgentCard{Name: "Reviewer", Webhook: &Webhook{URL: "http://127.0.0.1:9/results"}})
	id := b.finished("coder", "w")
	if len(b.s.Outbox()) != 0 {
		t.Fatalf("outbox before = %+v", b.s.Outbox())
	}
	if _, err := b.handOver(id, "coder", "reviewer"); err != nil {
		t.Fatal(err)
	}
	out := b.s.Outbox()
	if len(out) != 1 || out[0].Agent != "reviewer" || out[0].TaskID != id || out[0].Event != EventTaskHandedOver {
		t.Fatalf("outbox = %+v, want one notification for reviewer's webhook", out)
	}
	if a := agentInfo(t, b.s, b.now, "reviewer"); a.WebhookDead != 0 || a.WebhookIsFailing() {
		t.Fatalf("reviewer = %+v", a)
	}
	ev, err := b.s.DecidePushDeadLettered(out[0].ID, 8, "POST: 503", b.now)
	if err != nil {
		t.Fatal(err)
	}
	b.apply(ev)
	if a := agentInfo(t, b.s, b.now, "reviewer"); a.WebhookDead != 1 || !a.WebhookIsFailing() {
		t.Fatalf("reviewer after a dead letter = %+v, want its webhook failing", a)
	}
	b.roundTrip()
}

// A task that came through the A2A edge is never handed over (its caller
// reads it by id): refused naming the task, and its result is not a drain
// its caller owes.
func TestHandOverRefusesAnA2ATask(t *testing.T) {
	b := newBox(t)
	id := b.sendA2A("w")
	got, l := b.lease("w")
	if got != id {
		t.Fatalf("leased %s", got)
	}
	if err := b.post(id, l.LeaseID); err != nil {
		t.Fatal(err)
	}
	if a := agentInfo(t, b.s, b.now, "caller@a2a"); a.ResultsPending != 1 || a.Undrained != 0 || a.Owes() != 0 {
		t.Fatalf("caller@a2a = %+v, want its result pending but not owed as a drain", a)
	}
	if got := b.s.Agents(b.now); !reflect.DeepEqual(got, agentsByHand(b.s, b.now, b.log)) {
		t.Fatalf("agents: %+v\nby hand %+v", got, agentsByHand(b.s, b.now, b.log))
	}
	seq := b.s.Seq
	_, err := b.handOver(id, "caller@a2a", "reviewer")
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeConflict || e.Details.Field != "task_id" || !strings.Contains(e.Message, "it came through the A2A edge") {
		t.Fatalf("hand over of an A2A task: %v", err)
	}
	if b.s.Seq != seq {
		t.Fatal("the refusal changed the state")
	}
}
