package tui

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/internal/testclock"
	"github.com/mailroom/mailroom/mailbox"
)

// The acceptance tests run the console on a simulation screen against a
// real daemon (log store in a temporary directory, HTTP on 127.0.0.1, real
// SSE) and assert what an operator would see.

func startDaemon(t *testing.T) (*daemontest.Daemon, *client.Client) {
	t.Helper()
	d := daemontest.Start(t, daemontest.Options{})
	return d, newClient(t, d.URL())
}

// startMailbox starts a daemon and returns it with the agents' API on it.
func startMailbox(t *testing.T) (*daemontest.Daemon, agentAPI) {
	t.Helper()
	d, c := startDaemon(t)
	return d, agentAPI{t, c}
}

func newClient(t *testing.T, addr string) *client.Client {
	t.Helper()
	c, err := client.New(addr, client.WithTimeout(10*time.Second))
	if err != nil {
		t.Fatalf("client.New(%q): %v", addr, err)
	}
	return c
}

// agentAPI wraps a client for tests: every call must succeed.
type agentAPI struct {
	t *testing.T
	c *client.Client
}

func (a agentAPI) send(recipient, intent string, opts ...taskOpt) string {
	a.t.Helper()
	task := mailbox.Task{Sender: "planner@local", Recipient: recipient, IntentText: intent}
	for _, o := range opts {
		o(&task)
	}
	out, err := a.c.Send(context.Background(), task)
	if err != nil {
		a.t.Fatalf("send %q: %v", intent, err)
	}
	return out.TaskID
}

func (a agentAPI) lease(recipient string) (*mailbox.Task, *mailbox.Lease) {
	a.t.Helper()
	task, lease, err := a.c.Lease(context.Background(), recipient)
	if err != nil || task == nil {
		a.t.Fatalf("lease for %s = %v, %v; want a task", recipient, task, err)
	}
	return task, lease
}

func (a agentAPI) post(taskID, leaseID, status, msg string) {
	a.t.Helper()
	err := a.c.PostResult(context.Background(), mailbox.Result{TaskID: taskID, LeaseID: leaseID, Status: status, Content: []mailbox.Content{}, ErrorMessage: msg})
	if err != nil {
		a.t.Fatalf("post result for %s: %v", taskID, err)
	}
}

// entry returns the daemon's queue entry for a task.
func (a agentAPI) entry(taskID string) (mailbox.QueueEntry, bool) {
	a.t.Helper()
	view, err := a.c.Queue(context.Background(), mailbox.QueueFilter{Limit: mailbox.MaxLimit})
	if err != nil {
		a.t.Fatalf("queue: %v", err)
	}
	for _, e := range view.Tasks {
		if e.Task.ID == taskID {
			return e, true
		}
	}
	return mailbox.QueueEntry{}, false
}

// fill sends n tasks to recipient, intents "<prefix> 0001".., in order,
// and returns their ids.
func (a agentAPI) fill(recipient, prefix string, n int) []string {
	a.t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = a.send(recipient, fmt.Sprintf("%s %04d", prefix, i+1))
	}
	return ids
}

