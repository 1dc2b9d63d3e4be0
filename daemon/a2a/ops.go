package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/google/uuid"

	"github.com/mailroom/mailroom/mailbox"

	"github.com/mailroom/mailroom/daemon/a2a/wire"
)

// The operations every binding shares. Each takes and returns the neutral
// model; the bindings decode into it and encode from it.

// sendParams is a decoded send: the message, its raw JSON (kept verbatim
// on the task) and the send's configuration.
type sendParams struct {
	version       string
	msg           wire.Message
	raw           json.RawMessage
	meta          map[string]json.RawMessage // the message's metadata
	blocking      bool
	historyLength *int
	// push is the push config sent inside the message's configuration
	// (pushField names it), set on the task in the same unit.
	push      *mailbox.PushConfig
	pushField string
}

// taskNamespace makes task ids from (agent, sender, messageId), so a retry
// of the same message is the same task.
var taskNamespace = uuid.MustParse("5b7e0f3a-8f0c-4d43-9a41-6a2a6d61726f")

// send turns a message into a mailbox task for the agent (or finds the
// task a retry of the same message already made), or, when the message
// carries a task's id, answers that task's question (conversation.go);
// when blocking, it waits until the task finishes, asks again, or the
// bound passes. It returns the task and the seq its stream of this
// message begins at.
func (e *Edge) send(ctx context.Context, agent string, p sendParams) (wire.TaskView, uint64, error) {
	m := p.msg
	var id string
	var from uint64
	if m.TaskID != "" {
		if p.push != nil {
			// An answer that carries a config: the config goes on the
			// task first, so a refusal of it answers nothing.
			if _, _, err := e.setPush(ctx, agent, m.TaskID, *p.push, p.version, p.pushField); err != nil {
				return wire.TaskView{}, 0, err
			}
		}
		var err error
		if id, from, err = e.reply(ctx, agent, p); err != nil {
			return wire.TaskView{}, 0, err
		}
	} else {
		sender := e.caller(ctx, p.meta)
		contextID := m.ContextID
		if contextID == "" {
			contextID = uuid.NewString()
		}
		var err error
		id, err = e.enqueue(ctx, uuid.NewSHA1(taskNamespace, []byte(agent+"\x00"+sender+"\x00"+m.MessageID)).String(), sender, agent, m, p,
			&mailbox.A2AOrigin{Version: p.version, MessageID: m.MessageID, ContextID: contextID, Message: p.raw})
		if err != nil {
			return wire.TaskView{}, 0, err
		}
	}
	var tv wire.TaskView
	var err error
	if p.blocking {
		tv, err = e.wait(ctx, agent, id, p.historyLength)
	} else {
		tv, err = e.get(ctx, agent, id, p.historyLength)
	}
	if from == 0 {
		from = tv.SendSeq
	}
	return tv, from, err
}

// enqueue sends message m as task id from sender to agent, with its
// origin, and returns the task's id: the task a retry of the same message
// already made, too. Metadata mailroom.idempotent with
// mailroom.idempotency_key maps to the mailbox's idempotency policy.
func (e *Edge) enqueue(ctx context.Context, id, sender, agent string, m wire.Message, p sendParams, origin *mailbox.A2AOrigin) (string, error) {
	t := mailbox.Task{ID: id, Sender: sender, Recipient: agent, IntentText: wire.TextOf(m), Context: contextOf(m), A2A: origin}
	if on, ok := metaBool(p.meta, "idempotent"); ok && on {
		key, _ := metaString(p.meta, "idempotency_key")
		t.Idempotency = &mailbox.Idempotency{DuplicateSafety: mailbox.DuplicateIdempotent, Key: key}
	}
	var res mailbox.TaskQueuedResponse
	var err error
	if p.push != nil {
		res, err = e.svc.SendWithPush(ctx, t, *p.push)
		err = pushFieldError(err, p.version, p.pushField)
	} else {
		res, err = e.svc.Send(ctx, t)
	}
	switch {
	case err == nil:
		return res.TaskID, nil
	case mailbox.ErrorCode(err) == mailbox.CodeConflict && isField(err, "id"):
		// A retry of a message already sent: answer its task.
		return id, nil
	}
	return "", err
}

