package tui

import (
	"fmt"
	"testing"

	"github.com/mailroom/mailroom/mailbox"
)

// source plays the daemon for model tests: it decides events with the same
// mailbox.State the daemon uses and numbers them, so the replica under test
// gets exactly what a real stream would carry.
type source struct {
	t     testing.TB
	s     *mailbox.State
	nowMs int64
	ids   int
}

func newSource(t testing.TB) *source {
	return &source{t: t, s: mailbox.NewState(), nowMs: 1_700_000_000_000}
}

func (src *source) emit(ev mailbox.Event, err error) mailbox.Event {
	src.t.Helper()
	if err != nil {
		src.t.Fatalf("deciding: %v", err)
	}
	ev.Seq = src.s.Seq + 1
	if err := src.s.Apply(ev); err != nil {
		src.t.Fatalf("applying %s: %v", ev.Type, err)
	}
	return ev
}

func (src *source) uuid() string {
	src.ids++
	// Distinct in the first 8 characters, which the panes show.
	return fmt.Sprintf("%08x-0000-4000-8000-%012d", src.ids*0x1111, src.ids)
}

type taskOpt func(*mailbox.Task)

func withIntent(s string) taskOpt   { return func(t *mailbox.Task) { t.IntentText = s } }
func withKind(s string) taskOpt     { return func(t *mailbox.Task) { t.TaskKind = &s } }
func withParent(s string) taskOpt   { return func(t *mailbox.Task) { t.Parent = s } }
func withSender(s string) taskOpt   { return func(t *mailbox.Task) { t.Sender = s } }
func withDeadline(ms int64) taskOpt { return func(t *mailbox.Task) { t.DeadlineMs = &ms } }
func idempotent(key string) taskOpt {
	return func(t *mailbox.Task) {
		t.Idempotency = &mailbox.Idempotency{DuplicateSafety: mailbox.DuplicateIdempotent, Key: key}
	}
}

func (src *source) send(recipient string, opts ...taskOpt) mailbox.Event {
	src.t.Helper()
	t := mailbox.Task{ID: src.uuid(), Sender: "planner@local", Recipient: recipient, IntentText: "do the thing"}
	for _, o := range opts {
		o(&t)
	}
	return src.emit(src.s.DecideSend(t, src.nowMs))
}

func (src *source) lease(recipient string) mailbox.Event {
	src.t.Helper()
	ev, ok := src.s.DecideLease(recipient, "", src.uuid(), src.nowMs)
	if !ok {
		src.t.Fatalf("nothing queued for %s", recipient)
	}
	return src.emit(ev, nil)
}

func (src *source) post(taskID, status, msg string) mailbox.Event {
	src.t.Helper()
	return src.emit(src.s.DecidePostResult(mailbox.Result{TaskID: taskID, Status: status, Content: []mailbox.Content{}, ErrorMessage: msg}, src.nowMs))
}

func (src *source) drain(sender string) mailbox.Event {
	src.t.Helper()
	ev, _, ok := src.s.DecideDrain(sender, src.nowMs)
	if !ok {
		src.t.Fatalf("no result for %s", sender)
	}
	return src.emit(ev, nil)
}

func (src *source) snapshot() mailbox.Event {
	return mailbox.Event{Seq: src.s.Seq, AtMs: src.nowMs, Type: mailbox.EventSnapshot, Snapshot: src.s.Snapshot(src.nowMs)}
}