// leaseAll leases n tasks of recipient, concurrently: the daemon orders
// leases by time and send order, which is the order the tasks were sent.
func (a agentAPI) leaseAll(recipient string, n int) {
	a.t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if task, _, err := a.c.Lease(context.Background(), recipient); err != nil || task == nil {
				errs <- fmt.Errorf("lease for %s = %v, %v", recipient, task, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		a.t.Fatal(err)
	}
}

func short(id string) string { return mailbox.ShortID(id) }

func TestPanesShowSentLeasedAndResultedTasks(t *testing.T) {
	t.Parallel()
	d, c := startDaemon(t)
	api := agentAPI{t, c}
	queued := api.send("worker-a@local", "summarize the incident report", withKind("summarize"))
	leased := api.send("worker-b@local", "translate the release notes")
	failed := api.send("worker-c@local", "fetch the billing metrics")
	api.lease("worker-b@local")
	task, lease := api.lease("worker-c@local")
	api.post(task.ID, lease.LeaseID, mailbox.StatusError, "upstream API returned 503")

	r := runConsole(t, c, Options{Addr: d.URL()})
	f := r.scr.waitForText(t, "upstream API returned 503")
	for _, want := range []string{
		"summarize the incident report",                 // Queue
		"translate the release notes", "worker-b@local", // Leases
		"upstream API returned 503", // Results
		"queued 1   in flight 1", "results pending 1", "● live", d.URL(),
	} {
		if !f.contains(want) {
			t.Errorf("screen lacks %q:\n%s", want, f)
		}
	}
	// Sender and recipient have a column each, so each sorts (S, C).
	if l := f.lineWith(short(queued)); !strings.Contains(l, "summarize") || !strings.Contains(l, "planner@local") || !strings.Contains(l, "worker-a@local") {
		t.Errorf("queue row of %s = %q, want its sender, recipient and kind", short(queued), l)
	}
	if l := f.lineWith(short(leased)); !strings.Contains(l, "worker-b@local") || !strings.Contains(l, " 1 ") {
		t.Errorf("lease row of %s = %q, want leased_to and attempt 1", short(leased), l)
	}
	if l := f.lineWith(short(failed)); !strings.Contains(l, "error") || !strings.Contains(l, "planner@local") {
		t.Errorf("result row of %s = %q, want status error and the sender", short(failed), l)
	}

	// Live: what agents do next appears without touching a key.
	api.send("worker-a@local", "classify the new auth tickets")
	api.lease("worker-a@local")
	r.scr.waitForText(t, "classify the new auth tickets")
	r.scr.waitFor(t, "the new lease counted", func(f frame) bool { return f.contains("queued 1   in flight 2") })

	// A deadline already past is marked, in red.
	late := api.send("worker-b@local", "late work", withDeadline(time.Now().Add(-5*time.Second).UnixMilli()))
	soon := api.send("worker-b@local", "work due soon", withDeadline(time.Now().Add(time.Hour).UnixMilli()))
	f = r.scr.waitForText(t, "work due soon")
	if l := f.lineWith(short(soon)); !strings.Contains(l, "in 59m") && !strings.Contains(l, "in 1h00m") {
		t.Errorf("a deadline an hour away shows as %q", l)
	}
	y, x, ok := f.find("! overdue")
	if !ok || !strings.Contains(f.lines[y], short(late)) {
		t.Fatalf("the past-due task is not marked overdue:\n%s", f)
	}
	if fg, _, _ := f.styles[y][x].Decompose(); fg != colorPastDue {
		t.Errorf("a past-due deadline is drawn in %v, want %v", fg, colorPastDue)
	}

	// Leases have a DEADLINE column too: the late task, leased, is overdue there.
	api.lease("worker-b@local")
	f = r.scr.waitFor(t, "the late task leased", func(f frame) bool { return f.contains("in flight 3") })
	y, x, ok = f.find("! overdue")
	if !ok || !strings.Contains(f.lines[y], short(late)) || !strings.Contains(f.lines[y], "worker-b@local") {
		t.Fatalf("the leased past-due task is not marked overdue in the Leases pane:\n%s", f)
	}
	if fg, _, _ := f.styles[y][x].Decompose(); fg != colorPastDue {
		t.Errorf("a leased past-due deadline is drawn in %v, want %v", fg, colorPastDue)
	}
}

func TestStaleLeaseIsHighlighted(t *testing.T) {
	t.Parallel()
	// One clock for the daemon and the console: leases get their age from
	// it, so time is moved instead of waited for.
	clk := &testclock.Clock{}
	clk.Set(time.Now())
	d := daemontest.Start(t, daemontest.Options{Now: clk.Now})
	c := newClient(t, d.URL())
	api := agentAPI{t, c}
	id := api.send("worker-a@local", "review the auth pull request")
	api.lease("worker-a@local")
	r := runConsole(t, c, Options{Addr: d.URL(), StaleAfter: time.Minute, Now: clk.Now})

	f := r.scr.waitForText(t, "review the auth pull request")
	if l := f.lineWith(short(id)); strings.Contains(l, staleMarker) {
		t.Fatalf("a fresh lease is marked stale: %q", l)
	}
	if !f.contains("stale 0") {
		t.Errorf("header does not say stale 0:\n%s", f.lines[1])
	}

	clk.Set(clk.Now().Add(2 * time.Minute))
	f = r.scr.waitFor(t, "the lease marked stale", func(f frame) bool {
		return strings.Contains(f.lineWith(short(id)), staleMarker+"2m00s")
	})
	y, x, _ := f.find(short(id))
	if fg, _, _ := f.styles[y][x].Decompose(); fg != colorStale {
		t.Errorf("stale lease row is drawn in %v, want %v", fg, colorStale)
	}
	if !f.contains("stale 1") {
		t.Errorf("header does not count the stale lease:\n%s", f.lines[1])
	}

	// A lease taken now is fresh; ! shows only the stale one.
	fresh := api.send("worker-b@local", "fresh work")
	api.lease("worker-b@local")
	f = r.scr.waitForText(t, "fresh work")
	if l := f.lineWith(short(fresh)); strings.Contains(l, staleMarker) {
		t.Errorf("a lease taken now is marked stale: %q", l)
	}
	r.scr.press(char('2'), char('!'))
	f = r.scr.waitForText(t, "!stale-only")
	if f.contains("fresh work") || !f.contains(short(id)) || !f.contains("[2] Leases 1 of 1 filtered from 2") {
		t.Errorf("stale-only view should show just the stale lease (1 of 1 filtered from 2):\n%s", f)
	}
	r.scr.press(char('!'))
	r.scr.waitForText(t, "fresh work")

	// Esc clears stale-only too.
	r.scr.press(char('!'))
	r.scr.waitForText(t, "!stale-only")
	r.scr.press(key(tcell.KeyEscape))
	f = r.scr.waitForText(t, "fresh work")
	if f.contains("!stale-only") || !f.contains("[2] Leases 1-2 of 2") {
		t.Errorf("Esc should clear stale-only and show both leases:\n%s", f)
	}
}

func TestFilterNarrowsThePane(t *testing.T) {
	t.Parallel()
	d, c := startDaemon(t)
	api := agentAPI{t, c}
	api.send("worker-b@local", "beta report")
	api.send("worker-a@local", "alpha report")
	api.send("worker-c@local", "gamma", withKind("classify"))
	r := runConsole(t, c, Options{Addr: d.URL()})
	r.scr.waitForText(t, "gamma")

	r.scr.press(char('/'))
	r.scr.typeText("BETA")
	f := r.scr.waitForText(t, "filter:/BETA")
	if !f.contains("beta report") || f.contains("alpha report") || f.contains("gamma") || !f.contains("[1] Queue 1 of 1 filtered from 3") {
		t.Errorf("filter BETA should leave only beta report (1 of 1 filtered from 3):\n%s", f)
	}
	// Enter keeps the filter and gives the keys back to the pane.
	r.scr.press(key(tcell.KeyEnter), char('/'), key(tcell.KeyBackspace), key(tcell.KeyBackspace), key(tcell.KeyBackspace), key(tcell.KeyBackspace))
	r.scr.typeText("classify")
	f = r.scr.waitForText(t, "filter:/classify")
	if !f.contains("gamma") || f.contains("beta report") {
		t.Errorf("filter by kind lost the classify task:\n%s", f)
	}
	r.scr.press(key(tcell.KeyEscape))
	f = r.scr.waitForText(t, "alpha report")
	if !f.contains("beta report") || f.contains("filter:/") {
		t.Errorf("Esc did not clear the filter:\n%s", f)
	}

	// Shift and a column's letter sort by it (C recipient, N attempt),
	// again reverses, a third time goes back to the queue's own order.
	above := func(f frame, a, b string) bool {
		ya, _, _ := f.find(a)
		yb, _, _ := f.find(b)
		return ya < yb
	}
	if !above(f, "beta report", "alpha report") || !f.contains("sort:queue order") {
		t.Errorf("queue order should list beta (sent first) above alpha:\n%s", f)
	}
	r.scr.press(char('C'))
	f = r.scr.waitForText(t, "sort:recipient↑")
	if !above(f, "alpha report", "beta report") || !above(f, "beta report", "gamma") || !f.contains("RECIPIENT↑") {
		t.Errorf("recipient order should be worker-a, worker-b, worker-c, the heading marked:\n%s", f)
	}
	r.scr.press(char('C'))
	f = r.scr.waitForText(t, "sort:recipient↓")
	if !above(f, "gamma", "beta report") || !above(f, "beta report", "alpha report") {
		t.Errorf("reversed recipient order should be worker-c, worker-b, worker-a:\n%s", f)
	}
	r.scr.press(char('N'))
	r.scr.waitForText(t, "sort:attempt↓")
	r.scr.press(char('N'), char('N'))
	f = r.scr.waitForText(t, "sort:queue order")
	if !above(f, "beta report", "alpha report") {
		t.Errorf("back in queue order beta should be above alpha:\n%s", f)
	}
}

// openRequeue opens the requeue dialog on the Leases pane, whose first
// row is the oldest lease: the one these tests repair. R is there once the
// daemon has said the token may requeue.
func openRequeue(t *testing.T, r *running, taskID string) frame {
	t.Helper()
	r.scr.press(char('2'))
	r.scr.waitForText(t, "<R> requeue")
	r.scr.press(char('g'), char('R'))
	f := r.scr.waitForText(t, "Requeue task")
	if !f.contains(taskID) {
		t.Fatalf("the requeue dialog is not about %s:\n%s", taskID, f)
	}
	return f
}

func TestRequeueStaleLease(t *testing.T) {
	t.Parallel()
	d, c := startDaemon(t)
	api := agentAPI{t, c}
	id := api.send("worker-a@local", "summarize the on-call notes")
	_, lease := api.lease("worker-a@local")
	clk := &testclock.Clock{}
	clk.Set(time.Now().Add(time.Hour))
	r := runConsole(t, c, Options{Addr: d.URL(), StaleAfter: time.Minute, Now: clk.Now})
	r.scr.waitFor(t, "the stale lease", func(f frame) bool { return strings.Contains(f.lineWith(short(id)), staleMarker) })

	f := openRequeue(t, r, id)
	for _, want := range []string{id, lease.LeaseID, "summarize the on-call notes", "worker-a@local", "attempt 1", "unsafe task", "operator_accepted"} {
		if !f.contains(want) {
			t.Errorf("requeue dialog lacks %q:\n%s", want, f)
		}
	}
	if f.contains("idempotent ") {
		t.Errorf("requeue dialog offers idempotent for an unsafe task:\n%s", f)
	}

	// The empty reason has the focus: Enter moves to Requeue, and Enter
	// there is refused, changing nothing: no repair without a reason.
	r.scr.press(key(tcell.KeyEnter), key(tcell.KeyEnter))
	r.scr.waitForText(t, "a reason is required")
	if e, _ := api.entry(id); e.State != mailbox.TaskInFlight || e.LeaseID != lease.LeaseID {
		t.Fatalf("after Enter Enter without a reason the task is %+v, want still leased under %s", e, lease.LeaseID)
	}
	// Esc cancels, changing nothing.
	r.scr.press(key(tcell.KeyEscape))
	r.scr.waitForNoText(t, "Requeue task")
	if e, _ := api.entry(id); e.State != mailbox.TaskInFlight || e.LeaseID != lease.LeaseID {
		t.Fatalf("after Esc the task is %+v, want still leased under %s", e, lease.LeaseID)
	}

	openRequeue(t, r, id)
	r.scr.typeText("worker-a crashed mid-task") // the reason field has the focus
	r.scr.press(key(tcell.KeyEnter), key(tcell.KeyEnter))
	r.scr.waitForText(t, "requeued "+short(id)+" (attempt 1)")

	e, ok := api.entry(id)
	if !ok || e.State != mailbox.TaskQueued || e.Attempt != 1 {
		t.Fatalf("daemon has the task as %+v, want queued with attempt 1 kept", e)
	}
	f = r.scr.waitFor(t, "the task back in the Queue pane", func(f frame) bool {
		return f.contains("queued 1   in flight 0")
	})
	if f.contains("Requeue task") {
		t.Errorf("the dialog is still open after a successful requeue:\n%s", f)
	}
}

// A lease that changes unseen (the console is paused) is refused by the
// daemon; the console says which lease was inspected and which is current.
func TestRepairOfAChangedLeaseShowsTheConflict(t *testing.T) {
	t.Parallel()
	d, c := startDaemon(t)
	api := agentAPI{t, c}
	id := api.send("worker-a@local", "classify the feedback", idempotent("classify:feedback"))
	_, first := api.lease("worker-a@local")
	r := runConsole(t, c, Options{Addr: d.URL()})
	r.scr.waitForText(t, "classify the feedback")
	r.scr.press(char('p'))
	r.scr.waitForText(t, "paused (0 events held)")

	// Meanwhile another operator requeues it and a worker leases it again.
	other := newClient(t, d.URL())
	if _, err := other.Repair(context.Background(), mailbox.RepairRequest{TaskID: id, Reason: "someone else",
		Command: mailbox.RepairCommand{Action: mailbox.ActionRequeue, LeaseID: first.LeaseID, DuplicateRisk: mailbox.RiskIdempotent}}); err != nil {
		t.Fatalf("the other operator's requeue: %v", err)
	}
	_, second := agentAPI{t, other}.lease("worker-a@local")
	r.scr.waitForText(t, "paused (2 events held)")

	f := openRequeue(t, r, id)
	if !f.contains("idempotent") || f.contains("unsafe task") {
		t.Errorf("an idempotent task's dialog should offer idempotent without the unsafe warning:\n%s", f)
	}
	if !f.contains("Paused, 2 events held") {
		t.Errorf("a dialog opened while paused should say so:\n%s", f)
	}
	r.scr.typeText("stuck")
	r.scr.press(key(tcell.KeyEnter), key(tcell.KeyEnter))
	f = r.scr.waitForText(t, "Lease changed")
	for _, want := range []string{short(first.LeaseID), short(second.LeaseID), "held by worker-a@local", "attempt 2", "Nothing was changed"} {
		if !f.contains(want) {
			t.Errorf("conflict dialog lacks %q:\n%s", want, f)
		}
	}
	e, _ := api.entry(id)
	if e.State != mailbox.TaskInFlight || e.LeaseID != second.LeaseID || e.Attempt != 2 {
		t.Errorf("after the refused repair the task is %+v, want still leased under %s, attempt 2", e, second.LeaseID)
	}
	r.scr.press(key(tcell.KeyEnter), char('p')) // OK, resume
	f = r.scr.waitFor(t, "the current lease", func(f frame) bool {
		return !f.contains("Nothing was changed") && strings.Contains(f.lineWith(short(id)), short(second.LeaseID))
	})
	if l := f.lineWith(short(id)); !strings.Contains(l, " 2 ") {
		t.Errorf("the Leases pane shows %q, want the current lease %s at attempt 2", l, short(second.LeaseID))
	}
}

func TestReadOnlyHasNoRepairKeys(t *testing.T) {
	t.Parallel()
	d, c := startDaemon(t)
	api := agentAPI{t, c}
	id := api.send("worker-a@local", "fetch the changelog")
	_, lease := api.lease("worker-a@local")
	r := runConsole(t, c, Options{Addr: d.URL(), ReadOnly: true})
	r.scr.waitForText(t, "fetch the changelog")
	r.scr.waitForText(t, "no auth") // the daemon answered: it would allow repairs
	r.scr.press(char('2'))
	f := r.scr.waitForText(t, "<!> stale only")
	if f.contains("<R>") || f.contains("<E>") || !f.contains("read-only") {
		t.Errorf("read-only hint bar offers repairs or header lacks read-only:\n%s", f)
	}
	// R and E do nothing; the filter key after them proves they were handled.
	r.scr.press(char('R'), char('E'), char('/'))
	f = r.scr.waitForText(t, "filter Leases:")
	if f.contains("Requeue task") || f.contains("Force an error") {
		t.Errorf("a repair dialog opened in read-only mode:\n%s", f)
	}
	if e, _ := api.entry(id); e.State != mailbox.TaskInFlight || e.LeaseID != lease.LeaseID {
		t.Errorf("read-only console changed the task: %+v", e)
	}
}

func TestHelpListsEveryRegisteredKey(t *testing.T) {
	t.Parallel()
	d, c := startDaemon(t)
	for _, ro := range []bool{false, true} {
		r := runConsole(t, c, Options{Addr: d.URL(), ReadOnly: ro})
		r.scr.waitForText(t, "● live")
		r.scr.waitForText(t, "no auth") // the keys the token allows are known
		r.scr.press(char('?'))
		f := r.scr.waitForText(t, "Help (Esc to go back)")
		reg := defaultRegistry()
		if ro {
			reg = reg.withoutDangerous()
		}
		for _, a := range reg.actions {
			line := f.lineWith(a.desc)
			if line == "" || !strings.Contains(line, a.label) {
				t.Errorf("read-only=%v: help has no line with %q and %q:\n%s", ro, a.label, a.desc, f)
			}
		}
		hasRepair := f.contains("requeue the marked leases")
		if hasRepair == ro {
			t.Errorf("read-only=%v: help lists requeue = %v", ro, hasRepair)
		}
		// A read-only console does not explain dialogs it cannot open; it
		// says where repairs are made.
		if explains := f.contains("Repairs are guarded") || f.contains(`the dialog's "to" field`); explains == ro {
			t.Errorf("read-only=%v: help explains the repair dialogs = %v:\n%s", ro, explains, f)
		}
		if says := f.contains("This console does not repair (read-only)"); says != ro {
			t.Errorf("read-only=%v: help says where repairs are made = %v:\n%s", ro, says, f)
		}
		r.scr.press(key(tcell.KeyEscape))
		r.scr.waitForNoText(t, "Help (Esc to go back)")
	}
}

// On 80 columns the help page wraps its long lines under themselves: a
// key's description continues under the description, a paragraph two
// columns in, never at the page's first column.
func TestHelpWrapsWithAHangingIndent(t *testing.T) {
	t.Parallel()
	d, c := startDaemon(t)
	r := runConsoleSized(t, c, Options{Addr: d.URL()}, 80, 60)
	r.scr.waitForText(t, "no auth")
	r.scr.press(char('?'))
	f := r.scr.waitForText(t, "Help (Esc to go back)")
	inside, continued := 0, 0
	for _, l := range f.lines {
		rs := []rune(l)
		if len(rs) < 3 || rs[0] != '│' && rs[0] != '║' && rs[0] != '┃' {
			continue
		}
		inside++
		body := string(rs[1 : len(rs)-1])
		if strings.TrimSpace(body) == "" {
			continue
		}
		if strings.HasPrefix(body, "  ") {
			continued++
		}
	}
	if continued == 0 {
		t.Fatalf("no line of the help page is a continuation:\n%s", f)
	}
	// Every line that starts at the first column starts a key or a
	// paragraph: no word of a wrapped one lands there.
	starts := []string{"Keys", "Leases held", "So are questions", "Repairs are", "A requeue", "Agents that", "Remote agents", "Sorts:"}
	for _, a := range defaultRegistry().actions {
		starts = append(starts, a.label)
	}
	for _, l := range f.lines {
		rs := []rune(l)
		if len(rs) < 3 || rs[0] != '│' && rs[0] != '║' && rs[0] != '┃' {
			continue
		}
		body := string(rs[1 : len(rs)-1])
		if strings.TrimSpace(body) == "" || strings.HasPrefix(body, " ") {
			continue
		}
		if !slices.ContainsFunc(starts, func(s string) bool { return strings.HasPrefix(body, s) }) {
			t.Errorf("a wrapped line lands at the first column: %q\n%s", body, f)
		}
	}
	if inside == 0 {
		t.Fatalf("no help page drawn:\n%s", f)
	}
}

func TestReconnectsAfterDaemonRestart(t *testing.T) {
	t.Parallel()
	d, c := startDaemon(t)
	api := agentAPI{t, c}
	api.send("worker-a@local", "before the restart")
	r := runConsole(t, c, Options{Addr: d.URL()})
	r.scr.waitForText(t, "before the restart")
	r.scr.waitForText(t, "● live")

	d.Stop()
	f := r.scr.waitForText(t, "reconnecting (attempt")
	if !f.contains("before the restart") || !f.contains("STALE") {
		t.Errorf("while reconnecting the last state should stay on screen, marked stale:\n%s", f)
	}

	d.Restart() // same directory, same port
	r.scr.waitForText(t, "● live")
	// It says how long it was cut off, and that it resumed where it was.
	r.scr.waitFor(t, "the reconnect told", func(f frame) bool {
		return f.contains("reconnected after ") && f.contains(" cut off; resumed after seq 1, nothing missed")
	})
	api.send("worker-b@local", "after the restart")
	f = r.scr.waitForText(t, "after the restart")
	if !f.contains("before the restart") || !f.contains("[1] Queue 1-2 of 2 ") || f.contains("STALE") {
		t.Errorf("after the restart the Queue should hold both tasks exactly once, live:\n%s", f)
	}
}

func TestQuitReturnsNil(t *testing.T) {
	t.Parallel()
	d, c := startDaemon(t)
	for _, k := range []*tcell.EventKey{char('q'), key(tcell.KeyCtrlC)} {
		r := runConsole(t, c, Options{Addr: d.URL()})
		r.scr.waitForText(t, "● live")
		if k.Key() == tcell.KeyCtrlC {
			r.scr.press(char('?')) // Ctrl-C quits from any page, the help page too
			r.scr.waitForText(t, "Ctrl-C")
		}
		r.scr.press(k)
		r.waitStopped(t)
		if r.err != nil {
			t.Errorf("Run after %s = %v, want nil", k.Name(), r.err)
		}
	}
}
