package wire

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mailroom/mailroom/mailbox"
)

// How a mailbox task's states read on the A2A side: the neutral states
// both generations spell their own way, and view, which maps a task's
// mailbox state, result and history to them.

// Task states, neutral; each generation spells them its own way.
const (
	StateSubmitted = "submitted"
	StateWorking   = "working"
	StateCompleted = "completed"
	StateFailed    = "failed"
	StateCanceled  = "canceled"
	StateRejected  = "rejected"
	// The interrupted states: the worker asked its sender (a task
	// waiting on its sender), who answers with a message carrying the
	// task's id.
	StateInputRequired = "input-required"
	StateAuthRequired  = "auth-required"
	// StateUnknown is a remote's task whose state it does not say (v1.0's
	// TASK_STATE_UNSPECIFIED); the edge never answers it.
	StateUnknown = "unknown"
)

// ParseState reads a state as generation v spells it (the legacy dialect
// spells it as v0.3, and "cancelled" too); ok is false for a spelling it
// does not know.
func ParseState(v, s string) (string, bool) {
	if v == V10 {
		if s == "TASK_STATE_UNSPECIFIED" {
			return StateUnknown, true
		}
		st := State10(s)
		return st, st != ""
	}
	switch s {
	case StateSubmitted, StateWorking, StateInputRequired, StateAuthRequired, StateCompleted, StateFailed, StateRejected, StateCanceled, StateUnknown:
		return s, true
	case "cancelled":
		return StateCanceled, true
	}
	return "", false
}

func Terminal(state string) bool {
	return state == StateCompleted || state == StateFailed || state == StateCanceled || state == StateRejected
}

// Interrupted reports whether a task waits on its caller: a stream ends
// there, as at a terminal state, and the caller's next message continues
// the task.
func Interrupted(state string) bool {
	return state == StateInputRequired || state == StateAuthRequired
}

// View projects a mailbox task that came through the edge. origin is its
// message, decoded once by the caller.
func View(rec mailbox.TaskRecord, origin *Message) TaskView {
	tv := TaskView{ID: rec.Task.ID, ContextID: rec.Task.A2A.ContextID, Seq: LastSeq(rec), SendSeq: rec.SendSeq}
	tv.Timestamp = time.UnixMilli(lastChangeMs(rec)).UTC()
	switch rec.State {
	case mailbox.TaskQueued:
		tv.State, tv.StatusMessage = StateSubmitted, queuedAgain(rec)
	case mailbox.TaskInFlight:
		tv.State = StateWorking // a remote delivery left to the operator has a note: DeliveryNotes.View
	case mailbox.TaskWaiting:
		tv.State = StateInputRequired
		if q, ok := rec.Task.Question(); ok {
			if q.Status == mailbox.StatusAuthRequired {
				tv.State = StateAuthRequired
			}
			m := turnMessage(rec, q)
			tv.StatusMessage, tv.QuestionSeq = &m, q.Seq
			tv.ResultPending = questionPending(rec, q)
		}
	case mailbox.TaskCanceled:
		tv.State = StateCanceled
		if h, ok := lastOf(rec, mailbox.EventTaskCanceled); ok {
			text := "canceled by " + who(h.Principal)
			if h.Reason != "" {
				text += ": " + h.Reason
			}
			tv.StatusMessage = agentText(rec, text)
		}
	case mailbox.TaskResultPending, mailbox.TaskDone:
		tv.ResultPending = rec.State == mailbox.TaskResultPending
		viewResult(&tv, rec)
	}
	tv.History = history(rec, origin)
	return tv
}

// queuedAgain says why a queued task is queued again: a requeue (who and
// why) or a move; a task queued again by its sender's answer has none (the
// answer is the newest message of the history).
func queuedAgain(rec mailbox.TaskRecord) *Message {
	h, ok := lastOf(rec, mailbox.EventTaskRequeued, mailbox.EventTaskReplied, mailbox.EventTaskMoved)
	switch {
	case ok && h.Type == mailbox.EventTaskRequeued:
		return agentText(rec, "requeued by "+who(h.Principal)+": "+h.Reason)
	case ok && h.Type == mailbox.EventTaskMoved:
		return agentText(rec, "moved to "+h.Recipient+" by "+who(h.Principal)+": "+h.Reason)
	}
	return nil
}

// viewResult shows a task's result: completed, failed or rejected, its
// content the artifact.
func viewResult(tv *TaskView, rec mailbox.TaskRecord) {
	tv.State = StateCompleted
	r := rec.Result
	if r == nil {
		// A result the mailbox no longer holds (it never kept it for
		// this task): say so rather than invent one.
		tv.StatusMessage = agentText(rec, "the result is no longer held by the mailbox")
		return
	}
	switch r.Status {
	case mailbox.StatusError:
		tv.State = StateFailed
		msg := r.ErrorMessage
		if msg == "" {
			msg = "the agent reported an error"
		}
		tv.StatusMessage = agentText(rec, msg)
	case mailbox.StatusRejected:
		// The worker refused the task: its reason, if it gave one
		// (any content it gave is the artifact, as for any result).
		tv.State = StateRejected
		msg := r.ErrorMessage
		if msg == "" {
			msg = "the agent rejected the task"
		}
		tv.StatusMessage = agentText(rec, msg)
	case mailbox.StatusPartial:
		tv.Metadata = map[string]any{"mailroom": map[string]any{"status": mailbox.StatusPartial}}
	}
	if len(r.Content) > 0 {
		tv.Artifacts = []Artifact{resultArtifact(rec.Task.ID, r)}
	}
}

