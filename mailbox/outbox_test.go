package mailbox

import (
	"maps"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
)

// dropAll applies a push_dropped event (by the daemon) for each drop.
func (b *box) dropAll(drops []OutboxDrop) {
	b.t.Helper()
	for _, d := range drops {
		ev, err := b.s.DecidePushDrop(d.ID, OutboxPrincipal, d.Reason, false, b.now)
		if err != nil {
			b.t.Fatalf("drop %s: %v", d.ID, err)
		}
		b.apply(ev)
	}
}

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

// A receiver past push_outbox_per_receiver loses its oldest
// notifications, a task's config or a sender's webhook (all its tasks
// counted together); the reason names the bound, its value and the
// receiver; what is kept is the newest.
func TestOutboxBoundPerReceiver(t *testing.T) {
	b := newBox(t)
	b.registerCard("planner@local", AgentCard{Name: "Planner", Webhook: &Webhook{URL: "http://127.0.0.1:9/results"}})
	id := b.send("caller@a2a", "worker@local")
	if _, err := b.setPush(id, PushConfig{ID: "c", URL: "http://127.0.0.1:9/hook"}); err != nil {
		t.Fatal(err)
	}
	b.moves(id, 3) // 1 + 6 in c's line
	for range 4 {  // 4 lines of planner's webhook, one notification each
		task := b.send("planner@local", "other@local")
		_, l := b.lease("other@local")
		if err := b.post(task, l.LeaseID); err != nil {
			t.Fatal(err)
		}
	}
	if n := b.s.OutboxLen(); n != 11 {
		t.Fatalf("outbox of %d, want 11: %q", n, outboxOf(b.s))
	}
	before := b.s.Outbox()
	drops := b.s.OutboxOverflow(OutboxBounds{PerReceiver: 3}, b.now, 100)
	if len(drops) != 5 {
		t.Fatalf("drops = %+v, want 4 of c's and 1 of planner's webhook", drops)
	}
	var ofC, ofHook int
	for _, d := range drops {
		switch {
		case strings.Contains(d.Reason, `push config "c" of task `+id):
			ofC++
		case strings.Contains(d.Reason, "planner@local's webhook"):
			ofHook++
		}
		if !strings.HasPrefix(d.Reason, "the outbox bound push_outbox_per_receiver=3 was passed by ") {
			t.Errorf("reason %q, want the bound and its value named", d.Reason)
		}
	}
	if ofC != 4 || ofHook != 1 {
		t.Errorf("drops = %+v, want 4 of c's and 1 of planner's webhook", drops)
	}
	countsHold(t, b.s)
	b.dropAll(drops)
	countsHold(t, b.s)
	if again := b.s.OutboxOverflow(OutboxBounds{PerReceiver: 3}, b.now, 100); len(again) != 0 {
		t.Errorf("within the bound, still dropping %+v", again)
	}
	// Kept: the newest of each receiver.
	kept := map[string]bool{}
	for _, n := range b.s.Outbox() {
		kept[n.ID] = true
	}
	var c, hook []Notification
	for _, n := range before {
		if n.ConfigID == "c" {
			c = append(c, n)
		} else {
			hook = append(hook, n)
		}
	}
	for i, n := range c {
		if kept[n.ID] != (i >= len(c)-3) {
			t.Errorf("c's notification %d of %d (%s) kept: %v; want the newest 3 kept", i+1, len(c), n.ID, kept[n.ID])
		}
	}
	for i, n := range hook {
		if kept[n.ID] != (i >= 1) {
			t.Errorf("the webhook's notification %d (%s) kept: %v; want the oldest dropped", i+1, n.ID, kept[n.ID])
		}
	}
	var audited int
	for _, r := range b.s.Audit("", 100) {
		if r.Action == OutcomePushDropped && r.Principal == OutboxPrincipal && strings.Contains(r.Reason, "push_outbox_per_receiver=3") {
			audited++
		}
	}
	if audited != 5 {
		t.Errorf("audit = %+v, want the 5 drops by %s with their reason", b.s.Audit("", 100), OutboxPrincipal)
	}
	b.jsonRoundTrip()
	b.replayed()
}

