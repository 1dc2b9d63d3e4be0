package tui

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/internal/testclock"
	"github.com/mailroom/mailroom/mailbox"
)

const staleAfterForTests = time.Minute

// staleMailbox runs a daemon on a test clock with four stale leases,
// held by worker-a and worker-b alternately, oldest first, and one fresh
// lease held by worker-c.
type staleMailbox struct {
	d      *daemontest.Daemon
	api    agentAPI
	clk    *testclock.Clock
	ids    []string // the stale leases' tasks, oldest first
	leases []string // their lease ids
	fresh  string
}

func newStaleMailbox(t *testing.T) staleMailbox {
	t.Helper()
	clk := &testclock.Clock{}
	clk.Set(time.Now())
	d := daemontest.Start(t, daemontest.Options{Now: clk.Now})
	m := staleMailbox{d: d, api: agentAPI{t, newClient(t, d.URL())}, clk: clk}
	for i, w := range []string{"worker-a@local", "worker-b@local", "worker-a@local", "worker-b@local"} {
		m.ids = append(m.ids, m.api.send(w, "crunch batch "+string(rune('A'+i))))
		clk.Set(clk.Now().Add(time.Second))
		_, lease := m.api.lease(w)
		m.leases = append(m.leases, lease.LeaseID)
	}
	clk.Set(clk.Now().Add(10 * time.Minute))
	m.fresh = m.api.send("worker-c@local", "fresh work")
	m.api.lease("worker-c@local")
	return m
}

func (m staleMailbox) console(t *testing.T, w, h int, opts Options) *running {
	t.Helper()
	opts.Addr, opts.Now, opts.StaleAfter = m.d.URL(), m.clk.Now, staleAfterForTests
	r := runConsoleSized(t, m.api.c, opts, w, h)
	r.scr.waitForText(t, "stale 4")
	r.scr.press(char('2'))
	r.scr.waitForText(t, "<R> requeue") // the daemon said the token may
	return r
}

// Space marks a lease, * every lease the pane shows; R
// with marks opens one dialog for all of them, and each repair is guarded
// by its own lease id: the one lease that changed unseen (the console was
// paused) is refused and listed, the others are requeued.
func TestMarkedLeasesAreRequeuedTogether(t *testing.T) {
	t.Parallel()
	forSizes(t, func(t *testing.T, w, h int) {
		m := newStaleMailbox(t)
		r := m.console(t, w, h, Options{})

		// Mark every stale lease: stale-only first, so the fresh one is not.
		r.scr.press(char('!'))
		r.scr.waitForText(t, "!stale-only")
		r.scr.press(char('*'))
		f := r.scr.waitForText(t, "✓4 marked")
		if !f.contains("✓" + short(m.ids[0])) {
			t.Errorf("a marked lease is not marked in its row:\n%s", f)
		}
		r.scr.press(char(' '))
		f = r.scr.waitForText(t, "✓3 marked")
		if f.contains("✓" + short(m.ids[0])) {
			t.Errorf("Space did not unmark the selected lease:\n%s", f)
		}
		r.scr.press(char(' '))
		r.scr.waitForText(t, "✓4 marked")

		// Paused, the console does not see another operator requeue the
		// second lease and worker-b lease it again.
		r.scr.press(char('p'))
		r.scr.waitForText(t, "paused (0 events held)")
		m.api.repair(mailbox.RepairRequest{TaskID: m.ids[1], Reason: "someone else",
			Command: mailbox.RepairCommand{Action: mailbox.ActionRequeue, LeaseID: m.leases[1], DuplicateRisk: mailbox.RiskOperatorAccepted}})
		_, again := m.api.lease("worker-b@local")
		r.scr.waitForText(t, "paused (2 events held)")

		r.scr.press(char('R'))
		f = r.scr.waitForText(t, "Requeue on 4 leases")
		for _, want := range []string{"4 leases, the oldest held 10m03s", "worker-a@local (2), worker-b@local (2)",
			"4 of 4 tasks are unsafe", "Paused, 2 events held", "operator_accepted", "Requeue 4", "Cancel"} {
			if !f.contains(want) {
				t.Errorf("the dialog for 4 leases lacks %q:\n%s", want, f)
			}
		}
		r.scr.typeText("workers crashed")
		r.scr.press(key(tcell.KeyEnter), key(tcell.KeyEnter))
		f = r.scr.waitForText(t, "3 repaired, 1 refused")
		for _, want := range []string{"Requeued 3 of 4 leases", "task " + short(m.ids[1]) + ": you inspected lease " + short(m.leases[1]),
			"The current lease is " + short(again.LeaseID) + ", held by worker-b@local", "(attempt 2)"} {
			if !f.contains(want) {
				t.Errorf("the outcome lacks %q:\n%s", want, f)
			}
		}

		// The daemon: three requeued, each guarded by the lease seen; the
		// fourth still leased under its new lease.
		for i, id := range m.ids {
			e, _ := m.api.entry(id)
			want := mailbox.TaskQueued
			if i == 1 {
				want = mailbox.TaskInFlight
			}
			if e.State != want {
				t.Errorf("task %d is %s, want %s", i, e.State, want)
			}
		}
		audit, err := m.api.c.Audit(context.Background(), "", 10)
		if err != nil {
			t.Fatal(err)
		}
		guarded := map[string]string{}
		for _, a := range audit {
			if a.Reason == "workers crashed" {
				guarded[a.TaskID] = a.LeaseID
			}
		}
		for _, i := range []int{0, 2, 3} {
			if guarded[m.ids[i]] != m.leases[i] {
				t.Errorf("task %d was repaired under lease %q, want the lease seen %s", i, guarded[m.ids[i]], m.leases[i])
			}
		}
		if len(guarded) != 3 {
			t.Errorf("%d repairs with the reason, want 3: %+v", len(guarded), guarded)
		}

		// OK, resume, Esc: the marks went with the leases they were on.
		r.scr.press(key(tcell.KeyEnter), char('p'), key(tcell.KeyEscape))
		f = r.scr.waitFor(t, "the two leases left", func(f frame) bool {
			_, _, n, _ := shownRange(f, "[2] Leases")
			return n == 2 && !f.contains("paused")
		})
		if f.contains("marked") || !f.contains(short(again.LeaseID)) {
			t.Errorf("after the repair the Leases pane should hold the re-leased and the fresh lease, unmarked:\n%s", f)
		}
	})
}

