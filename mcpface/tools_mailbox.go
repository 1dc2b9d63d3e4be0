package mcpface

import (
	"context"
	"encoding/json"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mailroom/mailroom/mailbox"
)

// The tools of senders and workers. Each tool's input and output are
// concrete types, so the schemas the SDK derives say exactly what a model
// may send and will get back.

// Bounds of the tools' own arguments; the daemon holds the rest.
const (
	maxWaitSeconds = mailbox.MaxWaitMs / 1000
	maxPerCall     = 100
)

func boolPtr(b bool) *bool { return &b }

// SendTaskInput is send_task's arguments.
type SendTaskInput struct {
	To             string         `json:"to" jsonschema:"the agent id to send the task to, such as coder@local (see list_agents)"`
	Intent         string         `json:"intent" jsonschema:"what you want done, in plain words"`
	Context        map[string]any `json:"context,omitempty" jsonschema:"optional structured input for the worker beside the intent: a JSON object"`
	Kind           string         `json:"kind,omitempty" jsonschema:"optional kind of task, such as code or review"`
	Deadline       string         `json:"deadline,omitempty" jsonschema:"optional: when it should be done, as a duration from now (30m, 2h) or an RFC 3339 time"`
	IdempotencyKey string         `json:"idempotency_key,omitempty" jsonschema:"optional key: sending again with the same key (and idempotent true) returns the same task instead of a new one"`
	Idempotent     bool           `json:"idempotent,omitempty" jsonschema:"true when running the task twice would be harmless; needs idempotency_key"`
	Parent         string         `json:"parent,omitempty" jsonschema:"optional id of the task this one is part of"`
}

// SendTaskOutput is send_task's answer.
type SendTaskOutput struct {
	TaskID       string `json:"task_id" jsonschema:"the new task's id: follow it with get_task, collect its result with drain_results"`
	Deduplicated bool   `json:"deduplicated,omitempty" jsonschema:"true when an earlier task with the same idempotency key was returned instead of a new one"`
}

// TaskIDInput names one task.
type TaskIDInput struct {
	TaskID string `json:"task_id" jsonschema:"the task's id (a UUID)"`
}

// DrainInput is drain_results' arguments.
type DrainInput struct {
	Max         int `json:"max,omitempty" jsonschema:"most results to take, 1 to 100 (default 10)"`
	WaitSeconds int `json:"wait_seconds,omitempty" jsonschema:"when none is waiting, wait up to this many seconds (0 to 20, default 0) for one"`
}

// DrainOutput is drain_results' answer.
type DrainOutput struct {
	Results []ResultView `json:"results" jsonschema:"the results taken, oldest first; empty when none arrived in time"`
}

// WaitResultInput is wait_result's arguments.
type WaitResultInput struct {
	TaskID      string `json:"task_id" jsonschema:"a task you sent, whose result you wait for"`
	WaitSeconds int    `json:"wait_seconds,omitempty" jsonschema:"wait up to this many seconds (0 to 20, default 20) for its result"`
}

// WaitResultOutput is wait_result's answer.
type WaitResultOutput struct {
	Found  bool         `json:"found" jsonschema:"true when the task's result (or its worker's question) arrived; false when the wait ended first: call again to keep waiting"`
	Result *ResultView  `json:"result,omitempty" jsonschema:"the task's result, when found"`
	Others []ResultView `json:"others" jsonschema:"results of your other tasks that arrived meanwhile: they were taken from the mailbox too, so act on them now"`
}

// ReplyInput is reply's arguments.
type ReplyInput struct {
	TaskID string         `json:"task_id" jsonschema:"the task whose worker asked (a drained result with status input_required or auth_required names it)"`
	Text   string         `json:"text,omitempty" jsonschema:"the answer, in words"`
	JSON   map[string]any `json:"json,omitempty" jsonschema:"optional structured answer: a JSON object"`
}

// ReplyOutput is reply's answer.
type ReplyOutput struct {
	TaskID    string `json:"task_id"`
	State     string `json:"state" jsonschema:"the task's state now: queued again for its worker"`
	Turns     int    `json:"turns" jsonschema:"questions and answers so far"`
	Duplicate bool   `json:"duplicate,omitempty" jsonschema:"true when the task already had this very answer; nothing changed"`
}

// CancelInput is cancel_task's arguments.
type CancelInput struct {
	TaskID string `json:"task_id" jsonschema:"the task to cancel: one you sent"`
	Reason string `json:"reason,omitempty" jsonschema:"why, kept in the task's history"`
}

