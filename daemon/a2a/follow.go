package a2a

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/mailroom/mailroom/mailbox"
)

// followHold, set by tests only, runs as a follower takes each event off
// its subscription: a test holds a follower there to make it fall behind.
var followHold func()

// streamEvent is one event of a task's stream.
type streamEvent struct {
	kind  string // "task", "status" or "artifact"
	task  taskView
	final bool // the task reached a terminal state: the stream ends after it
}

// follow streams the changes of task id to emit: first the task as it
// stands (unless resuming), then a status update for every change and an
// artifact update when the result arrives, until the task finishes or its
// worker asks its caller (input-required, auth-required: the last status
// update is final), ctx ends or emit fails. Resuming after a seq (a
// stream's Last-Event-ID) sends only what changed after it: a stream that
// ended at a question and resumes from there follows the task into its
// next turn. Every event's seq is the log seq of the change it shows, so
// a reconnect with the last id resumes without a gap, across a restart
// too.
//
// The caller has checked that the caller may read the task; the events
// come from the unguarded feed. ping, when set, is called when nothing was
// sent for a heartbeat interval.
func (e *Edge) follow(ctx context.Context, id string, after *uint64, initial bool, emit func(streamEvent) error, ping func() error) error {
	var pos uint64
	var sub mailbox.Subscription
	var err error
	if after != nil {
		// Resume: the log replays every change after the position.
		pos = *after
		sub, err = e.feed.SubscribeTask(ctx, &pos, followBuffer, id)
	} else {
		// From now: subscribe before reading the task, so every change
		// after the read is on the subscription. pos is where a follower
		// cut off resumes from until it has seen an event: at most the
		// seq the subscription starts at.
		pos = e.feed.Status().LastSeq
		sub, err = e.feed.SubscribeTask(ctx, nil, followBuffer, id)
	}
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
	if interrupted(cur.state) && after == nil {
		// Waiting on its caller already: the stream has nothing more to
		// say until the caller answers (with a message of its own, which
		// streams the next turn).
		return e.interrupt(ctx, cur, emit)
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
			if followHold != nil {
				followHold()
			}
			if !ok {
				if errors.Is(sub.Err(), mailbox.ErrSlowSubscriber) {
					// Catch up from the log where the buffer overflowed.
					sub.Close()
					if sub, err = e.feed.SubscribeTask(ctx, &pos, followBuffer, id); err != nil {
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
			} else if ev.Seq > cur.seq && ev.Seq > lastSeq(rec) && concerns(*ev, id) {
				rec = advance(rec, *ev)
				next, changed = view(rec, origin), true
			}
			if !changed {
				continue
			}
			if terminal(next.state) {
				return e.finish(ctx, next, emit)
			}
			if interrupted(next.state) {
				if next.questionSeq != cur.questionSeq {
					return e.interrupt(ctx, next, emit)
				}
				// The same question (marked delivered since): nothing
				// to show.
				cur = next
				continue
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

// interrupt ends a stream at a question: the final status update holds
// it, and it is marked delivered, as a finished task's result is.
func (e *Edge) interrupt(ctx context.Context, tv taskView, emit func(streamEvent) error) error {
	if err := emit(streamEvent{kind: "status", task: tv, final: true}); err != nil {
		return err
	}
	e.delivered(ctx, tv)
	return nil
}

// concerns reports whether ev changes task id (the outbox's events name
// the task but change nothing a caller sees of it).
func concerns(ev mailbox.Event, id string) bool {
	return !mailbox.IsPushEvent(ev.Type) && ev.Concerns(id)
}

// advance applies one event of the task to its record, as far as the view
// needs: the state, the history entry that explains it, the result, the
// turns of its conversation.
func advance(rec mailbox.TaskRecord, ev mailbox.Event) mailbox.TaskRecord {
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

// rewind returns the task as it stood at seq: its history and turns up to
// seq, and the state and result that history leads to.
func rewind(rec mailbox.TaskRecord, seq uint64) mailbox.TaskRecord {
	if lastSeq(rec) <= seq {
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
