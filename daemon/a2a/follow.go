package a2a

import (
	"context"
	"errors"
	"time"

	"github.com/mailroom/mailroom/mailbox"

	"github.com/mailroom/mailroom/daemon/a2a/wire"
)

// followHold, set by tests only, runs as a follower takes each event off
// its subscription: a test holds a follower there to make it fall behind.
var followHold func()

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
func (e *Edge) follow(ctx context.Context, id string, after *uint64, initial bool, emit func(wire.StreamEvent) error, ping func() error) error {
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
		rec = wire.Rewind(rec, *after)
	}
	origin := wire.DecodeOrigin(rec)
	cur := wire.View(rec, origin)
	if initial {
		if err := emit(wire.StreamEvent{Kind: "task", Task: cur, Final: wire.Terminal(cur.State)}); err != nil {
			return err
		}
	}
	if wire.Terminal(cur.State) {
		// Finished before the stream began (or before the position it
		// resumes from): say how, so the stream ends on a final event.
		return e.finish(ctx, cur, emit)
	}
	if wire.Interrupted(cur.State) && after == nil {
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
				return mailbox.Errorf(mailbox.CodeUnavailable, "the mailbox is shutting down; resubscribe with Last-Event-ID %d", cur.Seq)
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
				next = wire.View(rec, origin)
				changed = next.Seq > cur.Seq
			} else if ev.Seq > cur.Seq && ev.Seq > wire.LastSeq(rec) && concerns(*ev, id) {
				rec = wire.Advance(rec, *ev)
				next, changed = wire.View(rec, origin), true
			}
			if !changed {
				continue
			}
			if wire.Terminal(next.State) {
				return e.finish(ctx, next, emit)
			}
			if wire.Interrupted(next.State) {
				if next.QuestionSeq != cur.QuestionSeq {
					return e.interrupt(ctx, next, emit)
				}
				// The same question (marked delivered since): nothing
				// to show.
				cur = next
				continue
			}
			if next.State != cur.State || next.StatusMessage != nil {
				if err := emit(wire.StreamEvent{Kind: "status", Task: next}); err != nil {
					return err
				}
			}
			cur = next
		}
	}
}

// finish sends a finished task's artifact and its final status, and marks
// its result delivered: the caller has it.
func (e *Edge) finish(ctx context.Context, tv wire.TaskView, emit func(wire.StreamEvent) error) error {
	for _, a := range tv.Artifacts {
		one := tv
		one.Artifacts = []wire.Artifact{a}
		if err := emit(wire.StreamEvent{Kind: "artifact", Task: one}); err != nil {
			return err
		}
	}
	if err := emit(wire.StreamEvent{Kind: "status", Task: tv, Final: true}); err != nil {
		return err
	}
	e.delivered(ctx, tv)
	return nil
}

// interrupt ends a stream at a question: the final status update holds
// it, and it is marked delivered, as a finished task's result is.
func (e *Edge) interrupt(ctx context.Context, tv wire.TaskView, emit func(wire.StreamEvent) error) error {
	if err := emit(wire.StreamEvent{Kind: "status", Task: tv, Final: true}); err != nil {
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