// history is the task's messages: the one it was sent with, then each
// turn of its conversation; none when it was not sent through the edge.
func history(rec mailbox.TaskRecord, origin *Message) []Message {
	if origin == nil {
		return nil
	}
	m := *origin
	m.TaskID, m.ContextID = rec.Task.ID, rec.Task.A2A.ContextID
	h := make([]Message, 0, 1+len(rec.Task.Turns))
	h = append(h, m)
	for _, turn := range rec.Task.Turns {
		h = append(h, turnMessage(rec, turn))
	}
	return h
}

// turnMessage is one turn of a task's conversation as an A2A message: a
// worker's question from the agent, a sender's answer from the user, the
// message as its client sent it when it came through the edge.
func turnMessage(rec mailbox.TaskRecord, turn mailbox.Turn) Message {
	id := "turn-" + rec.Task.ID + "-" + strconv.FormatUint(turn.Seq, 10)
	var m Message
	if turn.A2A != nil {
		if d := DecodeOrigin(mailbox.TaskRecord{Task: mailbox.Task{A2A: turn.A2A}}); d != nil {
			m = *d
		}
		if turn.A2A.Version == VersionLegacy {
			// The dialect has no message ids: its "id" names the task,
			// as the first message's id already does.
			m.MessageID = id
		}
	}
	if m.Role == "" {
		m = Message{Role: "user", Parts: contentParts(turn.Content), MessageID: id}
		if turn.Role == mailbox.RoleWorker {
			m.Role = "agent"
		}
	}
	m.TaskID, m.ContextID = rec.Task.ID, rec.Task.A2A.ContextID
	return m
}

// questionPending reports whether a waiting task's question q has not
// been marked delivered: no drain followed the result that asked it.
func questionPending(rec mailbox.TaskRecord, q mailbox.Turn) bool {
	for _, h := range rec.History {
		if h.Type == mailbox.EventResultDrained && h.Seq > q.Seq {
			return false
		}
	}
	return true
}

// resultArtifact is a result's content as one artifact: text content as
// text parts, json content as data parts (values that are not objects
// wrapped as {"value": ...}).
func resultArtifact(taskID string, r *mailbox.Result) Artifact {
	return Artifact{ID: "result-" + taskID, Name: "result", Parts: contentParts(r.Content)}
}

// contentParts is mailbox content as A2A parts: text as text parts, json
// as data parts (values that are not objects wrapped as {"value": ...}).
func contentParts(cs []mailbox.Content) []Part {
	var parts []Part
	for _, c := range cs {
		switch c.Type {
		case mailbox.ContentText:
			parts = append(parts, Part{Kind: "text", Text: c.Text})
		case mailbox.ContentJSON:
			v := c.Value
			if t := strings.TrimLeft(string(v), " \t\r\n"); !strings.HasPrefix(t, "{") {
				v = json.RawMessage(`{"value":` + string(v) + `}`)
			}
			parts = append(parts, Part{Kind: "data", Data: v})
		}
	}
	return parts
}

func agentText(rec mailbox.TaskRecord, text string) *Message {
	return &Message{Role: "agent", Parts: []Part{{Kind: "text", Text: text}},
		MessageID: "status-" + rec.Task.ID + "-" + strconv.FormatUint(LastSeq(rec), 10),
		TaskID:    rec.Task.ID, ContextID: rec.Task.A2A.ContextID}
}

func who(principal string) string {
	if principal == "" {
		return "an unauthenticated caller"
	}
	return principal
}

// lastOf is the newest history entry of one of types.
func lastOf(rec mailbox.TaskRecord, types ...string) (mailbox.HistoryEntry, bool) {
	for i := len(rec.History) - 1; i >= 0; i-- {
		if slices.Contains(types, rec.History[i].Type) {
			return rec.History[i], true
		}
	}
	return mailbox.HistoryEntry{}, false
}

// LastSeq is the seq of the task's last change the history records.
func LastSeq(rec mailbox.TaskRecord) uint64 {
	var s uint64
	for _, h := range rec.History {
		s = max(s, h.Seq)
	}
	return max(s, rec.SendSeq)
}

// lastChange is the time of the task's last change.
func lastChangeMs(rec mailbox.TaskRecord) int64 {
	t := rec.SentAtMs
	for _, h := range rec.History {
		if h.Type != mailbox.EventResultDrained {
			t = max(t, h.AtMs)
		}
	}
	return t
}

// DecodeOrigin decodes the message a task was sent with; nil when it
// cannot be (it was checked when sent, so only a bug makes that happen).
func DecodeOrigin(rec mailbox.TaskRecord) *Message {
	o := rec.Task.A2A
	if o == nil {
		return nil
	}
	if o.Version == VersionLegacy {
		return legacyOrigin(o)
	}
	m, err := DecodeMessage(o.Version, o.Message, "message")
	if err != nil {
		return nil
	}
	if m.ContextID == "" {
		m.ContextID = o.ContextID
	}
	return &m
}
