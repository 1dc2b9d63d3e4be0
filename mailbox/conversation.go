package mailbox

import (
	"slices"
	"strconv"
	"unicode/utf8"
)

// Conversations. A worker holding a lease may end its turn with a question
// instead of finishing: a result with status input_required or
// auth_required. The lease ends and the task waits on its sender
// (TaskWaiting); the question is the task's newest turn, and a pending
// result the sender drains like any other. The sender answers with a reply
// (task_replied): its turn is added and the task is queued again for the
// same recipient, keeping its place as the one that has waited longest, so
// the next lease carries every turn. The attempt counter keeps counting
// leases across turns.

// Roles of a turn.
const (
	RoleWorker = "worker"
	RoleSender = "sender"
)

// Turn is one step of a task's conversation after its first message: a
// worker's question or a sender's answer.
type Turn struct {
	// Seq and AtMs are the event's that added the turn; a task_replied
	// event's turn leaves them out (they are the event's own).
	Seq  uint64 `json:"seq,omitempty"`
	AtMs int64  `json:"at_ms,omitempty"`
	// Role is "worker" (a question) or "sender" (an answer); Agent is who
	// took the turn.
	Role  string `json:"role"`
	Agent string `json:"agent"`
	// Status is a worker turn's status: input_required or auth_required.
	Status  string    `json:"status,omitempty"`
	Content []Content `json:"content"`
	// LeaseID and Attempt are the lease a worker turn ended.
	LeaseID string `json:"lease_id,omitempty"`
	Attempt int    `json:"attempt,omitempty"`
	// A2A is set on an answer sent through the A2A edge: the message as
	// its client sent it.
	A2A *A2AOrigin `json:"a2a,omitempty"`
}

// Reply is a sender's answer to a task waiting on it:
// {"sender","content"} at POST /a2a/tasks/{id}/reply.
type Reply struct {
	// TaskID is the task answered (from the route, never the body).
	TaskID  string    `json:"-"`
	Sender  string    `json:"sender"`
	Content []Content `json:"content"`
	// A2A is set on an answer sent through the A2A edge, never by clients
	// of the native route.
	A2A *A2AOrigin `json:"a2a,omitempty"`
}

// KindTaskReplied answers POST /a2a/tasks/{id}/reply.
const KindTaskReplied = "a2a_task_replied"

// ReplyOutcome says what a reply did.
type ReplyOutcome struct {
	TaskID string `json:"task_id"`
	// State is the task's state now: queued.
	State string `json:"state"`
	// Turns is how many turns the task's conversation holds now.
	Turns   int `json:"turns"`
	Attempt int `json:"attempt"`
	// Duplicate marks a reply that repeated the task's newest answer (the
	// same sender, the same content) and was answered without a change:
	// a retried request is safe.
	Duplicate bool `json:"duplicate,omitempty"`
}

// TaskRepliedResponse answers POST /a2a/tasks/{id}/reply.
type TaskRepliedResponse struct {
	Kind string `json:"kind"`
	ReplyOutcome
}

// NormalizeReply validates a reply and returns it with canonical ids.
func NormalizeReply(r Reply) (Reply, error) {
	var err error
	if r.TaskID, err = CanonicalUUID("task_id", r.TaskID); err != nil {
		return r, err
	}
	if err := ValidateAgentID("sender", r.Sender); err != nil {
		return r, err
	}
	if r.Content, err = normalizeContent(r.Content); err != nil {
		return r, err
	}
	if len(r.Content) == 0 && r.A2A == nil {
		return r, Invalidf("content", "got no parts, expected the answer as at least one part such as {\"type\":\"text\",\"text\":\"use the staging database\"}")
	}
	if r.A2A != nil {
		a := *r.A2A
		if err := normalizeA2A(&a); err != nil {
			return r, err
		}
		r.A2A = &a
	}
	return r, nil
}

// contentBytes is the size a turn adds to its task's conversation.
func contentBytes(cs []Content, a *A2AOrigin) int {
	n := 0
	for _, c := range cs {
		n += len(c.Text) + len(c.Value)
	}
	if a != nil {
		n += len(a.Message)
	}
	return n
}

// turnsBytes is the size of a task's conversation so far.
func turnsBytes(ts []Turn) int {
	n := 0
	for _, t := range ts {
		n += contentBytes(t.Content, t.A2A)
	}
	return n
}

