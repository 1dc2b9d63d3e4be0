package mailbox

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Duplicate-safety postures of a task. A task without idempotency is unsafe:
// running it twice may do the work twice.
const (
	DuplicateUnsafe     = "unsafe"
	DuplicateIdempotent = "idempotent"
)

// Idempotency says whether a task may safely run twice, and under which key.
type Idempotency struct {
	DuplicateSafety string `json:"duplicate_safety"`
	Key             string `json:"key"`
}

// Task is a unit of delegated work from one agent to another.
type Task struct {
	ID         string `json:"id,omitempty" empty:"expected a UUID; omit the field to let the daemon assign one"`
	Sender     string `json:"sender"`
	Recipient  string `json:"recipient"`
	IntentText string `json:"intent_text"`
	// TaskKind is a pointer so that a present-but-empty kind can be refused.
	TaskKind    *string      `json:"task_kind,omitempty"`
	Parent      string       `json:"parent,omitempty" empty:"expected the parent task's UUID; omit the field for a task without a parent"`
	DeadlineMs  *int64       `json:"deadline_ms,omitempty"`
	Idempotency *Idempotency `json:"idempotency,omitempty"`
	// Context is the structured input of the work beside its intent (a
	// JSON object, bounded like a result's json content), carried to the
	// worker in its lease. On the A2A side it is the message's data part.
	Context json.RawMessage `json:"context,omitempty"`
	// A2A is set on tasks sent through the A2A edge, never by clients of
	// the native routes.
	A2A *A2AOrigin `json:"a2a,omitempty"`
	// Covenant is set on tasks sent through Covenant's dialect
	// (/compat/covenant/), never by clients of the native routes.
	Covenant *CovenantOrigin `json:"covenant,omitempty"`
	// Turns is the conversation after the task's first message: each
	// question its worker asked and each answer its sender gave, in order.
	// Set only by the daemon (a lease carries them, so the worker sees the
	// whole conversation); a send that gives turns is refused.
	Turns []Turn `json:"turns,omitempty"`
}

// Kind returns the task kind or "" when it has none.
func (t *Task) Kind() string {
	if t.TaskKind == nil {
		return ""
	}
	return *t.TaskKind
}

// Idempotent reports whether the task declared itself safe to run twice.
func (t *Task) Idempotent() bool {
	return t.Idempotency != nil && t.Idempotency.DuplicateSafety == DuplicateIdempotent
}

// DuplicateSafety returns the task's posture, "unsafe" when it declared none.
func (t *Task) DuplicateSafety() string {
	if t.Idempotency == nil {
		return DuplicateUnsafe
	}
	return t.Idempotency.DuplicateSafety
}

// Result statuses. ok, error, partial and rejected finish the task;
// input_required and auth_required end the worker's turn with a question
// for the sender (see conversation.go). rejected is an error the worker
// chose (it refuses the work), kept apart so A2A callers see "rejected".
const (
	StatusOK            = "ok"
	StatusError         = "error"
	StatusPartial       = "partial"
	StatusRejected      = "rejected"
	StatusInputRequired = "input_required"
	StatusAuthRequired  = "auth_required"
)

// Asks reports whether a result status ends a turn with a question rather
// than finishing the task.
func Asks(status string) bool { return status == StatusInputRequired || status == StatusAuthRequired }

// Content part types.
const (
	ContentText = "text"
	ContentJSON = "json"
)

// Content is one part of a result: {"type":"text","text":...} or
// {"type":"json","value":...}.
type Content struct {
	Type  string          `json:"type"`
	Text  string          `json:"text,omitempty"`
	Value json.RawMessage `json:"value,omitempty"`
}

// MarshalJSON writes exactly the fields of the content's type, so an empty
// text is still written as "text":"".
func (c Content) MarshalJSON() ([]byte, error) {
	switch c.Type {
	case ContentText:
		return json.Marshal(struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}{c.Type, c.Text})
	case ContentJSON:
		v := c.Value
		if len(v) == 0 {
			v = json.RawMessage("null")
		}
		return json.Marshal(struct {
			Type  string          `json:"type"`
			Value json.RawMessage `json:"value"`
		}{c.Type, v})
	}
	type plain Content
	return json.Marshal(plain(c))
}