// wait follows a task until it finishes, its worker asks its caller, or
// the blocking bound passes, and returns it as it then stands.
func (e *Edge) wait(ctx context.Context, agent, id string, historyLength *int) (wire.TaskView, error) {
	wctx, cancel := context.WithTimeout(ctx, e.opts.BlockingTimeout)
	defer cancel()
	err := e.follow(wctx, id, nil, false, func(ev wire.StreamEvent) error { return nil }, nil)
	if err != nil && ctx.Err() != nil {
		return wire.TaskView{}, err
	}
	return e.get(ctx, agent, id, historyLength)
}

// get reads a task the caller may read, and marks its result delivered
// when the caller is its sender and it has finished.
func (e *Edge) get(ctx context.Context, agent, id string, historyLength *int) (wire.TaskView, error) {
	rec, err := e.read(ctx, agent, id)
	if err != nil {
		return wire.TaskView{}, err
	}
	tv := e.opts.Notes.View(rec, wire.DecodeOrigin(rec))
	trimHistory(&tv, historyLength)
	e.delivered(ctx, tv)
	return tv, nil
}

// read returns a task sent through the edge to agent that the caller may
// read. Whether the task is agent's is asked of the unguarded feed first,
// so an agent's URL says nothing of another agent's tasks, not even that
// the caller may not read them: they are TaskNotFound.
func (e *Edge) read(ctx context.Context, agent, id string) (mailbox.TaskRecord, error) {
	if _, err := e.readWith(ctx, e.feed, agent, id); err != nil {
		return mailbox.TaskRecord{}, err
	}
	return e.readWith(ctx, e.svc, agent, id)
}

func (e *Edge) readWith(ctx context.Context, svc interface {
	Task(context.Context, string) (mailbox.TaskRecord, error)
}, agent, id string) (mailbox.TaskRecord, error) {
	cid, err := uuid.Parse(id)
	if err != nil || len(id) != 36 {
		return mailbox.TaskRecord{}, taskNotFound(id)
	}
	rec, err := svc.Task(ctx, cid.String())
	if err != nil {
		if mailbox.ErrorCode(err) == mailbox.CodeNotFound {
			return rec, taskNotFound(id)
		}
		return rec, err
	}
	if rec.Task.Recipient != agent && rec.SentTo != agent {
		// Neither the agent it is queued for nor, after an operator
		// handed it on, the one its caller addressed.
		return mailbox.TaskRecord{}, taskNotFound(id)
	}
	if rec.Task.A2A == nil {
		return rec, &wire.Error{Code: wire.CodeTaskNotFound, Message: "task " + id + " was not sent through the A2A edge; read it with `mailroom task " + id + "`"}
	}
	return rec, nil
}

// delivered marks a finished task's result, or the question a task waits
// on, delivered to its caller, once: the caller reads it on the task, and
// nobody is left to drain it.
func (e *Edge) delivered(ctx context.Context, tv wire.TaskView) {
	if !tv.ResultPending || !wire.Terminal(tv.State) && !wire.Interrupted(tv.State) {
		return
	}
	if err := e.svc.Delivered(actor(ctx), tv.ID); err != nil && mailbox.ErrorCode(err) != mailbox.CodeForbidden {
		e.log.Warn("could not mark an A2A result delivered", "task_id", tv.ID, "err", err)
	}
}

// cancel cancels a task of agent the caller sent (or any, with a2a.admin).
func (e *Edge) cancel(ctx context.Context, agent, id string) (wire.TaskView, error) {
	// Whether the caller may cancel is the guard's to say (its sender, or
	// a2a.admin); here only whether it is an A2A task of agent at all.
	if _, err := e.readWith(ctx, e.feed, agent, id); err != nil {
		return wire.TaskView{}, err
	}
	rec, err := e.svc.Cancel(actor(ctx), id, "canceled through the A2A edge")
	if err != nil {
		if mailbox.ErrorCode(err) == mailbox.CodeConflict {
			return wire.TaskView{}, &wire.Error{Code: wire.CodeTaskNotCancelable, Message: mailbox.ErrorMessage(err)}
		}
		return wire.TaskView{}, err
	}
	return e.opts.Notes.View(rec, wire.DecodeOrigin(rec)), nil
}

