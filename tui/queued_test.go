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
