package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/internal/testclock"
	"github.com/mailroom/mailroom/mailbox"
)

// backlogMailbox is a dead agent's whole backlog: worker-a@local holds two
// leases and has three tasks queued, quiet for ten minutes; worker-c@local
// works (a fresh lease) and worker-b@local polls.
type backlogMailbox struct {
	staleMailbox
	queued []string
}

func newBacklogMailbox(t *testing.T) backlogMailbox {
	t.Helper()
	clk := &testclock.Clock{}
	clk.Set(time.Now())
	d := daemontest.Start(t, daemontest.Options{Now: clk.Now})
	m := backlogMailbox{staleMailbox: staleMailbox{d: d, api: agentAPI{t, newClient(t, d.URL())}, clk: clk}}
	for i := range 2 {
		m.ids = append(m.ids, m.api.send("worker-a@local", "crunch batch "+string(rune('A'+i))))
		clk.Set(clk.Now().Add(time.Second))
		_, lease := m.api.lease("worker-a@local")
		m.leases = append(m.leases, lease.LeaseID)
	}
	for i := range 3 {
		m.queued = append(m.queued, m.api.send("worker-a@local", "queued batch "+string(rune('A'+i))))
	}
	clk.Set(clk.Now().Add(10 * time.Minute))
	m.fresh = m.api.send("worker-c@local", "fresh work")
	m.api.lease("worker-c@local")
	if _, _, err := m.api.c.Lease(t.Context(), "worker-b@local"); err != nil {
		t.Fatal(err)
	}
	return m
}

// completionShown reports whether "to" offers agent: the completion list
// is drawn over the dialog, below the field.
func completionShown(agent string) func(frame) bool {
	return func(f frame) bool {
		for _, l := range f.lines {
			first, last := strings.Index(l, "║"), strings.LastIndex(l, "║")
			if first < 0 || first == last {
				continue
			}
			if in := l[first:last]; strings.Contains(in, agent) && !strings.Contains(in, "to ") && !strings.Contains(in, "queued for") {
				return true
			}
		}
		return false
	}
}

func (m backlogMailbox) ready(t *testing.T, w, h int) *running {
	t.Helper()
	r := runConsoleSized(t, m.api.c, Options{Addr: m.d.URL(), Now: m.clk.Now, StaleAfter: staleAfterForTests}, w, h)
	r.scr.waitForText(t, "stale 2")
	r.scr.waitForText(t, "no auth")
	return r
}

// The target, counted: a dead agent's whole backlog, its leases
// and its queued tasks, handed to a live agent in at most seven keys plus
// the reason and the agent's first letters (5 R Shift-Tab <letters> Tab
// <reason> Enter Enter: the agent gone longest is first, Tab takes the
// completion).
func TestADeadAgentsWholeBacklogInSevenKeys(t *testing.T) {
	t.Parallel()
	m := newBacklogMailbox(t)
	r := m.ready(t, 80, 24)
	keys := 0
	press := func(k *tcell.EventKey) {
		r.scr.press(k)
		keys++
	}
	press(char('5'))
	r.scr.waitGone(t, "worker-a@local")
	press(char('R'))
	f := r.scr.waitForText(t, "Requeue 2 leases, move 3 queued tasks")
	for _, want := range []string{"3 queued too", "Requeue 5"} {
		if !f.contains(want) {
			t.Errorf("the backlog dialog lacks %q:\n%s", want, f)
		}
	}
	press(key(tcell.KeyBacktab)) // reason -> to
	r.scr.typeText("worker-c")
	r.scr.waitFor(t, "the completion offered", completionShown("worker-c@local"))
	press(key(tcell.KeyTab)) // taken, on to the reason
	r.scr.typeText("worker-a died")
	press(key(tcell.KeyEnter))
	press(key(tcell.KeyEnter))
	r.scr.waitForText(t, "requeued 2 leases and moved 3 queued tasks to worker-c@local")
	if keys > 7 {
		t.Errorf("a dead agent's whole backlog took %d keys, the reason and the agent's first letters; want at most 7", keys)
	}
	for _, id := range append(append([]string{}, m.ids...), m.queued...) {
		if e, _ := m.api.entry(id); e.State != mailbox.TaskQueued || e.Task.Recipient != "worker-c@local" {
			t.Errorf("task %s is %s for %s, want queued for worker-c@local", short(id), e.State, e.Task.Recipient)
		}
	}
	// The moves are audited, each from -> to, with the reason.
	audit, err := m.api.c.Audit(t.Context(), "", 10)
	if err != nil || len(audit) != 5 {
		t.Fatalf("audit = %+v, %v; want five repairs", audit, err)
	}
	for _, a := range audit {
		if a.Move() != "worker-a@local -> worker-c@local" || a.Reason != "worker-a died" {
			t.Errorf("audit record %+v, want a move from worker-a to worker-c for the reason", a)
		}
	}
}