// LeaseInput is lease_task's arguments.
type LeaseInput struct {
	Max         int `json:"max,omitempty" jsonschema:"most tasks to take, 1 to 100 (default 1)"`
	WaitSeconds int `json:"wait_seconds,omitempty" jsonschema:"when none is queued, wait up to this many seconds (0 to 20, default 0) for one"`
}

// LeaseOutput is lease_task's answer.
type LeaseOutput struct {
	Tasks []TaskView `json:"tasks" jsonschema:"the tasks now leased to you, each with the lease_id to post its result under; empty when none arrived in time"`
}

// PostResultInput is post_result's arguments.
type PostResultInput struct {
	TaskID       string         `json:"task_id" jsonschema:"the leased task"`
	LeaseID      string         `json:"lease_id" jsonschema:"the lease_id lease_task gave you: the result is refused if the lease was taken away meanwhile"`
	Status       string         `json:"status" jsonschema:"ok (done), partial (part of it done), error (failed: say why in error_message) or rejected (you will not do it)"`
	Text         string         `json:"text,omitempty" jsonschema:"the result, in words"`
	JSON         map[string]any `json:"json,omitempty" jsonschema:"optional structured result: a JSON object"`
	ErrorMessage string         `json:"error_message,omitempty" jsonschema:"for status error: what went wrong"`
}

// PostResultOutput is post_result's and ask_input's answer.
type PostResultOutput struct {
	TaskID string `json:"task_id"`
	Status string `json:"status" jsonschema:"the status posted"`
}

// AskInputInput is ask_input's arguments.
type AskInputInput struct {
	TaskID   string `json:"task_id" jsonschema:"the leased task"`
	LeaseID  string `json:"lease_id" jsonschema:"the lease_id lease_task gave you"`
	Question string `json:"question" jsonschema:"what you need the sender to decide or provide"`
	Auth     bool   `json:"auth,omitempty" jsonschema:"true when what you need is a login or credentials (auth_required) rather than an answer (input_required)"`
}

// Daemon field names as the tools call them.
var (
	sendNames   = map[string]string{"recipient": "to", "intent_text": "intent", "task_kind": "kind", "deadline_ms": "deadline", "idempotency": "idempotency_key", "idempotency.key": "idempotency_key", "context": "context", "parent": "parent", "sender": "the session's agent"}
	resultNames = map[string]string{"task_id": "task_id", "lease_id": "lease_id", "status": "status", "content": "text", "error_message": "error_message"}
	pollNames   = map[string]string{"max": "max", "wait_ms": "wait_seconds"}
)

func (f *Face) addSenderTools() {
	mcp.AddTool(f.Server, &mcp.Tool{
		Name:  "send_task",
		Title: "Send a task to an agent",
		Description: "Send a task to another agent's mailbox, as this session's agent. The task is durable once this returns: " +
			"its recipient leases it whenever it is ready. Returns the task id; collect the result later with drain_results.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: boolPtr(false), OpenWorldHint: boolPtr(false)},
	}, f.sendTask)
	mcp.AddTool(f.Server, &mcp.Tool{
		Name:  "drain_results",
		Title: "Collect results of the tasks you sent",
		Description: "Take the results waiting for this session's agent: answers to the tasks it sent, oldest first, and questions from their workers " +
			"(status input_required or auth_required: answer with reply). Taking a result removes it from the mailbox. " +
			"With wait_seconds it waits (up to 20 s) for one when none is waiting: a long poll; call it again to keep waiting.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: boolPtr(false), OpenWorldHint: boolPtr(false)},
	}, f.drainResults)
	mcp.AddTool(f.Server, &mcp.Tool{
		Name:  "wait_result",
		Title: "Wait for one task's result",
		Description: "Wait (up to 20 s) for the result of one task you sent, taking it from the mailbox. Results of your other tasks that arrive " +
			"meanwhile are taken too and returned beside it (others). A result with status input_required or auth_required is a question from the worker: answer it with reply. " +
			"found false means the wait ended first: call again to keep waiting.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: boolPtr(false), OpenWorldHint: boolPtr(false)},
	}, f.waitResult)
	mcp.AddTool(f.Server, &mcp.Tool{
		Name:        "get_task",
		Title:       "Look at a task",
		Description: "Read one task as the mailbox has it: its state (queued, in_flight, waiting, result_pending, done, canceled), who holds its lease, its attempts and its conversation. Changes nothing. You may read the tasks you sent; others' need the a2a.read capability.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: boolPtr(false)},
	}, f.getTask)
	mcp.AddTool(f.Server, &mcp.Tool{
		Name:  "reply",
		Title: "Answer a worker's question",
		Description: "Answer a task whose worker asked this session's agent (its sender) a question: the answer joins the task's conversation " +
			"and the task is queued again for the same worker. Sending the same answer twice changes nothing.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: boolPtr(false), IdempotentHint: true, OpenWorldHint: boolPtr(false)},
	}, f.reply)
	mcp.AddTool(f.Server, &mcp.Tool{
		Name:  "cancel_task",
		Title: "Cancel a task you sent",
		Description: "Cancel a task this session's agent sent that is still queued, in flight or waiting: it leaves the queue, or its worker's lease ends " +
			"and a late result is refused. A finished task cannot be canceled.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: boolPtr(true), IdempotentHint: false, OpenWorldHint: boolPtr(false)},
	}, f.cancelTask)
}

