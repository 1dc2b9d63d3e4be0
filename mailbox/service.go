package mailbox

import (
	"context"
	"time"
)

// Service is the whole mailbox, every role together. The daemon's engine
// implements it; auth.Guard decorates it role by role; each edge takes only
// the roles it calls. Every error is an *Error whose code says what
// happened (errors.go maps codes to HTTP statuses); the codes each method
// may answer are listed with it. Any method may also answer unavailable
// (the log cannot be written, the daemon is shutting down, this instance
// of a shared mailbox does not lead or cannot vouch for its view: see
// ErrorDetails.Retry), and, behind auth.Guard, unauthorized or forbidden.
type Service interface {
	Mailbox
	Operator
	Registry
	A2A
	Push
	Stream
}

// Mailbox is what agents call: send work, take it, answer it, collect the
// answers.
type Mailbox interface {
	// Send queues a task (its ID set and normalized by the caller or assigned
	// by the service when empty) and returns its id. Errors: invalid (a
	// field, named), conflict (the id was sent before).
	Send(ctx context.Context, t Task) (TaskQueuedResponse, error)
	// SendBatch sends each task as Send would, answering each in its place;
	// the tasks accepted are durable together or not at all. Errors (of the
	// whole batch): unavailable; each item carries its own refusal.
	SendBatch(ctx context.Context, tasks []Task) ([]BatchItem, error)
	// Lease leases the oldest task queued for recipient ("" = any recipient):
	// a convenience for LeaseN of one without waiting. Both results are nil
	// when nothing is queued. Errors: invalid (recipient).
	Lease(ctx context.Context, recipient string) (*Task, *Lease, error)
	// LeaseN leases up to n tasks queued for recipient ("" = any), oldest
	// first. When none is queued it waits up to wait for one to be sent or
	// requeued, behind the callers already waiting for the same recipient;
	// it answers what it has (possibly nothing) when the wait ends or the
	// daemon shuts down, and takes nothing once ctx has ended. Errors:
	// invalid (recipient, max, wait_ms).
	LeaseN(ctx context.Context, recipient string, n int, wait time.Duration) ([]LeasedTask, error)
	// PostResult records a task's result: from its lease's holder (see
	// Acting), under lease_id when given; a result for a queued task from
	// its recipient is its lease and its result. Errors: invalid, not_found
	// (never sent, or forgotten), conflict (not in flight, or another
	// lease), forbidden (another agent's lease).
	PostResult(ctx context.Context, r Result) error
	// PostResults posts each result as PostResult would, in the same way
	// as SendBatch.
	PostResults(ctx context.Context, results []Result) ([]BatchItem, error)
	// Drain takes the oldest result pending for sender ("" = any sender):
	// a convenience for DrainN of one without waiting; nil when none is
	// pending. Errors: invalid (sender).
	Drain(ctx context.Context, sender string) (*PendingResult, error)
	// DrainN drains up to n results pending for sender ("" = any), waiting
	// for one as LeaseN waits for a task. Errors: invalid (sender, max,
	// wait_ms).
	DrainN(ctx context.Context, sender string, n int, wait time.Duration) ([]PendingResult, error)
	// Reply answers a task waiting on its sender (its worker asked with
	// input_required or auth_required): the answer becomes the task's
	// newest turn and the task is queued again for its recipient. Only
	// the task's sender replies (see Acting). Errors: invalid (a field,
	// named; a conversation bound), not_found, conflict (the task is not
	// waiting), forbidden (another agent's task).
	Reply(ctx context.Context, r Reply) (ReplyOutcome, error)
}

