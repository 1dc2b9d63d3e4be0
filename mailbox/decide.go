package mailbox

import (
	"fmt"
)

// The Decide functions check a request against the state and return the
// event that carries it out. They change nothing: the caller appends the
// event durably and then applies it, holding one lock across check and write
// so that two requests racing for the same lease cannot both pass.
//
// Beside each Decide function is the apply function for the event it
// returns (applySend, applyLease, ...): the one place that event changes the
// state, reached through State.apply's dispatch.

// DecideSend checks a normalized task and returns its task_sent event, or,
// for an idempotent task whose twin already has a posted result, the
// result_replayed event that answers it with a copy. Callers check
// LiveDuplicate first: a twin still queued or in flight answers the send.
func (s *State) DecideSend(t Task, nowMs int64) (Event, error) {
	if old, dup := s.tasks[t.ID]; dup {
		return Event{}, &Error{Code: CodeConflict, Message: "id: task " + t.ID + " was already sent (it is " + old.State + "); send a new task with a new id",
			Details: &ErrorDetails{Field: "id", TaskState: old.State}}
	}
	if c, ok := s.cachedFor(&t, nowMs); ok {
		r := c.Result
		r.TaskID, r.LeaseID = t.ID, ""
		return Event{AtMs: nowMs, Type: EventResultReplayed, Task: &t, Result: &r, ReplayedFrom: c.TaskID}, nil
	}
	return Event{AtMs: nowMs, Type: EventTaskSent, Task: &t}, nil
}

// applySend queues a sent task for its recipient.
func (s *State) applySend(ev Event) error {
	if ev.Task == nil {
		return fmt.Errorf("no task")
	}
	if err := s.admit(ev.Task.ID); err != nil {
		return err
	}
	t := &taskRec{TaskRecord: TaskRecord{Task: *ev.Task, State: TaskQueued, SentAtMs: ev.AtMs, QueuedAtMs: ev.AtMs, SendSeq: ev.Seq}, gidx: -1, ridx: -1, lidx: -1}
	t.addHistory(ev)
	s.addTask(t)
	s.enqueue(t)
	s.trackLive(t)
	return nil
}

// applyReplayed records an idempotent send answered from the result
// cache: the task arrives with its result already pending for its sender.
func (s *State) applyReplayed(ev Event) error {
	if ev.Task == nil || ev.Result == nil || ev.Result.TaskID != ev.Task.ID {
		return fmt.Errorf("replayed result without its task or result")
	}
	if err := s.admit(ev.Task.ID); err != nil {
		return err
	}
	t := &taskRec{TaskRecord: TaskRecord{Task: *ev.Task, State: TaskResultPending, SentAtMs: ev.AtMs, QueuedAtMs: ev.AtMs, SendSeq: ev.Seq}, gidx: -1, ridx: -1, lidx: -1}
	t.keepResult(*ev.Result)
	s.addTask(t)
	s.addResult(t, ev, PendingResult{Result: *ev.Result, Replayed: true})
	return nil
}

// DecideLease returns the task_leased event for the oldest task queued for
// recipient (or the oldest overall when recipient is ""), or ok=false when
// there is none. leasedTo names the agent taking the lease.
func (s *State) DecideLease(recipient, leasedTo, leaseID string, nowMs int64) (ev Event, ok bool) {
	var t *taskRec
	if recipient == "" {
		t, ok = s.queued.Peek()
	} else if h := s.byRecipient[recipient]; h != nil {
		t, ok = h.Peek()
	}
	if !ok {
		return Event{}, false
	}
	if leasedTo == "" {
		leasedTo = t.Task.Recipient
	}
	return Event{AtMs: nowMs, Type: EventTaskLeased, TaskID: t.Task.ID, LeaseID: leaseID, LeasedTo: leasedTo, Attempt: t.Attempt + 1}, true
}

// applyLease takes the task off its queues and puts it in flight under
// the event's lease, attempt and holder.
func (s *State) applyLease(ev Event) error {
	t, err := s.taskIn(ev.TaskID, TaskQueued)
	if err != nil {
		return err
	}
	if ev.LeaseID == "" || ev.LeasedTo == "" {
		return fmt.Errorf("task %s: lease without a lease id or holder", t.Task.ID)
	}
	if ev.Attempt != t.Attempt+1 {
		return fmt.Errorf("task %s: lease attempt %d after attempt %d", t.Task.ID, ev.Attempt, t.Attempt)
	}
	s.dequeue(t)
	t.State, t.Attempt = TaskInFlight, ev.Attempt
	t.LeaseID, t.LeasedTo, t.LeasedAtMs = ev.LeaseID, ev.LeasedTo, ev.AtMs
	s.holdLease(t)
	t.addHistory(ev)
	return nil
}

