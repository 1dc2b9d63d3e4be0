package mcpface

import (
	"strings"

	"github.com/mailroom/mailroom/mailbox"
)

// The tools' outputs. Every field has a concrete type: the SDK writes the
// JSON Schema `true` for a field typed any (or json.RawMessage), and the
// TypeScript SDK's client (1.32.2) then refuses the whole tools list. JSON
// values (a task's context, a result's json parts) travel as JSON text.

// TaskView is one task as a model reads it.
type TaskView struct {
	TaskID    string `json:"task_id" jsonschema:"the task's id (a UUID)"`
	State     string `json:"state,omitempty" jsonschema:"queued, in_flight (a worker holds its lease), waiting (its worker asked the sender a question), result_pending, done (its sender drained the result) or canceled"`
	Sender    string `json:"sender" jsonschema:"the agent that sent it"`
	Recipient string `json:"recipient" jsonschema:"the agent it is for"`
	Intent    string `json:"intent" jsonschema:"what the sender asks for"`
	Kind      string `json:"kind,omitempty" jsonschema:"the task's kind, if the sender gave one"`
	// ContextJSON is the task's context object as JSON text.
	ContextJSON    string `json:"context_json,omitempty" jsonschema:"structured input beside the intent: a JSON object, as JSON text"`
	Parent         string `json:"parent,omitempty" jsonschema:"the task this one was sent for"`
	DeadlineMs     int64  `json:"deadline_ms,omitempty" jsonschema:"when the sender wants it done, in unix milliseconds"`
	Idempotent     bool   `json:"idempotent,omitempty" jsonschema:"true when running it twice is safe"`
	IdempotencyKey string `json:"idempotency_key,omitempty" jsonschema:"the sender's deduplication key"`
	LeaseID        string `json:"lease_id,omitempty" jsonschema:"the current lease: pass it to post_result or ask_input (worker), or to requeue or force_error (operator)"`
	LeasedTo       string `json:"leased_to,omitempty" jsonschema:"the agent holding the lease"`
	LeasedAtMs     int64  `json:"leased_at_ms,omitempty" jsonschema:"when the lease was taken, in unix milliseconds"`
	Attempt        int    `json:"attempt,omitempty" jsonschema:"how many times it has been leased"`
	SentAtMs       int64  `json:"sent_at_ms,omitempty" jsonschema:"when it was sent, in unix milliseconds"`
	// Turns is the conversation so far: the worker's questions and the
	// sender's answers, oldest first.
	Turns []TurnView `json:"turns,omitempty" jsonschema:"the conversation so far: questions from the worker and answers from the sender, oldest first"`
	// Result is the result a task that came through the A2A edge keeps;
	// native tasks give their result to the sender's drain_results.
	Result *ResultView `json:"result,omitempty" jsonschema:"the task's result, when the mailbox keeps it with the task"`
}

// TurnView is one question or answer of a task's conversation.
type TurnView struct {
	Role   string `json:"role" jsonschema:"worker (a question) or sender (an answer)"`
	Agent  string `json:"agent" jsonschema:"who asked or answered"`
	Status string `json:"status,omitempty" jsonschema:"for a question: input_required or auth_required"`
	Text   string `json:"text,omitempty" jsonschema:"the text parts, one per line"`
	// JSON holds each json part as JSON text.
	JSON []string `json:"json,omitempty" jsonschema:"each JSON part, as JSON text"`
	AtMs int64    `json:"at_ms,omitempty" jsonschema:"when, in unix milliseconds"`
}

// ResultView is a task's result (or a worker's question) as its sender
// drains it.
type ResultView struct {
	TaskID       string   `json:"task_id" jsonschema:"the task it answers"`
	Status       string   `json:"status" jsonschema:"ok, error, partial, rejected; or input_required / auth_required: a question from the worker, to answer with reply"`
	Text         string   `json:"text,omitempty" jsonschema:"the text parts, one per line"`
	JSON         []string `json:"json,omitempty" jsonschema:"each JSON part, as JSON text"`
	ErrorMessage string   `json:"error_message,omitempty" jsonschema:"why it failed, for status error"`
	Sender       string   `json:"sender,omitempty" jsonschema:"who sent the task"`
	Recipient    string   `json:"recipient,omitempty" jsonschema:"who worked on it"`
	PostedAtMs   int64    `json:"posted_at_ms,omitempty" jsonschema:"when the result was posted, in unix milliseconds"`
	Forced       bool     `json:"forced,omitempty" jsonschema:"true when an operator ended the task with an error (force_error)"`
}