// Operator is what people and their tools call to see and repair the
// mailbox.
type Operator interface {
	// RecentTasks lists queued tasks, oldest first, without taking them.
	// Errors: invalid (limit).
	RecentTasks(ctx context.Context, limit int) ([]Task, error)
	// RecentResults lists pending results, oldest first, without taking
	// them. Errors: invalid (limit).
	RecentResults(ctx context.Context, limit int) ([]PendingResult, error)
	// Queue lists queue entries and pending results, filtered before the
	// limit. Errors: invalid (limit, state, the ages).
	Queue(ctx context.Context, f QueueFilter) (QueueView, error)
	// Repair requeues or force-errors an in-flight lease, guarded by the
	// lease id the operator saw. Errors: invalid (a field, named),
	// not_found, conflict (not in flight, or another lease: details name
	// the current one).
	Repair(ctx context.Context, req RepairRequest) (RepairOutcome, error)
	// Compact snapshots the state and drops the log before it. Errors:
	// unavailable.
	Compact(ctx context.Context) (CompactOutcome, error)
	// RetryStale runs the retry-stale scan (a dry run unless p.Enabled).
	// Errors: invalid (a policy field, named).
	RetryStale(ctx context.Context, p RetryPolicy) (RetryReport, error)
	// Task returns what the mailbox remembers of one task. Errors: invalid
	// (task_id), not_found (never sent here, or drained long ago and
	// forgotten).
	Task(ctx context.Context, id string) (TaskRecord, error)
	// Audit lists repairs newest first, for one task when taskID != "".
	// Errors: invalid (task_id, limit).
	Audit(ctx context.Context, taskID string, limit int) ([]AuditRecord, error)
	// Agents lists every agent the mailbox knows or has heard from, sorted
	// by agent id.
	Agents(ctx context.Context) ([]AgentInfo, error)
}

// Registry holds agents' A2A cards.
type Registry interface {
	// RegisterAgent registers agent's card, or replaces the one it has.
	// Errors: invalid (the agent id or a card field, named).
	RegisterAgent(ctx context.Context, agent string, card AgentCard) (RegisteredAgent, error)
	// DeregisterAgent removes agent's card; its tasks stay. Errors:
	// invalid, not_found (it has no card).
	DeregisterAgent(ctx context.Context, agent string) error
	// Registered returns agent's registry entry. It needs no rights: a
	// card is public. Errors: invalid, not_found (it has no card).
	Registered(ctx context.Context, agent string) (RegisteredAgent, error)
}

// A2A is what the A2A edge calls besides sending: its callers read,
// list and cancel the tasks they sent, and take their results by reading
// them.
type A2A interface {
	// Task is Operator.Task: an A2A caller follows its task by reading it.
	Task(ctx context.Context, id string) (TaskRecord, error)
	// Cancel ends a queued or in-flight task and returns the task as it
	// now stands. Errors: invalid, not_found, conflict (it has finished).
	Cancel(ctx context.Context, taskID, reason string) (TaskRecord, error)
	// Delivered marks a task's pending result as delivered to its A2A
	// caller; a task without one is left alone. Errors: invalid,
	// not_found.
	Delivered(ctx context.Context, taskID string) error
	// AgentTasks lists one recipient's tasks, newest first. Errors:
	// invalid (the agent, the page).
	AgentTasks(ctx context.Context, q AgentTasksQuery) (AgentTasksPage, error)
	// SendWithPush is Send with push config c set on the task in the same
	// unit; a retry of a task already sent sets c on that task and
	// answers as Send does. Errors: Send's, and invalid (the config's
	// field, named push.*).
	SendWithPush(ctx context.Context, t Task, c PushConfig) (TaskQueuedResponse, error)
	// SetPushConfig sets push config c on a task (replacing its config of
	// the same id) and returns it as stored. Errors: invalid (push.*),
	// not_found (the task), conflict (the task has MaxPushConfigs).
	SetPushConfig(ctx context.Context, taskID string, c PushConfig) (PushConfig, error)
	// PushConfigs returns a task's push configs, or the one named
	// configID. Errors: invalid, not_found (the task, the config).
	PushConfigs(ctx context.Context, taskID, configID string) ([]PushConfig, error)
	// DeletePushConfig removes a task's push config and its notifications
	// not yet delivered. Errors: invalid, not_found.
	DeletePushConfig(ctx context.Context, taskID, configID string) error
}

