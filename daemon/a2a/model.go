package a2a

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
	v03 = "0.3"
	v10 = "1.0"
)

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
	// requeue, a cancel, the worker's question), or nil.
	statusMessage *message
	timestamp     time.Time
	artifacts     []artifact
	history       []message
	metadata      map[string]any
	// seq is the log seq of the task's last change: the id of the stream
	// event that shows this view.
	seq uint64
	// resultPending: the task's result (or the question it waits on)
	// has not been marked delivered.
	resultPending bool
	// questionSeq is the seq of the question an interrupted task waits
	// on: a stream shows each question once.
	questionSeq uint64
	// sendSeq is the seq of the event that sent the task.
	sendSeq uint64
}

// view projects a mailbox task that came through the edge. origin is its
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
