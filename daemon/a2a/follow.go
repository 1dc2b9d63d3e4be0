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
	f := &follower{e: e, id: id, emit: emit}
	if err := f.subscribe(ctx, after); err != nil {
		return err
	}
	defer func() { f.sub.Close() }()
	if done, err := f.start(ctx, after, initial); done || err != nil {
		return err
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
		case ev, ok := <-f.sub.Events():
			if followHold != nil {
				followHold()
			}
			if !ok {
				if err := f.resubscribe(ctx); err != nil {
					return err
				}
				continue
			}
			if done, err := f.step(ctx, ev); done || err != nil {
				return err
			}
		}
	}
}

// follower is one stream's following of a task: its subscription, where
// it is in the log, and the task as last shown.
type follower struct {
	e      *Edge
	id     string
	emit   func(wire.StreamEvent) error
	sub    mailbox.Subscription
	pos    uint64
	rec    mailbox.TaskRecord
	origin *wire.Message
	cur    wire.TaskView
}

// subscribe subscribes to the task's changes after the position, or from
// now.
func (f *follower) subscribe(ctx context.Context, after *uint64) error {
	var err error
	if after != nil {
		// Resume: the log replays every change after the position.
		f.pos = *after
		f.sub, err = f.e.feed.SubscribeTask(ctx, &f.pos, followBuffer, f.id)
		return err
	}
	// From now: subscribe before reading the task, so every change
	// after the read is on the subscription. pos is where a follower
	// cut off resumes from until it has seen an event: at most the
	// seq the subscription starts at.
	f.pos = f.e.feed.Status().LastSeq
	f.sub, err = f.e.feed.SubscribeTask(ctx, nil, followBuffer, f.id)
	return err
}

// start reads the task and shows it (unless resuming); done reports that
// the stream has said all it will.
func (f *follower) start(ctx context.Context, after *uint64, initial bool) (done bool, err error) {
	if f.rec, err = f.e.feed.Task(ctx, f.id); err != nil {
		return true, err
	}
	if after != nil {
		f.rec = wire.Rewind(f.rec, *after)
	}
	f.origin = wire.DecodeOrigin(f.rec)
	f.cur = f.e.opts.Notes.View(f.rec, f.origin)
	if initial {
		if err := f.emit(wire.StreamEvent{Kind: "task", Task: f.cur, Final: wire.Terminal(f.cur.State)}); err != nil {
			return true, err
		}
	}
	if wire.Terminal(f.cur.State) {
		// Finished before the stream began (or before the position it
		// resumes from): say how, so the stream ends on a final event.
		return true, f.e.finish(ctx, f.cur, f.emit)
	}
	if wire.Interrupted(f.cur.State) && after == nil {
		// Waiting on its caller already: the stream has nothing more to
		// say until the caller answers (with a message of its own, which
		// streams the next turn).
		return true, f.e.interrupt(ctx, f.cur, f.emit)
	}
	return false, nil
}

// resubscribe follows a subscription that ended: a follower cut off for
// falling behind catches up from the log where its buffer overflowed;
// any other end ends the stream.
func (f *follower) resubscribe(ctx context.Context) error {
	if errors.Is(f.sub.Err(), mailbox.ErrSlowSubscriber) {
		f.sub.Close()
		var err error
		f.sub, err = f.e.feed.SubscribeTask(ctx, &f.pos, followBuffer, f.id)
		return err
	}
	if err := f.sub.Err(); err != nil {
		return err
	}
	return mailbox.Errorf(mailbox.CodeUnavailable, "the mailbox is shutting down; resubscribe with Last-Event-ID %d", f.cur.Seq)
}

// step shows what event ev changed of the task; done reports that the
// stream has said all it will.
func (f *follower) step(ctx context.Context, ev *mailbox.Event) (done bool, err error) {
	f.pos = ev.Seq
	next, changed := f.cur, false
	if ev.Type == mailbox.EventSnapshot {
		// Events were compacted away under a slow reader: read the
		// task as it stands.
		rec, err := f.e.feed.Task(ctx, f.id)
		if err != nil {
			return true, err
		}
		next = f.e.opts.Notes.View(rec, f.origin)
		changed = next.Seq > f.cur.Seq
	} else if ev.Seq > f.cur.Seq && ev.Seq > wire.LastSeq(f.rec) && concerns(*ev, f.id) {
		f.rec = wire.Advance(f.rec, *ev)
		next, changed = f.e.opts.Notes.View(f.rec, f.origin), true
	}
	if !changed {
		return false, nil
	}
	if wire.Terminal(next.State) {
		return true, f.e.finish(ctx, next, f.emit)
	}
	if wire.Interrupted(next.State) {
		if next.QuestionSeq != f.cur.QuestionSeq {
			return true, f.e.interrupt(ctx, next, f.emit)
		}
		// The same question (marked delivered since): nothing
		// to show.
		f.cur = next
		return false, nil
	}
	if next.State != f.cur.State || next.StatusMessage != nil {
		if err := f.emit(wire.StreamEvent{Kind: "status", Task: next}); err != nil {
			return true, err
		}
	}
	f.cur = next
	return false, nil
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