func taskView(t mailbox.Task) TaskView {
	v := TaskView{TaskID: t.ID, Sender: t.Sender, Recipient: t.Recipient, Intent: t.IntentText, Parent: t.Parent}
	if t.TaskKind != nil {
		v.Kind = *t.TaskKind
	}
	if len(t.Context) > 0 && string(t.Context) != "null" {
		v.ContextJSON = string(t.Context)
	}
	if t.DeadlineMs != nil {
		v.DeadlineMs = *t.DeadlineMs
	}
	if t.Idempotency != nil {
		v.Idempotent = t.Idempotency.DuplicateSafety == mailbox.DuplicateIdempotent
		v.IdempotencyKey = t.Idempotency.Key
	}
	for _, turn := range t.Turns {
		text, js := contentView(turn.Content)
		v.Turns = append(v.Turns, TurnView{Role: turn.Role, Agent: turn.Agent, Status: turn.Status, Text: text, JSON: js, AtMs: turn.AtMs})
	}
	return v
}

func recordView(rec mailbox.TaskRecord) TaskView {
	v := taskView(rec.Task)
	v.State, v.Attempt, v.SentAtMs = rec.State, rec.Attempt, rec.SentAtMs
	v.LeaseID, v.LeasedTo, v.LeasedAtMs = rec.LeaseID, rec.LeasedTo, rec.LeasedAtMs
	if rec.Result != nil {
		r := resultView(mailbox.PendingResult{Result: *rec.Result})
		v.Result = &r
	}
	return v
}

func entryView(e mailbox.QueueEntry) TaskView {
	v := taskView(e.Task)
	v.State, v.Attempt = e.State, e.Attempt
	v.LeaseID, v.LeasedTo, v.LeasedAtMs = e.LeaseID, e.LeasedTo, e.LeasedAtMs
	return v
}

func resultView(r mailbox.PendingResult) ResultView {
	text, js := contentView(r.Content)
	return ResultView{TaskID: r.TaskID, Status: r.Status, Text: text, JSON: js, ErrorMessage: r.ErrorMessage,
		Sender: r.Sender, Recipient: r.Recipient, PostedAtMs: r.PostedAtMs, Forced: r.Forced}
}

// contentView flattens content parts: the text parts joined by newlines,
// each json part as JSON text.
func contentView(cs []mailbox.Content) (string, []string) {
	var texts, js []string
	for _, c := range cs {
		switch c.Type {
		case mailbox.ContentText:
			texts = append(texts, c.Text)
		case mailbox.ContentJSON:
			js = append(js, string(c.Value))
		}
	}
	return strings.Join(texts, "\n"), js
}

// AgentView is one agent of the mailbox, with its card when it has one.
type AgentView struct {
	Agent          string      `json:"agent" jsonschema:"the agent id: give it to send_task as to"`
	Name           string      `json:"name,omitempty" jsonschema:"the card's name"`
	Description    string      `json:"description,omitempty" jsonschema:"what the agent does, from its card"`
	Skills         []SkillView `json:"skills,omitempty" jsonschema:"the skills its card lists"`
	Registered     bool        `json:"registered" jsonschema:"true when the agent has a card (it is served as an A2A server; its card is the resource mailroom://agents/{agent}/card)"`
	Remote         bool        `json:"remote,omitempty" jsonschema:"true when the daemon delivers its tasks to it as a remote A2A server"`
	Queued         int         `json:"queued" jsonschema:"tasks waiting for it"`
	InFlight       int         `json:"in_flight" jsonschema:"leases it holds"`
	ResultsPending int         `json:"results_pending" jsonschema:"results waiting for it to drain"`
	Waiting        int         `json:"waiting,omitempty" jsonschema:"tasks waiting on it to answer a question"`
	LastSeenMs     int64       `json:"last_seen_ms,omitempty" jsonschema:"when it last called the daemon, in unix milliseconds (0: not since the daemon started)"`
}

// SkillView is one skill of an agent's card.
type SkillView struct {
	ID          string   `json:"id" jsonschema:"the skill's id: what find_agents_by_skill takes"`
	Name        string   `json:"name,omitempty"`
	Description string   `json:"description,omitempty"`
	Tags        []string `json:"tags,omitempty"`
}

func agentView(a mailbox.AgentInfo) AgentView {
	v := AgentView{Agent: a.Agent, Queued: a.Queued, InFlight: a.InFlight, ResultsPending: a.ResultsPending,
		Waiting: a.Waiting, LastSeenMs: a.LastSeenMs}
	if a.Card != nil {
		v.Registered = true
		v.Name, v.Description, v.Remote = a.Card.Name, a.Card.Description, a.Card.Remote != nil
		for _, s := range a.Card.Skills {
			v.Skills = append(v.Skills, SkillView{ID: s.ID, Name: s.Name, Description: s.Description, Tags: s.Tags})
		}
	}
	return v
}
