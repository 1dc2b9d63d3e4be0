package mailbox

import (
	"fmt"
	"strconv"
	"time"
)

// Repairs of queued tasks. A dead agent's backlog is not only the leases it
// holds: tasks queued for it wait for a worker that will never lease them.
// An operator moves them to another recipient (task_moved: the task keeps
// its SendSeq, so it is queued ahead of everything sent after it, as the
// long waiter it is) or cancels them (task_withdrawn: the task leaves the
// queue and its sender gets an error result naming the reason). Each is
// guarded by command.queued_for, the recipient the operator saw: a task
// leased, finished or moved since is a conflict that says what it is now.

// decideQueuedRepair returns the task_moved or task_withdrawn event of a
// normalized move or cancel.
func (s *State) decideQueuedRepair(req RepairRequest, principal string, nowMs int64) (Event, error) {
	c := req.Command
	doing := map[string]string{ActionMove: "move", ActionCancel: "cancel"}[c.Action]
	t, err := s.queuedTask(req.TaskID, c.QueuedFor, doing)
	if err != nil {
		return Event{}, err
	}
	ev := Event{AtMs: nowMs, TaskID: t.Task.ID, Attempt: t.Attempt, Principal: principal, Reason: req.Reason}
	switch c.Action {
	case ActionMove:
		if c.Recipient == t.Task.Recipient {
			return Event{}, Invalidf("command.recipient", "got %s, the agent task %s is already queued for; expected another agent", quote(c.Recipient), t.Task.ID)
		}
		if err := s.checkMove(t, c.Recipient); err != nil {
			return Event{}, err
		}
		ev.Type, ev.Recipient = EventTaskMoved, c.Recipient
	case ActionCancel:
		msg := c.Message
		if msg == "" {
			msg = "canceled by " + whoRepaired(principal) + " while queued for " + t.Task.Recipient + ": " + req.Reason
		}
		ev.Type = EventTaskWithdrawn
		ev.Result = &Result{TaskID: t.Task.ID, Status: StatusError, Content: []Content{}, ErrorMessage: msg}
	}
	return ev, nil
}

// whoRepaired names a repair's principal in text a sender reads.
func whoRepaired(principal string) string {
	if principal == "" {
		return "an operator"
	}
	return principal
}

// queuedTask finds a task to move or cancel: it must be queued, and, when
// queuedFor is given, queued for that recipient.
func (s *State) queuedTask(taskID, queuedFor, doing string) (*taskRec, error) {
	t, ok := s.tasks[taskID]
	if !ok {
		return nil, &Error{Code: CodeNotFound, Message: "task_id: task " + taskID + " was never sent through this daemon (or was drained long ago and forgotten)",
			Details: &ErrorDetails{Field: "task_id"}}
	}
	if t.State != TaskQueued {
		why := map[string]string{
			TaskInFlight: "it was leased by " + t.LeasedTo + " under lease " + t.LeaseID + " (attempt " + strconv.Itoa(t.Attempt) + ", at " +
				time.UnixMilli(t.LeasedAtMs).UTC().Format(time.RFC3339) + "); requeue or force an error on the lease instead",
			TaskResultPending: "it already has a result waiting for its sender",
			TaskWaiting:       "its worker asked its sender a question, and it waits for the answer; force an error on it to end it",
			TaskDone:          "it is already resolved and its result was drained",
			TaskCanceled:      "it was canceled" + t.canceledBy(),
		}[t.State]
		d := &ErrorDetails{TaskState: t.State, Attempt: t.Attempt}
		if t.State == TaskInFlight {
			d.ActualLeaseID, d.LeasedTo, d.LeasedAtMs = t.LeaseID, t.LeasedTo, t.LeasedAtMs
		}
		return nil, &Error{Code: CodeConflict, Message: "cannot " + doing + " task " + taskID + ": it is no longer queued: " + why, Details: d}
	}
	if queuedFor != "" && queuedFor != t.Task.Recipient {
		return nil, &Error{Code: CodeConflict,
			Message: "command.queued_for: cannot " + doing + " task " + taskID + " as queued for " + queuedFor + ": it is queued for " + t.Task.Recipient + " now",
			Details: &ErrorDetails{Field: "command.queued_for", ExpectedRecipient: queuedFor, ActualRecipient: t.Task.Recipient, TaskState: t.State, Attempt: t.Attempt}}
	}
	return t, nil
}

// applyMove hands a queued task to its new recipient, in its old place.
func (s *State) applyMove(ev Event) error {
	t, err := s.taskIn(ev.TaskID, TaskQueued)
	if err != nil {
		return err
	}
	if err := validAgentIDChars("recipient", ev.Recipient); err != nil {
		return fmt.Errorf("task %s: moved to a recipient that is not an agent id: %v", t.Task.ID, err)
	}
	from := t.Task.Recipient
	if ev.Recipient == from {
		return fmt.Errorf("task %s: moved to %s, where it is already queued", t.Task.ID, from)
	}
	s.dequeue(t)
	s.moveTask(t, ev.Recipient)
	// QueuedAtMs and SendSeq stay: it has waited since then, and is
	// leased ahead of every task sent after it.
	s.enqueue(t)
	t.addHistory(ev)
	s.recordAudit(ev, from)
	return nil
}

// applyWithdraw ends a queued task with the operator's error result.
func (s *State) applyWithdraw(ev Event) error {
	t, err := s.taskIn(ev.TaskID, TaskQueued)
	if err != nil {
		return err
	}
	if ev.Result == nil || ev.Result.TaskID != t.Task.ID || ev.Result.Status != StatusError {
		return fmt.Errorf("task %s: withdrawn without an error result for it", t.Task.ID)
	}
	s.dequeue(t)
	t.State = TaskResultPending
	s.untrackLive(t)
	t.keepResult(*ev.Result)
	s.recordAudit(ev, "")
	s.addResult(t, ev, PendingResult{Result: *ev.Result, Forced: true})
	return nil
}
