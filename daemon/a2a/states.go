package a2a

import (
	"encoding/json"
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
)

func terminal(state string) bool {
	return state == stateCompleted || state == stateFailed || state == stateCanceled
}

// message, decoded once by the caller.
func view(rec mailbox.TaskRecord, origin *message) taskView {
	tv := taskView{id: rec.Task.ID, contextID: rec.Task.A2A.ContextID, seq: lastSeq(rec), sendSeq: rec.SendSeq}
	tv.timestamp = time.UnixMilli(lastChangeMs(rec)).UTC()
	switch rec.State {
	case mailbox.TaskQueued:
		tv.state = stateSubmitted
		if h, ok := lastOf(rec, mailbox.EventTaskRequeued); ok {
			tv.statusMessage = agentText(rec, "requeued by "+who(h.Principal)+": "+h.Reason)
		}
	case mailbox.TaskInFlight:
		tv.state = stateWorking
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
		tv.history = []message{m}
	}
	return tv
}

// resultArtifact is a result's content as one artifact: text content as
// text parts, json content as data parts (values that are not objects
// wrapped as {"value": ...}).
func resultArtifact(taskID string, r *mailbox.Result) artifact {
	a := artifact{id: "result-" + taskID, name: "result"}
	for _, c := range r.Content {
		switch c.Type {
		case mailbox.ContentText:
			a.parts = append(a.parts, part{kind: "text", text: c.Text})
		case mailbox.ContentJSON:
			v := c.Value
			if t := strings.TrimLeft(string(v), " \t\r\n"); !strings.HasPrefix(t, "{") {
				v = json.RawMessage(`{"value":` + string(v) + `}`)
			}
			a.parts = append(a.parts, part{kind: "data", data: v})
		}
	}
	return a
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

func lastOf(rec mailbox.TaskRecord, typ string) (mailbox.HistoryEntry, bool) {
	for i := len(rec.History) - 1; i >= 0; i-- {
		if rec.History[i].Type == typ {
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
