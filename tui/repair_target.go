package tui

import (
	"github.com/mailroom/mailroom/mailbox"
)

// What a repair dialog acts on. The targets are captured when the dialog
// opens, so that each request guards on exactly what the operator saw,
// whatever the panes show by the time the operator submits.

// repairTarget is a lease the operator inspected, captured when the dialog
// opens: the request guards on exactly this lease id, whatever the panes show
// by the time the operator submits.
//
// A task waiting on its sender has no lease; its target is the question:
// waitingOn is the sender, and the lease is the one that asked (the
// daemon's guard), held by the worker that asked, leasedAtMs when it
// asked.
//
// A queued task has no lease either: queuedFor is the recipient the
// operator saw it queued for (the daemon's guard, command.queued_for).
//
// An undrained result (the Agents pane's dialog) is the task whose result
// waits for undrainedBy, its sender, to drain it (the hand-over's guard,
// command.sent_by).
type repairTarget struct {
	taskID, intent, kind string
	leasedTo, leaseID    string
	attempt              int
	leasedAtMs           int64
	idempotent           bool
	waitingOn            string
	question             mailbox.Turn
	queuedFor, sender    string
	queuedAtMs           int64
	undrainedBy          string
	status               string // an undrained result's status
}

func targetOf(e *mailbox.QueueEntry) repairTarget {
	t := repairTarget{taskID: e.Task.ID, intent: e.Task.IntentText, kind: e.Task.Kind(), leasedTo: e.LeasedTo,
		leaseID: e.LeaseID, attempt: e.Attempt, leasedAtMs: e.LeasedAtMs, idempotent: e.Task.Idempotent(), sender: e.Task.Sender}
	switch e.State {
	case mailbox.TaskWaiting:
		t.question = questionOf(&e.Task)
		t.waitingOn, t.leasedTo, t.leaseID, t.leasedAtMs = e.Task.Sender, askedBy(e), t.question.LeaseID, e.WaitingSinceMs
	case mailbox.TaskQueued:
		t.queuedFor, t.queuedAtMs = e.Task.Recipient, e.QueuedAtMs
	}
	return t
}

func resultTarget(r *resultRow) repairTarget {
	return repairTarget{taskID: r.TaskID, intent: r.intent, kind: r.kind, sender: r.Sender, undrainedBy: r.Sender,
		leasedTo: r.Recipient, leasedAtMs: r.PostedAtMs, status: r.Status}
}

// debtKind is what a target is: a lease, a queued task, a question
// waiting on its sender's answer, or a result waiting for its sender to
// drain it.
type debtKind int

const (
	kindLease debtKind = iota
	kindQueued
	kindQuestion
	kindResult
	kindCount
)

func (t repairTarget) what() debtKind {
	switch {
	case t.queuedFor != "":
		return kindQueued
	case t.waitingOn != "":
		return kindQuestion
	case t.undrainedBy != "":
		return kindResult
	}
	return kindLease
}

// queued reports whether the target is a queued task (moved or canceled,
// never requeued or force-errored).
func (t repairTarget) queued() bool { return t.what() == kindQueued }

// kindNoun names one target of a kind: "2 leases", "3 queued tasks".
var kindNoun = [kindCount]string{"lease", "queued task", "question", "result"}