// checkTurn refuses a turn the conversation bounds do not allow: field
// names what the caller gave.
func (s *State) checkTurn(t *taskRec, field string, add int) error {
	maxTurns, maxBytes := s.turnBounds()
	if n := len(t.Task.Turns) + 1; n > maxTurns {
		return &Error{Code: CodeInvalid, Message: field + ": task " + t.Task.ID + " already holds " + strconv.Itoa(len(t.Task.Turns)) + " turns, and max_turns is " + strconv.Itoa(maxTurns) +
			"; finish the task (post ok or error) instead of asking again, or ask the operator to raise max_turns",
			Details: &ErrorDetails{Field: field}}
	}
	if n := turnsBytes(t.Task.Turns) + add; n > maxBytes {
		return &Error{Code: CodeInvalid, Message: field + ": this turn would bring task " + t.Task.ID + "'s conversation to " + strconv.Itoa(n) + " bytes, and max_turns_bytes is " + strconv.Itoa(maxBytes) +
			"; send a shorter turn, or finish the task",
			Details: &ErrorDetails{Field: field}}
	}
	return nil
}

// checkAsk refuses a question on a task whose sender has no way to answer
// it: one sent through Covenant's dialect, whose client knows no reply.
func (s *State) checkAsk(t *taskRec) error {
	if t.Task.Covenant != nil {
		return Invalidf("status", "task %s came through Covenant's dialect, whose senders cannot answer a question; finish it with ok, error, partial or rejected", t.Task.ID)
	}
	return nil
}

// DecideReply checks a normalized reply from replier (the agent the access
// policy holds the caller to; "" for a trusted caller) and returns its
// task_replied event, or ok=false when it repeats the task's newest answer
// (nothing to do: out says so).
func (s *State) DecideReply(r Reply, replier string, nowMs int64) (ev Event, out ReplyOutcome, ok bool, err error) {
	t, found := s.tasks[r.TaskID]
	if !found {
		return Event{}, out, false, &Error{Code: CodeNotFound, Message: "task_id: task " + r.TaskID + " was never sent through this daemon (or finished long ago and was forgotten)",
			Details: &ErrorDetails{Field: "task_id"}}
	}
	if r.Sender != t.Task.Sender {
		return Event{}, out, false, &Error{Code: CodeForbidden,
			Message: "sender: got " + quote(r.Sender) + ", but task " + t.Task.ID + " was sent by " + quote(t.Task.Sender) + "; only a task's sender answers its questions",
			Details: &ErrorDetails{Field: "sender"}}
	}
	if replier != "" && replier != t.Task.Sender {
		return Event{}, out, false, &Error{Code: CodeForbidden,
			Message: "sender: task " + t.Task.ID + " was sent by " + quote(t.Task.Sender) + ", and this token speaks for " + quote(replier) + "; only a task's sender (or an a2a.admin token) answers its questions",
			Details: &ErrorDetails{Field: "sender", Capability: "a2a.admin"}}
	}
	if t.State != TaskWaiting {
		if last, ok := t.lastTurn(); ok && last.Role == RoleSender && last.Agent == r.Sender && sameContent(last.Content, r.Content) && sameA2A(last.A2A, r.A2A) &&
			(t.State == TaskQueued || t.State == TaskInFlight) {
			// A retried reply: the answer is already on the task.
			return Event{}, ReplyOutcome{TaskID: t.Task.ID, State: t.State, Turns: len(t.Task.Turns), Attempt: t.Attempt, Duplicate: true}, false, nil
		}
		why := map[string]string{
			TaskQueued:        "it is queued, not waiting on its sender (nobody asked anything)",
			TaskInFlight:      "it is in flight, not waiting on its sender (its worker has not asked anything)",
			TaskResultPending: "it is finished and its result waits for its sender",
			TaskDone:          "it is finished and its sender has its result",
			TaskCanceled:      "it was canceled" + t.canceledBy(),
		}[t.State]
		return Event{}, out, false, &Error{Code: CodeConflict, Message: "cannot reply to task " + t.Task.ID + ": " + why + "; only a task waiting on its sender (input_required or auth_required) takes a reply",
			Details: &ErrorDetails{TaskState: t.State, Attempt: t.Attempt}}
	}
	if err := s.checkTurn(t, "content", contentBytes(r.Content, r.A2A)); err != nil {
		return Event{}, out, false, err
	}
	turn := &Turn{Role: RoleSender, Agent: r.Sender, Content: r.Content, A2A: r.A2A}
	ev = Event{AtMs: nowMs, Type: EventTaskReplied, TaskID: t.Task.ID, Attempt: t.Attempt, Principal: replier, Turn: turn}
	return ev, ReplyOutcome{TaskID: t.Task.ID, State: TaskQueued, Turns: len(t.Task.Turns) + 1, Attempt: t.Attempt}, true, nil
}

