package mailbox

import (
	"bytes"
	"encoding/json"
	"time"
	"unicode/utf8"
)

// A2AOrigin marks a task that came through the A2A edge: the message as
// the A2A client sent it, so the worker that leases the task gets all of it
// (every part, data and file parts too), and the ids the edge answers by.
type A2AOrigin struct {
	// Version is the protocol generation the message is written in: "0.3"
	// or "1.0", or "legacy" for the pre-0.2 tasks/send dialect the edge
	// serves at /agents/{agent}/rpc (its message has `type` parts, and
	// MessageID holds the task id the client chose).
	Version string `json:"version"`
	// MessageID and ContextID are the message's ids (the context id is
	// generated when the client gave none).
	MessageID string `json:"message_id"`
	ContextID string `json:"context_id"`
	// Message is the A2A message as sent, verbatim.
	Message json.RawMessage `json:"message"`
}

// Max bound of the ids an A2A message carries.
const MaxA2AIDBytes = 256

// normalizeA2A checks what the edge put on a task.
func normalizeA2A(o *A2AOrigin) error {
	switch o.Version {
	case "0.3", "1.0", "legacy":
	default:
		return Invalidf("a2a.version", "got %s, expected \"0.3\", \"1.0\" or \"legacy\"", quote(o.Version))
	}
	if err := cardText("a2a.message_id", o.MessageID, MaxA2AIDBytes, true, "the A2A message's messageId"); err != nil {
		return err
	}
	if err := cardText("a2a.context_id", o.ContextID, MaxA2AIDBytes, true, "the A2A message's contextId"); err != nil {
		return err
	}
	if len(o.Message) == 0 || !json.Valid(o.Message) || o.Message[0] != '{' {
		return Invalidf("a2a.message", "expected the A2A message as a JSON object")
	}
	// Kept in the form the log writes it (compact, HTML-escaped as
	// encoding/json escapes a raw value), so it reads byte for byte the
	// same before a restart and after.
	var compact, canonical bytes.Buffer
	if err := json.Compact(&compact, o.Message); err != nil {
		return Invalidf("a2a.message", "%v", err)
	}
	json.HTMLEscape(&canonical, compact.Bytes())
	o.Message = canonical.Bytes()
	return nil
}

// TaskCanceled is the state of a task its A2A caller canceled: finished,
// with no result, remembered like a drained task (retain_done).
const TaskCanceled = "canceled"

// DecideCancel returns the task_canceled event that cancels a queued or
// in-flight task on principal's word; a task already finished is a
// conflict naming its state.
func (s *State) DecideCancel(taskID, principal, reason string, nowMs int64) (Event, error) {
	// Bad input is refused before the task's state is looked at.
	if len(reason) > MaxReasonBytes {
		return Event{}, Invalidf("reason", "got %d bytes, expected at most %d", len(reason), MaxReasonBytes)
	}
	if !utf8.ValidString(reason) {
		return Event{}, Invalidf("reason", "got invalid UTF-8, expected text")
	}
	t, ok := s.tasks[taskID]
	if !ok {
		return Event{}, &Error{Code: CodeNotFound, Message: "task_id: task " + taskID + " was never sent through this daemon (or finished long ago and was forgotten)",
			Details: &ErrorDetails{Field: "task_id"}}
	}
	switch t.State {
	case TaskQueued, TaskInFlight, TaskWaiting:
	default:
		why := map[string]string{
			TaskResultPending: "it already has a result",
			TaskDone:          "it already has a result, and its sender has it",
			TaskCanceled:      "it was already canceled" + t.canceledBy(),
		}[t.State]
		return Event{}, &Error{Code: CodeConflict, Message: "cannot cancel task " + taskID + ": " + why + "; only a queued, in-flight or waiting task can be canceled",
			Details: &ErrorDetails{TaskState: t.State, Attempt: t.Attempt}}
	}
	return Event{AtMs: nowMs, Type: EventTaskCanceled, TaskID: t.Task.ID, LeaseID: t.LeaseID, LeasedTo: t.LeasedTo, Attempt: t.Attempt, Principal: principal, Reason: reason}, nil
}

// canceledBy says who canceled the task and when, from its history.
func (t *taskRec) canceledBy() string {
	for i := len(t.History) - 1; i >= 0; i-- {
		h := t.History[i]
		if h.Type != EventTaskCanceled {
			continue
		}
		who := h.Principal
		if who == "" {
			who = "an unauthenticated caller"
		}
		return " by " + who + " at " + time.UnixMilli(h.AtMs).UTC().Format(time.RFC3339)
	}
	return ""
}

func (s *State) applyCancel(ev Event) error {
	t, ok := s.tasks[ev.TaskID]
	if !ok {
		return errorString("unknown task " + ev.TaskID)
	}
	switch t.State {
	case TaskQueued:
		s.dequeue(t)
	case TaskInFlight:
		if ev.LeaseID != t.LeaseID {
			return errorString("task " + t.Task.ID + ": canceled under lease " + ev.LeaseID + ", not the current lease " + t.LeaseID)
		}
		s.clearLease(t)
	case TaskWaiting:
		s.dropPendingResult(t.Task.ID)
		delete(s.waiting, t.Task.ID)
	default:
		return errorString("task " + t.Task.ID + " is " + t.State + ", not queued, in flight or waiting")
	}
	s.untrackLive(t)
	t.addHistory(ev)
	t.State, t.DoneAtMs, t.DoneSeq = TaskCanceled, ev.AtMs, ev.Seq
	s.recordAudit(ev, "")
	s.remember(t.Task.ID)
	return nil
}

// DecideDelivered returns the result_drained event that marks the result of
// an A2A task delivered to its caller (who gets results by reading the
// task, never by draining), or ok=false when it has no pending result.
func (s *State) DecideDelivered(taskID, principal string, nowMs int64) (Event, bool) {
	if _, ok := s.results[taskID]; !ok {
		return Event{}, false
	}
	t := s.tasks[taskID]
	if t == nil || t.Task.A2A == nil {
		// A native task's result is its sender's to drain.
		return Event{}, false
	}
	return Event{AtMs: nowMs, Type: EventResultDrained, TaskID: taskID, Attempt: t.Attempt, Principal: principal}, true
}

// finished reports whether a task remembered as done can be forgotten:
// drained or canceled.
func finished(state string) bool { return state == TaskDone || state == TaskCanceled }