// If the inspected lease changes while its dialog is open, the dialog says
// so at once, what the lease is now, and offers no confirm any more.
func TestDialogSaysWhenItsLeaseChanges(t *testing.T) {
	t.Parallel()
	forSizes(t, func(t *testing.T, w, h int) {
		d, api := startMailbox(t)
		id := api.send("worker-a@local", "reindex the search cluster")
		_, first := api.lease("worker-a@local")
		r := runConsoleSized(t, api.c, Options{Addr: d.URL()}, w, h)
		r.scr.waitForText(t, short(first.LeaseID))
		openRequeue(t, r, id)
		r.scr.typeText("stuck")
		r.scr.waitForText(t, "stuck")

		other := newClient(t, d.URL())
		agentAPI{t, other}.repair(mailbox.RepairRequest{TaskID: id, Reason: "someone else",
			Command: mailbox.RepairCommand{Action: mailbox.ActionRequeue, LeaseID: first.LeaseID, DuplicateRisk: mailbox.RiskOperatorAccepted}})
		f := r.scr.waitForText(t, "now: no lease")
		if !f.contains("The lease changed while this dialog was open") || !f.contains(short(first.LeaseID)) {
			t.Errorf("the dialog does not say the lease changed:\n%s", f)
		}
		_, second := agentAPI{t, other}.lease("worker-a@local")
		f = r.scr.waitForText(t, "now: lease "+short(second.LeaseID)+", held by worker-a@local")
		if !f.contains("(attempt 2)") {
			t.Errorf("the dialog does not say who holds the lease now:\n%s", f)
		}
		if l := f.lineWith("Cancel"); strings.Contains(l, "Requeue") {
			t.Errorf("the dialog still offers to requeue: %q\n%s", l, f)
		}
		if !f.contains("stuck") {
			t.Errorf("the dialog lost the reason typed:\n%s", f)
		}
		// Enter, Enter: to Cancel and out; nothing repaired.
		r.scr.press(key(tcell.KeyEnter), key(tcell.KeyEnter))
		r.scr.waitForNoText(t, "Requeue task")
		if e, _ := api.entry(id); e.LeaseID != second.LeaseID || e.Attempt != 2 {
			t.Errorf("the task is %+v, want still leased under %s", e, second.LeaseID)
		}
	})
}

