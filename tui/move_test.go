package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/mailroom/mailroom/mailbox"
)

// A move must name an agent the mailbox knows. "to" completes from the
// known agents (the one heard from last first); a name nobody has heard
// of is not sent at once: the dialog names the close matches and takes a
// second press as the confirmation of a new agent.
func TestMoveToAnUnknownAgentIsConfirmed(t *testing.T) {
	t.Parallel()
	d, c := startDaemon(t)
	api := agentAPI{t, c}
	first := api.send("worker-a@local", "summarize the on-call notes")
	second := api.send("worker-a@local", "fetch the billing metrics")
	api.lease("worker-a@local")
	api.lease("worker-a@local")
	// worker-c and then worker-b poll, finding nothing: known agents,
	// worker-b heard from last.
	for _, a := range []string{"worker-c@local", "worker-b@local"} {
		if _, _, err := c.Lease(t.Context(), a); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond) // a later last-seen millisecond
	}

	r := runConsoleSized(t, c, Options{Addr: d.URL()}, 160, 50)
	r.scr.waitForText(t, short(second))

	// A typo: nothing sent; the dialog offers what it is close to.
	f := openRequeue(t, r, first)
	r.scr.press(key(tcell.KeyBacktab)) // reason -> to
	r.scr.typeText("worker-zz@local")
	r.scr.press(key(tcell.KeyTab))
	r.scr.typeText("worker-a is gone")
	r.scr.press(key(tcell.KeyEnter), key(tcell.KeyEnter))
	f = r.scr.waitForText(t, "worker-zz@local is not an agent the mailbox knows")
	wantContains(t, "the warning", strings.Join(f.lines, " "), "Did you mean worker-a@local, worker-b@local, worker-c@local?", "Requeue again to hand the work to this new agent")
	if e, _ := api.entry(first); e.State != mailbox.TaskInFlight || e.LeasedTo != "worker-a@local" {
		t.Fatalf("after the warning the task is %+v; want it untouched", e)
	}

	// Back to "to": "worker-" completes to the known agents, the one
	// heard from last first; Tab takes it.
	r.scr.press(key(tcell.KeyBacktab), key(tcell.KeyBacktab)) // button -> reason -> to
	for range len("worker-zz@local") {
		r.scr.press(key(tcell.KeyBackspace2))
	}
	r.scr.typeText("worker-")
	// The completion list is drawn over the dialog, below "to".
	inDialog := func(f frame, agent string) int {
		for y, l := range f.lines {
			if strings.Contains(l, "║") && strings.Contains(l, agent) && !strings.Contains(l, "to ") {
				return y
			}
		}
		return -1
	}
	f = r.scr.waitFor(t, "the completions", func(f frame) bool { return inDialog(f, "worker-b@local") > 0 && inDialog(f, "worker-c@local") > 0 })
	if b, c := inDialog(f, "worker-b@local"), inDialog(f, "worker-c@local"); b > c {
		t.Fatalf("the completions list worker-c@local above worker-b@local (heard from last):\n%s", f)
	}
	// Tab takes the completion and goes on to the reason, as a shell's
	// Tab: Enter to the button, Enter to requeue.
	r.scr.press(key(tcell.KeyTab))
	r.scr.waitForText(t, "to             worker-b@local")
	r.scr.press(key(tcell.KeyEnter), key(tcell.KeyEnter))
	r.scr.waitForText(t, "requeued "+short(first)+" to worker-b@local")
	if e, _ := api.entry(first); e.State != mailbox.TaskQueued || e.Task.Recipient != "worker-b@local" {
		t.Fatalf("the task is %s for %s; want queued for worker-b@local, the completion taken", e.State, e.Task.Recipient)
	}

	// Confirmed twice, a new agent it is.
	r.scr.waitForText(t, "[2] Leases 1 of 1") // the moved one is gone from the pane
	openRequeue(t, r, second)
	r.scr.press(key(tcell.KeyBacktab))
	r.scr.typeText("brand-new@local")
	r.scr.press(key(tcell.KeyTab))
	r.scr.typeText("a new agent takes over")
	r.scr.press(key(tcell.KeyEnter), key(tcell.KeyEnter))
	r.scr.waitForText(t, "brand-new@local is not an agent the mailbox knows")
	r.scr.press(key(tcell.KeyEnter))
	r.scr.waitForText(t, "requeued "+short(second)+" to brand-new@local")
	if e, _ := api.entry(second); e.State != mailbox.TaskQueued || e.Task.Recipient != "brand-new@local" {
		t.Fatalf("the task is %s for %s; want queued for brand-new@local", e.State, e.Task.Recipient)
	}
}
