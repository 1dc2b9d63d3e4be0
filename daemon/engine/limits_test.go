package engine

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/daemon/store/logstore"
	"github.com/mailroom/mailroom/internal/testlog"
	"github.com/mailroom/mailroom/mailbox"
)

// finish leases, answers and drains the task queued for "a", which must be id.
func finish(t *testing.T, e *Engine, id string) {
	t.Helper()
	ctx := context.Background()
	task, lease := mustLease(t, e, "a")
	if task.ID != id {
		t.Fatalf("leased %s, want %s", task.ID, id)
	}
	if err := e.PostResult(ctx, mailbox.Result{TaskID: id, Status: mailbox.StatusOK, LeaseID: lease.LeaseID}); err != nil {
		t.Fatal(err)
	}
	if r, err := e.Drain(ctx, "p"); err != nil || r == nil || r.TaskID != id {
		t.Fatalf("drain = %+v, %v; want the result of %s", r, err, id)
	}
}

// wantLimitsSet checks that the events after seq are one limits_set to l.
func wantLimitsSet(t *testing.T, e *Engine, after uint64, l mailbox.Limits) {
	t.Helper()
	evs, err := e.st.EventsSince(after, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].Type != mailbox.EventLimitsSet || evs[0].Seq != after+1 || evs[0].Limits == nil || *evs[0].Limits != l {
		t.Fatalf("events after seq %d = %+v, want one limits_set to %v", after, evs, l)
	}
}

// Issue 9: a daemon that ran with retain_done 1 forgot a drained task and
// accepted its id again; restarted with the default retain_done it must
// still start, with the same state, and record the new limits once.
func TestRestartWithOtherLimits(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	const x, y = "00000000-0000-4000-8000-00000000000a", "00000000-0000-4000-8000-00000000000b"
	small := mailbox.DefaultLimits()
	small.RetainDone = 1

	e := open(t, dir, Options{RetainDone: 1})
	wantLimitsSet(t, e, 0, small) // a new log records limits other than the defaults first
	send := func(id string) {
		t.Helper()
		out, err := e.Send(ctx, mailbox.Task{ID: id, Sender: "p", Recipient: "a", IntentText: "work"})
		if err != nil || out.TaskID != id || out.Deduplicated {
			t.Fatalf("send %s = %+v, %v; want it queued", id, out, err)
		}
	}
	send(x)
	finish(t, e, x)
	send(y)
	finish(t, e, y) // retain_done 1: x is forgotten
	send(x)
	before := snapshotOf(e)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}

	logs := &testlog.Buffer{}
	e = open(t, dir, Options{Logger: logs.Logger()})
	after := snapshotOf(e)
	wantLimitsSet(t, e, before.Seq, mailbox.DefaultLimits())
	if *after.Limits != mailbox.DefaultLimits() {
		t.Errorf("limits after the restart = %v, want the configured defaults", *after.Limits)
	}
	// A raised limit brings nothing back: the state is the one before.
	after.Seq, after.Limits = before.Seq, before.Limits
	if !reflect.DeepEqual(after, before) {
		t.Errorf("state after the restart =\n%+v\nwant\n%+v", after, before)
	}
	if out := logs.String(); !strings.Contains(out, "mailbox limits changed") || !strings.Contains(out, "from=\"retain_done=1 ") ||
		!strings.Contains(out, "to=\"retain_done=10000 ") {
		t.Errorf("no line saying the limits changed from retain_done 1 to 10000 in:\n%s", out)
	}
	seq := e.st.LastSeq()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}

	e = open(t, dir, Options{})
	if got := e.st.LastSeq(); got != seq {
		t.Errorf("reopening with the limits in force appended up to seq %d, want nothing after %d", got, seq)
	}
}

// The limits_set a restart appends reaches a subscriber resuming from
// before it, so a console follows the daemon's limits.
func TestResumingSubscriberGetsTheLimits(t *testing.T) {
	dir := t.TempDir()
	e := open(t, dir, Options{})
	mustSend(t, e, "p", "a")
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = open(t, dir, Options{AuditMax: 3})
	after := uint64(1)
	sub, err := e.Subscribe(context.Background(), &after)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	ev := collect(t, sub, 1)[0]
	if ev.Type != mailbox.EventLimitsSet || ev.Seq != 2 || ev.Limits == nil || ev.Limits.AuditMax != 3 {
		t.Fatalf("resumed with %+v, want the limits_set to audit_max 3 at seq 2", ev)
	}
}

// When the new limits cannot be recorded, the engine does not start: it
// would otherwise serve under limits the log does not hold.
func TestOpenFailsWhenTheLimitsCannotBeRecorded(t *testing.T) {
	dir := t.TempDir()
	e := open(t, dir, Options{})
	mustSendTask(t, e, mailbox.Task{Sender: "p", Recipient: "a", IntentText: bigIntent})
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := logstore.Open(dir, logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	lift := limitFileSize(t, dir)
	if _, err := Open(st, Options{AuditMax: 3}); err == nil || !strings.Contains(err.Error(), "recording the configured limits") {
		t.Errorf("Open on a full disk with new limits = %v, want an error saying the limits could not be recorded", err)
	}
	lift()
	st.Close()
	e = open(t, dir, Options{AuditMax: 3})
	wantLimitsSet(t, e, 1, mailbox.Limits{RetainDone: mailbox.DefaultRetainDone, ResultCacheMax: mailbox.DefaultResultCacheMax,
		ResultCacheAgeMs: mailbox.DefaultResultCacheAgeMs, AuditMax: 3})
}
