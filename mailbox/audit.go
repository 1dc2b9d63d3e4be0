package mailbox

// DefaultAuditMax bounds how many repair records the state keeps for
// GET /a2a/audit; the log keeps every repair event regardless.
const DefaultAuditMax = 10000

// AuditRecord is one repair: who did what to which lease, when and why.
type AuditRecord struct {
	Seq           uint64 `json:"seq"`
	AtMs          int64  `json:"at_ms"`
	TaskID        string `json:"task_id"`
	LeaseID       string `json:"lease_id"`
	LeasedTo      string `json:"leased_to,omitempty"`
	Action        string `json:"action"` // requeued | forced_error | moved | canceled | handed_over | push_retried | push_dropped
	DuplicateRisk string `json:"duplicate_risk,omitempty"`
	Reason        string `json:"reason"`
	Principal     string `json:"principal,omitempty"`
	// Auto marks a requeue made by the retry-stale scan.
	Auto    bool `json:"auto,omitempty"`
	Attempt int  `json:"attempt"`
	// FromRecipient and ToRecipient record a requeue or move that handed
	// the task to another recipient.
	FromRecipient string `json:"from_recipient,omitempty"`
	ToRecipient   string `json:"to_recipient,omitempty"`
	// FromSender and ToSender record a hand_over: the task's sender before
	// and after.
	FromSender string `json:"from_sender,omitempty"`
	ToSender   string `json:"to_sender,omitempty"`
	// Notification is the outbox entry an operator retried or dropped
	// (actions push_retried, push_dropped).
	Notification string `json:"notification,omitempty"`
}

// Move is where a requeue handed the task, "from -> to", or "" when it
// stayed with its recipient: the one spelling the CLI and the console
// show.
func (a AuditRecord) Move() string {
	if a.ToSender != "" {
		from := a.FromSender
		if from == "" {
			from = "?"
		}
		return "sender " + from + " -> " + a.ToSender
	}
	if a.ToRecipient == "" {
		return ""
	}
	from := a.FromRecipient
	if from == "" {
		from = "?"
	}
	return from + " -> " + a.ToRecipient
}

// NoAuth is how a repair made without tokens names its principal, in the
// CLI and the console alike: nobody could be named.
const NoAuth = "(no auth)"

// PrincipalOrNoAuth is the repair's principal, or NoAuth.
func (a AuditRecord) PrincipalOrNoAuth() string {
	if a.Principal == "" {
		return NoAuth
	}
	return a.Principal
}

// recordAudit records a repair; movedFrom is the task's recipient before a
// requeue that handed it to ev.Recipient ("" when it did not).
func (s *State) recordAudit(ev Event, movedFrom string) {
	a := AuditRecord{Seq: ev.Seq, AtMs: ev.AtMs, TaskID: ev.TaskID, LeaseID: ev.LeaseID, LeasedTo: ev.LeasedTo,
		DuplicateRisk: ev.DuplicateRisk, Reason: ev.Reason, Principal: ev.Principal, Auto: ev.Auto, Attempt: ev.Attempt}
	switch ev.Type {
	case EventTaskForceErrored:
		a.Action = OutcomeForcedError
	case EventTaskCanceled, EventTaskWithdrawn:
		a.Action = OutcomeCanceled
	case EventTaskMoved:
		a.Action = OutcomeMoved
	case EventTaskHandedOver:
		a.Action, a.FromSender, a.ToSender = OutcomeHandedOver, ev.Agent, ev.Sender
	default:
		a.Action = OutcomeRequeued
	}
	if movedFrom != "" {
		a.FromRecipient, a.ToRecipient = movedFrom, ev.Recipient
	}
	s.audit = append(s.audit, a)
	// Trim in chunks so appends stay amortised O(1).
	s.trimAudit((s.AuditMax + 3) / 4)
}

// trimAudit drops the records beyond the newest AuditMax once more than
// slack of them have piled up; until then Audit and Snapshot skip them.
func (s *State) trimAudit(slack int) {
	if over := len(s.audit) - s.AuditMax; over > 0 && over >= slack {
		s.audit = append([]AuditRecord(nil), s.audit[over:]...)
	}
}

// Audit returns up to limit repair records, newest first, for one task
// when taskID is not "".
func (s *State) Audit(taskID string, limit int) []AuditRecord {
	out := []AuditRecord{}
	floor := max(0, len(s.audit)-s.AuditMax)
	for i := len(s.audit) - 1; i >= floor && len(out) < limit; i-- {
		if taskID == "" || s.audit[i].TaskID == taskID {
			out = append(out, s.audit[i])
		}
	}
	return out
}