// At 80x24 every dialog shows all its fields and buttons and the full
// lease id, a paused console says so in the dialog, and an error is shown
// whole, wrapped, with the dialog still usable.
func TestDialogsFitAn80x24Screen(t *testing.T) {
	t.Parallel()
	d, api := startMailbox(t)
	agent := "build-agent-" + strings.Repeat("y", 69) + "@ci.local"
	long := strings.Repeat("summarize every incident of the quarter and ", 12)
	id := api.send(agent, long)
	_, lease := api.lease(agent)
	other := api.send("worker-a@local", "another")
	api.lease("worker-a@local")
	r := runConsoleSized(t, api.c, Options{Addr: d.URL()}, 80, 24)
	r.scr.waitForText(t, short(other))
	openRequeue(t, r, id)

	fits := func(what string, want ...string) frame {
		t.Helper()
		f := r.scr.waitForText(t, want[0])
		for _, w := range want[1:] {
			if !f.contains(w) {
				t.Errorf("the %s dialog at 80x24 lacks %q:\n%s", what, w, f)
			}
		}
		return f
	}
	fits("requeue", "Requeue task", "duplicate risk", "reason", "Requeue ", "Cancel", "lease     "+lease.LeaseID, "task      "+id, "unsafe task")
	r.scr.press(key(tcell.KeyEscape), char('E'))
	fits("force error", "Force an error result", "reason", "message", "Force error ", "Cancel", lease.LeaseID)
	r.scr.press(key(tcell.KeyEscape), char('*'), char('p'), char('R'))
	fits("requeue of many", "Requeue on 2 leases", "2 leases, the oldest held", "holders ", "Paused, 0 events held", "duplicate risk", "reason", "Requeue 2", "Cancel")
	r.scr.press(key(tcell.KeyEscape), char('p'), key(tcell.KeyEscape))
	r.scr.waitForNoText(t, "marked")

	// The daemon goes away: the error, long, is shown whole in the dialog.
	openRequeue(t, r, id)
	d.Stop()
	r.scr.typeText("stuck")
	r.scr.press(key(tcell.KeyEnter), key(tcell.KeyEnter))
	f := fits("failed requeue", "failed:", "Requeue ", "Cancel", "stuck")
	var dialog strings.Builder
	for _, l := range f.lines {
		if strings.HasPrefix(l, "║") {
			dialog.WriteString(strings.TrimSpace(strings.Trim(l, "║")) + " ")
		}
	}
	if want := d.Addr() + ": dial tcp " + d.Addr(); !strings.Contains(dialog.String(), "cannot reach mailroom daemon at") ||
		!strings.Contains(dialog.String(), want) || !strings.Contains(dialog.String(), "connection refused") {
		t.Errorf("the dialog does not show the whole error (cannot reach ... %q ... connection refused):\n%s", want, f)
	}
}

// The targets, counted: the oldest stale lease requeued in at most
// four keys plus the reason (2 R <reason> Enter Enter); the next with the
// reason offered again, R Enter Enter; every stale lease at once in six
// (2 ! * R <reason> Enter Enter).
func TestKeystrokeTargets(t *testing.T) {
	t.Parallel()
	type step struct {
		keys   []*tcell.EventKey
		reason string
	}
	count := func(s step) int { return len(s.keys) }
	run := func(t *testing.T, r *running, s step) {
		t.Helper()
		for _, k := range s.keys {
			if k == nil {
				r.scr.typeText(s.reason)
				continue
			}
			r.scr.press(k)
		}
	}
	enter := key(tcell.KeyEnter)

	t.Run("oldest stale lease", func(t *testing.T) {
		m := newStaleMailbox(t)
		r := m.consoleReady(t, 80, 24)
		first := step{keys: []*tcell.EventKey{char('2'), char('R'), nil, enter, enter}, reason: "worker-a crashed"}
		run(t, r, first)
		r.scr.waitForText(t, "requeued "+short(m.ids[0])+" (attempt 1)")
		if n := count(first) - 1; n > 4 {
			t.Errorf("the oldest stale lease took %d keys and the reason, want at most 4", n)
		}
		if e, _ := m.api.entry(m.ids[0]); e.State != mailbox.TaskQueued {
			t.Errorf("the oldest stale lease is %s, want requeued", e.State)
		}

		// The next oldest is now first; the reason is offered again.
		r.scr.waitFor(t, "the next lease first", func(f frame) bool { return inverted(f, short(m.ids[1])) })
		r.scr.press(char('R'))
		f := r.scr.waitForText(t, "Requeue task")
		if !f.contains("worker-a crashed") || !f.contains("The reason is offered again from your last requeue of leases") {
			t.Errorf("the last reason is not offered again, shown as such:\n%s", f)
		}
		r.scr.press(enter, enter) // R Enter Enter: three keys
		r.scr.waitForText(t, "requeued "+short(m.ids[1])+" (attempt 1)")
		audit, err := m.api.c.Audit(t.Context(), m.ids[1], 1)
		if err != nil || len(audit) != 1 || audit[0].Reason != "worker-a crashed" || audit[0].LeaseID != m.leases[1] {
			t.Errorf("the second repair is recorded as %+v, %v", audit, err)
		}

		// Another kind of repair is not offered the requeue's reason: a
		// force error starts empty, and says nothing of it.
		r.scr.waitFor(t, "the next lease first", func(f frame) bool { return inverted(f, short(m.ids[2])) })
		r.scr.press(char('E'))
		f = r.scr.waitForText(t, "Force an error result")
		if dt := dialogText(f); strings.Contains(dt, "worker-a crashed") || strings.Contains(dt, "offered again") {
			t.Errorf("a force error is offered the requeue's reason:\n%s", f)
		}
		r.scr.press(key(tcell.KeyEscape))
	})

	t.Run("every stale lease", func(t *testing.T) {
		m := newStaleMailbox(t)
		r := m.consoleReady(t, 80, 24)
		all := step{keys: []*tcell.EventKey{char('2'), char('!'), char('*'), char('R'), nil, enter, enter}, reason: "the workers died"}
		run(t, r, all)
		r.scr.waitForText(t, "requeued 4 leases")
		if n := count(all) - 1; n > 6 {
			t.Errorf("every stale lease took %d keys and the reason, want at most 6", n)
		}
		for i, id := range m.ids {
			if e, _ := m.api.entry(id); e.State != mailbox.TaskQueued {
				t.Errorf("stale lease %d is %s, want requeued", i, e.State)
			}
		}
		if e, _ := m.api.entry(m.fresh); e.State != mailbox.TaskInFlight {
			t.Errorf("the fresh lease is %s, want left alone", e.State)
		}
	})
}

