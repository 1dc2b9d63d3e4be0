package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/internal/testclock"
	"github.com/mailroom/mailroom/mailbox"
)

// agentLine returns the Agents pane's row of agent: the line that has the
// agent's id and one of the pane's statuses.
func agentLine(f frame, agent string) string {
	for _, l := range f.lines {
		if strings.Contains(l, agent) && (strings.Contains(l, goneStatus) || strings.Contains(l, " working ") || strings.Contains(l, " idle ")) {
			return l
		}
	}
	return ""
}

// agentStyle returns the style agent's id is drawn in on the Agents pane.
func agentStyle(f frame, agent string) (fg, bg tcell.Color, ok bool) {
	line := agentLine(f, agent)
	for y, l := range f.lines {
		if l == line && line != "" {
			x := len([]rune(l[:strings.Index(l, agent)]))
			fg, bg, _ = f.styles[y][x].Decompose()
			return fg, bg, true
		}
	}
	return 0, 0, false
}

// agentsFocused reports whether the Agents pane has the focus (a double
// border).
func agentsFocused(f frame) bool { return strings.Contains(f.lineWith("[5] Agents"), "═") }

// waitGone waits until the Agents pane has the focus and shows agent as
// probably gone.
func (s *screen) waitGone(t testing.TB, agent string) frame {
	t.Helper()
	return s.waitFor(t, agent+" probably gone", func(f frame) bool {
		return agentsFocused(f) && strings.Contains(agentLine(f, agent), goneStatus)
	})
}

