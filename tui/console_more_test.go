package tui

import (
	"context"
	"strings"
	"testing"

	"github.com/gdamore/tcell/v2"

	"github.com/mailroom/mailroom/mailbox"
)

func TestSelectionFollowsTheTask(t *testing.T) {
	t.Parallel()
	d, c := startDaemon(t)
	api := agentAPI{t, c}
	first := api.send("worker-a@local", "first task")
	second := api.send("worker-a@local", "second task")
	api.send("worker-a@local", "third task")
	r := runConsole(t, c, Options{Addr: d.URL()})
	r.scr.waitForText(t, "third task")

	r.scr.press(char('j'), key(tcell.KeyEnter)) // the second row
	r.scr.waitForText(t, "Task "+second)
	r.scr.press(key(tcell.KeyEscape))
	r.scr.waitForNoText(t, "Task "+second)

	// The first task leaves the queue: the second moves up a row and stays selected.
	api.lease("worker-a@local")
	r.scr.waitFor(t, "the first task leased", func(f frame) bool {
		return strings.Contains(f.lineWith(short(first)), "worker-a@local   ") || f.contains("queued 2   in flight 1")
	})
	r.scr.press(key(tcell.KeyEnter))
	r.scr.waitForText(t, "Task "+second)
}

func TestDetailViewShowsHistoryAndFamily(t *testing.T) {
	t.Parallel()
	d, c := startDaemon(t)
	api := agentAPI{t, c}
	parent := api.send("worker-a@local", "plan the launch", withKind("plan"))
	child := api.send("worker-b@local", "write the announcement", withParent(parent))
	_, lease := api.lease("worker-a@local")
	r := runConsole(t, c, Options{Addr: d.URL()})
	r.scr.waitForText(t, "write the announcement")

	r.scr.press(char('2'), key(tcell.KeyEnter))
	f := r.scr.waitForText(t, "Task "+parent)
	for _, want := range []string{"Lease history", "task_sent", "task_leased", short(lease.LeaseID),
		"children " + child, "parent -", `"intent_text": "plan the launch"`, "state in_flight"} {
		if !f.contains(want) {
			t.Errorf("detail view lacks %q:\n%s", want, f)
		}
	}
	r.scr.press(key(tcell.KeyEscape))
	r.scr.waitForNoText(t, "Lease history")

	r.scr.press(char('1'), key(tcell.KeyEnter))
	f = r.scr.waitForText(t, "Task "+child)
	if !f.contains("parent " + parent) {
		t.Errorf("child's detail lacks its parent:\n%s", f)
	}
}

// The detail view shows every id in full and links the parent and each
// child: Tab moves between them, Enter opens one, Esc goes back.
func TestDetailViewOpensParentAndChildren(t *testing.T) {
	t.Parallel()
	d, api := startMailbox(t)
	parent := api.send("worker-a@local", "plan the launch")
	child1 := api.send("worker-b@local", "write the announcement", withParent(parent))
	child2 := api.send("worker-c@local", "book the venue", withParent(parent))
	_, lease := api.lease("worker-a@local")
	forSizes(t, func(t *testing.T, w, h int) {
		r := runConsoleSized(t, api.c, Options{Addr: d.URL()}, w, h)
		r.scr.waitForText(t, short(child2))
		r.scr.press(char('2'), key(tcell.KeyEnter))
		f := r.scr.waitForText(t, "Task "+parent)
		for _, want := range []string{lease.LeaseID, "children " + child1, "         " + child2, "parent -", "<Tab> next link"} {
			if !f.contains(want) {
				t.Errorf("the detail view lacks %q in full:\n%s", want, f)
			}
		}
		if !inverted(f, child1) || inverted(f, child2) {
			t.Errorf("the first child should be the highlighted link:\n%s", f)
		}

		r.scr.press(key(tcell.KeyEnter))
		f = r.scr.waitForText(t, "Task "+child1)
		if !f.contains("parent " + parent) {
			t.Errorf("the child's detail lacks its parent:\n%s", f)
		}
		r.scr.press(key(tcell.KeyEscape))
		r.scr.waitForText(t, "Task "+parent)
		r.scr.press(key(tcell.KeyTab), key(tcell.KeyEnter))
		r.scr.waitForText(t, "Task "+child2)
		r.scr.press(key(tcell.KeyEnter)) // its one link: the parent
		r.scr.waitForText(t, "Task "+parent)
		r.scr.press(key(tcell.KeyEscape))
		r.scr.waitForText(t, "Task "+child2)
		r.scr.press(key(tcell.KeyEscape))
		r.scr.waitForText(t, "Task "+parent)
		r.scr.press(key(tcell.KeyEscape))
		f = r.scr.waitForNoText(t, "Task ")
		if !strings.Contains(f.lines[len(f.lines)-1], "<R> requeue") {
			t.Errorf("the last Esc should be back on the Leases pane:\n%s", f)
		}
	})
}

