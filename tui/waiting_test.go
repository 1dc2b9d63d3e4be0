package tui

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/internal/testclock"
	"github.com/mailroom/mailroom/mailbox"
)

// The tests of issue 23's console side: tasks whose worker asked their
// sender a question, against a real daemon on a test clock.

// ask ends taskID's lease with a question for its sender.
func (a agentAPI) ask(taskID, leaseID, status, question string) {
	a.t.Helper()
	err := a.c.PostResult(context.Background(), mailbox.Result{TaskID: taskID, LeaseID: leaseID, Status: status,
		Content: []mailbox.Content{{Type: mailbox.ContentText, Text: question}}})
	if err != nil {
		a.t.Fatalf("ask on %s: %v", taskID, err)
	}
}

// reply answers the question a task waits on.
func (a agentAPI) reply(taskID, sender, answer string) {
	a.t.Helper()
	_, err := a.c.Reply(context.Background(), mailbox.Reply{TaskID: taskID, Sender: sender, Content: []mailbox.Content{{Type: mailbox.ContentText, Text: answer}}})
	if err != nil {
		a.t.Fatalf("reply to %s: %v", taskID, err)
	}
}

// waitingMailbox runs a daemon on a test clock with two tasks waiting on
// their senders: old, asked by worker-a of planner 10 minutes ago (stale
// at a minute), and fresh, asked by worker-b of reviewer just now.
type waitingMailbox struct {
	d          *daemontest.Daemon
	api        agentAPI
	clk        *testclock.Clock
	old, fresh string
	oldLease   string
}

const (
	oldQuestion   = "which database should I migrate first?"
	freshQuestion = "I need a token for the billing API"
)

func newWaitingMailbox(t *testing.T) waitingMailbox {
	t.Helper()
	clk := testclock.New(time.Now())
	d := daemontest.Start(t, daemontest.Options{Now: clk.Now})
	m := waitingMailbox{d: d, api: agentAPI{t, newClient(t, d.URL())}, clk: clk}
	m.old = m.api.send("worker-a@local", "migrate the schemas")
	_, lease := m.api.lease("worker-a@local")
	m.oldLease = lease.LeaseID
	m.api.ask(m.old, lease.LeaseID, mailbox.StatusInputRequired, oldQuestion)
	clk.Advance(10 * time.Minute)
	m.fresh = m.api.send("worker-b@local", "reconcile the invoices", withSender("reviewer@local"))
	_, lease = m.api.lease("worker-b@local")
	m.api.ask(m.fresh, lease.LeaseID, mailbox.StatusAuthRequired, freshQuestion)
	return m
}

func (m waitingMailbox) console(t *testing.T, w, h int) *running {
	t.Helper()
	r := runConsoleSized(t, m.api.c, Options{Addr: m.d.URL(), Now: m.clk.Now, StaleAfter: staleAfterForTests}, w, h)
	r.scr.waitForText(t, "no auth") // the daemon said what the token may do
	return r
}

// waitingLine returns the Waiting pane's row of a task: the line that
// starts with its short id and has a question's status (a Results row
// starts with its status).
func waitingLine(f frame, taskID string) string {
	for _, l := range f.lines {
		if strings.HasPrefix(strings.TrimLeft(l, "│║"), short(taskID)) &&
			(strings.Contains(l, mailbox.StatusInputRequired) || strings.Contains(l, mailbox.StatusAuthRequired)) {
			return l
		}
	}
	return ""
}

// focusWaiting focuses the Waiting pane (6). At 80x24 the four working
// panes leave each one row, so the operator zooms it (z), as here.
func focusWaiting(r *running, h int) {
	r.scr.press(char('6'))
	if h < 30 {
		r.scr.press(char('z'))
	}
}

// fgOf returns the colour text is drawn in.
func fgOf(f frame, text string) tcell.Color {
	y, x, ok := f.find(text)
	if !ok {
		return tcell.ColorDefault
	}
	fg, _, _ := f.styles[y][x].Decompose()
	return fg
}

