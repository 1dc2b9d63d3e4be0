package wire

import (
	"slices"

	"github.com/mailroom/mailroom/mailbox"
)

// A task's record as it stood at a seq of the log: the events of a task
// folded into the record as far as its view needs (a stream follows a task
// so), and the record rewound to a change (a push notification shows the
// task as that change left it).

// StreamEvent is one event of a task's stream.
type StreamEvent struct {
	Kind  string // "task", "status" or "artifact"
	Task  TaskView
	Final bool // the task reached a terminal state: the stream ends after it
}

// Advance applies one event of the task to its record, as far as the view
// needs: the state, the history entry that explains it, the result, the
// turns of its conversation.
func Advance(rec mailbox.TaskRecord, ev mailbox.Event) mailbox.TaskRecord {
	h := mailbox.HistoryEntry{Seq: ev.Seq, AtMs: ev.AtMs, Type: ev.Type, LeaseID: ev.LeaseID, LeasedTo: ev.LeasedTo,
		Attempt: ev.Attempt, Principal: ev.Principal, Reason: ev.Reason, DuplicateRisk: ev.DuplicateRisk, Recipient: ev.Recipient}
	if ev.Result != nil {
		h.Status = ev.Result.Status
	}
	switch {
	case ev.Type == mailbox.EventResultPosted && ev.Result != nil && mailbox.Asks(ev.Result.Status):
		// The asker is the lease's holder, as the mailbox records it.
		asker := ev.LeasedTo
		if asker == "" {
			asker = rec.Task.Recipient
		}
		rec.Task.Turns = append(slices.Clip(rec.Task.Turns), mailbox.Turn{Seq: ev.Seq, AtMs: ev.AtMs, Role: mailbox.RoleWorker, Agent: asker,
			Status: ev.Result.Status, Content: ev.Result.Content, LeaseID: ev.LeaseID, Attempt: ev.Attempt})
	case ev.Type == mailbox.EventTaskReplied && ev.Turn != nil:
		turn := *ev.Turn
		turn.Seq, turn.AtMs = ev.Seq, ev.AtMs
		rec.Task.Turns = append(slices.Clip(rec.Task.Turns), turn)
	case ev.Type == mailbox.EventResultPosted || ev.Type == mailbox.EventTaskForceErrored || ev.Type == mailbox.EventTaskWithdrawn:
		if ev.Result != nil {
			r := *ev.Result
			rec.Result = &r
		}
	}
	if (ev.Type == mailbox.EventTaskMoved || ev.Type == mailbox.EventTaskRequeued) && ev.Recipient != "" {
		rec.Task.Recipient = ev.Recipient
	}
	rec.State = stateAfter(h, rec.State)
	rec.History = append(append([]mailbox.HistoryEntry(nil), rec.History...), h)
	return rec
}

// stateAfter is a task's mailbox state after the event h records, from
// state.
func stateAfter(h mailbox.HistoryEntry, state string) string {
	switch h.Type {
	case mailbox.EventTaskSent, mailbox.EventTaskRequeued, mailbox.EventTaskReplied, mailbox.EventTaskMoved:
		return mailbox.TaskQueued
	case mailbox.EventTaskLeased:
		return mailbox.TaskInFlight
	case mailbox.EventResultPosted:
		if mailbox.Asks(h.Status) {
			return mailbox.TaskWaiting
		}
		return mailbox.TaskResultPending
	case mailbox.EventTaskForceErrored, mailbox.EventResultReplayed, mailbox.EventTaskWithdrawn:
		return mailbox.TaskResultPending
	case mailbox.EventResultDrained:
		if state == mailbox.TaskWaiting {
			// Its question was delivered: it still waits for the answer.
			return state
		}
		return mailbox.TaskDone
	case mailbox.EventTaskCanceled:
		return mailbox.TaskCanceled
	}
	return state
}

// Rewind returns the task as it stood at seq: its history and turns up to
// seq, and the state and result that history leads to.
func Rewind(rec mailbox.TaskRecord, seq uint64) mailbox.TaskRecord {
	if LastSeq(rec) <= seq {
		return rec
	}
	var hist []mailbox.HistoryEntry
	state := mailbox.TaskQueued
	for _, h := range rec.History {
		if h.Seq <= seq {
			hist = append(hist, h)
			state = stateAfter(h, state)
		}
	}
	var turns []mailbox.Turn
	for _, t := range rec.Task.Turns {
		if t.Seq <= seq {
			turns = append(turns, t)
		}
	}
	rec.History, rec.State, rec.Task.Turns = hist, state, turns
	if state != mailbox.TaskResultPending && state != mailbox.TaskDone {
		rec.Result = nil
	}
	return rec
}