// UnmarshalJSON refuses fields that do not belong to the content's type.
func (c *Content) UnmarshalJSON(b []byte) error {
	type plain Content
	var p plain
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return err
	}
	*c = Content(p)
	return nil
}

// Result is what a recipient posts back for a task it leased.
type Result struct {
	TaskID       string    `json:"task_id"`
	Status       string    `json:"status"`
	Content      []Content `json:"content"`
	ErrorMessage string    `json:"error_message,omitempty"`
	LeaseID      string    `json:"lease_id,omitempty" empty:"expected the lease id your lease returned; omit the field to post without a lease guard"`
}

// PendingResult is a result waiting for its sender to drain it, with the
// facts the mailbox knows about it.
type PendingResult struct {
	Result
	Sender     string `json:"sender"`
	Recipient  string `json:"recipient"`
	PostedAtMs int64  `json:"posted_at_ms"`
	// Forced marks a result an operator posted with force_error.
	Forced bool `json:"forced,omitempty"`
	// Replayed marks a result copied from an earlier identical idempotent task.
	Replayed bool `json:"replayed,omitempty"`
}

// QueueEntry is a task in the queue, leased or not.
type QueueEntry struct {
	State      string `json:"state"` // TaskQueued, TaskInFlight or TaskWaiting
	Task       Task   `json:"task"`
	LeaseID    string `json:"lease_id,omitempty"`
	LeasedTo   string `json:"leased_to,omitempty"`
	LeasedAtMs int64  `json:"leased_at_ms,omitempty"`
	Attempt    int    `json:"attempt"`
	QueuedAtMs int64  `json:"queued_at_ms"`
	// WaitingSinceMs is when a waiting task's worker asked its question.
	WaitingSinceMs int64 `json:"waiting_since_ms,omitempty"`
}

// LeasedTask is one task of a lease of several, with its lease.
type LeasedTask struct {
	Task  Task  `json:"task"`
	Lease Lease `json:"lease"`
}

// Batch and long-poll bounds. A batch request, or a lease or drain of
// several, holds at most the daemon's batch_max items (DefaultBatchMax
// unless configured, never more than MaxBatch); a long poll waits at most
// MaxWaitMs for something to arrive.
const (
	DefaultBatchMax = 100
	MaxBatch        = 1000
	MaxWaitMs       = 20000
)

// ValidateBatch checks a lease's or drain's max (against the ceiling; the
// HTTP layer holds it to batch_max) and wait.
func ValidateBatch(n int, waitMs int64) error {
	if n < 1 || n > MaxBatch {
		return Invalidf("max", "got %d, expected 1 to %d", n, MaxBatch)
	}
	if waitMs < 0 || waitMs > MaxWaitMs {
		return Invalidf("wait_ms", "got %d, expected 0 to %d (20 s)", waitMs, MaxWaitMs)
	}
	return nil
}

// Lease is what a recipient holds while it works on a task.
type Lease struct {
	LeaseID    string `json:"lease_id"`
	Attempt    int    `json:"attempt"`
	LeasedAtMs int64  `json:"leased_at_ms"`
}

// Repair actions and postures.
const (
	ActionRequeue    = "requeue"
	ActionForceError = "force_error"
	// ActionMove and ActionCancel repair a queued task (one no worker
	// holds): move hands it to another recipient, cancel ends it with an
	// error result for its sender. Their guard is command.queued_for.
	ActionMove   = "move"
	ActionCancel = "cancel"
	// ActionHandOver makes another agent the sender of a task that waits
	// on its sender (a question to answer, or a result to drain): the
	// new sender answers or drains it from then on (handover.go). Its
	// guard is command.sent_by.
	ActionHandOver = "hand_over"

	RiskIdempotent       = "idempotent"
	RiskOperatorAccepted = "operator_accepted"

	OutcomeRequeued    = "requeued"
	OutcomeForcedError = "forced_error"
	// OutcomeMoved is a queued task handed to another recipient.
	OutcomeMoved = "moved"
	// OutcomeCanceled is the audit action of an A2A cancel.
	OutcomeCanceled = "canceled"
	// OutcomeHandedOver is a task handed to another sender.
	OutcomeHandedOver = "handed_over"
)

