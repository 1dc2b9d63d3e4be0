package covenant

import (
	"strings"

	"github.com/mailroom/mailroom/mailbox"
)

// The answer kinds, as Covenant's Response enum spells them: serde's
// snake_case splits "A2A" into "a2_a" (covenant-ipc's golden responses).
const (
	KindTaskQueued   = "a2_a_task_queued"
	KindTaskOpt      = "a2_a_task_opt"
	KindTasks        = "a2_a_tasks"
	KindResultPosted = "a2_a_result_posted"
	KindResultOpt    = "a2_a_result_opt"
	KindResults      = "a2_a_results"
	KindQueue        = "a2_a_queue"
	KindRepaired     = "a2_a_repaired"
	KindError        = "error"
)

// UnknownPubkey is the public key answered for an agent whose key the
// mailbox does not know (a task sent on the native routes): the all-zero
// key, which Covenant's AgentId decodes (it requires 32 bytes) and no
// ed25519 signer holds.
const UnknownPubkey = "11111111111111111111111111111111"

// AgentID is Covenant's AgentId on the wire: a display name, which is the
// mailbox's agent id, and a base58 ed25519 public key.
type AgentID struct {
	Display string `json:"display"`
	Pubkey  string `json:"pubkey"`
}

// Task is Covenant's A2ATask. Optional fields are pointers, so that null
// (which serde reads as None) is absent too, and are left out when unset,
// as serde's skip_serializing_if leaves them.
type Task struct {
	ID          string               `json:"id"`
	Sender      *AgentID             `json:"sender"`
	Recipient   *AgentID             `json:"recipient"`
	IntentText  string               `json:"intent_text"`
	TaskKind    *string              `json:"task_kind,omitempty"`
	Parent      *string              `json:"parent,omitempty"`
	DeadlineMs  *int64               `json:"deadline_ms,omitempty"`
	Idempotency *mailbox.Idempotency `json:"idempotency,omitempty"`
}

// Result is Covenant's A2ATaskResult. Its content is MCP's text and json
// blocks, which are the mailbox's own.
type Result struct {
	TaskID       string            `json:"task_id"`
	Status       string            `json:"status"`
	Content      []mailbox.Content `json:"content"`
	ErrorMessage *string           `json:"error_message,omitempty"`
}

// QueueEntry is Covenant's A2ATaskQueueEntry.
type QueueEntry struct {
	State      string   `json:"state"`
	Task       Task     `json:"task"`
	LeaseID    string   `json:"lease_id,omitempty"`
	LeasedTo   *AgentID `json:"leased_to,omitempty"`
	LeasedAtMs int64    `json:"leased_at_ms,omitempty"`
	Attempt    int      `json:"attempt"`
}

// RepairCommand is Covenant's A2ARepairCommand, tagged by action: requeue
// with duplicate_risk, or force_error with message.
type RepairCommand struct {
	Action        string  `json:"action"`
	LeaseID       *string `json:"lease_id,omitempty"`
	DuplicateRisk string  `json:"duplicate_risk,omitempty"`
	Message       string  `json:"message,omitempty"`
}

// RepairRequest is Covenant's A2ARepairRequest.
type RepairRequest struct {
	TaskID  string         `json:"task_id"`
	Command *RepairCommand `json:"command"`
	Reason  string         `json:"reason"`
}

// RepairOutcome is Covenant's A2ARepairOutcome.
type RepairOutcome struct {
	TaskID  string  `json:"task_id"`
	Action  string  `json:"action"`
	State   string  `json:"state"`
	Attempt int     `json:"attempt"`
	Result  *Result `json:"result,omitempty"`
}

// The answers, one per kind, each with its fields in the order Covenant's
// Response variants declare them.
type (
	taskQueued struct {
		Kind   string `json:"kind"`
		TaskID string `json:"task_id"`
	}
	taskOpt struct {
		Kind string `json:"kind"`
		Task *Task  `json:"task"` // null when nothing was queued
	}
	tasksList struct {
		Kind  string `json:"kind"`
		Tasks []Task `json:"tasks"`
	}
	resultPosted struct {
		Kind   string `json:"kind"`
		TaskID string `json:"task_id"`
	}
	resultOpt struct {
		Kind   string  `json:"kind"`
		Result *Result `json:"result"` // null when nothing was pending
	}
	resultsList struct {
		Kind    string   `json:"kind"`
		Results []Result `json:"results"`
	}
	queueView struct {
		Kind    string       `json:"kind"`
		Tasks   []QueueEntry `json:"tasks"`
		Results []Result     `json:"results"`
	}
	repaired struct {
		Kind    string        `json:"kind"`
		Outcome RepairOutcome `json:"outcome"`
	}
	// errorBody is Covenant's Response::Error: a message only.
	errorBody struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
	}
)

// toMailboxTask checks what Covenant's AgentId requires (present, a
// display that is a mailbox agent id, a 32-byte base58 key), naming the
// fields as Covenant spells them, and returns the mailbox's task with the
// keys kept in its covenant origin.
func toMailboxTask(t Task) (mailbox.Task, error) {
	if t.ID == "" {
		return mailbox.Task{}, mailbox.Invalidf("id", "missing or \"\", expected the task's UUID (Covenant's A2ATask always carries one)")
	}
	sender, err := agentID("sender", t.Sender)
	if err != nil {
		return mailbox.Task{}, err
	}
	recipient, err := agentID("recipient", t.Recipient)
	if err != nil {
		return mailbox.Task{}, err
	}
	mt := mailbox.Task{
		ID: t.ID, Sender: sender.Display, Recipient: recipient.Display, IntentText: t.IntentText,
		TaskKind: t.TaskKind, DeadlineMs: t.DeadlineMs, Idempotency: t.Idempotency,
		Covenant: &mailbox.CovenantOrigin{SenderPubkey: sender.Pubkey, RecipientPubkey: recipient.Pubkey},
	}
	if t.Parent != nil {
		if *t.Parent == "" {
			return mailbox.Task{}, mailbox.Invalidf("parent", "got \"\", expected the parent task's UUID, or null")
		}
		mt.Parent = *t.Parent
	}
	return mt, nil
}