// Without "to", the backlog dialog does not requeue the leases and
// silently leave the queued tasks: it asks for "to", or for the box to be
// unticked; unticked, only the leases are requeued.
func TestBacklogDialogAsksWhereTheQueuedTasksGo(t *testing.T) {
	t.Parallel()
	m := newBacklogMailbox(t)
	r := m.ready(t, 120, 40)
	r.scr.press(char('5'))
	r.scr.waitGone(t, "worker-a@local")
	r.scr.press(char('R'))
	r.scr.waitForText(t, "Requeue 5")
	r.scr.typeText("worker-a died")
	r.scr.press(key(tcell.KeyEnter), key(tcell.KeyEnter))
	r.scr.waitForText(t, `"to" is required: name the agent the queued tasks go to, or untick "3 queued too"`)
	for _, id := range m.ids {
		if e, _ := m.api.entry(id); e.State != mailbox.TaskInFlight {
			t.Fatalf("after the refusal lease %s is %s; want untouched", short(id), e.State)
		}
	}
	// The focus is on "to": Shift-Tab twice reaches the box, Space unticks.
	r.scr.press(key(tcell.KeyBacktab), key(tcell.KeyBacktab), char(' '))
	f := r.scr.waitForText(t, "Requeue on 2 leases") // unticked, the title counts the leases only
	if !f.contains("Requeue 2 ") {
		t.Errorf("unticked, the button should count the leases only:\n%s", f)
	}
	r.scr.press(key(tcell.KeyTab), key(tcell.KeyTab), key(tcell.KeyTab), key(tcell.KeyEnter), key(tcell.KeyEnter))
	r.scr.waitForText(t, "requeued 2 leases")
	for _, id := range m.ids {
		if e, _ := m.api.entry(id); e.State != mailbox.TaskQueued || e.Task.Recipient != "worker-a@local" {
			t.Errorf("lease %s is %s for %s, want requeued for worker-a@local", short(id), e.State, e.Task.Recipient)
		}
	}
	for _, id := range m.queued {
		if a, _ := m.api.c.Audit(t.Context(), id, 1); len(a) != 0 {
			t.Errorf("queued task %s was repaired: %+v", short(id), a)
		}
	}
}

// On the Queue pane, the dead agent's queued tasks (shown alone with
// Enter on the Agents pane) are marked with * and canceled with E: each
// sender gets an error naming the reason; the one a colleague moved while
// the console was paused is refused and listed (queued for another agent
// now), and the others are canceled all the same.
func TestQueuedTasksCanceledInBulkAroundAConflict(t *testing.T) {
	t.Parallel()
	forSizes(t, func(t *testing.T, w, h int) {
		m := newBacklogMailbox(t)
		r := m.ready(t, w, h)
		r.scr.press(char('5'))
		r.scr.waitGone(t, "worker-a@local")
		r.scr.press(key(tcell.KeyEnter), char('1'))
		r.scr.waitForText(t, "agent:worker-a@local")
		r.scr.waitForText(t, "of 3 filtered from 3")
		r.scr.press(char('*'))
		f := r.scr.waitForText(t, "✓3 marked")
		if !f.contains("✓" + short(m.queued[0])) {
			t.Errorf("a marked queued task is not marked in its row:\n%s", f)
		}

		r.scr.press(char('p'))
		r.scr.waitForText(t, "paused (0 events held)")
		m.api.repair(mailbox.RepairRequest{TaskID: m.queued[1], Reason: "a colleague got there first",
			Command: mailbox.RepairCommand{Action: mailbox.ActionMove, QueuedFor: "worker-a@local", Recipient: "worker-b@local"}})
		r.scr.waitForText(t, "paused (1 events held)")

		r.scr.press(char('E'))
		f = r.scr.waitForText(t, "Cancel 3 queued tasks")
		for _, want := range []string{"3 queued tasks, the oldest queued", "queued for worker-a@local (3)", "its sender gets an error result", "Cancel 3 tasks", "Close"} {
			if !f.contains(want) {
				t.Errorf("the cancel dialog lacks %q:\n%s", want, f)
			}
		}
		r.scr.typeText("worker-a is gone")
		r.scr.press(key(tcell.KeyEnter), key(tcell.KeyEnter), key(tcell.KeyEnter)) // reason -> message -> Cancel 3 tasks
		f = r.scr.waitForText(t, "2 repaired, 1 refused: the task had changed")
		for _, want := range []string{"Canceled 2 of 3 queued tasks", "task " + short(m.queued[1]) + ": you saw it queued for worker-a@local.", "It is queued for worker-b@local now."} {
			if !f.contains(want) {
				t.Errorf("the outcome lacks %q:\n%s", want, f)
			}
		}
		for i, id := range m.queued {
			e, ok := m.api.entry(id)
			switch {
			case i == 1 && (!ok || e.State != mailbox.TaskQueued || e.Task.Recipient != "worker-b@local"):
				t.Errorf("the task moved meanwhile is %+v, want left queued for worker-b@local", e)
			case i != 1 && ok:
				t.Errorf("queued task %d is still %s, want canceled", i, e.State)
			}
		}
		results, err := m.api.c.RecentResults(t.Context(), 10)
		if err != nil {
			t.Fatal(err)
		}
		errs := 0
		for _, res := range results {
			if res.Status == mailbox.StatusError && strings.Contains(res.ErrorMessage, "worker-a is gone") && res.Sender == "planner@local" {
				errs++
			}
		}
		if errs != 2 {
			t.Errorf("the sender has %d errors naming the reason, want 2: %+v", errs, results)
		}
		r.scr.press(key(tcell.KeyEnter), char('p'))
		r.scr.waitForText(t, "resumed")
	})
}

