package a2a

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
	stateSubmitted = "submitted"
	stateWorking   = "working"
	stateCompleted = "completed"
	stateFailed    = "failed"
	stateCanceled  = "canceled"
	stateRejected  = "rejected"
	// The interrupted states: the worker asked its sender (a task
	// waiting on its sender), who answers with a message carrying the
	// task's id.
	stateInputRequired = "input-required"
	stateAuthRequired  = "auth-required"
)

func terminal(state string) bool {
	return state == stateCompleted || state == stateFailed || state == stateCanceled || state == stateRejected
}

// interrupted reports whether a task waits on its caller: a stream ends
// there, as at a terminal state, and the caller's next message continues
// the task.
func interrupted(state string) bool {
	return state == stateInputRequired || state == stateAuthRequired
}

// message, decoded once by the caller.
func view(rec mailbox.TaskRecord, origin *message) taskView {
	tv := taskView{id: rec.Task.ID, contextID: rec.Task.A2A.ContextID, seq: lastSeq(rec), sendSeq: rec.SendSeq}
	tv.timestamp = time.UnixMilli(lastChangeMs(rec)).UTC()
	switch rec.State {
	case mailbox.TaskQueued:
		tv.state = stateSubmitted
		// Queued again by a requeue (say who and why), or by its
		// sender's answer (the answer is the newest message of the
		// history: no status message).
		if h, ok := lastOf(rec, mailbox.EventTaskRequeued, mailbox.EventTaskReplied, mailbox.EventTaskMoved); ok {
			switch h.Type {
			case mailbox.EventTaskRequeued:
				tv.statusMessage = agentText(rec, "requeued by "+who(h.Principal)+": "+h.Reason)
			case mailbox.EventTaskMoved:
				tv.statusMessage = agentText(rec, "moved to "+h.Recipient+" by "+who(h.Principal)+": "+h.Reason)
			}
		}
	case mailbox.TaskInFlight:
		tv.state = stateWorking
		if note := deliveryNote(rec); note != "" {
			tv.statusMessage = agentText(rec, note) // a remote delivery left to the operator (remote_note.go)
		}
	case mailbox.TaskWaiting:
		tv.state = stateInputRequired
		if q, ok := rec.Task.Question(); ok {
			if q.Status == mailbox.StatusAuthRequired {
				tv.state = stateAuthRequired
			}
			m := turnMessage(rec, q)
			tv.statusMessage, tv.questionSeq = &m, q.Seq
			tv.resultPending = questionPending(rec, q)
		}
	case mailbox.TaskCanceled:
		tv.state = stateCanceled
		if h, ok := lastOf(rec, mailbox.EventTaskCanceled); ok {
			text := "canceled by " + who(h.Principal)
			if h.Reason != "" {
				text += ": " + h.Reason
			}
			tv.statusMessage = agentText(rec, text)
		}
	case mailbox.TaskResultPending, mailbox.TaskDone:
		tv.resultPending = rec.State == mailbox.TaskResultPending
		tv.state = stateCompleted
		r := rec.Result
		if r == nil {
			// A result the mailbox no longer holds (it never kept it for
			// this task): say so rather than invent one.
			tv.statusMessage = agentText(rec, "the result is no longer held by the mailbox")
			break
		}
		switch r.Status {
		case mailbox.StatusError:
			tv.state = stateFailed
			msg := r.ErrorMessage
			if msg == "" {
				msg = "the agent reported an error"
			}
			tv.statusMessage = agentText(rec, msg)
		case mailbox.StatusRejected:
			// The worker refused the task: its reason, if it gave one
			// (any content it gave is the artifact, as for any result).
			tv.state = stateRejected
			msg := r.ErrorMessage
			if msg == "" {
				msg = "the agent rejected the task"
			}
			tv.statusMessage = agentText(rec, msg)
		case mailbox.StatusPartial:
			tv.metadata = map[string]any{"mailroom": map[string]any{"status": mailbox.StatusPartial}}
		}
		if len(r.Content) > 0 {
			tv.artifacts = []artifact{resultArtifact(rec.Task.ID, r)}
		}
	}
	if origin != nil {
		m := *origin
		m.taskID, m.contextID = rec.Task.ID, rec.Task.A2A.ContextID
		tv.history = make([]message, 0, 1+len(rec.Task.Turns))
		tv.history = append(tv.history, m)
		for _, turn := range rec.Task.Turns {
			tv.history = append(tv.history, turnMessage(rec, turn))
		}
	}
	return tv
}

// turnMessage is one turn of a task's conversation as an A2A message: a
// worker's question from the agent, a sender's answer from the user, the
// message as its client sent it when it came through the edge.
func turnMessage(rec mailbox.TaskRecord, turn mailbox.Turn) message {
	id := "turn-" + rec.Task.ID + "-" + strconv.FormatUint(turn.Seq, 10)
	var m message
	if turn.A2A != nil {
		if d := decodeOrigin(mailbox.TaskRecord{Task: mailbox.Task{A2A: turn.A2A}}); d != nil {
			m = *d
		}
		if turn.A2A.Version == versionLegacy {
			// The dialect has no message ids: its "id" names the task,
			// as the first message's id already does.
			m.messageID = id
		}
	}
	if m.role == "" {
		m = message{role: "user", parts: contentParts(turn.Content), messageID: id}
		if turn.Role == mailbox.RoleWorker {
			m.role = "agent"
		}
	}
	m.taskID, m.contextID = rec.Task.ID, rec.Task.A2A.ContextID
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
func resultArtifact(taskID string, r *mailbox.Result) artifact {
	return artifact{id: "result-" + taskID, name: "result", parts: contentParts(r.Content)}
}

// contentParts is mailbox content as A2A parts: text as text parts, json
// as data parts (values that are not objects wrapped as {"value": ...}).
func contentParts(cs []mailbox.Content) []part {
	var parts []part
	for _, c := range cs {
		switch c.Type {
		case mailbox.ContentText:
			parts = append(parts, part{kind: "text", text: c.Text})
		case mailbox.ContentJSON:
			v := c.Value
			if t := strings.TrimLeft(string(v), " \t\r\n"); !strings.HasPrefix(t, "{") {
				v = json.RawMessage(`{"value":` + string(v) + `}`)
			}
			parts = append(parts, part{kind: "data", data: v})
		}
	}
	return parts
}

func agentText(rec mailbox.TaskRecord, text string) *message {
	return &message{role: "agent", parts: []part{{kind: "text", text: text}},
		messageID: "status-" + rec.Task.ID + "-" + strconv.FormatUint(lastSeq(rec), 10),
		taskID:    rec.Task.ID, contextID: rec.Task.A2A.ContextID}
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

// lastSeq is the seq of the task's last change the history records.
func lastSeq(rec mailbox.TaskRecord) uint64 {
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

// textOf joins a message's text parts with newlines: the task's