// Past push_outbox_max the oldest of the whole outbox go; past
// push_dead_retention a dead letter goes; limit caps one look.
func TestOutboxBoundTotalAndDeadRetention(t *testing.T) {
	b := newBox(t)
	for range 5 {
		id := b.send("caller@a2a", "worker@local")
		if _, err := b.setPush(id, PushConfig{URL: "http://127.0.0.1:9/hook"}); err != nil {
			t.Fatal(err)
		}
	}
	if n := b.s.OutboxLen(); n != 5 {
		t.Fatalf("outbox of %d, want 5", n)
	}
	oldest := b.s.Outbox()
	if got := b.s.OutboxOverflow(OutboxBounds{Total: 3}, b.now, 1); len(got) != 1 || got[0].ID != oldest[0].ID {
		t.Errorf("one look at most 1: %+v, want the oldest, %s", got, oldest[0].ID)
	}
	drops := b.s.OutboxOverflow(OutboxBounds{Total: 3}, b.now, 100)
	if len(drops) != 2 || drops[0].ID != oldest[0].ID || drops[1].ID != oldest[1].ID ||
		drops[0].Reason != "the outbox bound push_outbox_max=3 was passed: the oldest notifications are dropped" {
		t.Fatalf("drops = %+v, want the two oldest with the bound named", drops)
	}
	b.dropAll(drops)

	// A dead letter is kept for the retention from its death, not from
	// its making.
	n := b.s.Outbox()[0]
	ev, err := b.s.DecidePushDeadLettered(n.ID, 8, "POST: 503", b.now)
	if err != nil {
		t.Fatal(err)
	}
	diedAt := b.apply(ev).AtMs
	keep := OutboxBounds{DeadRetention: time.Hour}
	if got := b.s.OutboxOverflow(keep, diedAt+time.Hour.Milliseconds()-1, 100); len(got) != 0 {
		t.Errorf("a dead letter younger than the retention dropped: %+v", got)
	}
	got := b.s.OutboxOverflow(keep, diedAt+time.Hour.Milliseconds(), 100)
	if len(got) != 1 || got[0].ID != n.ID || got[0].Reason != "dead-lettered longer than push_dead_retention=1h0m0s allows" {
		t.Errorf("drops = %+v, want the dead letter, the retention named", got)
	}
	if got := b.s.OutboxOverflow(OutboxBounds{}, diedAt+1000*time.Hour.Milliseconds(), 100); len(got) != 0 {
		t.Errorf("no bounds, and still dropping %+v", got)
	}
	b.replayed()
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
		countsHold(t, b.s)
		r := NewState()
		if err := r.Restore(b.s.Snapshot(b.now)); err != nil {
			t.Fatal(err)
		}
		countsHold(t, r)
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

// countsHold checks the index the notifier and the bounds look at (each
// receiver's count, every notification in the order made) against the
// outbox itself.
func countsHold(t *testing.T, s *State) {
	t.Helper()
	var order []string
	for _, n := range s.outboxIx.order[s.outboxIx.head:] {
		if !n.taken {
			order = append(order, n.ID)
		}
	}
	var made []string
	for _, n := range s.Outbox() {
		made = append(made, n.ID)
	}
	if strings.Join(order, " ") != strings.Join(made, " ") {
		t.Errorf("the index's order %v, the outbox's %v", order, made)
	}
	want := map[receiver]int{}
	most := 0
	for _, n := range s.Outbox() {
		r := n.receiver()
		want[r]++
		most = max(most, want[r])
	}
	if len(want) != len(s.outboxIx.counts.of) || most != s.outboxIx.counts.most {
		t.Errorf("receiver counts %v (most %d), want %v (most %d)", s.outboxIx.counts.of, s.outboxIx.counts.most, want, most)
	}
	for r, n := range want {
		if s.outboxIx.counts.of[r] != n {
			t.Errorf("receiver %+v counted %d, holds %d", r, s.outboxIx.counts.of[r], n)
		}
	}
}

// replayed checks that replaying the box's log makes the same outbox.
func (b *box) replayed() {
	b.t.Helper()
	countsHold(b.t, b.s)
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

// Through a long run of every outbox event, at random, the index agrees
// with the outbox: the heads are the oldest pending of each line, the
// order and counts hold, and so does every bound's choice.
func TestOutboxIndexThroughEveryEvent(t *testing.T) {
	b := newBox(t)
	rnd := rand.New(rand.NewPCG(25, 2026))
	b.registerCard("planner@local", AgentCard{Name: "Planner", Webhook: &Webhook{URL: "http://127.0.0.1:9/results"}})
	var tasks []string
	for step := range 3000 {
		ns := b.s.Outbox()
		pick := func() Notification { return ns[rnd.IntN(len(ns))] }
		switch op := rnd.IntN(10); {
		case op < 2 || len(tasks) == 0:
			id := b.send([]string{"caller@a2a", "planner@local"}[rnd.IntN(2)], "worker@local")
			tasks = append(tasks, id)
			if _, err := b.setPush(id, PushConfig{ID: "c" + strconv.Itoa(rnd.IntN(2)), URL: "http://127.0.0.1:9/hook"}); err != nil {
				t.Fatal(err)
			}
		case op < 4:
			if id, l := b.lease("worker@local"); id != "" {
				if rnd.IntN(2) == 0 {
					_ = b.post(id, l.LeaseID)
				} else if _, err := b.repair(id, l.LeaseID, ActionRequeue); err != nil {
					t.Fatal(err)
				}
			}
		case op < 5 && len(ns) > 0:
			if ev, err := b.s.DecidePushDelivered(pick().ID, 1, b.now); err == nil {
				b.apply(ev)
			}
		case op < 6 && len(ns) > 0:
			if ev, err := b.s.DecidePushDeadLettered(pick().ID, 8, "503", b.now); err == nil {
				b.apply(ev)
			}
		case op < 7 && len(ns) > 0:
			if ev, err := b.s.DecidePushRetry(pick().ID, "oncall", "", b.now); err == nil {
				b.apply(ev)
			}
		case op < 8 && len(ns) > 0:
			n := pick()
			if n.ConfigID != "" {
				if ev, err := b.s.DecidePushConfigDelete(n.TaskID, n.ConfigID, "caller@a2a", b.now); err == nil {
					b.apply(ev)
				}
			}
		default:
			bounds := OutboxBounds{PerReceiver: 1 + rnd.IntN(6), Total: 5 + rnd.IntN(40), DeadRetention: time.Duration(rnd.IntN(200)) * time.Millisecond}
			b.dropAll(b.s.OutboxOverflow(bounds, b.now, 1+rnd.IntN(20)))
		}
		countsHold(t, b.s)
		// The heads are the oldest pending of each line.
		want := map[outboxKey]string{}
		for _, n := range b.s.Outbox() {
			if _, ok := want[n.key()]; !ok && !n.Dead {
				want[n.key()] = n.ID
			}
		}
		heads, _, dead := b.s.OutboxHeads(nil)
		got := map[outboxKey]string{}
		for _, h := range heads {
			got[h.key()] = h.ID
		}
		if !maps.Equal(got, want) {
			t.Fatalf("step %d: heads %v, want %v", step, got, want)
		}
		var deadWant int
		for _, n := range b.s.Outbox() {
			if n.Dead {
				deadWant++
			}
		}
		if dead != deadWant {
			t.Fatalf("step %d: %d dead counted, %d in the outbox", step, dead, deadWant)
		}
		if t.Failed() {
			t.Fatalf("step %d", step)
		}
	}
	seen := map[string]int{}
	for _, ev := range b.log {
		seen[ev.Type]++
	}
	for _, typ := range []string{EventPushDelivered, EventPushDeadLettered, EventPushRetried, EventPushDropped, EventPushConfigDeleted} {
		if seen[typ] < 20 {
			t.Errorf("the run made %d %s events; want it to exercise each (%v)", seen[typ], typ, seen)
		}
	}
	t.Logf("events %v; outbox %d, index order %d from %d", seen, b.s.OutboxLen(), len(b.s.outboxIx.order), b.s.outboxIx.head)
	b.replayed()
}
