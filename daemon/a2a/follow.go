package a2a

import (
	"context"
	"errors"
	"time"

	"github.com/mailroom/mailroom/mailbox"
)

// streamEvent is one event of a task's stream.
type streamEvent struct {
	kind  string // "task", "status" or "artifact"
	task  taskView
	final bool // the task reached a terminal state: the stream ends after it
}

// follow streams the changes of task id to emit: first the task as it
// stands (unless resuming), then a status update for every change and an
// artifact update when the result arrives, until the task finishes (the
// last status update is final), ctx ends or emit fails. Resuming after a
// seq (a stream's Last-Event-ID) sends only what changed after it. Every
// event's seq is the log seq of the change it shows, so a reconnect with
// the last id resumes without a gap, across a restart too.
//
// The caller has checked that the caller may read the task; the events
// come from the unguarded feed. ping, when set, is called when nothing was
// sent for a heartbeat interval.
func (e *Edge) follow(ctx context.Context, id string, after *uint64, initial bool, emit func(streamEvent) error, ping func() error) error {
	var pos uint64
	if after != nil {
		// Resume: the log replays every change after the position.
		pos = *after
	} else {
		// From now: subscribe before reading the task, so every change
		// after the read is on the subscription.
		pos = e.feed.Status().LastSeq
	}
	sub, err := e.feed.SubscribeBuffered(ctx, &pos, followBuffer)
	if err != nil {
		return err
	}
	defer func() { sub.Close() }()
	rec, err := e.feed.Task(ctx, id)
	if err != nil {
		return err
	}
	if after != nil {
		rec = rewind(rec, *after)
	}
	origin := decodeOrigin(rec)
	cur := view(rec, origin)
	if initial {
		if err := emit(streamEvent{kind: "task", task: cur, final: terminal(cur.state)}); err != nil {
			return err
		}
	}
	if terminal(cur.state) {
		// Finished before the stream began (or before the position it
		// resumes from): say how, so the stream ends on a final event.
		return e.finish(ctx, cur, emit)
	}
	var tick <-chan time.Time
	if ping != nil {
		t := time.NewTicker(e.opts.HeartbeatInterval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick:
			if err := ping(); err != nil {
				return err
			}
			continue
		case ev, ok := <-sub.Events():
			if !ok {
				if errors.Is(sub.Err(), mailbox.ErrSlowSubscriber) {
					// Catch up from the log where the buffer overflowed.
					sub.Close()
					if sub, err = e.feed.SubscribeBuffered(ctx, &pos, followBuffer); err != nil {
						return err
					}
					continue
				}
				if err := sub.Err(); err != nil {
					return err
				}
				return mailbox.Errorf(mailbox.CodeUnavailable, "the mailbox is shutting down; resubscribe with Last-Event-ID %d", cur.seq)
			}
			pos = ev.Seq
			next, changed := cur, false
			if ev.Type == mailbox.EventSnapshot {
				// Events were compacted away under a slow reader: read the
				// task as it stands.
				rec, err := e.feed.Task(ctx, id)
				if err != nil {
					return err
				}
				next = view(rec, origin)
				changed = next.seq > cur.seq
			} else if ev.Seq > cur.seq && ev.Seq > lastSeq(rec) && concerns(ev, id) {
				rec = advance(rec, ev)
				next, changed = view(rec, origin), true
			}
			if !changed {
				continue
			}
			if terminal(next.state) {
				return e.finish(ctx, next, emit)
			}
			if next.state != cur.state || next.statusMessage != nil {
				if err := emit(streamEvent{kind: "status", task: next}); err != nil {
					return err
				}
			}
			cur = next
		}
	}
}

// finish sends a finished task's artifact and its final status, and marks
// its result delivered: the caller has it.
func (e *Edge) finish(ctx context.Context, tv taskView, emit func(streamEvent) error) error {
	for _, a := range tv.artifacts {
		one := tv
		one.artifacts = []artifact{a}
		if err := emit(streamEvent{kind: "artifact", task: one}); err != nil {
			return err
		}
	}
	if err := emit(streamEvent{kind: "status", task: tv, final: true}); err != nil {
		return err
	}
	e.delivered(ctx, tv)
	return nil
}

// concerns reports whether ev changes task id.
func concerns(ev mailbox.Event, id string) bool {
	return ev.TaskID == id || (ev.Task != nil && ev.Task.ID == id)
}

// advance applies one event of the task to its record, as far as the view
// needs: the state, the history entry that explains it, the result.
func advance(rec mailbox.TaskRecord, ev mailbox.Event) mailbox.TaskRecord {
	h := mailbox.HistoryEntry{Seq: ev.Seq, AtMs: ev.AtMs, Type: ev.Type, LeaseID: ev.LeaseID, LeasedTo: ev.LeasedTo,
		Attempt: ev.Attempt, Principal: ev.Principal, Reason: ev.Reason, DuplicateRisk: ev.DuplicateRisk, Recipient: ev.Recipient}
	switch ev.Type {
	case mailbox.EventTaskLeased:
		rec.State = mailbox.TaskInFlight
	case mailbox.EventTaskRequeued:
		rec.State = mailbox.TaskQueued
	case mailbox.EventResultPosted, mailbox.EventTaskForceErrored:
		rec.State = mailbox.TaskResultPending
		if ev.Result != nil {
			r := *ev.Result
			rec.Result = &r
		}
	default:
		rec.State = stateAfter(ev.Type, rec.State)
	}
	rec.History = append(append([]mailbox.HistoryEntry(nil), rec.History...), h)
	return rec
}

// stateAfter is a task's mailbox state after an event of type typ.
func stateAfter(typ, state string) string {
	switch typ {
	case mailbox.EventTaskSent, mailbox.EventTaskRequeued:
		return mailbox.TaskQueued
	case mailbox.EventTaskLeased:
		return mailbox.TaskInFlight
	case mailbox.EventResultPosted, mailbox.EventTaskForceErrored, mailbox.EventResultReplayed:
		return mailbox.TaskResultPending
	case mailbox.EventResultDrained:
		return mailbox.TaskDone
	case mailbox.EventTaskCanceled:
		return mailbox.TaskCanceled
	}
	return state
}

// rewind returns the task as it stood at seq: its history up to seq, and
// the state and result that history leads to.
func rewind(rec mailbox.TaskRecord, seq uint64) mailbox.TaskRecord {
	if lastSeq(rec) <= seq {
		return rec
	}
	var hist []mailbox.HistoryEntry
	state := mailbox.TaskQueued
	for _, h := range rec.History {
		if h.Seq <= seq {
			hist = append(hist, h)
			state = stateAfter(h.Type, state)
		}
	}
	rec.History, rec.State = hist, state
	if state != mailbox.TaskResultPending && state != mailbox.TaskDone {
		rec.Result = nil
	}
	return rec
}