func (t *taskRec) lastTurn() (Turn, bool) {
	if len(t.Task.Turns) == 0 {
		return Turn{}, false
	}
	return t.Task.Turns[len(t.Task.Turns)-1], true
}

func sameContent(a, b []Content) bool {
	return slices.EqualFunc(a, b, func(x, y Content) bool {
		return x.Type == y.Type && x.Text == y.Text && string(x.Value) == string(y.Value)
	})
}

func sameA2A(a, b *A2AOrigin) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.MessageID == b.MessageID && string(a.Message) == string(b.Message)
}

// addTurn appends a turn to the task's conversation, on an array of its
// own: copies of the task handed out before keep theirs.
func (t *taskRec) addTurn(turn Turn) {
	t.Task.Turns = append(slices.Clip(t.Task.Turns), turn)
}

// applyReply queues a waiting task again with its sender's answer; a
// question its sender had not drained is answered, so it goes.
func (s *State) applyReply(ev Event) error {
	t, err := s.taskIn(ev.TaskID, TaskWaiting)
	if err != nil {
		return err
	}
	if ev.Turn == nil || ev.Turn.Role != RoleSender {
		return errorString("task " + t.Task.ID + ": reply without the sender's turn")
	}
	s.dropPendingResult(t.Task.ID)
	turn := *ev.Turn
	turn.Seq, turn.AtMs = ev.Seq, ev.AtMs
	t.addTurn(turn)
	delete(s.waiting, t.Task.ID)
	// The task keeps its SendSeq: it is queued ahead of every task sent
	// after it, as a requeued task is.
	t.State, t.QueuedAtMs = TaskQueued, ev.AtMs
	s.enqueue(t)
	t.addHistory(ev)
	return nil
}

// ask ends a lease with the worker's question: the task waits on its
// sender.
func (s *State) ask(t *taskRec, ev Event) {
	r := ev.Result
	t.addTurn(Turn{Seq: ev.Seq, AtMs: ev.AtMs, Role: RoleWorker, Agent: t.LeasedTo, Status: r.Status, Content: r.Content, LeaseID: t.LeaseID, Attempt: t.Attempt})
	s.clearLease(t)
	t.State = TaskWaiting
	s.waiting[t.Task.ID] = t
}

// dropPendingResult forgets a task's pending result, if it has one: one
// drained, or a question answered or overtaken before its sender drained
// it.
func (s *State) dropPendingResult(taskID string) {
	r, ok := s.results[taskID]
	if !ok {
		return
	}
	s.resultsAll.Remove(r)
	if h := s.bySender[r.Sender]; h != nil {
		h.Remove(r)
		if h.Len() == 0 {
			delete(s.bySender, r.Sender)
		}
	}
	delete(s.results, taskID)
}

// WaitingSince is when a waiting task's worker asked (0 for any other).
func (r *TaskRecord) WaitingSince() int64 {
	if r.State != TaskWaiting || len(r.Task.Turns) == 0 {
		return 0
	}
	return r.Task.Turns[len(r.Task.Turns)-1].AtMs
}

// Question is a waiting task's question: the worker's newest turn.
func (t *Task) Question() (Turn, bool) {
	for i := len(t.Turns) - 1; i >= 0; i-- {
		if t.Turns[i].Role == RoleWorker {
			return t.Turns[i], true
		}
	}
	return Turn{}, false
}

// normalizeContent checks result or reply content parts.
func normalizeContent(cs []Content) ([]Content, error) {
	for i, c := range cs {
		field := "content[" + strconv.Itoa(i) + "]"
		if err := checkContent(field, c); err != nil {
			return nil, err
		}
	}
	if cs == nil {
		cs = []Content{}
	}
	return cs, nil
}

func validUTF8(field, v string) error {
	if !utf8.ValidString(v) {
		return Invalidf(field, "got invalid UTF-8, expected text")
	}
	return nil
}
