package mailbox

import (
	"strings"
	"testing"
)

// moves puts n task_leased and task_requeued notifications in task id's
// config's line (a lease and a requeue each time round).
func (b *box) moves(id string, n int) {
	b.t.Helper()
	for range n {
		_, l := b.lease("worker@local")
		if _, err := b.repair(id, l.LeaseID, ActionRequeue); err != nil {
			b.t.Fatal(err)
		}
	}
}

// The notifier's look: the oldest pending notification of each line not
// busy, past its dead letters, in the order they were made; the counts
// follow deliveries, dead letters, retries, drops, deleted configs and
// snapshots.
func TestOutboxHeads(t *testing.T) {
	b := newBox(t)
	a := b.send("caller@a2a", "worker@local")
	if _, err := b.setPush(a, PushConfig{ID: "x", URL: "http://127.0.0.1:9/x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.setPush(a, PushConfig{ID: "y", URL: "http://127.0.0.1:9/y"}); err != nil {
		t.Fatal(err)
	}
	b.moves(a, 1) // x: set, leased, requeued; y: set, leased, requeued
	heads := func(busy func(task, config string) bool) (string, int, int) {
		hs, pending, dead := b.s.OutboxHeads(busy)
		var rows []string
		for _, h := range hs {
			rows = append(rows, h.ConfigID+":"+h.Event)
		}
		return strings.Join(rows, " "), pending, dead
	}
	check := func(what, want string, wantPending, wantDead int) {
		t.Helper()
		if got, p, d := heads(nil); got != want || p != wantPending || d != wantDead {
			t.Errorf("%s: heads %q, %d pending, %d dead; want %q, %d, %d", what, got, p, d, want, wantPending, wantDead)
		}
		r := NewState()
		if err := r.Restore(b.s.Snapshot(b.now)); err != nil {
			t.Fatal(err)
		}
		if got, p, d := r.OutboxHeads(nil); len(got) != len(strings.Fields(want)) || p != wantPending || d != wantDead {
			t.Errorf("%s, restored: heads %+v, %d pending, %d dead", what, got, p, d)
		}
	}
	check("made", "x:push_config_set y:push_config_set", 6, 0)
	if got, _, _ := heads(func(_, c string) bool { return c == "x" }); got != "y:push_config_set" {
		t.Errorf("with x busy: heads %q, want y's alone", got)
	}
	first := b.s.Outbox()[0]
	ev, _ := b.s.DecidePushDeadLettered(first.ID, 8, "503", b.now)
	b.apply(ev)
	check("x's first dead", "y:push_config_set x:task_leased", 5, 1)
	ev, _ = b.s.DecidePushRetry(first.ID, "oncall", "", b.now)
	b.apply(ev)
	check("retried", "x:push_config_set y:push_config_set", 6, 0)
	ev, _ = b.s.DecidePushDelivered(first.ID, 1, b.now)
	b.apply(ev)
	check("delivered", "y:push_config_set x:task_leased", 5, 0)
	ev, _ = b.s.DecidePushConfigDelete(a, "y", "caller@a2a", b.now)
	b.apply(ev)
	check("y deleted", "x:task_leased", 2, 0)
	if !b.s.NotificationPending(b.s.Outbox()[0].ID) || b.s.NotificationPending(first.ID) {
		t.Errorf("NotificationPending: the pending one not, or the delivered one still")
	}
	b.replayed()
}

// replayed checks that replaying the box's log makes the same outbox.
func (b *box) replayed() {
	b.t.Helper()
	r := NewState()
	for _, ev := range b.log {
		if err := r.Apply(ev); err != nil {
			b.t.Fatal(err)
		}
	}
	if got, want := stateJSON(b.t, r, true), stateJSON(b.t, b.s, true); got != want {
		b.t.Errorf("replay made another state:\n got %s\nwant %s", got, want)
	}
	hs, p, d := r.OutboxHeads(nil)
	ws, wp, wd := b.s.OutboxHeads(nil)
	if len(hs) != len(ws) || p != wp || d != wd {
		b.t.Errorf("replay's heads %+v %d %d, want %+v %d %d", hs, p, d, ws, wp, wd)
	}
}
