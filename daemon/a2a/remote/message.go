package remote

import (
	"encoding/json"
	"errors"
	"strconv"

	"github.com/google/uuid"

	"github.com/mailroom/mailroom/mailbox"

	"github.com/mailroom/mailroom/daemon/a2a/wire"
)

// What the daemon sends a remote for a mailbox task: its first message,
// or the sender's newest answer to the remote's question.

// Message is a message for a remote, ready for any binding.
type Message struct {
	// MessageID is the message's id: the mailbox task id for a first
	// message (a remote that dedupes on it is safe from a resend), an id
	// made from the task id and the turn's seq for an answer.
	MessageID string
	// TaskID and ContextID are the remote's ids of the task an answer
	// continues. A first message has no TaskID, and ContextIDFor the
	// mailbox task as its ContextID (not sent in the legacy dialect).
	TaskID    string
	ContextID string

	m wire.Message // the message, neutral (its ids are set on encoding)
	// version and raw are the message as its A2A client wrote it ("0.3",
	// "1.0" or "legacy"), sent verbatim to a remote of that generation.
	version string
	raw     json.RawMessage
	// legacyMeta is the metadata a native task's message has in the
	// legacy dialect: its context, where that dialect's receivers read it.
	legacyMeta json.RawMessage
}

// Ref names the task a remote accepted, as the dispatcher recorded
// it.
type Ref struct {
	TaskID    string
	ContextID string
}

// turnNamespace makes the message id of each answer: stable, so a resend
// of the same answer is the same message, and distinct per turn.
var turnNamespace = uuid.MustParse("9d3c52e4-7f0a-4b61-8c2d-72656d6f7465")

// MessageFor builds the message that delivers t. With accepted
// nil it is the task's first message: an A2A-origin task's message as its
// client sent it (re-encoded when the remote speaks another generation),
// with the task id as its messageId; a native task's intent_text as a
// text part and its context as a data part. With accepted set (the remote
// holds the task) it is the sender's newest answer, which must be the
// task's newest turn, continuing the remote's task: its parts (its A2A
// message verbatim when it came through the edge), the remote's task and
// context ids, and a messageId made from the task id and the turn's seq.
//
// A task whose conversation this remote never saw (its question was asked
// by another agent, and the task was handed on) carries that conversation
// after its first message's parts, as text parts naming who asked and who
// answered, each followed by the turn's content.
//
// The ids a caller's message carries (taskId, contextId,
// referenceTaskIds) name things of the caller's mailbox, not the
// remote's: they are left out.
func MessageFor(t mailbox.Task, accepted *Ref) (Message, error) {
	if accepted != nil {
		if accepted.TaskID == "" {
			return Message{}, errors.New("task " + t.ID + ": the remote's task id is empty; a continuation needs the id the remote accepted the task under")
		}
		if len(t.Turns) == 0 || t.Turns[len(t.Turns)-1].Role != mailbox.RoleSender {
			return Message{}, errors.New("task " + t.ID + ": the remote already holds it, and its newest turn is not a sender's answer; follow the remote task (Get, Resubscribe) instead of sending again")
		}
		turn := t.Turns[len(t.Turns)-1]
		out := Message{MessageID: uuid.NewSHA1(turnNamespace, []byte(t.ID+"/"+strconv.FormatUint(turn.Seq, 10))).String(),
			TaskID: accepted.TaskID, ContextID: accepted.ContextID}
		if turn.A2A != nil {
			return out.verbatim(*turn.A2A)
		}
		out.m = wire.Message{Role: "user", Parts: partsOf(turn.Content)}
		if len(out.m.Parts) == 0 {
			return out, errors.New("task " + t.ID + ": the sender's answer (turn " + strconv.FormatUint(turn.Seq, 10) + ") has no content")
		}
		return out, nil
	}
	// The context id is the daemon's, derived from the task: the remote
	// keeps it (the SDKs do), so that the daemon can ask it later which
	// tasks it made of this one (Find).
	out := Message{MessageID: t.ID, ContextID: ContextIDFor(t.ID)}
	if t.A2A != nil {
		var err error
		if out, err = out.verbatim(*t.A2A); err != nil {
			return out, err
		}
	} else {
		out.m = wire.Message{Role: "user", Parts: []wire.Part{{Kind: "text", Text: t.IntentText}}}
		if len(t.Context) > 0 {
			out.m.Parts = append(out.m.Parts, wire.Part{Kind: "data", Data: t.Context})
			out.legacyMeta = t.Context
		}
	}
	if len(t.Turns) > 0 {
		// The task has a conversation this remote never saw (another
		// agent asked, and the task was handed on): it goes along after
		// the first message's parts, so the message is re-encoded rather
		// than sent verbatim.
		out.m.Parts = append(out.m.Parts, conversationParts(t.Turns)...)
		out.raw = nil
	}
	return out, nil
}