// consoleReady runs a console and waits until an operator could act: the
// leases are on screen and the daemon has said what the token may do.
func (m staleMailbox) consoleReady(t *testing.T, w, h int) *running {
	t.Helper()
	r := runConsoleSized(t, m.api.c, Options{Addr: m.d.URL(), Now: m.clk.Now, StaleAfter: staleAfterForTests}, w, h)
	r.scr.waitForText(t, "stale 4")
	r.scr.waitForText(t, "no auth")
	return r
}

// failingOnce fails the n-th repair as an unreachable daemon would.
type failingOnce struct {
	*fakeBackend
	mu    sync.Mutex
	calls int
	n     int
}

func (f *failingOnce) Repair(ctx context.Context, req mailbox.RepairRequest) (mailbox.RepairOutcome, error) {
	f.mu.Lock()
	f.calls++
	fail := f.calls == f.n
	f.mu.Unlock()
	if fail {
		return mailbox.RepairOutcome{}, errors.New("cannot reach mailroom daemon at fake.invalid: connection reset by peer")
	}
	return f.fakeBackend.Repair(ctx, req)
}

// A failure half-way through a repair of many keeps the dialog open on the
// leases not yet repaired, with the reason and the whole error; Enter on
// the confirm button sends the rest.
func TestRepairOfManyResumesAfterAFailure(t *testing.T) {
	src := newSource(t)
	var ids []string
	for _, w := range []string{"worker-a@local", "worker-b@local", "worker-c@local"} {
		ids = append(ids, src.send(w).Task.ID)
		src.lease(w)
	}
	fb := &failingOnce{fakeBackend: newFakeBackend(src), n: 2}
	r := runConsoleSized(t, fb, Options{}, 80, 24)
	r.scr.waitForText(t, "in flight 3")
	r.scr.press(char('2'))
	r.scr.waitForText(t, "<R> requeue")
	r.scr.press(char('*'), char('R'))
	r.scr.waitForText(t, "Requeue on 3 leases")
	r.scr.typeText("workers restarted")
	r.scr.press(key(tcell.KeyEnter), key(tcell.KeyEnter))
	f := r.scr.waitForText(t, "Requeue on 2 leases")
	for _, want := range []string{"requeued 1 lease; repair of " + short(ids[1]) + " failed:", "connection reset by peer", "Requeue 2", "workers restarted"} {
		if !f.contains(want) {
			t.Errorf("after a failure the dialog lacks %q:\n%s", want, f)
		}
	}
	r.scr.press(key(tcell.KeyEnter)) // the confirm button kept the focus
	r.scr.waitForText(t, "requeued 3 leases")
	for _, id := range ids {
		if rec, _ := src.s.Task(id); rec.State != mailbox.TaskQueued {
			t.Errorf("task %s is %s, want requeued", short(id), rec.State)
		}
	}
}

