package mailbox

// Event types. Names are part of the wire and of the log.
const (
	EventTaskSent         = "task_sent"
	EventTaskLeased       = "task_leased"
	EventResultPosted     = "result_posted"
	EventResultDrained    = "result_drained"
	EventTaskRequeued     = "task_requeued"
	EventTaskForceErrored = "task_force_errored"
	// EventResultReplayed answers a duplicate idempotent task with a copy of
	// the first one's result: the task is recorded and never leased.
	EventResultReplayed = "result_replayed"
	// EventRecordSkipped stands in the log where `mailroom log repair` moved
	// a record aside that could not be replayed (the original is kept in a
	// .broken file). It keeps the seq chain whole and changes nothing; Reason
	// says what was moved and why.
	EventRecordSkipped = "record_skipped"
	// EventLimitsSet puts new limits in force (Limits), from this event on;
	// what they no longer allow is forgotten at once. The engine appends one
	// when it starts with limits other than the log's.
	EventLimitsSet = "limits_set"
	// EventTaskCanceled ends a queued or in-flight task on its A2A caller's
	// word: it leaves the queue (or its lease ends), nothing is delivered,
	// and a late result is refused naming the cancel.
	EventTaskCanceled = "task_canceled"
	// EventAgentRegistered registers (or replaces) an agent's card; the
	// daemon serves it as an A2A server from then on.
	EventAgentRegistered = "agent_registered"
	// EventAgentDeregistered removes an agent's card; its tasks stay.
	EventAgentDeregistered = "agent_deregistered"
	// EventTaskReplied answers a task waiting on its sender: the sender's
	// turn is added to the task's turns and the task is queued again for
	// its recipient, in its old place (see conversation.go).
	EventTaskReplied = "task_replied"
	// EventTaskMoved hands a queued task (never leased since it was last
	// queued) to another recipient on an operator's word: it keeps its
	// place as the one that has waited longest (queued.go).
	EventTaskMoved = "task_moved"
	// EventTaskWithdrawn ends a queued task on an operator's word: it
	// leaves the queue and its sender gets an error result naming the
	// reason (queued.go). Audited as canceled.
	EventTaskWithdrawn = "task_withdrawn"
	// EventTaskHandedOver makes another agent (Sender) the sender of a
	// task waiting on its sender (Agent, the one it had): its question
	// or its result waits for the new sender, in its old place
	// (handover.go). Audited as handed_over.
	EventTaskHandedOver = "task_handed_over"

	// The outbox of push notifications (push.go).

	// EventPushConfigSet sets (or replaces, by id) one of a task's push
	// configs. The config's receiver is told of the task as it stands.
	EventPushConfigSet = "push_config_set"
	// EventPushConfigDeleted removes one of a task's push configs and the
	// notifications not yet delivered to it.
	EventPushConfigDeleted = "push_config_deleted"
	// EventPushDelivered records that a notification's receiver
	// acknowledged it: it leaves the outbox.
	EventPushDelivered = "push_delivered"
	// EventPushDeadLettered records that a notification's retries ran out:
	// it stays in the outbox, dead, until an operator retries or drops it.
	EventPushDeadLettered = "push_dead_lettered"
	// EventPushRetried puts a dead notification back in line, on an
	// operator's word.
	EventPushRetried = "push_retried"
	// EventPushDropped removes a notification, pending or dead, on an
	// operator's word and with a reason.
	EventPushDropped = "push_dropped"

	// EventSnapshot is sent only over SSE: the whole state at Seq.
	EventSnapshot = "snapshot"
)

// Event is one change to the mailbox. The same value is written to the log,
// applied to State and pushed to consoles; only the fields of its type are set.
type Event struct {
	Seq  uint64 `json:"seq"`
	AtMs int64  `json:"at_ms"`
	Type string `json:"type"`
	// Unit, on the first event of several appended together (the items a
	// batch request accepted), is how many there are: they are durable
	// together or not at all, and recovery cuts a unit the disk holds only
	// part of. It must stay right after type: the log finds it there
	// without decoding the event.
	Unit int `json:"unit,omitempty"`

	// task_sent
	Task *Task `json:"task,omitempty"`
	// every other task event
	TaskID string `json:"task_id,omitempty"`
	// task_leased: the new lease; repairs: the lease that was repaired.
	LeaseID  string `json:"lease_id,omitempty"`
	LeasedTo string `json:"leased_to,omitempty"`
	// Attempt is the task's attempt counter after the event.
	Attempt int `json:"attempt,omitempty"`
	// result_posted, task_force_errored and task_withdrawn: the result
	// queued for the sender.
	Result *Result `json:"result,omitempty"`
	// Repairs: who, why, and with which duplicate-work posture.
	Principal     string `json:"principal,omitempty"`
	Reason        string `json:"reason,omitempty"`
	DuplicateRisk string `json:"duplicate_risk,omitempty"`
	// Auto marks a requeue made by the retry-stale scan.
	Auto bool `json:"auto,omitempty"`
	// task_requeued: the task's new recipient, when the requeue handed it
	// to another one (absent: it stays with its recipient); task_moved:
	// the task's new recipient.
	Recipient string `json:"recipient,omitempty"`
	// task_handed_over: the task's new sender (its old one in Agent).
	Sender string `json:"sender,omitempty"`
	// task_replied: the sender's turn (its seq and time are the event's).
	Turn *Turn `json:"turn,omitempty"`
	// remote_accepted: the task as the remote agent knows it.
	Remote *RemoteRef `json:"remote,omitempty"`
	// result_replayed: the task whose result was copied.
	ReplayedFrom string `json:"replayed_from,omitempty"`
	// limits_set: the limits in force from this event on.
	Limits *Limits `json:"limits,omitempty"`
	// agent_registered and agent_deregistered: the agent, and the card it
	// registers; task_handed_over: the task's sender before it.
	Agent string     `json:"agent,omitempty"`
	Card  *AgentCard `json:"card,omitempty"`
	// push_config_set: the config; push_config_deleted: the config's id.
	Push     *PushConfig `json:"push,omitempty"`
	ConfigID string      `json:"config_id,omitempty"`
	// push_delivered, push_dead_lettered, push_retried, push_dropped: the
	// outbox entry; Attempts, how many deliveries were tried (the last
	// one's error, on a dead letter, in Reason).
	Notification string `json:"notification,omitempty"`
	Attempts     int    `json:"attempts,omitempty"`

	// snapshot (SSE only)
	Snapshot *Snapshot `json:"snapshot,omitempty"`

	// Encoded, when set, is this event's JSON, made once by its producer so
	// that a fan-out to many subscribers does not encode it again for each.
	// It is never part of the JSON itself.
	Encoded []byte `json:"-"`
}