func TestPauseHoldsUpdatesUntilResumed(t *testing.T) {
	t.Parallel()
	d, c := startDaemon(t)
	api := agentAPI{t, c}
	api.send("worker-a@local", "before the pause")
	r := runConsole(t, c, Options{Addr: d.URL()})
	r.scr.waitForText(t, "before the pause")

	r.scr.press(char('p'))
	r.scr.waitForText(t, "paused (0 events held)")
	api.send("worker-a@local", "while paused")
	f := r.scr.waitForText(t, "paused (1 events held)")
	if f.contains("while paused") {
		t.Errorf("a paused console shows a new task:\n%s", f)
	}

	r.scr.press(char('p'))
	f = r.scr.waitForText(t, "while paused")
	if f.contains("paused (") || !f.contains("[1] Queue 1-2 of 2 ") {
		t.Errorf("after resume: want live with both tasks:\n%s", f)
	}
}

func TestForceErrorOnALease(t *testing.T) {
	t.Parallel()
	d, c := startAuthDaemon(t)
	api := agentAPI{t, c}
	id := api.send("worker-a@local", "download the changelog")
	api.lease("worker-a@local")
	r := runConsole(t, c, Options{Addr: d.URL()})
	r.scr.waitForText(t, "download the changelog")
	if f := r.scr.waitForText(t, "as oncall-ann"); !f.contains("● live") {
		t.Errorf("header lacks the live state:\n%s", f)
	}

	// Esc cancels the dialog.
	r.scr.press(char('2'), char('E'))
	r.scr.waitForText(t, "Force an error result")
	r.scr.press(key(tcell.KeyEscape))
	r.scr.waitForNoText(t, "Force an error result")

	// Both fields are required; each refusal puts the focus on the field.
	// The focus starts in the reason; Enter moves on to the message, then
	// to Force error, and presses it.
	r.scr.press(char('E'))
	r.scr.waitForText(t, "Force an error result")
	r.scr.press(key(tcell.KeyEnter), key(tcell.KeyEnter), key(tcell.KeyEnter))
	r.scr.waitForText(t, "a reason is required")
	r.scr.typeText("worker is gone")
	r.scr.press(key(tcell.KeyEnter), key(tcell.KeyEnter), key(tcell.KeyEnter)) // -> message -> Force error, press it
	r.scr.waitForText(t, "a message is required")
	r.scr.typeText("given up after the worker vanished")
	r.scr.press(key(tcell.KeyEnter), key(tcell.KeyEnter))

	r.scr.waitForText(t, "forced error on "+short(id))
	f := r.scr.waitFor(t, "the forced result in the Results pane", func(f frame) bool { return f.contains("error (forced)") })
	if !strings.Contains(f.lineWith("error (forced)"), "given up after the worker vanished") {
		t.Errorf("the Results pane lacks the forced message:\n%s", f)
	}
	view, err := c.Queue(context.Background(), mailbox.QueueFilter{})
	if err != nil || len(view.Results) != 1 || !view.Results[0].Forced || view.Results[0].ErrorMessage != "given up after the worker vanished" {
		t.Errorf("daemon results = %+v, %v; want the one forced error", view.Results, err)
	}
}

