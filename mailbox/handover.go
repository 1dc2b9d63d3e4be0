package mailbox

import "fmt"

// Handing a task to another sender. A dead agent owes more than its leases
// and the tasks queued for it: the tasks it sent whose workers wait on its
// answer, and the results it has not drained. hand_over makes another
// agent the task's sender (task_handed_over): that agent answers the
// question, or drains the result, from then on, and the dead one owes
// nothing for it. A pending result (a finished task's, or a question not
// yet drained) keeps its place among the new sender's: it was posted
// when it was. Guarded by command.sent_by, the sender the operator saw.

// normalizeHandOver checks a hand_over's command: no lease, no posture, no
// message, no recipient; a new sender, and the guard when given.
func normalizeHandOver(c *RepairCommand) error {
	notAllowed := func(field, why string) error {
		return Invalidf(field, "not allowed with action \"hand_over\" (%s)", why)
	}
	switch {
	case c.LeaseID != "":
		return notAllowed("command.lease_id", "a task waiting on its sender has no lease; guard it with command.sent_by, the sender you saw")
	case c.QueuedFor != "":
		return notAllowed("command.queued_for", "the task is not queued; guard it with command.sent_by, the sender you saw")
	case c.DuplicateRisk != "":
		return notAllowed("command.duplicate_risk", "nothing runs again: only who answers or drains the task changes")
	case c.Message != "":
		return notAllowed("command.message", "only force_error and cancel post a message")
	case c.Recipient != "":
		return notAllowed("command.recipient", "hand_over changes the task's sender: name it in command.sender")
	}
	if c.Sender == "" {
		return Invalidf("command.sender", "missing, expected the agent id of the task's new sender (the agent that answers its question or drains its result from now on)")
	}
	if err := ValidateAgentID("command.sender", c.Sender); err != nil {
		return err
	}
	if c.SentBy != "" {
		return ValidateAgentID("command.sent_by", c.SentBy)
	}
	return nil
}

// decideHandOver returns the task_handed_over event of a normalized
// hand_over.
func (s *State) decideHandOver(req RepairRequest, principal string, nowMs int64) (Event, error) {
	c := req.Command
	t, ok := s.tasks[req.TaskID]
	if !ok {
		return Event{}, &Error{Code: CodeNotFound, Message: "task_id: task " + req.TaskID + " was never sent through this daemon (or was drained long ago and forgotten)",
			Details: &ErrorDetails{Field: "task_id"}}
	}
	d := &ErrorDetails{TaskState: t.State, Attempt: t.Attempt}
	if t.State != TaskWaiting && t.State != TaskResultPending {
		why := map[string]string{
			TaskQueued:   "it is queued for " + t.Task.Recipient + ", and nothing waits on its sender; move or cancel it instead",
			TaskInFlight: "it is leased by " + t.LeasedTo + ", and nothing waits on its sender yet; requeue or force an error on the lease instead",
			TaskDone:     "its sender already drained its result",
			TaskCanceled: "it was canceled" + t.canceledBy(),
		}[t.State]
		return Event{}, &Error{Code: CodeConflict, Message: "cannot hand task " + t.Task.ID + " over to another sender: " + why +
			"; only a task waiting on its sender (its question to answer, or its result to drain) is handed over", Details: d}
	}
	if c.SentBy != "" && c.SentBy != t.Task.Sender {
		d.Field = "command.sent_by"
		return Event{}, &Error{Code: CodeConflict,
			Message: "command.sent_by: cannot hand task " + t.Task.ID + " over as sent by " + c.SentBy + ": its sender is " + t.Task.Sender + " now", Details: d}
	}
	if t.Task.A2A != nil {
		// Not a change since the operator looked: this task is never
		// handed over (details.field names the task).
		d.Field = "task_id"
		return Event{}, &Error{Code: CodeConflict,
			Message: "task_id: cannot hand task " + t.Task.ID + " over to another sender: it came through the A2A edge, and its caller reads it by its id over A2A, not by draining; cancel it or force an error on it instead",
			Details: d}
	}
	if c.Sender == t.Task.Sender {
		return Event{}, Invalidf("command.sender", "got %s, already the sender of task %s; expected another agent", quote(c.Sender), t.Task.ID)
	}
	if t.State == TaskWaiting {
		// The task goes back to the queue when the question is answered:
		// its idempotent twin tracking follows it to the new sender.
		moved := t.Task
		moved.Sender = c.Sender
		if twin, ok := s.LiveDuplicate(moved); ok && twin != t.Task.ID {
			return Event{}, &Error{Code: CodeConflict,
				Message: "command.sender: cannot hand task " + t.Task.ID + " over to " + c.Sender + ": task " + twin + ", its idempotent twin (same recipient, kind or intent, and idempotency key), is already queued or in flight from " + c.Sender +
					"; force an error on it instead",
				Details: &ErrorDetails{Field: "command.sender", TaskState: t.State, Attempt: t.Attempt}}
		}
	}
	return Event{AtMs: nowMs, Type: EventTaskHandedOver, TaskID: t.Task.ID, Attempt: t.Attempt, Principal: principal, Reason: req.Reason,
		Sender: c.Sender, Agent: t.Task.Sender}, nil
}

// applyHandOver makes ev.Sender the task's sender; its pending result, if
// any, waits for the new sender in its old place.
func (s *State) applyHandOver(ev Event) error {
	t, ok := s.tasks[ev.TaskID]
	if !ok {
		return fmt.Errorf("unknown task %s", ev.TaskID)
	}
	if t.State != TaskWaiting && t.State != TaskResultPending {
		return fmt.Errorf("task %s is %s, not waiting on its sender", t.Task.ID, t.State)
	}
	if err := validAgentIDChars("sender", ev.Sender); err != nil {
		return fmt.Errorf("task %s: handed over to a sender that is not an agent id: %v", t.Task.ID, err)
	}
	from := t.Task.Sender
	if ev.Sender == from {
		return fmt.Errorf("task %s: handed over to %s, already its sender", t.Task.ID, from)
	}
	if ev.Agent != "" && ev.Agent != from {
		return fmt.Errorf("task %s: handed over from %s, but its sender is %s", t.Task.ID, ev.Agent, from)
	}
	tracked := false
	if k := dedupeKey(&t.Task); k != "" && s.live[k] == t.Task.ID {
		delete(s.live, k)
		tracked = true
	}
	s.countAgent(from, -1)
	t.Task.Sender = ev.Sender
	s.countAgent(ev.Sender, 1)
	if tracked {
		s.trackLive(t)
	}
	if r, ok := s.results[t.Task.ID]; ok {
		if h := s.bySender[r.Sender]; h != nil {
			h.Remove(r)
			if h.Len() == 0 {
				delete(s.bySender, r.Sender)
			}
		}
		r.Sender = ev.Sender
		s.senderHeap(r.Sender).Push(r)
	}
	t.addHistory(ev)
	s.recordAudit(ev, "")
	return nil
}
