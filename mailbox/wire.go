package mailbox

import (
	"bytes"
	"encoding/json"
	"errors"
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

// Result statuses.
const (
	StatusOK      = "ok"
	StatusError   = "error"
	StatusPartial = "partial"
)

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

// Queue entry states.
const (
	EntryQueued   = "queued"
	EntryInFlight = "in_flight"
)

// QueueEntry is a task in the queue, leased or not.
type QueueEntry struct {
	State      string `json:"state"`
	Task       Task   `json:"task"`
	LeaseID    string `json:"lease_id,omitempty"`
	LeasedTo   string `json:"leased_to,omitempty"`
	LeasedAtMs int64  `json:"leased_at_ms,omitempty"`
	Attempt    int    `json:"attempt"`
	QueuedAtMs int64  `json:"queued_at_ms"`
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

	RiskIdempotent       = "idempotent"
	RiskOperatorAccepted = "operator_accepted"

	OutcomeRequeued    = "requeued"
	OutcomeForcedError = "forced_error"
)

// RepairCommand is either {"action":"requeue","lease_id"?,"duplicate_risk"}
// or {"action":"force_error","lease_id"?,"message"}.
type RepairCommand struct {
	Action        string `json:"action"`
	LeaseID       string `json:"lease_id,omitempty" empty:"expected the lease id you inspected; omit the field to repair without a guard"`
	DuplicateRisk string `json:"duplicate_risk,omitempty"`
	Message       string `json:"message,omitempty"`
}

// RepairRequest is an operator's hand repair of one in-flight lease.
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
}

// QueueFilter selects queue entries. Filters apply before Limit.
type QueueFilter struct {
	Limit            int
	MinLeaseAgeMs    *int64
	DeadlineWithinMs *int64
	State            string // "", EntryQueued or EntryInFlight
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

// Response kinds: every success body is an object with one of these.
const (
	KindTaskQueued    = "a2a_task_queued"
	KindTaskOpt       = "a2a_task_opt"
	KindTasks         = "a2a_tasks"
	KindResultPosted  = "a2a_result_posted"
	KindResultOpt     = "a2a_result_opt"
	KindResults       = "a2a_results"
	KindQueue         = "a2a_queue"
	KindRepaired      = "a2a_repaired"
	KindStatus        = "a2a_status"
	KindAutoRetry     = "a2a_auto_retry"
	KindCompacted     = "a2a_compacted"
	KindError         = "error"
	KindHealth        = "a2a_health"
	KindAudit         = "a2a_audit"
	KindWhoAmI        = "a2a_whoami"
	KindSnapshotEvent = "snapshot"
)

// TaskQueuedResponse answers POST /a2a/tasks.
type TaskQueuedResponse struct {
	Kind         string `json:"kind"`
	TaskID       string `json:"task_id"`
	Deduplicated bool   `json:"deduplicated,omitempty"`
}

// TaskOptResponse answers a lease: both null when nothing was queued.
type TaskOptResponse struct {
	Kind  string `json:"kind"`
	Task  *Task  `json:"task"`
	Lease *Lease `json:"lease"`
}

// TasksResponse lists queued tasks.
type TasksResponse struct {
	Kind  string `json:"kind"`
	Tasks []Task `json:"tasks"`
}

// ResultPostedResponse answers POST /a2a/results.
type ResultPostedResponse struct {
	Kind   string `json:"kind"`
	TaskID string `json:"task_id"`
}

// ResultOptResponse answers a drain: result is null when nothing was pending.
type ResultOptResponse struct {
	Kind   string         `json:"kind"`
	Result *PendingResult `json:"result"`
}

// ResultsResponse lists pending results.
type ResultsResponse struct {
	Kind    string          `json:"kind"`
	Results []PendingResult `json:"results"`
}

// QueueResponse answers GET /a2a/queue.
type QueueResponse struct {
	Kind    string          `json:"kind"`
	Tasks   []QueueEntry    `json:"tasks"`
	Results []PendingResult `json:"results"`
}

// RepairedResponse answers POST /a2a/repair.
type RepairedResponse struct {
	Kind    string        `json:"kind"`
	Outcome RepairOutcome `json:"outcome"`
}

// CompactOutcome says what a compaction did.
type CompactOutcome struct {
	Seq          uint64 `json:"seq"`
	BytesBefore  int64  `json:"bytes_before"`
	BytesAfter   int64  `json:"bytes_after"`
	SnapshotPath string `json:"snapshot_path,omitempty"`
}

// CompactedResponse answers POST /a2a/compact.
type CompactedResponse struct {
	Kind string `json:"kind"`
	CompactOutcome
}

// AuditResponse answers GET /a2a/audit.
type AuditResponse struct {
	Kind    string        `json:"kind"`
	Repairs []AuditRecord `json:"repairs"`
}

// WhoAmI answers GET /a2a/whoami: who the caller's token speaks for.
// Auth is false when the daemon runs without tokens (loopback only).
type WhoAmI struct {
	Kind         string   `json:"kind"`
	Principal    string   `json:"principal"`
	Capabilities []string `json:"capabilities"`
	Auth         bool     `json:"auth"`
}

// ErrorResponse is the one error body shape.
type ErrorResponse struct {
	Kind    string        `json:"kind"`
	Code    string        `json:"code"`
	Message string        `json:"message"`
	Details *ErrorDetails `json:"details,omitempty"`
}

// ErrorBody returns the wire body for err; non-application errors become a
// generic internal error.
func ErrorBody(err error) ErrorResponse {
	body := ErrorResponse{Kind: KindError, Code: ErrorCode(err), Message: ErrorMessage(err)}
	var e *Error
	if errors.As(err, &e) {
		body.Details = e.Details
	}
	return body
}

// AsError converts a decoded error body back into an *Error.
func (r ErrorResponse) AsError() *Error {
	return &Error{Code: r.Code, Message: r.Message, Details: r.Details}
}

// ShortID returns the first 8 characters of an id, for tables.
func ShortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

func quote(s string) string { return fmt.Sprintf("%q", s) }