func (f *Face) addWorkerTools() {
	mcp.AddTool(f.Server, &mcp.Tool{
		Name:  "lease_task",
		Title: "Take work addressed to you",
		Description: "Lease the oldest tasks queued for this session's agent. Each comes with a lease_id: do the work, then post_result " +
			"with the task_id and lease_id (or ask_input to ask the sender a question). Nobody else gets the task while you hold the lease. " +
			"With wait_seconds it waits (up to 20 s) for a task when none is queued: a long poll; call it again to keep waiting.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: boolPtr(false), OpenWorldHint: boolPtr(false)},
	}, f.leaseTask)
	mcp.AddTool(f.Server, &mcp.Tool{
		Name:  "post_result",
		Title: "Finish a leased task",
		Description: "Post the result of a task you leased, under its lease_id: ok, partial, error (with error_message) or rejected. " +
			"The result goes to the task's sender and your lease ends. Refused when the lease is no longer yours (an operator requeued it, or the sender canceled).",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: boolPtr(false), OpenWorldHint: boolPtr(false)},
	}, f.postResult)
	mcp.AddTool(f.Server, &mcp.Tool{
		Name:  "ask_input",
		Title: "Ask the sender a question",
		Description: "End your turn on a leased task with a question for its sender instead of a result: your lease ends and the task waits " +
			"until the sender replies; then it is queued for you again, and your next lease_task gets it with the whole conversation in turns.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: boolPtr(false), OpenWorldHint: boolPtr(false)},
	}, f.askInput)
}

func (f *Face) sendTask(ctx context.Context, _ *mcp.CallToolRequest, in SendTaskInput) (*mcp.CallToolResult, SendTaskOutput, error) {
	t := mailbox.Task{Sender: f.agent, Recipient: in.To, IntentText: in.Intent, Parent: in.Parent}
	if in.Kind != "" {
		t.TaskKind = &in.Kind
	}
	if in.Context != nil {
		b, err := json.Marshal(in.Context)
		if err != nil {
			return nil, SendTaskOutput{}, argError("context", "cannot be encoded as JSON (%v); expected a JSON object", err)
		}
		t.Context = b
	}
	if in.Deadline != "" {
		ms, err := parseDeadline(in.Deadline, time.Now())
		if err != nil {
			return nil, SendTaskOutput{}, err
		}
		t.DeadlineMs = &ms
	}
	switch {
	case in.Idempotent && in.IdempotencyKey == "":
		return nil, SendTaskOutput{}, argError("idempotency_key", "missing; idempotent true needs a key that names this piece of work, such as fix-flaky-test-1")
	case in.IdempotencyKey != "":
		safety := mailbox.DuplicateUnsafe
		if in.Idempotent {
			safety = mailbox.DuplicateIdempotent
		}
		t.Idempotency = &mailbox.Idempotency{DuplicateSafety: safety, Key: in.IdempotencyKey}
	}
	q, err := f.c.Send(ctx, t)
	if err != nil {
		return nil, SendTaskOutput{}, refusal(err, sendNames)
	}
	return nil, SendTaskOutput{TaskID: q.TaskID, Deduplicated: q.Deduplicated}, nil
}

// parseDeadline reads a duration from now (30m) or an RFC 3339 time, as
// `mailroom send --deadline` does.
func parseDeadline(s string, now time.Time) (int64, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 {
			return 0, argError("deadline", "got %q, expected a duration after now, such as 30m", s)
		}
		return now.Add(d).UnixMilli(), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return 0, argError("deadline", "got %q, expected a duration from now such as 30m or 2h, or an RFC 3339 time such as 2026-01-02T15:04:05Z", s)
	}
	return t.UnixMilli(), nil
}