// The Agents pane (5) lists every agent the daemon knows; one that holds
// leases and was not seen for longer than --stale-after is marked as
// probably gone, red and first. Enter shows only that agent in every other
// pane; R opens the bulk dialog for every lease it holds, which can hand
// the tasks to another recipient, and lists the lease that changed
// meanwhile as for marks.
func TestAgentsPaneMarksAGoneAgentAndRequeuesItsLeasesElsewhere(t *testing.T) {
	t.Parallel()
	forSizes(t, func(t *testing.T, w, h int) {
		m := newStaleMailbox(t) // worker-a and worker-b: two leases each, quiet for 10m; worker-c: fresh
		r := m.consoleReady(t, w, h)
		r.scr.press(char('5'))
		f := r.scr.waitFor(t, "worker-a probably gone", func(f frame) bool {
			return agentsFocused(f) && strings.Contains(agentLine(f, "worker-a@local"), goneStatus) && strings.Contains(agentLine(f, "worker-b@local"), goneStatus)
		})
		a := agentLine(f, "worker-a@local")
		for _, want := range []string{"! 10m0", " 2 "} {
			if !strings.Contains(a, want) {
				t.Errorf("worker-a's row lacks %q: %q\n%s", want, a, f)
			}
		}
		if fg, _, _ := agentStyle(f, "worker-b@local"); fg != colorStale {
			t.Errorf("a probably gone agent is not red:\n%s", f)
		}
		if _, bg, _ := agentStyle(f, "worker-a@local"); bg != colorStale {
			t.Errorf("the agent gone longest should be first and selected:\n%s", f)
		}
		if w >= 200 {
			if c := agentLine(f, "worker-c@local"); strings.Contains(c, goneStatus) || !strings.Contains(c, "working") {
				t.Errorf("worker-c, seen just now, should be working: %q", c)
			}
		}
		if w >= 200 && !f.contains("holds 2 lease(s) and has not been seen for 10m0") {
			t.Errorf("at %d columns the note says why:\n%s", w, f)
		}

		// Enter: every other pane shows only worker-a.
		r.scr.press(key(tcell.KeyEnter))
		f = r.scr.waitForText(t, "agent:worker-a@local")
		if !f.contains("[2] Leases 1-2 of 2 filtered from 5") {
			t.Errorf("the Leases pane should show worker-a's 2 leases of 5:\n%s", f)
		}
		if f.contains(short(m.ids[1])) || f.contains(short(m.fresh)) {
			t.Errorf("other agents' tasks are shown:\n%s", f)
		}

		// Paused, the console does not see another operator requeue
		// worker-a's second lease.
		r.scr.press(char('p'))
		r.scr.waitForText(t, "paused (0 events held)")
		m.api.repair(mailbox.RepairRequest{TaskID: m.ids[2], Reason: "someone else",
			Command: mailbox.RepairCommand{Action: mailbox.ActionRequeue, LeaseID: m.leases[2], DuplicateRisk: mailbox.RiskOperatorAccepted}})
		r.scr.waitForText(t, "paused (1 events held)")

		r.scr.press(char('R'))
		f = r.scr.waitForText(t, "worker-a@local owes 2 leases")
		for _, want := range []string{"Everything worker-a@local owes", "2 leases it holds, the oldest held 10m0", "to ", "reason", "Requeue 2"} {
			if !f.contains(want) {
				t.Errorf("the agent's dialog lacks %q:\n%s", want, f)
			}
		}
		r.scr.press(key(tcell.KeyBacktab)) // reason -> to
		r.scr.typeText("worker-c@local")
		r.scr.press(key(tcell.KeyTab)) // -> reason
		r.scr.typeText("worker-a is gone")
		r.scr.press(key(tcell.KeyEnter), key(tcell.KeyEnter))
		f = r.scr.waitForText(t, "1 repaired, 1 refused")
		for _, want := range []string{"Requeued 1 of 2 leases to worker-c@local", "task " + short(m.ids[2]) + ": you inspected lease " + short(m.leases[2]),
			"The task is now queued"} {
			if !f.contains(want) {
				t.Errorf("the outcome lacks %q:\n%s", want, f)
			}
		}

		// The daemon: worker-a's first task is queued for worker-c, guarded
		// by the lease seen; worker-b's leases are left alone.
		if e, _ := m.api.entry(m.ids[0]); e.State != mailbox.TaskQueued || e.Task.Recipient != "worker-c@local" {
			t.Errorf("worker-a's first task is %s for %s, want queued for worker-c@local", e.State, e.Task.Recipient)
		}
		audit, err := m.api.c.Audit(t.Context(), m.ids[0], 1)
		if err != nil || len(audit) != 1 || audit[0].LeaseID != m.leases[0] || audit[0].ToRecipient != "worker-c@local" || audit[0].Reason != "worker-a is gone" {
			t.Errorf("the requeue is recorded as %+v, %v", audit, err)
		}
		for _, i := range []int{1, 3} {
			if e, _ := m.api.entry(m.ids[i]); e.State != mailbox.TaskInFlight {
				t.Errorf("worker-b's task %d is %s, want left alone", i, e.State)
			}
		}

		// OK, resume: worker-a holds no lease now, but the task the other
		// operator requeued is queued for it, and nobody reads its queue:
		// it is still gone, for that. Esc shows every agent's rows again.
		r.scr.press(key(tcell.KeyEnter), char('p'))
		r.scr.waitForText(t, "[2] Leases 0 filtered from 3")
		if w >= 200 {
			r.scr.waitFor(t, "worker-a gone for its queue", func(f frame) bool {
				return strings.Contains(agentLine(f, "worker-a@local"), goneStatus) && f.contains("has 1 task(s) queued and has not been seen for")
			})
		}
		r.scr.press(key(tcell.KeyEscape))
		f = r.scr.waitForNoText(t, "agent:")
		if _, _, n, _ := shownRange(f, "[2] Leases"); n != 3 {
			t.Errorf("after Esc the Leases pane should count the 3 leases left:\n%s", f)
		}
	})
}

// The target, counted: every lease of a dead agent requeued in at
// most five keys plus the reason (5 R <reason> Enter Enter: the agent gone
// longest is first).
func TestEveryLeaseOfADeadAgentInFiveKeys(t *testing.T) {
	t.Parallel()
	m := newStaleMailbox(t)
	r := m.consoleReady(t, 80, 24)
	enter := key(tcell.KeyEnter)
	keys := 0
	press := func(k *tcell.EventKey) {
		r.scr.press(k)
		keys++
	}
	press(char('5'))
	r.scr.waitGone(t, "worker-a@local")
	press(char('R'))
	r.scr.waitForText(t, "2 leases it holds")
	r.scr.typeText("worker-a died")
	press(enter)
	press(enter)
	r.scr.waitForText(t, "requeued 2 leases")
	if keys > 5 {
		t.Errorf("every lease of a dead agent took %d keys and the reason, want at most 5", keys)
	}
	for i, id := range m.ids {
		want := mailbox.TaskInFlight
		if i%2 == 0 {
			want = mailbox.TaskQueued
		}
		if e, _ := m.api.entry(id); e.State != want {
			t.Errorf("task %d is %s, want %s", i, e.State, want)
		}
	}
}

