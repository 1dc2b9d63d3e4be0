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
	if f.contains("paused (") || !f.contains("[1] Queue 2 ") {
		t.Errorf("after resume: want live with both tasks:\n%s", f)
	}
}

func TestForceErrorOnALease(t *testing.T) {
	t.Parallel()
	d, c := startDaemon(t)
	api := agentAPI{t, c}
	id := api.send("worker-a@local", "download the changelog")
	api.lease("worker-a@local")
	r := runConsole(t, c, Options{Addr: d.URL(), Principal: "ops@local"})
	r.scr.waitForText(t, "download the changelog")
	if f := r.scr.waitForText(t, "as ops@local"); !f.contains("● live") {
		t.Errorf("header lacks the live state:\n%s", f)
	}

	// Esc cancels the dialog.
	r.scr.press(char('2'), char('E'))
	r.scr.waitForText(t, "Force an error result")
	r.scr.press(key(tcell.KeyEscape))
	r.scr.waitForNoText(t, "Force an error result")

	// Both fields are required; each refusal puts the focus on the field.
	r.scr.press(char('E'))
	r.scr.waitForText(t, "Force an error result")
	r.scr.press(key(tcell.KeyTab), key(tcell.KeyEnter)) // Cancel -> Force error
	r.scr.waitForText(t, "a reason is required")
	r.scr.typeText("worker is gone")
	r.scr.press(key(tcell.KeyTab), key(tcell.KeyTab), key(tcell.KeyTab), key(tcell.KeyEnter)) // -> message -> Cancel -> Force error
	r.scr.waitForText(t, "a message is required")
	r.scr.typeText("given up after the worker vanished")
	r.scr.press(key(tcell.KeyTab), key(tcell.KeyTab), key(tcell.KeyEnter))

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
	r.scr.press(key(tcell.KeyBacktab))
	r.scr.typeText("stuck")
	r.scr.press(key(tcell.KeyTab), key(tcell.KeyTab), key(tcell.KeyEnter))
	f := r.scr.waitForText(t, "repair of "+short(id)+" failed")
	y, x, _ := f.find("repair of")
	if fg, _, _ := f.styles[y][x].Decompose(); fg != tcell.ColorRed {
		t.Errorf("a failed repair flashes in %v, want red", fg)
	}
	if f.contains("Requeue task") {
		t.Errorf("the dialog stayed open after the failure:\n%s", f)
	}
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

	r.scr.press(key(tcell.KeyBacktab)) // Cancel -> reason
	r.scr.typeText("worker wedged")
	r.scr.press(key(tcell.KeyBacktab), key(tcell.KeyEnter)) // reason -> duplicate risk, open its list
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