// R on the Queue pane moves the selected task: "to" has the focus (a move
// has no default recipient), its completion is taken with Tab; the move
// keeps the task's place, so the new recipient leases it before its own
// newer work, and the Audit pane shows where it went.
func TestQueuedTaskMovedFromTheQueuePane(t *testing.T) {
	t.Parallel()
	m := newBacklogMailbox(t)
	newer := m.api.send("worker-b@local", "worker-b's own, sent later")
	r := m.ready(t, 160, 48)
	r.scr.press(char('1'))
	r.scr.waitForText(t, "<R> move")
	f := r.scr.waitFor(t, "the oldest queued task selected", func(f frame) bool { return inverted(f, short(m.queued[0])) })
	_ = f
	r.scr.press(char('R'))
	f = r.scr.waitForText(t, "Move queued task")
	for _, want := range []string{"queued for worker-a@local for 10m", "the new recipient (required)"} {
		if !f.contains(want) {
			t.Errorf("the move dialog lacks %q:\n%s", want, f)
		}
	}
	r.scr.typeText("worker-b")
	r.scr.waitFor(t, "the completion offered", completionShown("worker-b@local"))
	r.scr.press(key(tcell.KeyTab))
	r.scr.typeText("worker-a is gone")
	r.scr.press(key(tcell.KeyEnter), key(tcell.KeyEnter))
	r.scr.waitForText(t, "moved "+short(m.queued[0])+" to worker-b@local")
	if e, _ := m.api.entry(m.queued[0]); e.State != mailbox.TaskQueued || e.Task.Recipient != "worker-b@local" {
		t.Fatalf("the moved task is %s for %s", e.State, e.Task.Recipient)
	}
	if task, _ := m.api.lease("worker-b@local"); task.ID != m.queued[0] {
		t.Errorf("worker-b leased %s first, want the moved task %s ahead of its own %s", short(task.ID), short(m.queued[0]), short(newer))
	}
	r.scr.press(char('4'))
	r.scr.waitForText(t, "worker-a@local -> worker-b@local")
}

// The same around a conflict for a move: the marked queued tasks go to
// worker-c@local, but the one a colleague leased while the console was
// paused is refused and listed with the lease that took it.
func TestQueuedTasksMovedInBulkAroundAConflict(t *testing.T) {
	t.Parallel()
	m := newBacklogMailbox(t)
	r := m.ready(t, 160, 48)
	r.scr.press(char('5'))
	r.scr.waitGone(t, "worker-a@local")
	r.scr.press(key(tcell.KeyEnter), char('1'))
	r.scr.waitForText(t, "of 3 filtered from 3")
	r.scr.press(char('*'))
	r.scr.waitForText(t, "✓3 marked")
	r.scr.press(char('p'))
	r.scr.waitForText(t, "paused (0 events held)")
	// worker-a comes back for a moment and leases its oldest queued task.
	task, lease := m.api.lease("worker-a@local")
	if task.ID != m.queued[0] {
		t.Fatalf("worker-a leased %s, want its oldest queued task %s", short(task.ID), short(m.queued[0]))
	}
	r.scr.waitForText(t, "paused (1 events held)")

	r.scr.press(char('R'))
	r.scr.waitForText(t, "Move 3 queued tasks")
	r.scr.typeText("worker-c")
	r.scr.waitFor(t, "the completion offered", completionShown("worker-c@local"))
	r.scr.press(key(tcell.KeyTab))
	r.scr.typeText("worker-a is gone")
	r.scr.press(key(tcell.KeyEnter), key(tcell.KeyEnter))
	f := r.scr.waitForText(t, "2 repaired, 1 refused: the task had changed")
	for _, want := range []string{"Moved 2 of 3 queued tasks to worker-c@local", "task " + short(m.queued[0]) + ": you saw it queued for worker-a@local.",
		"It was leased by worker-a@local since", "lease " + short(lease.LeaseID)} {
		if !f.contains(want) {
			t.Errorf("the outcome lacks %q:\n%s", want, f)
		}
	}
	for i, id := range m.queued {
		e, _ := m.api.entry(id)
		switch {
		case i == 0 && (e.State != mailbox.TaskInFlight || e.LeaseID != lease.LeaseID):
			t.Errorf("the task leased meanwhile is %+v, want left in flight", e)
		case i != 0 && (e.State != mailbox.TaskQueued || e.Task.Recipient != "worker-c@local"):
			t.Errorf("queued task %d is %s for %s, want queued for worker-c@local", i, e.State, e.Task.Recipient)
		}
	}
}
