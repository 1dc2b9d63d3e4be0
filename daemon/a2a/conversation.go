package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"

	"github.com/mailroom/mailroom/mailbox"

	"github.com/mailroom/mailroom/daemon/a2a/wire"
)

// Conversations through the edge. A worker that asks its sender
// (input_required, auth_required) leaves its task waiting: the A2A caller
// sees input-required or auth-required with the question as the status
// message, and answers with a message carrying the task's id (taskId; in
// the legacy dialect, a tasks/send with the task's id). The answer becomes
// the task's newest turn (mailbox.Reply) and the task is queued again for
// the same worker; a message to a task that is not waiting is refused and
// changes nothing.
//
// Who answers: the task's sender, always. The message has no sender of
// its own, so the reply is made in the task's sender's name and the
// access policy says whether the caller may speak for it: with tokens,
// only a token whose principal sent the task (or an a2a.admin token) may;
// without tokens every caller on loopback is trusted, as for every other
// call, and the answer is its sender's whatever the message's
// mailroom.sender says (the task was sent by one sender, and only that
// sender's answers move it on).

// reply continues task p.msg.taskID of agent with the caller's message and
// returns the task's id and the seq of the answer's turn, where a stream
// of the answer begins. A retry of an answer already given (the same
// messageId) changes nothing and is answered the same way.
func (e *Edge) reply(ctx context.Context, agent string, p sendParams) (string, uint64, error) {
	m := p.msg
	// A task that is not this agent's (or not there) is TaskNotFound, as
	// for a read; one the caller may not read is refused here too.
	rec, err := e.read(ctx, agent, m.TaskID)
	if err != nil {
		return "", 0, err
	}
	if m.ContextID != "" && m.ContextID != rec.Task.A2A.ContextID {
		return "", 0, &wire.Error{Code: wire.CodeInvalidParams, Field: "message.contextId",
			Message: "message.contextId: got " + strconv.Quote(m.ContextID) + ", but task " + rec.Task.ID + " is in context " + strconv.Quote(rec.Task.A2A.ContextID) + "; send the task's contextId, or none"}
	}
	// A retry of an answer is answered without asking the service, but
	// only to the one who gave it: any other token goes to the service,
	// which refuses a caller who may not answer (and takes an admin's
	// answer as an answer).
	if who := mailbox.PrincipalFrom(ctx); who == "" || who == rec.Task.Sender {
		if seq, ok := answered(rec, p.version, m.MessageID); ok {
			return rec.Task.ID, seq, nil
		}
	}
	origin := &mailbox.A2AOrigin{Version: p.version, MessageID: m.MessageID, ContextID: rec.Task.A2A.ContextID, Message: p.raw}
	return e.answer(ctx, rec, replyContent(m), origin, "message.taskId", "send a message without taskId")
}

// answer replies to task rec in its sender's name and returns the task's
// id and the seq of the answer's turn. field names the task in a refusal,
// and fresh says how to start new work instead.
func (e *Edge) answer(ctx context.Context, rec mailbox.TaskRecord, content []mailbox.Content, origin *mailbox.A2AOrigin, field, fresh string) (string, uint64, error) {
	_, err := e.svc.Reply(ctx, mailbox.Reply{TaskID: rec.Task.ID, Sender: rec.Task.Sender, Content: content, A2A: origin})
	switch {
	case err == nil:
	case mailbox.ErrorCode(err) == mailbox.CodeConflict:
		// Not waiting on its sender: queued, in flight or finished.
		return "", 0, &wire.Error{Code: wire.CodeUnsupported, Field: field, Message: field + ": " + mailbox.ErrorMessage(err) + "; to start new work, " + fresh}
	case mailbox.ErrorCode(err) == mailbox.CodeForbidden && isField(err, "sender"):
		return "", 0, &mailbox.Error{Code: mailbox.CodeForbidden, Details: &mailbox.ErrorDetails{Field: field, Capability: "a2a.admin"},
			Message: field + ": task " + rec.Task.ID + " was sent by " + strconv.Quote(rec.Task.Sender) + ", and only its sender (or an a2a.admin token) answers its questions; this token speaks for " + strconv.Quote(mailbox.PrincipalFrom(ctx))}
	default:
		return "", 0, err
	}
	// The answer's turn is on the task now (or, for a retry the service
	// recognized, already was): its seq is where the answer's stream
	// begins.
	now, err := e.feed.Task(ctx, rec.Task.ID)
	if err != nil {
		return "", 0, err
	}
	seq, _ := answered(now, origin.Version, origin.MessageID)
	return rec.Task.ID, seq, nil
}

// answered finds the sender's turn that message messageID of version v
// already gave, and its seq.
func answered(rec mailbox.TaskRecord, v, messageID string) (uint64, bool) {
	for i := len(rec.Task.Turns) - 1; i >= 0; i-- {
		t := rec.Task.Turns[i]
		if t.Role == mailbox.RoleSender && t.A2A != nil && t.A2A.Version == v && t.A2A.MessageID == messageID {
			return t.Seq, true
		}
	}
	return 0, false
}

// replyContent is what a worker reads of an answer: its text parts as
// text and its data parts as json. File parts are not copied: the whole
// message is on the turn (turn.a2a), as on the task for a send.
func replyContent(m wire.Message) []mailbox.Content {
	out := []mailbox.Content{}
	for _, p := range m.Parts {
		switch p.Kind {
		case "text":
			out = append(out, mailbox.Content{Type: mailbox.ContentText, Text: p.Text})
		case "data":
			out = append(out, mailbox.Content{Type: mailbox.ContentJSON, Value: p.Data})
		}
	}
	return out
}

// sameJSON reports whether two JSON texts are the same once compacted.
func sameJSON(a, b json.RawMessage) bool {
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return false
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}