// drawnIn reports whether text, on line, is drawn in color: as its
// foreground or, on a focused pane's selected row, its background.
func drawnIn(f frame, line, text string, color tcell.Color) bool {
	y, ok := lineIndex(f, line)
	i := strings.Index(line, text)
	if !ok || line == "" || i < 0 {
		return false
	}
	fg, bg, _ := f.styles[y][len([]rune(line[:i]))].Decompose()
	return fg == color || bg == color
}

// A task waiting on its sender is on the Waiting pane (6): whom it waits
// on, how long, its status and question, the one waiting past the stale
// limit red and marked, and first; the header counts them, the stale one
// in red.
func TestWaitingPaneShowsWhomATaskWaitsOnAndForHowLong(t *testing.T) {
	t.Parallel()
	forSizes(t, func(t *testing.T, w, h int) {
		m := newWaitingMailbox(t)
		r := m.console(t, w, h)
		f := r.scr.waitForText(t, "waiting 2 (1 stale)")
		if fg := fgOf(f, "waiting 2 (1 stale)"); fg != tcell.ColorRed {
			t.Errorf("the header's waiting count with a stale question is %v, want red:\n%s", fg, f)
		}
		focusWaiting(r, h)
		f = r.scr.waitForText(t, "[6] Waiting 1-2 of 2")
		for _, want := range []string{"WAITED", "WAITING ON", "QUESTION"} {
			if !f.lineContainsAll("TASK", want) {
				t.Errorf("the Waiting pane's headings lack %q:\n%s", want, f)
			}
		}
		old, fresh := waitingLine(f, m.old), waitingLine(f, m.fresh)
		for _, want := range []string{"! 10m00s", "planner@local", mailbox.StatusInputRequired, "which database"} {
			if !strings.Contains(old, want) {
				t.Errorf("the stale question's row lacks %q: %q\n%s", want, old, f)
			}
		}
		for _, want := range []string{" 0s ", "reviewer@local", mailbox.StatusAuthRequired, "I need a token"} {
			if !strings.Contains(fresh, want) {
				t.Errorf("the fresh question's row lacks %q: %q\n%s", want, fresh, f)
			}
		}
		if strings.Contains(fresh, staleMarker) {
			t.Errorf("the fresh question is marked stale: %q", fresh)
		}
		if y1, _ := lineIndex(f, old); y1 >= func() int { y, _ := lineIndex(f, fresh); return y }() {
			t.Errorf("the longest waiting question should come first:\n%s", f)
		}
		if !drawnIn(f, old, "planner@local", colorStale) {
			t.Errorf("the stale question's row is not red:\n%s", f)
		}
		if drawnIn(f, fresh, "reviewer@local", colorStale) || !drawnIn(f, fresh, mailbox.StatusAuthRequired, colorAsking) {
			t.Errorf("the fresh question's row should not be red, and its status aqua:\n%s", f)
		}

		// The sender answers the stale one: it leaves the pane and is
		// queued again for its worker.
		m.api.reply(m.old, "planner@local", "start with billing")
		f = r.scr.waitForText(t, "[6] Waiting 1 of 1")
		if waitingLine(f, m.old) != "" || !f.contains("waiting 1") || f.contains("stale)") {
			t.Errorf("an answered question is still shown as waiting:\n%s", f)
		}
	})
}

func (f frame) lineContainsAll(texts ...string) bool {
	for _, l := range f.lines {
		all := true
		for _, s := range texts {
			all = all && strings.Contains(l, s)
		}
		if all {
			return true
		}
	}
	return false
}