// RepairCommand is one of
// {"action":"requeue","lease_id"?,"duplicate_risk","recipient"?,"new_agent"?},
// {"action":"force_error","lease_id"?,"message"} for a lease (or a task
// waiting on its sender), or, for a queued task,
// {"action":"move","queued_for"?,"recipient","new_agent"?} and
// {"action":"cancel","queued_for"?,"message"?}, or, for a task that waits
// on its sender (its question, or its result undrained),
// {"action":"hand_over","sender","sent_by"?,"new_agent"?}.
type RepairCommand struct {
	Action        string `json:"action"`
	LeaseID       string `json:"lease_id,omitempty" empty:"expected the lease id you inspected; omit the field to repair without a guard"`
	DuplicateRisk string `json:"duplicate_risk,omitempty"`
	Message       string `json:"message,omitempty"`
	// Recipient, on a requeue, hands the task to another agent: it is
	// queued for Recipient, keeping its place as the one that has waited
	// longest.
	Recipient string `json:"recipient,omitempty" empty:"expected the agent id of the task's new recipient; omit the field to requeue the task for the recipient it has"`
	// NewAgent confirms that Recipient is an agent the mailbox does not
	// know yet (never registered, heard from, or holding tasks): without
	// it such a move is refused, naming the known agents it is close to,
	// so that a typo cannot send work where nobody reads it.
	NewAgent bool `json:"new_agent,omitempty"`
	// QueuedFor guards a move or cancel: the recipient the operator saw
	// the task queued for. The repair is refused when the task is no
	// longer queued, or is queued for another recipient.
	QueuedFor string `json:"queued_for,omitempty" empty:"expected the agent the task was queued for when you looked; omit the field to repair without a guard"`
	// Sender, on a hand_over, is the task's new sender: the agent that
	// answers its question or drains its result from then on. NewAgent
	// confirms one the mailbox does not know, as for a move.
	Sender string `json:"sender,omitempty" empty:"expected the agent id of the task's new sender"`
	// SentBy guards a hand_over: the sender the operator saw. The repair
	// is refused when the task's sender is another one now.
	SentBy string `json:"sent_by,omitempty" empty:"expected the agent the task was sent by when you looked; omit the field to repair without a guard"`
}

// RepairRequest is an operator's hand repair of one task: an in-flight
// lease, a task waiting on its sender, or a queued task.
type RepairRequest struct {
	TaskID  string        `json:"task_id"`
	Reason  string        `json:"reason"`
	Command RepairCommand `json:"command"`
}

// RepairOutcome says what a repair did.
type RepairOutcome struct {
	TaskID  string         `json:"task_id"`
	Action  string         `json:"action"`
	State   string         `json:"state"`
	Attempt int            `json:"attempt"`
	Result  *PendingResult `json:"result,omitempty"`
	// Recipient is the task's new recipient, when a requeue handed it to
	// another agent.
	Recipient string `json:"recipient,omitempty"`
	// Sender is the task's new sender, after a hand_over.
	Sender string `json:"sender,omitempty"`
}

// QueueFilter selects queue entries. Filters apply before Limit.
type QueueFilter struct {
	Limit            int
	MinLeaseAgeMs    *int64
	DeadlineWithinMs *int64
	State            string // "", TaskQueued, TaskInFlight or TaskWaiting
	// Agent, when set, keeps the tasks sent to it or leased by it, and
	// the results it sent or answered.
	Agent string
}

// Queue limits.
const (
	DefaultLimit = 100
	MaxLimit     = 10000
)

// QueueView is the answer to a queue query.
type QueueView struct {
	Tasks   []QueueEntry    `json:"tasks"`
	Results []PendingResult `json:"results"`
}

// ShortID returns the first 8 characters of an id, for tables.
func ShortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

func quote(s string) string { return fmt.Sprintf("%q", s) }