// A lease that changes while a dialog on several is open (the console
// sees it) does not take the whole repair away: the dialog lists it and
// says the others are repaired; on confirm they are, and the outcome
// lists the changed one with the lease inspected and the current one.
func TestBulkDialogRepairsTheRestAroundAChangedLease(t *testing.T) {
	t.Parallel()
	m := newStaleMailbox(t)
	r := m.console(t, 160, 50, Options{})
	r.scr.press(char('!'))
	r.scr.waitForText(t, "!stale-only")
	r.scr.press(char('*'))
	r.scr.waitForText(t, "✓4 marked")
	r.scr.press(char('R'))
	r.scr.waitForText(t, "Requeue on 4 leases")

	// Another operator requeues the second lease, and worker-b leases
	// it again, while the dialog is open.
	m.api.repair(mailbox.RepairRequest{TaskID: m.ids[1], Reason: "someone else",
		Command: mailbox.RepairCommand{Action: mailbox.ActionRequeue, LeaseID: m.leases[1], DuplicateRisk: mailbox.RiskOperatorAccepted}})
	_, again := m.api.lease("worker-b@local")
	// The requeue and the new lease reach the console as two events: wait
	// for the dialog to show the second, not only the first.
	f := r.scr.waitForText(t, "now: lease "+short(again.LeaseID))
	wantContains(t, "the dialog", strings.Join(f.lines, " "), "1 of these 4 leases changed while this dialog was open", "they will be left alone and", "the other 3 are repaired",
		"task "+short(m.ids[1])+": you inspected lease "+short(m.leases[1]), "now: lease "+short(again.LeaseID), "Requeue 4")

	r.scr.typeText("the batch workers were restarted")
	r.scr.press(key(tcell.KeyEnter), key(tcell.KeyEnter))
	f = r.scr.waitForText(t, "3 repaired, 1 refused")
	wantContains(t, "the outcome", strings.Join(f.lines, " "), "Requeued 3 of 4 leases", "task "+short(m.ids[1])+": you inspected lease "+short(m.leases[1]),
		"The current lease is "+short(again.LeaseID)+", held by worker-b@local")
	for i, id := range m.ids {
		e, _ := m.api.entry(id)
		if i == 1 {
			if e.State != mailbox.TaskInFlight || e.LeaseID != again.LeaseID {
				t.Errorf("the changed lease's task is %+v; want it left with its new lease", e)
			}
		} else if e.State != mailbox.TaskQueued {
			t.Errorf("task %d is %s; want requeued", i, e.State)
		}
	}
}

// Marks as in k9s: Space marks one, Ctrl-Space the range from the last
// mark to the selected lease, Ctrl-\ clears them all; * marks every one.
func TestRangeMarksAsInK9s(t *testing.T) {
	t.Parallel()
	m := newStaleMailbox(t)
	r := m.console(t, 160, 50, Options{})
	r.scr.press(char('g'), char(' ')) // the first lease
	r.scr.waitForText(t, "✓1 marked")
	r.scr.press(char('j'), char('j'), tcell.NewEventKey(tcell.KeyCtrlSpace, 0, tcell.ModCtrl))
	f := r.scr.waitForText(t, "✓3 marked")
	marked := 0
	for _, l := range f.lines {
		if strings.Contains(l, "│✓") || strings.Contains(l, "║✓") {
			marked++
		}
	}
	if marked != 3 {
		t.Errorf("%d rows show a mark, want the 3 from the first to the third:\n%s", marked, f)
	}
	// From the third, up to the first again: nothing new; down to the
	// fifth: the fourth and fifth join.
	r.scr.press(char('j'), char('j'), tcell.NewEventKey(tcell.KeyCtrlSpace, 0, tcell.ModCtrl))
	r.scr.waitForText(t, "✓5 marked")
	r.scr.press(tcell.NewEventKey(tcell.KeyCtrlBackslash, 0, tcell.ModCtrl))
	r.scr.waitForNoText(t, "marked")
	r.scr.press(char('*'))
	r.scr.waitForText(t, "✓5 marked")
}

// The dialog of many repairs names the agents they concern, each with its
// count, most first, ties in the order met, tags escaped.
func TestCountedAgents(t *testing.T) {
	ts := []repairTarget{{leasedTo: "b@x"}, {leasedTo: "a@x"}, {leasedTo: "c[red]@x"}, {leasedTo: "a@x"}, {leasedTo: "c[red]@x"}, {leasedTo: "a@x"}}
	want := "a@x (3), c[red[]@x (2), b@x (1)"
	if got := countedAgents(ts, func(t repairTarget) string { return t.leasedTo }); got != want {
		t.Errorf("countedAgents = %q, want %q", got, want)
	}
}