// ! on the Waiting pane shows only the questions unanswered past the stale
// limit; as the clock moves on the fresh one turns stale and joins them.
func TestStaleOnlyShowsTheQuestionsNobodyAnswered(t *testing.T) {
	t.Parallel()
	m := newWaitingMailbox(t)
	r := m.console(t, 160, 48)
	r.scr.press(char('6'))
	r.scr.waitForText(t, "[6] Waiting 1-2 of 2")
	r.scr.press(char('!'))
	f := r.scr.waitForText(t, "[6] Waiting 1 of 1 filtered from 2")
	if !f.contains("!stale-only") || waitingLine(f, m.old) == "" || waitingLine(f, m.fresh) != "" {
		t.Errorf("stale-only should show the stale question and hide the fresh one:\n%s", f)
	}
	m.clk.Advance(2 * staleAfterForTests)
	f = r.scr.waitForText(t, "[6] Waiting 1-2 of 2 filtered from 2")
	if l := waitingLine(f, m.fresh); !strings.Contains(l, "! 2m00s") {
		t.Errorf("the question unanswered for 2m should be stale now: %q\n%s", l, f)
	}
	if !f.contains("waiting 2 (2 stale)") {
		t.Errorf("the header should count both stale questions:\n%s", f)
	}
}

// The detail view of a task shows its conversation in order: the
// worker's question, the sender's answer, the worker's next question.
func TestDetailShowsTheTurnsInOrder(t *testing.T) {
	t.Parallel()
	forSizes(t, func(t *testing.T, w, h int) {
		m := newWaitingMailbox(t)
		m.api.reply(m.old, "planner@local", "start with [red]billing[-]")
		_, lease := m.api.lease("worker-a@local")
		m.api.ask(m.old, lease.LeaseID, mailbox.StatusInputRequired, "billing has two schemas; both?\n\x1b[2Jreally")
		r := m.console(t, w, h)
		focusWaiting(r, h)
		f := r.scr.waitForText(t, "[6] Waiting 1-2 of 2")
		if l := waitingLine(f, m.old); !strings.Contains(l, "billing has two") || strings.Contains(l, "\x1b") {
			t.Errorf("the newest question should be on one line, control characters escaped: %q", l)
		}
		r.scr.press(key(tcell.KeyEnter))
		f = r.scr.waitForText(t, "Task "+m.old)
		if !f.contains("Conversation (3 turns") {
			t.Errorf("the detail view lacks the conversation:\n%s", f)
		}
		if l := f.lineWith("waiting on"); !strings.Contains(l, "planner@local") || !strings.Contains(l, "input_required") {
			t.Errorf("the detail view does not say whom the task waits on: %q\n%s", l, f)
		}
		turns := []string{
			"#1 ", "worker-a@local asked (input_required", oldQuestion,
			"#2 ", "planner@local answered", "start with [red]billing[-]",
			"#3 ", "worker-a@local asked (input_required", "billing has two schemas; both?",
		}
		last := -1
		for i := 0; i < len(turns); i += 3 {
			head, ok := lineIndexAfter(f, turns[i+1], last)
			if !ok || !strings.Contains(f.lines[head], turns[i]) || head+1 >= len(f.lines) || !strings.Contains(f.lines[head+1], turns[i+2]) {
				t.Errorf("turn %s (%q, then %q) is not shown in order below line %d:\n%s", turns[i], turns[i+1], turns[i+2], last, f)
				break
			}
			last = head + 1
		}
		if f.contains("\x1b") {
			t.Errorf("a control character reached the screen:\n%q", f.String())
		}
	})
}

// lineIndex is the first line holding text.
func lineIndex(f frame, text string) (int, bool) { return lineIndexAfter(f, text, -1) }

// lineIndexAfter is the first line after line after holding text.
func lineIndexAfter(f frame, text string, after int) (int, bool) {
	for y := after + 1; y < len(f.lines); y++ {
		if strings.Contains(f.lines[y], text) {
			return y, true
		}
	}
	return 0, false
}