// listParams is a decoded ListTasks.
type listParams struct {
	contextID     string
	state         string // neutral, "" for any
	pageSize      int
	pageToken     string
	historyLength *int
}

// list lists the agent's A2A tasks the caller may see, newest first.
func (e *Edge) list(ctx context.Context, agent string, p listParams) ([]wire.TaskView, string, int, error) {
	q := mailbox.AgentTasksQuery{Recipient: agent, ContextID: p.contextID, PageSize: p.pageSize}
	if p.pageToken != "" {
		b, err := strconv.ParseUint(p.pageToken, 36, 64)
		if err != nil || b == 0 {
			return nil, "", 0, &wire.Error{Code: wire.CodeInvalidParams, Message: "pageToken: got " + strconv.Quote(p.pageToken) + ", expected the nextPageToken of an earlier page"}
		}
		q.Before = b
	}
	q.Keep = func(r *mailbox.TaskRecord) bool {
		if r.Task.A2A == nil {
			return false
		}
		return p.state == "" || wire.View(*r, nil).State == p.state
	}
	page, err := e.svc.AgentTasks(ctx, q)
	if err != nil {
		return nil, "", 0, err
	}
	out := make([]wire.TaskView, len(page.Tasks))
	for i, rec := range page.Tasks {
		out[i] = e.opts.Notes.View(rec, wire.DecodeOrigin(rec))
		trimHistory(&out[i], p.historyLength)
		e.delivered(ctx, out[i])
	}
	next := ""
	if page.Next != 0 {
		next = strconv.FormatUint(page.Next, 36)
	}
	return out, next, page.Total, nil
}

func trimHistory(tv *wire.TaskView, n *int) {
	if n != nil && *n < len(tv.History) {
		tv.History = tv.History[len(tv.History)-*n:]
	}
}

func isField(err error, field string) bool {
	var me *mailbox.Error
	return errors.As(err, &me) && me.Details != nil && me.Details.Field == field
}

func taskNotFound(id string) *wire.Error {
	return &wire.Error{Code: wire.CodeTaskNotFound, Message: "task " + strconv.Quote(id) + " not found: it was never sent to this daemon, or finished long ago and was forgotten"}
}

// metaString reads a mailroom metadata key, written either flat
// ("mailroom.sender") or nested ({"mailroom": {"sender": ...}}).
func metaString(meta map[string]json.RawMessage, key string) (string, bool) {
	raw, ok := metaValue(meta, key)
	var s string
	if !ok || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

func metaBool(meta map[string]json.RawMessage, key string) (bool, bool) {
	raw, ok := metaValue(meta, key)
	var b bool
	if !ok || json.Unmarshal(raw, &b) != nil {
		return false, false
	}
	return b, true
}

func metaValue(meta map[string]json.RawMessage, key string) (json.RawMessage, bool) {
	if v, ok := meta["mailroom."+key]; ok {
		return v, true
	}
	var nested map[string]json.RawMessage
	if json.Unmarshal(meta["mailroom"], &nested) == nil {
		v, ok := nested[key]
		return v, ok
	}
	return nil, false
}

// contextOf is the task context a message carries: its first data part
// (an object: the decoders refuse any other), which a native worker reads
// as the task's context; the whole message stays on the task, in task.a2a.
func contextOf(m wire.Message) json.RawMessage {
	for _, p := range m.Parts {
		if p.Kind != "data" {
			continue
		}
		if d := bytes.TrimSpace(p.Data); len(d) > 0 && d[0] == '{' {
			return p.Data
		}
	}
	return nil
}