// The daemon remembers when it last saw an agent in memory only: after a
// restart an agent that still holds leases has not been seen at all, and
// the row says so.
func TestLastSeenSurvivesARestart(t *testing.T) {
	t.Parallel()
	forSizes(t, func(t *testing.T, w, h int) {
		m := newStaleMailbox(t)
		m.d.Restart()
		r := m.consoleReady(t, w, h)
		r.scr.press(char('5'))
		f := r.scr.waitGone(t, "worker-a@local")
		// Its last lease, in the log, says when it was last seen: not
		// "never", as when the daemon kept that in memory only.
		if l := agentLine(f, "worker-a@local"); !strings.Contains(l, "! 10m01s ago") {
			t.Errorf("worker-a's row should say it was last seen 10m01s ago, at its last lease: %q", l)
		}
		if w >= 200 && !f.contains("holds 2 lease(s) and has not been seen for 10m01s") {
			t.Errorf("the note does not say why:\n%s", f)
		}
	})
}

// agentOrder lists the worker agents in the order the Agents pane shows
// them, top to bottom.
func agentOrder(f frame) string {
	var order []string
	for _, l := range f.lines {
		for _, a := range []string{"worker-a@local", "worker-b@local", "worker-c@local"} {
			if strings.Contains(l, a) && agentLine(frame{lines: []string{l}}, a) != "" {
				order = append(order, a[:len("worker-a")])
			}
		}
	}
	return strings.Join(order, " ")
}

// Shift and a column's letter sort the Agents pane, as every other pane,
// again reverses it, and a third press returns to the pane's own order:
// the agents probably gone first. The title and the heading say which.
// Its letters leave R, E and J theirs.
func TestAgentsPaneSortsByShiftLetter(t *testing.T) {
	t.Parallel()
	forSizes(t, func(t *testing.T, w, h int) {
		m := newStaleMailbox(t) // worker-a and worker-b gone, worker-a longest; worker-c fresh
		for range 3 {
			m.api.send("worker-c@local", "waiting")
		}
		m.api.send("worker-b@local", "waiting")
		r := m.consoleReady(t, w, h)
		r.scr.press(char('5'), char('z'))
		order := func(want string) frame {
			t.Helper()
			return r.scr.waitFor(t, "agents in order "+want, func(f frame) bool { return agentsFocused(f) && agentOrder(f) == want })
		}
		f := order("worker-a worker-b worker-c")
		if !f.contains(agentsOrder) {
			t.Errorf("the title should say the pane's own order:\n%s", f)
		}

		steps := []struct {
			key         rune
			title, head string
			want        string
		}{
			{'A', "sort:agent↑", "AGENT↑", "worker-a worker-b worker-c"},
			{'A', "sort:agent↓", "AGENT↓", "worker-c worker-b worker-a"},
			{'A', agentsOrder, "AGENT ", "worker-a worker-b worker-c"}, // the third press: the pane's own order
			{'Q', "sort:queued↓", "QUEUED↓", "worker-c worker-b worker-a"},
			{'Q', "sort:queued↑", "QUEUED↑", "worker-a worker-b worker-c"},
			{'S', "sort:seen↓", "SEEN↓", "worker-a worker-b worker-c"}, // longest unseen first
			{'S', "sort:seen↑", "SEEN↑", "worker-c worker-b worker-a"},
			{'H', "sort:held↓", "HELD↓", "worker-a worker-b worker-c"},
			{'H', "sort:held↑", "HELD↑", "worker-c worker-a worker-b"}, // ties keep the listing's order
			{'O', "sort:oldest↓", "OLDEST↓", "worker-a worker-b worker-c"},
			{'O', "sort:oldest↑", "OLDEST↑", "worker-c worker-b worker-a"},
			{'U', "sort:status↑", "STATUS↑", "worker-a worker-b worker-c"}, // probably gone, working, idle
			{'U', "sort:status↓", "STATUS↓", "worker-c worker-a worker-b"},
		}
		for _, s := range steps {
			r.scr.press(char(s.key))
			r.scr.waitFor(t, string(s.key)+" "+s.title+" "+s.want, func(f frame) bool {
				return f.contains(s.title) && f.contains(s.head) && agentOrder(f) == s.want
			})
		}
		r.scr.press(char('U'))
		f = r.scr.waitForText(t, agentsOrder)
		if f.contains("↑") || f.contains("↓") || agentOrder(f) != "worker-a worker-b worker-c" {
			t.Errorf("the third press should return to the pane's own order:\n%s", f)
		}

		// Sorted, R still opens the requeue of the agent on the first row,
		// the one selected.
		r.scr.press(char('Q'))
		r.scr.waitForText(t, "sort:queued↓")
		r.scr.press(char('R'))
		r.scr.waitForText(t, "worker-c@local owes 1 lease")
		r.scr.press(key(tcell.KeyEscape))
		r.scr.waitForNoText(t, "owes 1 lease")
	})
}