// LeaseOf returns the lease a task_leased event granted, with its task.
func (s *State) LeaseOf(ev Event) (Task, Lease) {
	t := s.tasks[ev.TaskID]
	return t.Task, Lease{LeaseID: ev.LeaseID, Attempt: ev.Attempt, LeasedAtMs: ev.AtMs}
}

// DecidePostResult checks a normalized result and returns its result_posted event.
func (s *State) DecidePostResult(r Result, nowMs int64) (Event, error) {
	t, err := s.inFlightTask(r.TaskID, r.LeaseID, "lease_id", "post a result for")
	if err != nil {
		return Event{}, err
	}
	r.LeaseID = t.LeaseID
	return Event{AtMs: nowMs, Type: EventResultPosted, TaskID: t.Task.ID, LeaseID: t.LeaseID, LeasedTo: t.LeasedTo, Attempt: t.Attempt, Result: &r}, nil
}

// DecideResult checks a normalized result posted by poster and returns
// the events that record it. poster is the agent the access policy holds
// the caller to ("" for a trusted caller: no tokens, an admin, the daemon
// itself): a result is accepted only from the lease's holder. A result for
// a task still queued, without a lease guard, from its recipient (or a
// trusted caller) is the work of a worker that finished without leasing
// first: it is recorded as a lease under newLeaseID() and its result, two events
// the caller appends as one unit, so the log and every console show both.
func (s *State) DecideResult(r Result, poster string, newLeaseID func() string, nowMs int64) ([]Event, error) {
	t, ok := s.tasks[r.TaskID]
	if ok && t.State == TaskQueued && r.LeaseID == "" {
		if poster != "" && poster != t.Task.Recipient {
			return nil, &Error{Code: CodeForbidden,
				Message: "task_id: task " + r.TaskID + " is queued for another agent, and this token speaks for " + quote(poster) + "; only its recipient (or an a2a.admin token) may post its result",
				Details: &ErrorDetails{Field: "task_id", TaskState: t.State, Capability: "a2a.admin"}}
		}
		if Asks(r.Status) {
			if err := s.checkAsk(t); err != nil {
				return nil, err
			}
			if err := s.checkTurn(t, "status", contentBytes(r.Content, nil)); err != nil {
				return nil, err
			}
		}
		leaseID := newLeaseID()
		lease := Event{AtMs: nowMs, Type: EventTaskLeased, TaskID: t.Task.ID, LeaseID: leaseID, LeasedTo: t.Task.Recipient, Attempt: t.Attempt + 1}
		r.LeaseID = leaseID
		return []Event{lease, {AtMs: nowMs, Type: EventResultPosted, TaskID: t.Task.ID, LeaseID: leaseID, LeasedTo: lease.LeasedTo, Attempt: lease.Attempt, Result: &r}}, nil
	}
	ev, err := s.DecidePostResult(r, nowMs)
	if err != nil {
		return nil, err
	}
	if Asks(r.Status) {
		if err := s.checkAsk(s.tasks[r.TaskID]); err != nil {
			return nil, err
		}
		if err := s.checkTurn(s.tasks[r.TaskID], "status", contentBytes(r.Content, nil)); err != nil {
			return nil, err
		}
	}
	if poster != "" && ev.LeasedTo != poster {
		return nil, &Error{Code: CodeForbidden,
			Message: "task_id: task " + r.TaskID + " is leased by another agent, and this token speaks for " + quote(poster) + "; only the lease's holder (or an a2a.admin token) may post its result",
			Details: &ErrorDetails{Field: "task_id", TaskState: TaskInFlight, Capability: "a2a.admin"}}
	}
	return []Event{ev}, nil
}

// applyResult ends a lease with a result for the task's sender: one its
// worker posted (cached for idempotent twins) or one an operator forced
// (recorded in the repair trail instead). A worker's question ends the
// lease without finishing the task: it waits on its sender, and the
// question is the sender's to drain. A forced error also ends a task
// waiting on its sender, whose undrained question it replaces.
func (s *State) applyResult(ev Event) error {
	forced := ev.Type == EventTaskForceErrored
	t, ok := s.tasks[ev.TaskID]
	if !ok {
		return fmt.Errorf("unknown task %s", ev.TaskID)
	}
	switch {
	case t.State == TaskInFlight:
	case t.State == TaskWaiting && forced:
	default:
		return fmt.Errorf("task %s is %s, not %s", ev.TaskID, t.State, TaskInFlight)
	}
	if ev.Result == nil || ev.Result.TaskID != t.Task.ID {
		return fmt.Errorf("no result for task %s", t.Task.ID)
	}
	if ev.LeaseID != "" && ev.LeaseID != t.LeaseID {
		return fmt.Errorf("task %s: lease %s is not the current lease %s", t.Task.ID, ev.LeaseID, t.LeaseID)
	}
	if Asks(ev.Result.Status) {
		if forced {
			return fmt.Errorf("task %s: a forced result cannot ask", t.Task.ID)
		}
		s.ask(t, ev)
		s.addResult(t, ev, PendingResult{Result: *ev.Result})
		return nil
	}
	if t.State == TaskWaiting {
		s.dropPendingResult(t.Task.ID)
		delete(s.waiting, t.Task.ID)
	}
	s.clearLease(t)
	t.State = TaskResultPending
	s.untrackLive(t)
	t.keepResult(*ev.Result)
	if forced {
		s.recordAudit(ev, "")
	} else {
		s.cacheResult(t, *ev.Result, ev.AtMs)
	}
	s.addResult(t, ev, PendingResult{Result: *ev.Result, Forced: forced})
	return nil
}