// cellUnder returns what line shows under heading, in a pane whose
// headings line holds heading and next, the heading after it.
func cellUnder(f frame, heading, next, line string) string {
	for _, l := range f.lines {
		i, j := strings.Index(l, " "+heading+" "), strings.Index(l, " "+next)
		if i < 0 || j < 0 {
			continue
		}
		x, end := len([]rune(l[:i+1])), len([]rune(l[:j+1]))
		rs := []rune(line)
		if end > len(rs) {
			return ""
		}
		return strings.TrimSpace(string(rs[x:end]))
	}
	return ""
}

// The Agents pane counts the tasks waiting on each agent as their sender,
// marked stale when the longest has waited past the limit.
func TestAgentsPaneCountsTheTasksWaitingOnEachAgent(t *testing.T) {
	t.Parallel()
	forSizes(t, func(t *testing.T, w, h int) {
		m := newWaitingMailbox(t)
		extra := m.api.send("worker-a@local", "vacuum the tables", withSender("reviewer@local"))
		_, lease := m.api.lease("worker-a@local")
		m.api.ask(extra, lease.LeaseID, mailbox.StatusInputRequired, "now or tonight?")
		r := m.console(t, w, h)
		r.scr.press(char('5'), char('z'))
		// The rows come with the agents listing, the counts from the
		// console's own state, which may apply the events a moment later:
		// wait for the counts, not only the rows.
		// At 80 columns the columns after WAITING are cut (planner's SEEN
		// says it is probably gone: a question waits on it).
		waitingCell := func(f frame, agent string) string {
			if c := cellUnder(f, "WAITING", "OK/ERR", agentLine(f, agent)); c != "" {
				return c
			}
			return cellUnder(f, "WAITING", "…", agentLine(f, agent))
		}
		f := r.scr.waitFor(t, "the agents with their waiting counts", func(f frame) bool {
			return agentsFocused(f) && waitingCell(f, "planner@local") == "! 1" && waitingCell(f, "reviewer@local") == "2"
		})
		for _, tt := range []struct{ agent, want string }{
			{"planner@local", "! 1"},
			{"reviewer@local", "2"},
			{"worker-a@local", "0"},
		} {
			if got := waitingCell(f, tt.agent); got != tt.want {
				t.Errorf("%s: WAITING shows %q, want %q:\n%s", tt.agent, got, tt.want, f)
			}
		}
		if w >= 200 && !strings.Contains(agentLine(f, "reviewer@local"), "2 task(s) wait on its answer, the longest for 0s") {
			t.Errorf("the reviewer's note does not say what waits on it: %q", agentLine(f, "reviewer@local"))
		}
		if !drawnIn(f, agentLine(f, "planner@local"), "! 1", colorStale) {
			t.Errorf("planner's stale waiting count is not red:\n%s", f)
		}
	})
}

// The Results pane shows a question as the pending result it is (aqua,
// the question as its message) and a rejection as the error it is.
func TestResultsPaneShowsQuestionsAndRejections(t *testing.T) {
	t.Parallel()
	m := newWaitingMailbox(t)
	refused := m.api.send("worker-c@local", "delete the backups")
	_, lease := m.api.lease("worker-c@local")
	m.api.post(refused, lease.LeaseID, mailbox.StatusRejected, "I will not delete backups")
	r := m.console(t, 160, 48)
	f := r.scr.waitForText(t, "[3] Results 1-3 of 3")
	if !f.lineContainsAll("STATUS", "MESSAGE") {
		t.Errorf("the Results pane's headings lack MESSAGE:\n%s", f)
	}
	for _, tt := range []struct {
		task, status, msg string
		color             tcell.Color
	}{
		{m.old, mailbox.StatusInputRequired, oldQuestion, colorAsking},
		{m.fresh, mailbox.StatusAuthRequired, freshQuestion, colorAsking},
		{refused, mailbox.StatusRejected, "I will not delete backups", colorError},
	} {
		l := ""
		for _, line := range f.lines {
			if strings.HasPrefix(strings.TrimLeft(line, "│║"), tt.status) && strings.Contains(line, short(tt.task)) && strings.Contains(line, tt.msg) {
				l = line
			}
		}
		if l == "" {
			t.Errorf("result of %s: %q, want status %s and %q", short(tt.task), l, tt.status, tt.msg)
			continue
		}
		y, _ := lineIndex(f, l)
		x := len([]rune(l[:strings.Index(l, tt.status)]))
		if fg, _, _ := f.styles[y][x].Decompose(); fg != tt.color {
			t.Errorf("status %s is drawn %v, want %v", tt.status, fg, tt.color)
		}
	}
}

