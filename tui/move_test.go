package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/mailroom/mailroom/mailbox"
)

// pressCreate presses the dialog's "Create new agent" button, tabs tabs
// from "to", where a refusal of an unknown agent leaves the cursor.
func pressCreate(r *running, tabs int) {
	for range tabs {
		r.scr.press(key(tcell.KeyTab))
	}
	r.scr.press(key(tcell.KeyEnter))
}

// A move must name an agent the mailbox knows. "to" completes from the
// known agents (the one heard from last first); a name nobody has heard
// of is not sent: the dialog names the close matches (a bare name matches
// name@domain), puts the cursor back in "to", and only its own "Create
// new agent" button, never focused by the dialog, confirms a new agent:
// the Enter that submitted, pressed again, refuses again.
func TestMoveToAnUnknownAgentIsConfirmed(t *testing.T) {
	t.Parallel()
	d, c := startDaemon(t)
	api := agentAPI{t, c}
	first := api.send("worker-a@local", "summarize the on-call notes")
	second := api.send("worker-a@local", "fetch the billing metrics")
	api.lease("worker-a@local")
	api.lease("worker-a@local")
	// worker-c and then worker-b poll, finding nothing: known agents,
	// worker-b heard from last; reviewer@local too.
	for _, a := range []string{"reviewer@local", "worker-c@local", "worker-b@local"} {
		if _, _, err := c.Lease(t.Context(), a); err != nil {
			t.Fatal(err)
		}
		// A later last-seen millisecond: real time has to pass, the
		// daemon stamps when it last saw an agent with its own clock.
		time.Sleep(2 * time.Millisecond)
	}

	r := runConsoleSized(t, c, Options{Addr: d.URL()}, 160, 50)
	r.scr.waitForText(t, short(second))

	// A typo: nothing sent; the dialog offers what it is close to.
	openRequeue(t, r, first)
	r.scr.press(key(tcell.KeyBacktab)) // reason -> to
	r.scr.typeText("worker-zz@local")
	r.scr.press(key(tcell.KeyTab))
	r.scr.typeText("worker-a is gone")
	r.scr.press(key(tcell.KeyEnter), key(tcell.KeyEnter))
	f := r.scr.waitForText(t, "worker-zz@local is not an agent the mailbox knows")
	wantContains(t, "the warning", dialogText(f), "Did you mean worker-a@local, worker-b@local, worker-c@local?", "press Create new agent to hand the work to worker-zz@local")
	if e, _ := api.entry(first); e.State != mailbox.TaskInFlight || e.LeasedTo != "worker-a@local" {
		t.Fatalf("after the warning the task is %+v; want it untouched", e)
	}
	// The cursor is back in "to": Enter to the reason, to the button and
	// on it, the submitting keys, refuse again, and still send nothing.
	r.scr.press(key(tcell.KeyEnter), key(tcell.KeyEnter), key(tcell.KeyEnter))
	r.scr.waitForText(t, "Still: worker-zz@local is not an agent the mailbox knows")
	if e, _ := api.entry(first); e.State != mailbox.TaskInFlight || e.LeasedTo != "worker-a@local" {
		t.Fatalf("after Enter again the task is %+v; want it untouched", e)
	}
	r.scr.press(key(tcell.KeyEscape))
	r.scr.waitForNoText(t, "Requeue task")

	// A bare name's typo: reveiwer is close to reviewer@local.
	openRequeue(t, r, first)
	r.scr.press(key(tcell.KeyBacktab))
	r.scr.typeText("reveiwer")
	r.scr.press(key(tcell.KeyTab))
	r.scr.typeText("worker-a is gone")
	r.scr.press(key(tcell.KeyEnter), key(tcell.KeyEnter))
	f = r.scr.waitForText(t, "reveiwer is not an agent the mailbox knows")
	wantContains(t, "the warning", dialogText(f), "Did you mean reviewer@local")
	for range len("reveiwer") {
		r.scr.press(key(tcell.KeyBackspace2))
	}

	// "to" has the cursor: "worker-" completes to the known agents, the
	// one heard from last first; Tab takes it.
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

	// Confirmed with its own button, a new agent it is.
	r.scr.waitForText(t, "[2] Leases 1 of 1") // the moved one is gone from the pane
	openRequeue(t, r, second)
	r.scr.press(key(tcell.KeyBacktab))
	r.scr.typeText("brand-new@local")
	r.scr.press(key(tcell.KeyTab))
	r.scr.typeText("a new agent takes over")
	r.scr.press(key(tcell.KeyEnter), key(tcell.KeyEnter))
	r.scr.waitForText(t, "brand-new@local is not an agent the mailbox knows")
	pressCreate(r, 4) // to -> reason -> Requeue -> Cancel -> Create new agent
	r.scr.waitForText(t, "requeued "+short(second)+" to brand-new@local")
	if e, _ := api.entry(second); e.State != mailbox.TaskQueued || e.Task.Recipient != "brand-new@local" {
		t.Fatalf("the task is %s for %s; want queued for brand-new@local", e.State, e.Task.Recipient)
	}
}

// dialogText is the text inside the open dialog's borders, its lines
// joined, so a message wrapped over lines reads as one.
func dialogText(f frame) string {
	var b strings.Builder
	for _, l := range f.lines {
		first, last := strings.Index(l, "║"), strings.LastIndex(l, "║")
		if first < 0 || first == last {
			continue
		}
		in := l[first+len("║") : last]
		b.WriteString(strings.TrimSpace(in))
		if !strings.HasSuffix(in, "-  ") && !strings.HasSuffix(strings.TrimSpace(in), "-") {
			b.WriteString(" ")
		}
	}
	return b.String()
}
