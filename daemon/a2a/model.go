package a2a

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/mailroom/mailroom/mailbox"
)

// The edge speaks two generations of the protocol. Each request is decoded
// into the neutral model below, and every answer is made from it, so a task
// sent in one generation reads the same in the other.

// Protocol generations, as the A2A-Version header names them.
const (
	v03 = "0.3"
	v10 = "1.0"
)

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

// part is one part of a message or artifact.
type part struct {
	kind      string          // "text", "data" or "file"
	text      string          // text
	data      json.RawMessage // data: any JSON value
	fileBytes string          // file: base64 content, or
	fileURI   string          // file: a URI
	mediaType string
	filename  string
	metadata  json.RawMessage // an object, or nil
}

// message is an A2A message.
type message struct {
	role             string // "user" or "agent"
	parts            []part
	messageID        string
	contextID        string
	taskID           string
	metadata         json.RawMessage
	extensions       []string
	referenceTaskIDs []string
}

// artifact is an output of a task.
type artifact struct {
	id    string
	name  string
	parts []part
}

// taskView is a mailbox task as an A2A client sees it.
type taskView struct {
	id        string
	contextID string
	state     string
	// statusMessage says why the task is in its state (an error, a
	// requeue, a cancel), or nil.
	statusMessage *message
	timestamp     time.Time
	artifacts     []artifact
	history       []message
	metadata      map[string]any
	// seq is the log seq of the task's last change: the id of the stream
	// event that shows this view.
	seq uint64
	// resultPending: the task's result has not been marked delivered.
	resultPending bool
	// sendSeq is the seq of the event that sent the task.
	sendSeq uint64
}

// view projects a mailbox task that came through the edge. origin is its
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
// intent_text. A message without text says what it carries instead.
func textOf(m message) string {
	var texts []string
	kinds := map[string]int{}
	for _, p := range m.parts {
		if p.kind == "text" {
			if strings.TrimSpace(p.text) != "" {
				texts = append(texts, p.text)
			}
			continue
		}
		kinds[p.kind]++
	}
	if len(texts) > 0 {
		return strings.Join(texts, "\n")
	}
	var what []string
	for _, k := range []string{"data", "file"} {
		if n := kinds[k]; n > 0 {
			what = append(what, strconv.Itoa(n)+" "+k+" part"+map[bool]string{true: "s"}[n > 1])
		}
	}
	return "(an A2A message with " + strings.Join(what, " and ") + ")"
}
