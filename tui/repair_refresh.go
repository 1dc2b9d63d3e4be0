package tui

import (
	"fmt"
	"strings"

	"github.com/mailroom/mailroom/mailbox"
)

// A repair dialog stays open while events arrive: the operator is told
// what changed under it before submitting, not only after.

// refreshDialog checks the open dialog's leases against rows that just
// arrived: a lease that changed takes the confirm button of a dialog on
// that one lease away at once; on several, the dialog lists it and its
// repair is left to the guard (refused, and listed in the outcome).
func (c *Console) refreshDialog() {
	d := c.dialog
	if d == nil || d.busy {
		return
	}
	if c.rows != nil && c.rows.version != d.checked {
		d.checked = c.rows.version
		c.checkTargets(d)
		if len(d.changed) > 0 && len(d.targets) == 1 {
			if i := d.form.GetButtonIndex(d.confirm); i >= 0 {
				d.form.RemoveButton(i)
				if d.form.HasFocus() {
					c.app.SetFocus(d.form) // the focus may have been on it
				}
			}
		}
	}
	c.renderDialogInfo(d)
}

// checkTargets notes in d.changed what became of each target that is no
// longer as the operator saw it.
func (c *Console) checkTargets(d *repairDialog) {
	current, pending := c.rows.entriesOf(d.targets)
	for _, t := range d.targets {
		var now string
		var changed bool
		switch t.what() {
		case kindResult:
			now, changed = resultChange(t, pending[t.taskID])
		case kindQueued:
			now, changed = c.queuedChange(t, current[t.taskID])
		default:
			now, changed = c.leaseChange(t, current[t.taskID])
		}
		if changed {
			d.changed[t.taskID] = now
		}
	}
}

// entriesOf finds each target's task among the leases, the questions and
// the queued tasks, and each undrained result among the pending results;
// nil where it is in none of them.
func (r *rows) entriesOf(ts []repairTarget) (current map[string]*mailbox.QueueEntry, pending map[string]*resultRow) {
	current = make(map[string]*mailbox.QueueEntry, len(ts))
	pending = map[string]*resultRow{}
	for _, t := range ts {
		current[t.taskID] = nil
		if t.what() == kindResult {
			pending[t.taskID] = nil
		}
	}
	for _, es := range [][]mailbox.QueueEntry{r.leases, r.waiting, r.queued} {
		for i := range es {
			if e := &es[i]; current[e.Task.ID] == nil {
				if _, ok := current[e.Task.ID]; ok {
					current[e.Task.ID] = e
				}
			}
		}
	}
	if len(pending) > 0 {
		for i := range r.results {
			if res := &r.results[i]; pending[res.TaskID] == nil {
				if _, ok := pending[res.TaskID]; ok {
					pending[res.TaskID] = res
				}
			}
		}
	}
	return current, pending
}

// resultChange says what became of an undrained result, r its pending
// result now.
func resultChange(t repairTarget, r *resultRow) (now string, changed bool) {
	switch {
	case r != nil && r.Sender == t.undrainedBy:
		return "", false
	case r != nil:
		return "waiting for " + r.Sender + " to drain it (handed over)", true
	}
	return "drained by " + t.undrainedBy + ", or handed over and drained", true
}

// queuedChange says what became of a queued task, e its entry now.
func (c *Console) queuedChange(t repairTarget, e *mailbox.QueueEntry) (now string, changed bool) {
	switch {
	case e != nil && e.State == mailbox.TaskQueued && e.Task.Recipient == t.queuedFor:
		return "", false
	case e != nil && e.State == mailbox.TaskQueued:
		return "queued for " + e.Task.Recipient, true
	case e != nil && e.State == mailbox.TaskInFlight:
		return fmt.Sprintf("leased by %s since %s (lease %s, attempt %d)", e.LeasedTo, formatClock(e.LeasedAtMs), mailbox.ShortID(e.LeaseID), e.Attempt), true
	case e != nil:
		return fmt.Sprintf("leased by %s, whose worker asked %s a question (%s); it waits on the answer", askedBy(e), e.Task.Sender, questionOf(&e.Task).Status), true
	}
	return c.whatBecameOf(t.taskID), true
}

// leaseChange says what became of an inspected lease, or of the lease a
// question was asked under, e its task's entry now.
func (c *Console) leaseChange(t repairTarget, e *mailbox.QueueEntry) (now string, changed bool) {
	switch {
	case e != nil && e.State == mailbox.TaskWaiting:
		return questionChange(t, e)
	case e != nil && e.State == mailbox.TaskInFlight && e.LeaseID == t.leaseID:
		return "", false
	case e != nil && e.State == mailbox.TaskQueued && t.waitingOn == "":
		return "no lease: queued for " + e.Task.Recipient + " (requeued)", true
	case e != nil && e.State == mailbox.TaskQueued:
		return "no longer waiting: answered, and queued for " + e.Task.Recipient + " again", true
	case e != nil && e.State == mailbox.TaskInFlight:
		return fmt.Sprintf("lease %s, held by %s since %s (attempt %d)", mailbox.ShortID(e.LeaseID), e.LeasedTo, formatClock(e.LeasedAtMs), e.Attempt), true
	case t.waitingOn != "":
		return "no longer waiting: " + c.whatBecameOf(t.taskID), true
	}
	return "no lease: " + c.whatBecameOf(t.taskID), true
}

// questionChange says what became of a target whose task waits on its
// sender now: the question the operator saw, handed over or asked again,
// or a lease that ended in a question.
func questionChange(t repairTarget, e *mailbox.QueueEntry) (now string, changed bool) {
	q := questionOf(&e.Task)
	switch {
	case t.waitingOn != "" && q.LeaseID == t.leaseID && e.Task.Sender == t.waitingOn:
		return "", false
	case t.waitingOn != "" && q.LeaseID == t.leaseID:
		return "handed over: it waits on " + e.Task.Sender + "'s answer now", true
	case t.waitingOn != "":
		return fmt.Sprintf("answered, then asked again under lease %s (attempt %d)", mailbox.ShortID(q.LeaseID), e.Attempt), true
	}
	return fmt.Sprintf("no lease: its worker asked %s a question (%s), and it waits on the answer", e.Task.Sender, q.Status), true
}

// whatBecameOf says, from the replica, what became of a task that is no
// longer queued, leased or waiting: what its result says, or that it was
// forgotten.
func (c *Console) whatBecameOf(taskID string) string {
	det := c.model.detail(taskID)
	switch {
	case det.result != nil && det.result.Forced:
		return fmt.Sprintf("ended by an operator's forced error; its result waits for %s", det.result.Sender)
	case det.result != nil:
		return fmt.Sprintf("leased and finished by its worker: %s posted %s at %s; the result waits for %s", orDash(det.result.Recipient), det.result.Status, formatClock(det.result.PostedAtMs), det.result.Sender)
	case det.known && det.record.State != "":
		return "now " + strings.ReplaceAll(det.record.State, "_", " ")
	}
	return "finished and drained, or canceled"
}
