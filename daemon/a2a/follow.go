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
func (e *Edge) follow(ctx context.Context, id string, resume *uint64, emit func(streamEvent) error, ping func() error) error {
	// Subscribe before reading the task: every change after the read is
	// then on the subscription (and the ones before it are skipped by seq).
	pos := e.feed.Status().LastSeq
	sub, err := e.feed.Subscribe(ctx, &pos)
	if err != nil {
		return err
	}
	defer func() { sub.Close() }()
	rec, err := e.feed.Task(ctx, id)
	if err != nil {
		return err
	}
	origin := decodeOrigin(rec)
	cur := view(rec, origin)
	switch {
	case resume == nil:
		if err := emit(streamEvent{kind: "task", task: cur, final: terminal(cur.state)}); err != nil {
			return err
		}
		if terminal(cur.state) {
			return e.finish(ctx, cur, emit)
		}
	case *resume < cur.seq:
		// Changes the client missed, shown as one status update (with the
		// result's artifact first when it has one).
		if terminal(cur.state) {
			return e.finish(ctx, cur, emit)
		}
		if err := emit(streamEvent{kind: "status", task: cur}); err != nil {
			return err
		}
	case terminal(cur.state):
		// The client has seen the end already; say it once more so the
		// stream ends on a final event rather than on nothing.
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
					if sub, err = e.feed.Subscribe(ctx, &pos); err != nil {
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
			} else if ev.Seq > cur.seq && concerns(ev, id) {
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
	case mailbox.EventResultDrained:
		rec.State = mailbox.TaskDone
	case mailbox.EventTaskCanceled:
		rec.State = mailbox.TaskCanceled
	}
	rec.History = append(append([]mailbox.HistoryEntry(nil), rec.History...), h)
	return rec
}
