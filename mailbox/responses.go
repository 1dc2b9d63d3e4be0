package mailbox

import "errors"

// Response kinds: every success body is an object with one of these.
const (
	KindTaskQueued   = "a2a_task_queued"
	KindTaskOpt      = "a2a_task_opt"
	KindTasks        = "a2a_tasks"
	KindResultPosted = "a2a_result_posted"
	KindResultOpt    = "a2a_result_opt"
	KindResults      = "a2a_results"
	KindQueue        = "a2a_queue"
	KindRepaired     = "a2a_repaired"
	KindStatus       = "a2a_status"
	KindAutoRetry    = "a2a_auto_retry"
	KindCompacted    = "a2a_compacted"
	KindError        = "error"
	KindHealth       = "a2a_health"
	KindAudit        = "a2a_audit"
	KindWhoAmI       = "a2a_whoami"
	KindAgents       = "a2a_agents"
	// KindAgentRegistered and KindAgentDeregistered answer PUT and DELETE
	// /a2a/agents/{agent}.
	KindAgentRegistered   = "a2a_agent_registered"
	KindAgentDeregistered = "a2a_agent_deregistered"
	// KindTasksLeased and KindResultsDrained answer a lease or drain given
	// max: a list, possibly empty.
	KindTasksLeased    = "a2a_tasks_leased"
	KindResultsDrained = "a2a_results_drained"
	// KindTask and KindTaskCanceled answer GET /a2a/tasks/{id} and POST
	// /a2a/tasks/{id}/cancel: the task as the mailbox remembers it.
	KindTask         = "a2a_task"
	KindTaskCanceled = "a2a_task_canceled"
)

// TaskResponse answers GET /a2a/tasks/{id} and POST /a2a/tasks/{id}/cancel
// (kind a2a_task or a2a_task_canceled).
type TaskResponse struct {
	Kind string `json:"kind"`
	TaskRecord
}

// CancelRequest is the body of POST /a2a/tasks/{id}/cancel.
type CancelRequest struct {
	// Reason is kept in the task's history and the audit trail.
	Reason string `json:"reason,omitempty"`
}

// AgentRegisteredResponse answers PUT /a2a/agents/{agent}.
type AgentRegisteredResponse struct {
	Kind  string          `json:"kind"`
	Agent RegisteredAgent `json:"agent"`
}

// AgentDeregisteredResponse answers DELETE /a2a/agents/{agent}.
type AgentDeregisteredResponse struct {
	Kind  string `json:"kind"`
	Agent string `json:"agent"`
}

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

// TasksLeasedResponse answers POST /a2a/tasks/next?max=N.
type TasksLeasedResponse struct {
	Kind   string       `json:"kind"`
	Leases []LeasedTask `json:"leases"`
}

// ResultsDrainedResponse answers POST /a2a/results/next?max=N.
type ResultsDrainedResponse struct {
	Kind    string          `json:"kind"`
	Results []PendingResult `json:"results"`
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
