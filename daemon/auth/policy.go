package auth

import "github.com/mailroom/mailroom/mailbox"

// The checks below bind a call to its caller: they are the whole access
// policy, so the HTTP layer only has to call the one that fits each route.

// CheckSend allows sending t: the sender must be the caller (unless admin)
// and the caller needs a2a.send.<recipient>.
func (id Identity) CheckSend(t mailbox.Task) error {
	if t.Sender != id.Principal && !id.Admin() {
		return &mailbox.Error{Code: mailbox.CodeForbidden,
			Message: "sender: got " + quote(t.Sender) + ", but this token speaks for " + quote(id.Principal) + "; send as yourself (or use an a2a.admin token)",
			Details: &mailbox.ErrorDetails{Field: "sender", Capability: CapAdmin}}
	}
	if c := CapSendPrefix + t.Recipient; !id.Can(c) {
		return Forbidden(id, c, "send tasks to "+t.Recipient)
	}
	return nil
}

// LeaseScope returns the recipient a lease may take from: the caller
// itself, whatever the query asked, unless the caller is admin.
func (id Identity) LeaseScope(asked string) (string, error) {
	if id.Admin() {
		return asked, nil
	}
	if !id.Can(CapRecv) {
		return "", Forbidden(id, CapRecv, "lease tasks")
	}
	return id.Principal, nil
}

// DrainScope returns the sender whose results a drain may take: the
// caller itself unless admin.
func (id Identity) DrainScope(asked string) (string, error) {
	if id.Admin() {
		return asked, nil
	}
	if !id.Can(CapDrain) {
		return "", Forbidden(id, CapDrain, "drain results")
	}
	return id.Principal, nil
}

// CheckRespond allows posting a result for a task sent by sender. The
// caller must first have established that the task exists, so a made-up id
// is a 404 before any capability is looked at.
func (id Identity) CheckRespond(sender string) error {
	if c := CapRespondPrefix + sender; !id.Can(c) {
		return Forbidden(id, c, "post results for tasks from "+sender)
	}
	return nil
}

// CheckRepair allows a repair: a requeue, or a move of a queued task, with
// a2a.requeue; a force_error, or a cancel of a queued task (both give its
// sender an error result), with a2a.force_error.
func (id Identity) CheckRepair(action string) error {
	c := CapRequeue
	if action == mailbox.ActionForceError || action == mailbox.ActionCancel {
		c = CapForceError
	}
	if !id.Can(c) {
		return Forbidden(id, c, action)
	}
	return nil
}

// CheckRead allows reading the queue, recent lists, status, audit and events.
func (id Identity) CheckRead() error {
	if !id.Can(CapRead) {
		return Forbidden(id, CapRead, "read the mailbox")
	}
	return nil
}

// CheckRegister allows registering and deregistering agents' cards.
func (id Identity) CheckRegister() error {
	if !id.Can(CapRegister) {
		return Forbidden(id, CapRegister, "register agents")
	}
	return nil
}

// CheckCompact allows compaction.
func (id Identity) CheckCompact() error {
	if !id.Can(CapCompact) {
		return Forbidden(id, CapCompact, "compact the log")
	}
	return nil
}

// CheckRetryStale allows the retry-stale scan: a dry run only reads, an
// enabled one requeues.
func (id Identity) CheckRetryStale(enabled bool) error {
	if enabled {
		return id.CheckRepair(mailbox.ActionRequeue)
	}
	return id.CheckRead()
}

func quote(s string) string { return "\"" + s + "\"" }