// A requeue "to" a recipient the token may not send to is refused by the
// daemon: the dialog stays open with what was typed and the daemon's whole
// answer, naming the capability, and nothing is requeued.
func TestRequeueToARecipientTheTokenMayNotSendTo(t *testing.T) {
	t.Parallel()
	clk := &testclock.Clock{}
	clk.Set(time.Now())
	d := daemontest.Start(t, daemontest.Options{Now: clk.Now, Tokens: []auth.Token{
		{Principal: "oncall-ann", Token: "t-ann", Caps: []string{auth.CapAdmin}},
		{Principal: "requeuer-rae", Token: "t-rae", Caps: []string{auth.CapRead, auth.CapRequeue}},
	}})
	admin, err := client.New(d.URL(), client.WithToken("t-ann"))
	if err != nil {
		t.Fatal(err)
	}
	api := agentAPI{t, admin}
	var ids []string
	for _, intent := range []string{"crunch batch A", "crunch batch B"} {
		ids = append(ids, api.send("worker-a@local", intent))
		api.lease("worker-a@local")
	}
	clk.Set(clk.Now().Add(10 * time.Minute))

	rae, err := client.New(d.URL(), client.WithToken("t-rae"))
	if err != nil {
		t.Fatal(err)
	}
	r := runConsoleSized(t, rae, Options{Addr: d.URL(), Now: clk.Now, StaleAfter: staleAfterForTests}, 200, 60)
	r.scr.waitForText(t, "as requeuer-rae")
	r.scr.press(char('5'))
	r.scr.waitFor(t, "worker-a probably gone, and R offered", func(f frame) bool {
		return agentsFocused(f) && strings.Contains(agentLine(f, "worker-a@local"), goneStatus) && f.contains("<R>")
	})
	r.scr.press(char('R'))
	r.scr.waitForText(t, "worker-a@local owes 2 leases")
	r.scr.press(key(tcell.KeyBacktab)) // reason -> to
	r.scr.typeText("worker-c@local")
	r.scr.press(key(tcell.KeyTab)) // -> reason
	r.scr.typeText("worker-a is gone")
	r.scr.press(key(tcell.KeyEnter), key(tcell.KeyEnter))
	// worker-c@local is new here: confirmed, and then refused for rights.
	r.scr.waitForText(t, "worker-c@local is not an agent the mailbox knows")
	pressCreate(r, 4) // to -> reason -> Requeue 2 -> Cancel -> Create new agent
	f := r.scr.waitForText(t, "needs capability a2a.send.worker-c@local")
	for _, want := range []string{"worker-a@local owes 2 leases", "worker-c@local", "worker-a is gone"} {
		if !f.contains(want) {
			t.Errorf("after the refusal the dialog lacks %q:\n%s", want, f)
		}
	}
	for _, id := range ids {
		if e, _ := api.entry(id); e.State != mailbox.TaskInFlight || e.Task.Recipient != "worker-a@local" {
			t.Errorf("task %s is %s for %s after a refused requeue, want still in flight for worker-a", short(id), e.State, e.Task.Recipient)
		}
	}
}
