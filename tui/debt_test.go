package tui

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/internal/testclock"
	"github.com/mailroom/mailroom/mailbox"
)

// debtMailbox is the dead agent, owing all four kinds: coder@local
// holds 2 leases and has 3 tasks queued (sent by planner@local); it sent
// 5 tasks to helper@local, whose workers asked it 2 questions and posted 3
// results it never drained; then it went quiet for ten minutes.
// reviewer@local and helper@local poll since.
type debtMailbox struct {
	d         *daemontest.Daemon
	api       agentAPI
	clk       *testclock.Clock
	leased    []string
	queued    []string
	questions []string
	results   []string
}

func newDebtMailbox(t *testing.T) debtMailbox {
	t.Helper()
	clk := testclock.New(time.Now())
	d := daemontest.Start(t, daemontest.Options{Now: clk.Now})
	m := debtMailbox{d: d, api: agentAPI{t, newClient(t, d.URL())}, clk: clk}
	for i := range 5 {
		id := m.api.send("helper@local", "look up fact "+string(rune('A'+i)), withSender("coder@local"))
		_, lease := m.api.lease("helper@local")
		if i < 2 {
			m.api.ask(id, lease.LeaseID, mailbox.StatusInputRequired, "which region, "+string(rune('A'+i))+"?")
			m.questions = append(m.questions, id)
		} else {
			m.api.post(id, lease.LeaseID, mailbox.StatusOK, "")
			m.results = append(m.results, id)
		}
	}
	for i := range 2 {
		m.leased = append(m.leased, m.api.send("coder@local", "write patch "+string(rune('A'+i))))
		m.api.lease("coder@local")
	}
	for i := range 3 {
		m.queued = append(m.queued, m.api.send("coder@local", "review patch "+string(rune('A'+i))))
	}
	clk.Advance(10 * time.Minute)
	for _, a := range []string{"reviewer@local", "helper@local"} {
		if task, _, err := m.api.c.Lease(t.Context(), a); err != nil || task != nil {
			t.Fatalf("%s polls: %v, %v; want nothing to lease", a, task, err)
		}
	}
	return m
}

func (m debtMailbox) ready(t *testing.T, w, h int) *running {
	t.Helper()
	r := runConsoleSized(t, m.api.c, Options{Addr: m.d.URL(), Now: m.clk.Now, StaleAfter: staleAfterForTests}, w, h)
	r.scr.waitForText(t, "no auth")
	r.scr.waitForText(t, "waiting 2")
	return r
}