// Concerns reports whether ev is about task id: it carries it as its
// task_id or as its task.
func (ev Event) Concerns(id string) bool {
	return ev.TaskID == id || (ev.Task != nil && ev.Task.ID == id)
}

// Task lifecycle states: the state keeps these five and TaskCanceled, and a
// queue entry is TaskQueued, TaskInFlight or TaskWaiting.
const (
	TaskQueued   = "queued"
	TaskInFlight = "in_flight"
	// TaskWaiting is a task whose worker ended its turn with a question
	// (input_required or auth_required): it waits on its sender's reply.
	TaskWaiting       = "waiting"
	TaskResultPending = "result_pending"
	TaskDone          = "done"
)

// HistoryEntry is one step in a task's life: sent, leased, resulted,
// requeued, force-errored, drained.
type HistoryEntry struct {
	Seq           uint64 `json:"seq"`
	AtMs          int64  `json:"at_ms"`
	Type          string `json:"type"`
	LeaseID       string `json:"lease_id,omitempty"`
	LeasedTo      string `json:"leased_to,omitempty"`
	Attempt       int    `json:"attempt"`
	Principal     string `json:"principal,omitempty"`
	Reason        string `json:"reason,omitempty"`
	DuplicateRisk string `json:"duplicate_risk,omitempty"`
	Status        string `json:"status,omitempty"`
	// Recipient is the new recipient of a requeue that moved the task.
	Recipient string `json:"recipient,omitempty"`
	// Sender is the new sender of a task handed over (task_handed_over).
	Sender string `json:"sender,omitempty"`
	// RemoteTaskID is the remote agent's id for the task it accepted.
	RemoteTaskID string `json:"remote_task_id,omitempty"`
}

// TaskRecord is everything the mailbox knows about one task.
type TaskRecord struct {
	Task       Task   `json:"task"`
	State      string `json:"state"`
	Attempt    int    `json:"attempt"`
	SentAtMs   int64  `json:"sent_at_ms"`
	QueuedAtMs int64  `json:"queued_at_ms"`
	// SendSeq orders the queue: a requeued task keeps its place as the one
	// that has waited longest.
	SendSeq    uint64 `json:"send_seq"`
	LeaseID    string `json:"lease_id,omitempty"`
	LeasedTo   string `json:"leased_to,omitempty"`
	LeasedAtMs int64  `json:"leased_at_ms,omitempty"`
	DoneAtMs   int64  `json:"done_at_ms,omitempty"`
	// DoneSeq orders forgetting: drained (and canceled) tasks are
	// forgotten in the order they finished.
	DoneSeq uint64         `json:"done_seq,omitempty"`
	History []HistoryEntry `json:"history,omitempty"`
	// Result is kept on tasks that came through the A2A edge once they
	// have one: their callers read it from the task, after it was drained
	// too.
	Result *Result `json:"result,omitempty"`
	// Remote is where a remote agent keeps the task, once it accepted it
	// (remote_accepted); kept for the task's life, so an answer to its
	// question goes to the same remote task.
	Remote *RemoteDelivery `json:"remote,omitempty"`
	// Push holds the task's push configs: each change of the task puts a
	// notification for each in the outbox (push.go).
	Push []PushConfig `json:"push,omitempty"`
	// SentTo is the recipient the task was sent to, once an operator has
	// handed it to another (a requeue with a recipient, a move): its A2A
	// caller still reads it at the URL of the agent it addressed.
	SentTo string `json:"sent_to,omitempty"`
}

// Snapshot is the whole state at Seq: every task the state remembers in send
// order and every pending result in post order.
type Snapshot struct {
	Seq     uint64          `json:"seq"`
	AtMs    int64           `json:"at_ms"`
	Tasks   []TaskRecord    `json:"tasks"`
	Results []PendingResult `json:"results"`
	// ResultCache holds posted results of idempotent tasks, oldest first.
	ResultCache []CachedResult `json:"result_cache,omitempty"`
	// Audit holds the newest repair records, oldest first.
	Audit []AuditRecord `json:"audit,omitempty"`
	// Limits are the limits in force at Seq; absent (meaning the defaults)
	// in snapshots written before snapshots carried them.
	Limits *Limits `json:"limits,omitempty"`
	// Registry holds the registered agents, sorted by agent id.
	Registry []RegisteredAgent `json:"registry,omitempty"`
	// Outbox holds the push notifications not yet delivered (or dead),
	// in the order they were made.
	Outbox []Notification `json:"outbox,omitempty"`
}