// conversationParts writes a conversation as parts: each turn a text part
// saying who asked or answered, then the turn's content.
func conversationParts(turns []mailbox.Turn) []wire.Part {
	var ps []wire.Part
	for _, turn := range turns {
		head := turn.Agent + " answered:"
		if turn.Role == mailbox.RoleWorker {
			head = turn.Agent + " asked (" + turn.Status + "):"
		}
		ps = append(ps, wire.Part{Kind: "text", Text: head})
		content := partsOf(turn.Content)
		if turn.A2A != nil {
			var o Message
			if v, err := o.verbatim(*turn.A2A); err == nil {
				content = v.m.Parts
			}
		}
		ps = append(ps, content...)
	}
	return ps
}

// verbatim sets the message from its A2A origin.
func (o Message) verbatim(a mailbox.A2AOrigin) (Message, error) {
	var m wire.Message
	var err error
	if a.Version == wire.VersionLegacy {
		m, _, err = wire.DecodeLegacyMessage(a.Message, "message")
	} else {
		m, err = wire.DecodeMessage(a.Version, a.Message, "message")
	}
	if err != nil {
		return o, errors.New("the A2A message as sent does not decode: " + err.Error())
	}
	o.m, o.version, o.raw = m, a.Version, a.Message
	return o, nil
}

// partsOf maps mailbox content to parts: text to text, json to data.
func partsOf(cs []mailbox.Content) []wire.Part {
	var ps []wire.Part
	for _, c := range cs {
		switch c.Type {
		case mailbox.ContentText:
			ps = append(ps, wire.Part{Kind: "text", Text: c.Text})
		case mailbox.ContentJSON:
			ps = append(ps, wire.Part{Kind: "data", Data: c.Value})
		}
	}
	return ps
}

// encode writes the message for generation v (v03, v10 or
// versionLegacy).
func (o Message) encode(v string) (any, error) {
	if o.raw != nil && o.version == v {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(o.raw, &fields); err != nil {
			return nil, errors.New("the A2A message as sent is not an object: " + err.Error())
		}
		delete(fields, "taskId")
		delete(fields, "contextId")
		delete(fields, "referenceTaskIds")
		set := func(k, s string) {
			b, _ := json.Marshal(s)
			fields[k] = b
		}
		if v == wire.VersionLegacy {
			// The dialect names the task in params.id, not the message.
			return fields, nil
		}
		set("messageId", o.MessageID)
		if o.TaskID != "" {
			set("taskId", o.TaskID)
		}
		if o.ContextID != "" {
			set("contextId", o.ContextID)
		}
		return fields, nil
	}
	m := o.m
	m.MessageID, m.TaskID, m.ContextID, m.ReferenceTaskIDs = o.MessageID, o.TaskID, o.ContextID, nil
	if v == wire.VersionLegacy {
		if o.TaskID == "" {
			m.ContextID = ""
		}
		if m.Metadata == nil && o.legacyMeta != nil {
			m.Metadata = o.legacyMeta
		}
		return encodeLegacyMessage(m)
	}
	return wire.EncodeMessage(v, m), nil
}