func agentID(field string, a *AgentID) (AgentID, error) {
	if a == nil {
		return AgentID{}, mailbox.Invalidf(field, "missing, expected an AgentId such as {\"display\":\"alice@local\",\"pubkey\":\"<base58>\"}")
	}
	if err := mailbox.ValidateAgentID(field+".display", a.Display); err != nil {
		return AgentID{}, err
	}
	if !covenantDisplay(a.Display) {
		return AgentID{}, mailbox.Invalidf(field+".display", "got %q, expected <local>@<host> with each side of letters, digits and . _ - (Covenant's AgentId form), such as alice@local", a.Display)
	}
	if err := mailbox.ValidateCovenantPubkey(field+".pubkey", a.Pubkey); err != nil {
		return AgentID{}, err
	}
	return *a, nil
}

// covenantDisplay reports whether an agent id is also a display Covenant's
// AgentId decodes: <local>@<host>, each side a non-empty run of
// [A-Za-z0-9_.-] (the mailbox has already refused capitals). A task
// addressed otherwise could be sent but never leased by Covenant's client.
func covenantDisplay(v string) bool {
	local, host, ok := strings.Cut(v, "@")
	return ok && displayPart(local) && displayPart(host)
}

func displayPart(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// fromMailboxTask gives a task back as Covenant sent it: its AgentIds with
// the keys it came with, or UnknownPubkey for a task sent natively.
func fromMailboxTask(t mailbox.Task) Task {
	spk, rpk := UnknownPubkey, UnknownPubkey
	if c := t.Covenant; c != nil {
		spk, rpk = c.SenderPubkey, c.RecipientPubkey
	}
	out := Task{
		ID: t.ID, Sender: &AgentID{t.Sender, spk}, Recipient: &AgentID{t.Recipient, rpk}, IntentText: t.IntentText,
		TaskKind: t.TaskKind, DeadlineMs: t.DeadlineMs, Idempotency: t.Idempotency,
	}
	if t.Parent != "" {
		p := t.Parent
		out.Parent = &p
	}
	return out
}

func toMailboxResult(r Result) mailbox.Result {
	mr := mailbox.Result{TaskID: r.TaskID, Status: r.Status, Content: r.Content}
	if r.ErrorMessage != nil {
		mr.ErrorMessage = *r.ErrorMessage
	}
	return mr
}

func fromMailboxResult(r mailbox.Result) Result {
	out := Result{TaskID: r.TaskID, Status: r.Status, Content: r.Content}
	if out.Content == nil {
		out.Content = []mailbox.Content{}
	}
	if r.Status == mailbox.StatusRejected {
		// Covenant's status enum is ok, error and partial: a refusal is
		// an error that says so.
		out.Status = mailbox.StatusError
		if r.ErrorMessage == "" {
			r.ErrorMessage = "the worker rejected the task"
		} else {
			r.ErrorMessage = "rejected: " + r.ErrorMessage
		}
	}
	if r.ErrorMessage != "" {
		m := r.ErrorMessage
		out.ErrorMessage = &m
	}
	return out
}

func fromMailboxResults(rs []mailbox.PendingResult) []Result {
	out := make([]Result, len(rs))
	for i, r := range rs {
		out[i] = fromMailboxResult(r.Result)
	}
	return out
}

func fromQueueEntry(e mailbox.QueueEntry) QueueEntry {
	out := QueueEntry{State: e.State, Task: fromMailboxTask(e.Task), LeaseID: e.LeaseID, LeasedAtMs: e.LeasedAtMs, Attempt: e.Attempt}
	if e.LeasedTo != "" {
		// A lease is held by the task's recipient, whose key the task
		// carries; requeued to another, it is that one's.
		pk := UnknownPubkey
		if e.LeasedTo == e.Task.Recipient {
			pk = out.Task.Recipient.Pubkey
		}
		out.LeasedTo = &AgentID{e.LeasedTo, pk}
	}
	return out
}

func toMailboxRepair(req RepairRequest) (mailbox.RepairRequest, error) {
	if req.Command == nil {
		return mailbox.RepairRequest{}, mailbox.Invalidf("command", "missing, expected {\"action\":\"requeue\",\"duplicate_risk\":...} or {\"action\":\"force_error\",\"message\":...}")
	}
	c := *req.Command
	mr := mailbox.RepairRequest{TaskID: req.TaskID, Reason: req.Reason,
		Command: mailbox.RepairCommand{Action: c.Action, DuplicateRisk: c.DuplicateRisk, Message: c.Message}}
	if c.LeaseID != nil {
		if *c.LeaseID == "" {
			return mailbox.RepairRequest{}, mailbox.Invalidf("command.lease_id", "got \"\", expected the lease id you inspected, or null to repair without a guard")
		}
		mr.Command.LeaseID = *c.LeaseID
	}
	return mr, nil
}

func fromRepairOutcome(o mailbox.RepairOutcome) RepairOutcome {
	out := RepairOutcome{TaskID: o.TaskID, Action: o.Action, State: o.State, Attempt: o.Attempt}
	if o.Result != nil {
		r := fromMailboxResult(o.Result.Result)
		out.Result = &r
	}
	return out
}