// Push is the operator's hold on the outbox of push notifications.
type Push interface {
	// Deliveries lists the outbox (only the failing and dead
	// notifications when failedOnly). Errors: forbidden.
	Deliveries(ctx context.Context, failedOnly bool) (PushListing, error)
	// RetryNotification puts a dead notification back in line (audited).
	// Errors: forbidden, not_found, conflict (not dead, or its task was
	// forgotten), invalid (reason).
	RetryNotification(ctx context.Context, id, reason string) (Notification, error)
	// DropNotification removes a notification, pending or dead, with a
	// reason (audited). Errors: forbidden, not_found, invalid (reason).
	DropNotification(ctx context.Context, id, reason string) error
	// DropDeadNotification removes a notification only while it is
	// dead-lettered, with a reason (audited): a bulk drop of the dead
	// keeps one retried since it was listed. Errors: as DropNotification,
	// and conflict (not dead).
	DropDeadNotification(ctx context.Context, id, reason string) error
}

// Stream is the change feed and the daemon's health.
type Stream interface {
	// Subscribe streams events. With after == nil the first event is a
	// snapshot; otherwise the events after *after follow (or a snapshot when
	// they were compacted away).
	Subscribe(ctx context.Context, after *uint64) (Subscription, error)
	// Status reports the durable state's sizes and last seq, for health
	// checks; it needs no rights.
	Status() Status
}

// Status is how large the mailbox is and how far its log goes.
type Status struct {
	Counts
	LastSeq uint64
	// Store is the instance's part in a shared store; nil on a local log.
	Store *StoreRole
}

// StoreRole is an instance's role in a shared store (PostgreSQL), as
// GET /healthz reports it.
type StoreRole struct {
	Kind string `json:"kind"` // postgres
	// Role is leader or follower.
	Role string `json:"role"`
	// Epoch is the newest term this instance has seen.
	Epoch int64 `json:"epoch"`
	// Leader and LeaderURL name the leading instance (empty during an
	// election); Self is this instance's advertise URL.
	Leader    string `json:"leader,omitempty"`
	LeaderURL string `json:"leader_url,omitempty"`
	Self      string `json:"self,omitempty"`
	// Behind is how many events announced by the leader this instance has
	// not applied yet.
	Behind uint64 `json:"behind"`
}

// Subscription is a live feed of committed events.
type Subscription interface {
	// Events delivers events in seq order; it is closed when the
	// subscription ends. The events are shared with every other
	// subscriber: read them, never write to them.
	Events() <-chan *Event
	// Agents asks for the agents listing as well, and delivers it: the
	// latest listing not yet taken, at most once a second and only after
	// something changed since the subscription started. A subscription
	// that never calls Agents is sent none. Nothing waits for the reader:
	// an update it has not taken is replaced by the next. The channel is
	// never closed; stop reading it when Events is closed. An update may
	// arrive before the events it counts (up to its Seq) are taken from
	// Events: a reader that shows both holds it until then.
	Agents() <-chan AgentsUpdate
	// Err says why Events was closed: ErrSlowSubscriber, the context's
	// error, or nil after Close.
	Err() error
	Close()
}

// ErrSlowSubscriber ends a subscription whose buffer overflowed; the
// subscriber reconnects with its last seq and catches up from the log.
var ErrSlowSubscriber = &Error{Code: CodeUnavailable, Message: "subscriber fell behind and was disconnected; reconnect with Last-Event-ID to catch up"}

type principalKey struct{}

type actingKey struct{}

// Acting is what the access policy holds a restricted caller to, for the
// decisions that must check it under the service's lock rather than
// before: which agent it acts as, and whether it may see the leases of
// other agents (a repair right) in a conflict's answer.
type Acting struct {
	Agent      string
	SeesLeases bool
}

// WithActing returns a context whose caller the service holds to a.
// A context without it is trusted: no tokens, an admin, the daemon itself.
func WithActing(ctx context.Context, a Acting) context.Context {
	return context.WithValue(ctx, actingKey{}, a)
}

// ActingFrom returns what the caller is held to, and false for a trusted
// caller.
func ActingFrom(ctx context.Context) (Acting, bool) {
	a, ok := ctx.Value(actingKey{}).(Acting)
	return a, ok
}

// WithPrincipal returns a context that carries who is making the request.
func WithPrincipal(ctx context.Context, principal string) context.Context {
	return context.WithValue(ctx, principalKey{}, principal)
}

// PrincipalFrom returns the principal in ctx, or "" when there is none.
func PrincipalFrom(ctx context.Context) string {
	p, _ := ctx.Value(principalKey{}).(string)
	return p
}