// DecideDrain returns the result_drained event for the oldest result pending
// for sender (or overall when sender is ""), or ok=false when there is none.
func (s *State) DecideDrain(sender string, nowMs int64) (ev Event, res PendingResult, ok bool) {
	var r *resultRec
	if sender == "" {
		r, ok = s.resultsAll.Peek()
	} else if h := s.bySender[sender]; h != nil {
		r, ok = h.Peek()
	}
	if !ok {
		return Event{}, PendingResult{}, false
	}
	attempt := 0
	if t := s.tasks[r.TaskID]; t != nil {
		attempt = t.Attempt
	}
	return Event{AtMs: nowMs, Type: EventResultDrained, TaskID: r.TaskID, Attempt: attempt}, r.PendingResult, true
}

// applyDrain hands a pending result to its sender: the task is done and
// remembered for RetainDone more drains.
func (s *State) applyDrain(ev Event) error {
	if _, ok := s.results[ev.TaskID]; !ok {
		return fmt.Errorf("task %s has no pending result", ev.TaskID)
	}
	s.dropPendingResult(ev.TaskID)
	if t, ok := s.tasks[ev.TaskID]; ok {
		t.addHistory(ev)
		if t.State == TaskWaiting {
			// A question drained: the task still waits for the answer.
			return nil
		}
		t.State, t.DoneAtMs, t.DoneSeq = TaskDone, ev.AtMs, ev.Seq
		s.remember(t.Task.ID)
	}
	return nil
}

// DecideRepair checks a normalized repair request made by principal and
// returns the event that carries it out.
func (s *State) DecideRepair(req RepairRequest, principal string, nowMs int64) (Event, error) {
	c := req.Command
	if c.Action == ActionMove || c.Action == ActionCancel {
		return s.decideQueuedRepair(req, principal, nowMs)
	}
	if c.Action == ActionHandOver {
		return s.decideHandOver(req, principal, nowMs)
	}
	doing := map[string]string{ActionRequeue: "requeue", ActionForceError: "force an error on"}[c.Action]
	if t, ok := s.tasks[req.TaskID]; ok && t.State == TaskWaiting {
		return s.decideRepairWaiting(t, req, principal, nowMs)
	}
	t, err := s.inFlightTask(req.TaskID, c.LeaseID, "command.lease_id", doing)
	if err != nil {
		return Event{}, err
	}
	ev := Event{AtMs: nowMs, TaskID: t.Task.ID, LeaseID: t.LeaseID, LeasedTo: t.LeasedTo, Attempt: t.Attempt, Principal: principal, Reason: req.Reason}
	switch c.Action {
	case ActionRequeue:
		if c.DuplicateRisk == RiskIdempotent && !t.Task.Idempotent() {
			return Event{}, Invalidf("command.duplicate_risk",
				"got \"idempotent\", but task %s is %s; requeue it with \"operator_accepted\" to accept that the work may run twice", t.Task.ID, t.Task.DuplicateSafety())
		}
		ev.Type, ev.DuplicateRisk = EventTaskRequeued, c.DuplicateRisk
		if c.Recipient != "" && c.Recipient != t.Task.Recipient {
			if err := s.checkMove(t, c.Recipient); err != nil {
				return Event{}, err
			}
			ev.Recipient = c.Recipient
		}
	case ActionForceError:
		ev.Type = EventTaskForceErrored
		ev.Result = &Result{TaskID: t.Task.ID, Status: StatusError, Content: []Content{}, ErrorMessage: c.Message, LeaseID: t.LeaseID}
	}
	return ev, nil
}