// A repair that cannot reach the daemon flashes red and keeps the dialog
// open with everything typed, the error in full, to send again.
func TestRepairAgainstAStoppedDaemonFlashesRed(t *testing.T) {
	t.Parallel()
	d, c := startDaemon(t)
	api := agentAPI{t, c}
	id := api.send("worker-a@local", "classify the tickets")
	api.lease("worker-a@local")
	r := runConsole(t, c, Options{Addr: d.URL()})
	r.scr.waitForText(t, "classify the tickets")
	openRequeue(t, r, id)
	d.Stop()
	r.scr.typeText("stuck")
	r.scr.press(key(tcell.KeyEnter), key(tcell.KeyEnter))
	f := r.scr.waitFor(t, "the failure flashed", func(f frame) bool {
		return strings.HasPrefix(strings.TrimSpace(f.lines[len(f.lines)-2]), "repair of "+short(id)+" failed")
	})
	y := len(f.lines) - 2
	_, x, _ := frame{lines: f.lines[y:]}.find("repair of")
	if fg, _, _ := f.styles[y][x].Decompose(); fg != tcell.ColorRed {
		t.Errorf("a failed repair flashes in %v, want red", fg)
	}
	if !f.contains("Requeue task") || !f.contains("stuck") || !f.contains("cannot reach") {
		t.Errorf("the dialog should stay open with the reason typed and the whole error:\n%s", f)
	}
	// The dialog says the console is not connected any more.
	r.scr.waitForText(t, "Not connected to the daemon")

	// The daemon is back: Enter on Requeue (it kept the focus) sends again.
	d.Restart()
	r.scr.waitForText(t, "● live")
	r.scr.press(key(tcell.KeyEnter))
	r.scr.waitForText(t, "requeued "+short(id)+" (attempt 1)")
}

// TestEscClosesAnOpenListBeforeTheDialog: in the requeue dialog, Esc on the
// open duplicate-risk list closes the list and keeps what the operator has
// typed; only a second Esc cancels the dialog, and nothing is repaired.
func TestEscClosesAnOpenListBeforeTheDialog(t *testing.T) {
	t.Parallel()
	d, c := startDaemon(t)
	api := agentAPI{t, c}
	id := api.send("worker-a@local", "classify the feedback", idempotent("classify:feedback"))
	_, lease := api.lease("worker-a@local")
	r := runConsole(t, c, Options{Addr: d.URL()})
	r.scr.waitForText(t, "classify the feedback")
	openRequeue(t, r, id)

	r.scr.typeText("worker wedged")                                                // the reason has the focus
	r.scr.press(key(tcell.KeyBacktab), key(tcell.KeyBacktab), key(tcell.KeyEnter)) // reason -> to -> duplicate risk, open its list
	r.scr.waitFor(t, "the open duplicate-risk list", func(f frame) bool {
		return strings.Count(f.String(), "operator_accepted") == 1 && strings.Count(f.String(), "idempotent") >= 2
	})
	r.scr.press(key(tcell.KeyEscape))
	f := r.scr.waitFor(t, "the list closed", func(f frame) bool { return !strings.Contains(f.String(), "operator_accepted") })
	if !f.contains("Requeue task") || !f.contains("worker wedged") {
		t.Fatalf("Esc on the open list closed the dialog or lost the reason:\n%s", f)
	}

	r.scr.press(key(tcell.KeyEscape))
	r.scr.waitForNoText(t, "Requeue task")
	if e, _ := api.entry(id); e.State != mailbox.TaskInFlight || e.LeaseID != lease.LeaseID {
		t.Errorf("after Esc, Esc the task is %+v, want still leased under %s", e, lease.LeaseID)
	}
}