// E on the Waiting pane forces an error on the selected task, guarded by
// the lease that asked: the sender gets the error instead of answering.
// R is not offered there, and says why it does nothing.
func TestForceErrorOnAWaitingTask(t *testing.T) {
	t.Parallel()
	forSizes(t, func(t *testing.T, w, h int) {
		m := newWaitingMailbox(t)
		r := m.console(t, w, h)
		focusWaiting(r, h)
		r.scr.waitForText(t, "[6] Waiting 1-2 of 2")
		f := r.scr.waitForText(t, "<E> force error")
		if f.contains("<R> requeue") {
			t.Errorf("the Waiting pane offers a requeue:\n%s", f)
		}
		r.scr.press(char('R'))
		f = r.scr.waitForText(t, "cannot requeue task "+short(m.old))
		for _, want := range []string{"waits on planner@local", "E forces an error"} {
			if !f.contains(want) {
				t.Errorf("R on a waiting task should say %q:\n%s", want, f)
			}
		}
		if e, _ := m.api.entry(m.old); e.State != mailbox.TaskWaiting {
			t.Errorf("R changed the waiting task: %+v", e)
		}

		r.scr.press(char('E'))
		f = r.scr.waitForText(t, "Force an error result")
		for _, want := range []string{"waiting on planner@local for 10m00s", "asked by worker-a@local", m.oldLease, "input_required: " + oldQuestion} {
			if !f.contains(want) {
				t.Errorf("the dialog lacks %q:\n%s", want, f)
			}
		}
		r.scr.typeText("nobody answers")
		r.scr.press(key(tcell.KeyEnter))
		r.scr.typeText("the planner never answered")
		r.scr.press(key(tcell.KeyEnter), key(tcell.KeyEnter))
		r.scr.waitForText(t, "forced error on "+short(m.old))
		r.scr.press(char('3')) // at 80x24 the zoom follows the focus to Results
		f = r.scr.waitFor(t, "the forced error in Results", func(f frame) bool {
			return f.lineContainsAll("error (forced)", short(m.old), "the planner never answered") && f.contains("waiting 1")
		})
		if waitingLine(f, m.old) != "" {
			t.Errorf("the force-errored task is still waiting:\n%s", f)
		}
		if _, ok := m.api.entry(m.old); ok {
			t.Errorf("the force-errored task is still in the queue")
		}
	})
}

// A question answered while the force-error dialog is open takes the
// confirm button away: the task no longer waits on what was inspected.
func TestForceErrorDialogNoticesAnAnsweredQuestion(t *testing.T) {
	t.Parallel()
	m := newWaitingMailbox(t)
	r := m.console(t, 160, 48)
	r.scr.press(char('6'))
	r.scr.waitForText(t, "[6] Waiting 1-2 of 2")
	r.scr.waitForText(t, "<E> force error")
	r.scr.press(char('E'))
	r.scr.waitForText(t, "Force an error result")
	m.api.reply(m.old, "planner@local", "start with billing")
	f := r.scr.waitForText(t, "The question changed while this dialog was open")
	if !f.contains("no longer waiting") || f.contains("Force error ") {
		t.Errorf("the dialog should say the task no longer waits and offer no confirm:\n%s", f)
	}
	if e, _ := m.api.entry(m.old); e.State != mailbox.TaskQueued {
		t.Errorf("the answered task is %s, want queued", e.State)
	}
}

