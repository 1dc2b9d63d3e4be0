// Package wire is A2A as it travels, written once for every side of the
// daemon that speaks it: the neutral model both generations of the
// protocol (v0.3 and v1.0, and the pre-0.2 legacy dialect) decode into and
// encode from, the task states and their spellings, the error codes and
// their HTTP+JSON reasons, and a mailbox task's view (View, PushBody). The
// edge (daemon/a2a) serves with it, the client (daemon/a2a/remote)
// delivers with it, and the notifier and the bench import it, never the
// server. It imports only mailbox, as pkgsite's internal/api is imported
// by its server and its clients alike.
package wire

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// The edge speaks two generations of the protocol. Each request is decoded
// into the neutral model below, and every answer is made from it, so a task
// sent in one generation reads the same in the other.

// Protocol generations, as the A2A-Version header names them.
const (
	V03 = "0.3"
	V10 = "1.0"
)

// Part is one part of a message or artifact.
type Part struct {
	Kind      string          // "text", "data" or "file"
	Text      string          // text
	Data      json.RawMessage // data: any JSON value
	FileBytes string          // file: base64 content, or
	FileURI   string          // file: a URI
	MediaType string
	Filename  string
	Metadata  json.RawMessage // an object, or nil
}

// Message is an A2A message.
type Message struct {
	Role             string // "user" or "agent"
	Parts            []Part
	MessageID        string
	ContextID        string
	TaskID           string
	Metadata         json.RawMessage
	Extensions       []string
	ReferenceTaskIDs []string
}

// Artifact is an output of a task.
type Artifact struct {
	ID    string
	Name  string
	Parts []Part
}

// TaskView is a mailbox task as an A2A client sees it.
type TaskView struct {
	ID        string
	ContextID string
	State     string
	// statusMessage says why the task is in its state (an error, a
	// requeue, a cancel, the worker's question), or nil.
	StatusMessage *Message
	Timestamp     time.Time
	Artifacts     []Artifact
	History       []Message
	Metadata      map[string]any
	// seq is the log seq of the task's last change: the id of the stream
	// event that shows this view.
	Seq uint64
	// resultPending: the task's result (or the question it waits on)
	// has not been marked delivered.
	ResultPending bool
	// questionSeq is the seq of the question an interrupted task waits
	// on: a stream shows each question once.
	QuestionSeq uint64
	// sendSeq is the seq of the event that sent the task.
	SendSeq uint64
}

// TextOf joins a message's text parts with newlines: the task's
// intent_text. A message without text says what it carries instead.
func TextOf(m Message) string {
	var texts []string
	kinds := map[string]int{}
	for _, p := range m.Parts {
		if p.Kind == "text" {
			if strings.TrimSpace(p.Text) != "" {
				texts = append(texts, p.Text)
			}
			continue
		}
		kinds[p.Kind]++
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