// poll checks a long poll's max and wait_seconds.
func poll(maxN, def, wait int) (int, time.Duration, error) {
	if maxN == 0 {
		maxN = def
	}
	if maxN < 1 || maxN > maxPerCall {
		return 0, 0, argError("max", "got %d, expected 1 to %d", maxN, maxPerCall)
	}
	if wait < 0 || wait > maxWaitSeconds {
		return 0, 0, argError("wait_seconds", "got %d, expected 0 to %d", wait, maxWaitSeconds)
	}
	return maxN, time.Duration(wait) * time.Second, nil
}

func (f *Face) drainResults(ctx context.Context, _ *mcp.CallToolRequest, in DrainInput) (*mcp.CallToolResult, DrainOutput, error) {
	n, wait, err := poll(in.Max, 10, in.WaitSeconds)
	if err != nil {
		return nil, DrainOutput{}, err
	}
	rs, err := f.c.DrainN(ctx, f.agent, n, wait)
	if err != nil {
		return nil, DrainOutput{}, refusal(err, pollNames)
	}
	out := DrainOutput{Results: []ResultView{}}
	for _, r := range rs {
		out.Results = append(out.Results, resultView(r))
	}
	return nil, out, nil
}

func (f *Face) waitResult(ctx context.Context, _ *mcp.CallToolRequest, in WaitResultInput) (*mcp.CallToolResult, WaitResultOutput, error) {
	wait := in.WaitSeconds
	if wait == 0 {
		wait = maxWaitSeconds
	}
	if wait < 0 || wait > maxWaitSeconds {
		return nil, WaitResultOutput{}, argError("wait_seconds", "got %d, expected 0 to %d", in.WaitSeconds, maxWaitSeconds)
	}
	rec, err := f.c.Task(ctx, in.TaskID)
	if err != nil {
		return nil, WaitResultOutput{}, refusal(err, nil)
	}
	switch {
	case rec.Task.Sender != f.agent:
		return nil, WaitResultOutput{}, argError("task_id", "task %s was sent by %s, not by this session's agent %s: only its sender takes its result", rec.Task.ID, rec.Task.Sender, f.agent)
	case rec.State == mailbox.TaskDone:
		return nil, WaitResultOutput{}, argError("task_id", "task %s is done: its result was already taken (by drain_results or wait_result)", rec.Task.ID)
	case rec.State == mailbox.TaskCanceled:
		return nil, WaitResultOutput{}, argError("task_id", "task %s was canceled: it will have no result", rec.Task.ID)
	}
	out := WaitResultOutput{Others: []ResultView{}}
	deadline := time.Now().Add(time.Duration(wait) * time.Second)
	for {
		left := time.Until(deadline).Truncate(time.Millisecond)
		rs, err := f.c.DrainN(ctx, f.agent, maxPerCall, max(left, 0))
		if err != nil {
			// What was taken before the failure is the model's: say so.
			if len(out.Others) > 0 {
				return nil, out, nil
			}
			return nil, WaitResultOutput{}, refusal(err, pollNames)
		}
		for _, r := range rs {
			v := resultView(r)
			if r.TaskID == rec.Task.ID {
				out.Found, out.Result = true, &v
			} else {
				out.Others = append(out.Others, v)
			}
		}
		if out.Found || left <= 0 {
			return nil, out, nil
		}
	}
}

func (f *Face) getTask(ctx context.Context, _ *mcp.CallToolRequest, in TaskIDInput) (*mcp.CallToolResult, TaskView, error) {
	rec, err := f.c.Task(ctx, in.TaskID)
	if err != nil {
		return nil, TaskView{}, refusal(err, nil)
	}
	return nil, recordView(rec), nil
}

func (f *Face) reply(ctx context.Context, _ *mcp.CallToolRequest, in ReplyInput) (*mcp.CallToolResult, ReplyOutput, error) {
	content, err := content(in.Text, in.JSON)
	if err != nil {
		return nil, ReplyOutput{}, err
	}
	if len(content) == 0 {
		return nil, ReplyOutput{}, argError("text", "missing; give the answer as text, json or both")
	}
	out, err := f.c.Reply(ctx, mailbox.Reply{TaskID: in.TaskID, Sender: f.agent, Content: content})
	if err != nil {
		return nil, ReplyOutput{}, refusal(err, map[string]string{"content": "text", "sender": "the session's agent"})
	}
	return nil, ReplyOutput{TaskID: out.TaskID, State: out.State, Turns: out.Turns, Duplicate: out.Duplicate}, nil
}