// decideRepairWaiting force-errors a task waiting on its sender: a
// question nobody answers. Its guard is the lease that asked (the one an
// operator saw), when given. A requeue is refused: the worker's turn is
// over, and only the sender's reply (or an error) moves the task on.
func (s *State) decideRepairWaiting(t *taskRec, req RepairRequest, principal string, nowMs int64) (Event, error) {
	c := req.Command
	q, _ := t.Task.Question()
	if c.Action == ActionRequeue {
		return Event{}, &Error{Code: CodeConflict,
			Message: "cannot requeue task " + t.Task.ID + ": it is waiting on its sender " + t.Task.Sender + " to answer its worker's question (" + q.Status + "); force an error on it, or cancel it, to end it",
			Details: &ErrorDetails{TaskState: t.State, Attempt: t.Attempt}}
	}
	if c.LeaseID != "" && c.LeaseID != q.LeaseID {
		return Event{}, &Error{Code: CodeConflict,
			Message: "command.lease_id: cannot force an error on task " + t.Task.ID + " under lease " + c.LeaseID + ": it is waiting on its sender, and its question was asked under lease " + q.LeaseID,
			Details: &ErrorDetails{Field: "command.lease_id", ExpectedLeaseID: c.LeaseID, ActualLeaseID: q.LeaseID, TaskState: t.State, Attempt: t.Attempt}}
	}
	return Event{AtMs: nowMs, Type: EventTaskForceErrored, TaskID: t.Task.ID, Attempt: t.Attempt, Principal: principal, Reason: req.Reason,
		Result: &Result{TaskID: t.Task.ID, Status: StatusError, Content: []Content{}, ErrorMessage: c.Message}}, nil
}

// checkMove refuses to hand an idempotent task to a recipient for which its
// twin (same sender, kind or intent, and key) is already queued or in
// flight: the two would run the same work, which is what the key exists to
// prevent, and the mailbox could no longer say which one a duplicate send
// means.
func (s *State) checkMove(t *taskRec, recipient string) error {
	moved := t.Task
	moved.Recipient = recipient
	twin, ok := s.LiveDuplicate(moved)
	if !ok || twin == t.Task.ID {
		return nil
	}
	return &Error{Code: CodeConflict,
		Message: "command.recipient: cannot hand task " + t.Task.ID + " to " + recipient + ": task " + twin + ", its idempotent twin (same sender, kind or intent, and idempotency key), is already queued or in flight for " + recipient +
			"; requeue it without a new recipient, or force an error on it",
		Details: &ErrorDetails{Field: "command.recipient"}}
}

// applyRequeue ends a lease by queueing the task again, for a new
// recipient when the event names one, and records the repair.
func (s *State) applyRequeue(ev Event) error {
	t, err := s.taskIn(ev.TaskID, TaskInFlight)
	if err != nil {
		return err
	}
	if ev.LeaseID != "" && ev.LeaseID != t.LeaseID {
		return fmt.Errorf("task %s: lease %s is not the current lease %s", t.Task.ID, ev.LeaseID, t.LeaseID)
	}
	movedFrom := ""
	if ev.Recipient != "" && ev.Recipient != t.Task.Recipient {
		if err := validAgentIDChars("recipient", ev.Recipient); err != nil {
			return fmt.Errorf("task %s: requeued to a recipient that is not an agent id: %v", t.Task.ID, err)
		}
		movedFrom = t.Task.Recipient
	}
	s.clearLease(t)
	if movedFrom != "" {
		s.moveTask(t, ev.Recipient)
	}
	// The task keeps its SendSeq, so it is queued ahead of every task
	// sent after it: for its new recipient too.
	t.State, t.QueuedAtMs = TaskQueued, ev.AtMs
	s.enqueue(t)
	t.addHistory(ev)
	s.recordAudit(ev, movedFrom)
	return nil
}

// RepairOutcomeOf describes what an applied repair event did.
func (s *State) RepairOutcomeOf(ev Event) RepairOutcome {
	out := RepairOutcome{TaskID: ev.TaskID, Attempt: ev.Attempt}
	switch ev.Type {
	case EventTaskRequeued:
		out.Action, out.State, out.Recipient = OutcomeRequeued, TaskQueued, ev.Recipient
	case EventTaskMoved:
		out.Action, out.State, out.Recipient = OutcomeMoved, TaskQueued, ev.Recipient
	case EventTaskHandedOver:
		out.Action, out.Sender = OutcomeHandedOver, ev.Sender
		if t, ok := s.tasks[ev.TaskID]; ok {
			out.State = t.State
		}
		if r, ok := s.results[ev.TaskID]; ok {
			pr := r.PendingResult
			out.Result = &pr
		}
	case EventTaskForceErrored, EventTaskWithdrawn:
		out.Action, out.State = OutcomeForcedError, TaskResultPending
		if ev.Type == EventTaskWithdrawn {
			out.Action = OutcomeCanceled
		}
		if r, ok := s.results[ev.TaskID]; ok {
			pr := r.PendingResult
			out.Result = &pr
		}
	}
	return out
}