// A lease whose worker asks its sender a question while a repair dialog
// is open on it is no longer there to repair: the dialog says what became
// of it.
func TestRepairDialogNoticesALeaseThatEndedWithAQuestion(t *testing.T) {
	t.Parallel()
	d, api := startMailbox(t)
	id := api.send("worker-a@local", "migrate the schemas")
	_, lease := api.lease("worker-a@local")
	r := runConsole(t, api.c, Options{Addr: d.URL()})
	r.scr.waitForText(t, "no auth")
	r.scr.press(char('2'))
	r.scr.waitForText(t, "[2] Leases 1 of 1")
	r.scr.press(char('E'))
	r.scr.waitForText(t, "Force an error result")
	api.ask(id, lease.LeaseID, mailbox.StatusInputRequired, oldQuestion)
	f := r.scr.waitForText(t, "The lease changed while this dialog was open")
	if !f.contains("its worker asked planner@local a question (input_required)") || f.contains("Force error ") {
		t.Errorf("the dialog should say the lease ended with a question and offer no confirm:\n%s", f)
	}
}

// An answer sent through the A2A edge may carry its text only in the A2A
// message: the conversation shows its parts.
func TestDetailShowsAnA2AAnswersParts(t *testing.T) {
	rec := mailbox.TaskRecord{
		Task: mailbox.Task{ID: "6f9619ff-8b86-4d11-b42d-00c04fc964ff", Sender: "caller@a2a", Recipient: "coder@local", IntentText: "check",
			Turns: []mailbox.Turn{
				{Seq: 3, Role: mailbox.RoleWorker, Agent: "coder@local", Status: mailbox.StatusInputRequired, LeaseID: "0c0b6328-aaaa-4000-8000-000000000001", Attempt: 1,
					Content: []mailbox.Content{{Type: mailbox.ContentText, Text: "which branch?"}}},
				{Seq: 4, Role: mailbox.RoleSender, Agent: "caller@a2a", Content: []mailbox.Content{},
					A2A: &mailbox.A2AOrigin{Version: "1.0", MessageID: "m2", ContextID: "ctx", Message: json.RawMessage(`{"parts":[{"text":"main"},{"data":{"pr":7}}]}`)}},
			}},
		State: mailbox.TaskQueued,
	}
	text := renderDetail(rec.Task.ID, detail{record: rec, known: true}, 0)
	for _, want := range []string{"#1 ", "coder@local asked (input_required, lease 0c0b6328, attempt 1)", "which branch?",
		"#2 ", "caller@a2a answered through A2A", "text: main\n", "data: {\"pr\":7}"} {
		if !strings.Contains(text, want) {
			t.Errorf("the conversation lacks %q:\n%s", want, text)
		}
	}
}

// Read-only, the Waiting pane offers no force error, and R's refusal does
// not point at a key that is not there.
func TestReadOnlyWaitingPaneHasNoRepairKeys(t *testing.T) {
	t.Parallel()
	m := newWaitingMailbox(t)
	r := runConsole(t, m.api.c, Options{Addr: m.d.URL(), Now: m.clk.Now, StaleAfter: staleAfterForTests, ReadOnly: true})
	r.scr.waitForText(t, "no auth")
	r.scr.press(char('6'))
	r.scr.waitForText(t, "[6] Waiting 1-2 of 2")
	r.scr.press(char('E'), char('R'))
	f := r.scr.waitForText(t, "cannot requeue task "+short(m.old))
	if f.contains("<E>") || f.contains("Force an error") || f.contains("E forces") {
		t.Errorf("a read-only console offers a force error on a waiting task:\n%s", f)
	}
	if e, _ := m.api.entry(m.old); e.State != mailbox.TaskWaiting {
		t.Errorf("a read-only console changed the waiting task: %+v", e)
	}
}