func (f *Face) cancelTask(ctx context.Context, _ *mcp.CallToolRequest, in CancelInput) (*mcp.CallToolResult, TaskView, error) {
	rec, err := f.c.Cancel(ctx, in.TaskID, in.Reason)
	if err != nil {
		return nil, TaskView{}, refusal(err, nil)
	}
	return nil, recordView(rec), nil
}

func (f *Face) leaseTask(ctx context.Context, _ *mcp.CallToolRequest, in LeaseInput) (*mcp.CallToolResult, LeaseOutput, error) {
	n, wait, err := poll(in.Max, 1, in.WaitSeconds)
	if err != nil {
		return nil, LeaseOutput{}, err
	}
	ls, err := f.c.LeaseN(ctx, f.agent, n, wait)
	if err != nil {
		return nil, LeaseOutput{}, refusal(err, pollNames)
	}
	out := LeaseOutput{Tasks: []TaskView{}}
	for _, l := range ls {
		v := taskView(l.Task)
		v.State, v.LeaseID, v.Attempt, v.LeasedAtMs, v.LeasedTo = mailbox.TaskInFlight, l.Lease.LeaseID, l.Lease.Attempt, l.Lease.LeasedAtMs, f.agent
		out.Tasks = append(out.Tasks, v)
	}
	return nil, out, nil
}

func (f *Face) postResult(ctx context.Context, _ *mcp.CallToolRequest, in PostResultInput) (*mcp.CallToolResult, PostResultOutput, error) {
	switch in.Status {
	case mailbox.StatusOK, mailbox.StatusPartial, mailbox.StatusError, mailbox.StatusRejected:
	case mailbox.StatusInputRequired, mailbox.StatusAuthRequired:
		return nil, PostResultOutput{}, argError("status", "got %q: to ask the sender a question, use ask_input; expected ok, partial, error or rejected", in.Status)
	default:
		return nil, PostResultOutput{}, argError("status", "got %q, expected ok, partial, error or rejected", in.Status)
	}
	c, err := content(in.Text, in.JSON)
	if err != nil {
		return nil, PostResultOutput{}, err
	}
	return f.post(ctx, mailbox.Result{TaskID: in.TaskID, LeaseID: in.LeaseID, Status: in.Status, Content: c, ErrorMessage: in.ErrorMessage})
}

func (f *Face) askInput(ctx context.Context, _ *mcp.CallToolRequest, in AskInputInput) (*mcp.CallToolResult, PostResultOutput, error) {
	if in.Question == "" {
		return nil, PostResultOutput{}, argError("question", "missing; say what you need the sender to decide or provide")
	}
	status := mailbox.StatusInputRequired
	if in.Auth {
		status = mailbox.StatusAuthRequired
	}
	return f.post(ctx, mailbox.Result{TaskID: in.TaskID, LeaseID: in.LeaseID, Status: status,
		Content: []mailbox.Content{{Type: mailbox.ContentText, Text: in.Question}}})
}

func (f *Face) post(ctx context.Context, r mailbox.Result) (*mcp.CallToolResult, PostResultOutput, error) {
	if r.LeaseID == "" {
		return nil, PostResultOutput{}, argError("lease_id", "missing; give the lease_id lease_task returned with this task, so the result is refused if the task was taken from you meanwhile")
	}
	names := resultNames
	if mailbox.Asks(r.Status) {
		names = map[string]string{"task_id": "task_id", "lease_id": "lease_id", "content": "question"}
	}
	if err := f.c.PostResult(ctx, r); err != nil {
		return nil, PostResultOutput{}, refusal(err, names)
	}
	return nil, PostResultOutput{TaskID: r.TaskID, Status: r.Status}, nil
}

// content makes content parts of a text and a JSON object, either
// optional.
func content(text string, obj map[string]any) ([]mailbox.Content, error) {
	var cs []mailbox.Content
	if text != "" {
		cs = append(cs, mailbox.Content{Type: mailbox.ContentText, Text: text})
	}
	if obj != nil {
		b, err := json.Marshal(obj)
		if err != nil {
			return nil, argError("json", "cannot be encoded as JSON (%v); expected a JSON object", err)
		}
		cs = append(cs, mailbox.Content{Type: mailbox.ContentJSON, Value: b})
	}
	return cs, nil
}