// owed is what the daemon's agents listing says agent owes.
func (m debtMailbox) owed(t *testing.T, agent string) mailbox.AgentInfo {
	t.Helper()
	list, err := m.api.c.Agents(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range list {
		if a.Agent == agent {
			return a
		}
	}
	return mailbox.AgentInfo{Agent: agent}
}

// The target, counted: a dead agent's whole debt, all four kinds,
// settled in one dialog in at most 8 keys plus the reason and the new
// agent's first letters (5 R <letters> Tab <reason> Enter Enter: the agent
// gone longest is first, "to" has the cursor, Tab takes the completion).
// Afterwards nothing is left for coder@local, and it is flagged no more.
func TestADeadAgentsWholeDebtInEightKeys(t *testing.T) {
	t.Parallel()
	forSizes(t, func(t *testing.T, w, h int) {
		m := newDebtMailbox(t)
		r := m.ready(t, w, h)
		keys := 0
		press := func(k *tcell.EventKey) {
			r.scr.press(k)
			keys++
		}
		press(char('5'))
		r.scr.waitGone(t, "coder@local")
		press(char('R'))
		f := r.scr.waitForText(t, "coder@local owes 2 leases, 3 queued tasks, 2 questions, 3 results")
		wantContains(t, "the debt dialog", dialogText(f), "2 leases", "3 queued tasks", "2 questions", "3 results",
			"Requeue 2, move 3, hand over 5", "required: the agent that takes the work")
		if strings.Contains(dialogText(f), "you marked") {
			t.Errorf("the agent's dialog speaks of marks with nothing marked:\n%s", f)
		}
		if h >= 40 {
			wantContains(t, "the debt dialog", dialogText(f),
				"2 leases it holds", "3 tasks for it", "2 questions waiting on its answer", "3 results waiting for it to drain")
		}
		r.scr.typeText("rev")
		r.scr.waitFor(t, "the completion offered", completionShown("reviewer@local"))
		press(key(tcell.KeyTab)) // taken, on to the reason
		r.scr.typeText("coder died")
		press(key(tcell.KeyEnter))
		press(key(tcell.KeyEnter))
		r.scr.waitFor(t, "the outcome", joinedContains("requeued 2 leases, moved 3 queued tasks, handed over 2 questions and 3 results to reviewer@local"))
		if keys > 8 {
			t.Errorf("a dead agent's whole debt took %d keys, the reason and the agent's first letters; want at most 8", keys)
		}
		for _, id := range append(append([]string{}, m.leased...), m.queued...) {
			if e, _ := m.api.entry(id); e.State != mailbox.TaskQueued || e.Task.Recipient != "reviewer@local" {
				t.Errorf("task %s is %s for %s, want queued for reviewer@local", short(id), e.State, e.Task.Recipient)
			}
		}
		for _, id := range m.questions {
			if e, _ := m.api.entry(id); e.State != mailbox.TaskWaiting || e.Task.Sender != "reviewer@local" {
				t.Errorf("question %s is %s waiting on %s, want waiting on reviewer@local", short(id), e.State, e.Task.Sender)
			}
		}
		if a := m.owed(t, "coder@local"); a.InFlight+a.Queued+a.Waiting+a.Undrained+a.ResultsPending != 0 {
			t.Errorf("after the dialog coder@local still owes %+v; want nothing", a)
		}
		if a := m.owed(t, "reviewer@local"); a.Waiting != 2 || a.Undrained != 3 {
			t.Errorf("reviewer@local owes %d questions and %d results, want 2 and 3", a.Waiting, a.Undrained)
		}
		// No longer flagged: nothing waits on it.
		r.scr.waitFor(t, "coder no longer flagged", func(f frame) bool {
			l := agentLine(f, "coder@local")
			return l != "" && !strings.Contains(l, goneStatus)
		})
		if w >= 200 {
			// The Audit pane shows the hand-overs, from -> to.
			r.scr.press(char('4'))
			r.scr.waitFor(t, "the hand-overs in the Audit pane", func(f frame) bool {
				n := 0
				for _, l := range f.lines {
					if strings.Contains(l, "sender coder@local -> reviewer@local") {
						n++
					}
				}
				return n == 5
			})
			// One more, alone: the pane follows a hand-over as any repair.
			if _, err := m.api.c.HandOver(t.Context(), m.questions[0], "reviewer@local", "planner@local", "planner answers it", false); err != nil {
				t.Fatal(err)
			}
			r.scr.waitForText(t, "sender reviewer@local -> planner@local")
		}
		audit, err := m.api.c.Audit(t.Context(), "", 20)
		if err != nil {
			t.Fatal(err)
		}
		byReason := map[string]int{}
		for _, a := range audit {
			byReason[a.Reason]++
		}
		if byReason["coder died"] != 10 {
			t.Errorf("the audit has %d repairs with the dialog's reason, want ten: %+v", byReason["coder died"], audit)
		}
	})
}

// Settled in part, the agent stays flagged for what is left, and its row
// says what; the same dialog then ends the questions with the reason and
// hands their error results over with the undrained results, and nothing
// is left.
func TestADeadAgentStaysFlaggedUntilNothingWaitsOnIt(t *testing.T) {
	t.Parallel()
	m := newDebtMailbox(t)
	r := m.ready(t, 200, 60)
	r.scr.press(char('5'))
	r.scr.waitGone(t, "coder@local")
	r.scr.press(char('R'))
	r.scr.waitForText(t, "coder@local owes 2 leases, 3 queued tasks, 2 questions, 3 results")
	// "to" has the cursor: Shift-Tab to the choices (duplicate risk, 3
	// results, 2 questions), "leave them" for the results and questions.
	r.scr.press(key(tcell.KeyBacktab), key(tcell.KeyBacktab), char('l'), key(tcell.KeyEnter))
	r.scr.press(key(tcell.KeyBacktab), char('l'), key(tcell.KeyEnter))
	f := r.scr.waitForText(t, "Requeue 2, move 3 ")
	wantContains(t, "the dialog", dialogText(f), "left as they are: coder@local stays flagged while they wait on it")
	r.scr.press(key(tcell.KeyTab), key(tcell.KeyTab), key(tcell.KeyTab)) // -> results -> risk -> to
	r.scr.typeText("reviewer@local")
	r.scr.press(key(tcell.KeyTab))
	r.scr.typeText("coder died")
	r.scr.press(key(tcell.KeyEnter), key(tcell.KeyEnter))
	r.scr.waitForText(t, "requeued 2 leases and moved 3 queued tasks to reviewer@local")

	f = r.scr.waitFor(t, "coder flagged for what is left", func(f frame) bool {
		return strings.Contains(agentLine(f, "coder@local"), goneStatus) &&
			f.contains("2 question(s) wait on its answer, 3 result(s) wait for it to drain them, and has not been seen for")
	})
	if _, bg, _ := agentStyle(f, "coder@local"); bg != colorStale { // selected: inverted
		t.Errorf("coder, owing questions and results, is not red:\n%s", f)
	}

	// Again: what is left, the questions ended, their errors handed over
	// with the results.
	r.scr.press(char('R'))
	r.scr.waitForText(t, "coder@local owes 2 questions, 3 results")
	r.scr.press(key(tcell.KeyBacktab), key(tcell.KeyBacktab), char('e'), key(tcell.KeyEnter)) // to -> results -> questions: end
	f = r.scr.waitForText(t, "End 2, hand over 3")
	wantContains(t, "the dialog", dialogText(f), "ended with an error result naming the reason, which is handed over with the results")
	r.scr.press(key(tcell.KeyTab), key(tcell.KeyTab))
	r.scr.typeText("reviewer@local")
	r.scr.press(key(tcell.KeyTab))
	r.scr.typeText("coder is gone for good")
	r.scr.press(key(tcell.KeyEnter), key(tcell.KeyEnter))
	r.scr.waitFor(t, "the outcome", joinedContains("ended 2 questions (their error results handed over too) and handed over 3 results to reviewer@local"))
	for _, id := range m.questions {
		if e, ok := m.api.entry(id); ok {
			t.Errorf("question %s is still %s, want ended", short(id), e.State)
		}
	}
	if a := m.owed(t, "coder@local"); a.InFlight+a.Queued+a.Waiting+a.Undrained+a.ResultsPending != 0 {
		t.Errorf("coder@local still owes %+v; want nothing", a)
	}
	if a := m.owed(t, "reviewer@local"); a.Undrained != 5 {
		t.Errorf("reviewer@local has %d results to drain, want 5 (3 results, 2 errors)", a.Undrained)
	}
	r.scr.waitFor(t, "coder no longer flagged", func(f frame) bool {
		l := agentLine(f, "coder@local")
		return l != "" && !strings.Contains(l, goneStatus)
	})
}

// With a choice that hands work on and "to" empty, the dialog asks for
// "to" (or another choice) rather than settle part of the debt.
func TestDebtDialogAsksWhereTheWorkGoes(t *testing.T) {
	t.Parallel()
	m := newDebtMailbox(t)
	r := m.ready(t, 120, 40)
	r.scr.press(char('5'))
	r.scr.waitGone(t, "coder@local")
	r.scr.press(char('R'))
	r.scr.waitForText(t, "coder@local owes")
	r.scr.press(key(tcell.KeyTab)) // to -> reason
	r.scr.typeText("coder died")
	r.scr.press(key(tcell.KeyEnter), key(tcell.KeyEnter))
	f := r.scr.waitForText(t, `"to" is required`)
	wantContains(t, "the refusal", dialogText(f), `name the agent the 3 queued tasks and 2 questions and 3 results go to, or choose "leave them"`)
	for _, id := range m.leased {
		if e, _ := m.api.entry(id); e.State != mailbox.TaskInFlight {
			t.Fatalf("after the refusal lease %s is %s; want untouched", short(id), e.State)
		}
	}
	// "to" naming coder itself is refused too.
	r.scr.typeText("coder@local")
	r.scr.press(key(tcell.KeyEnter), key(tcell.KeyEnter), key(tcell.KeyEnter))
	r.scr.waitForText(t, `"to" names coder@local itself`)
}

// joinedContains reports whether the screen's lines, trimmed and joined
// by spaces, contain text: a line wrapped at 80 columns reads as one.
func joinedContains(text string) func(frame) bool {
	return func(f frame) bool {
		var b strings.Builder
		for _, l := range f.lines {
			b.WriteString(strings.TrimSpace(l) + " ")
		}
		return strings.Contains(b.String(), text)
	}
}

// A typo in the debt dialog's "to" moves nothing: reveiwer is refused once
// with the close match (a bare name matches name@domain), the cursor goes
// back to "to", and the submitting keys pressed again refuse again; only
// the dialog's own "Create new agent" button, never focused by it, would
// confirm a new agent.
func TestDebtDialogRefusesATypo(t *testing.T) {
	t.Parallel()
	m := newDebtMailbox(t)
	r := m.ready(t, 120, 40)
	r.scr.press(char('5'))
	r.scr.waitGone(t, "coder@local")
	r.scr.press(char('R'))
	r.scr.waitForText(t, "coder@local owes")
	r.scr.typeText("reveiwer")
	r.scr.press(key(tcell.KeyTab))
	r.scr.typeText("coder died")
	r.scr.press(key(tcell.KeyEnter), key(tcell.KeyEnter))
	f := r.scr.waitForText(t, "reveiwer is not an agent the mailbox knows")
	wantContains(t, "the refusal", dialogText(f), "nothing was sent", "Did you mean reviewer@local?", "Create new agent")
	r.scr.press(key(tcell.KeyEnter), key(tcell.KeyEnter), key(tcell.KeyEnter)) // to -> reason -> button, pressed
	r.scr.waitForText(t, "Still: reveiwer is not an agent the mailbox knows")
	for _, id := range append(append([]string{}, m.leased...), m.queued...) {
		if e, _ := m.api.entry(id); e.Task.Recipient != "coder@local" {
			t.Errorf("task %s went to %s after a refused typo", short(id), e.Task.Recipient)
		}
	}
	for _, id := range m.questions {
		if e, _ := m.api.entry(id); e.Task.Sender != "coder@local" {
			t.Errorf("question %s was handed to %s after a refused typo", short(id), e.Task.Sender)
		}
	}
	if a := m.owed(t, "coder@local"); a.InFlight != 2 || a.Queued != 3 || a.Waiting != 2 || a.Undrained != 3 {
		t.Errorf("after the refused typo coder@local owes %+v; want everything it owed", a)
	}
}

// The "to" field's placeholder says what is true for each choice: with
// only leases to requeue it is optional (empty: the same agent); once
// queued tasks are moved it is required.
func TestDebtDialogToSaysWhatIsTrue(t *testing.T) {
	t.Parallel()
	m := newDebtMailbox(t)
	r := m.ready(t, 160, 48)
	r.scr.press(char('5'))
	r.scr.waitGone(t, "coder@local")
	r.scr.press(char('R'))
	r.scr.waitForText(t, "required: the agent that takes the work")
	// Leave the queued tasks, questions and results: only leases requeued.
	r.scr.press(key(tcell.KeyBacktab), key(tcell.KeyBacktab), char('l'), key(tcell.KeyEnter)) // results
	r.scr.press(key(tcell.KeyBacktab), char('l'), key(tcell.KeyEnter))                        // questions
	r.scr.press(key(tcell.KeyBacktab), char('l'), key(tcell.KeyEnter))                        // queued
	f := r.scr.waitForText(t, "(optional) empty: requeued for the same agent")
	if !strings.Contains(dialogText(f), "Requeue 2 ") || strings.Contains(dialogText(f), "move") {
		t.Errorf("with only leases requeued, the button should count them alone:\n%s", f)
	}
}
