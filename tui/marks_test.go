package tui

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon"
	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/daemon/notify"
	"github.com/mailroom/mailroom/mailbox"
)

// Marks work in the Waiting pane as in the others (Space, *, the ✓ in
// the row, the count in the title), and E ends the marked questions in
// one dialog with one reason: the one answered while the console was
// paused is refused by its guard (the lease that asked) and listed, the
// other ended.
func TestMarkedQuestionsEndedTogether(t *testing.T) {
	t.Parallel()
	m := newDebtMailbox(t)
	r := m.ready(t, 160, 48)
	r.scr.press(char('6'))
	r.scr.waitForText(t, "[6] Waiting 1-2 of 2")
	r.scr.press(char(' '))
	r.scr.waitForText(t, "✓1 marked")
	r.scr.press(char('*'))
	f := r.scr.waitForText(t, "✓2 marked")
	for _, id := range m.questions {
		if !f.contains("✓" + short(id)) {
			t.Errorf("marked question %s is not marked in its row:\n%s", short(id), f)
		}
	}
	r.scr.press(char('p'))
	r.scr.waitForText(t, "paused (0 events held)")
	m.api.reply(m.questions[0], "coder@local", "eu-west")
	r.scr.waitForText(t, "paused (1 events held)")

	r.scr.press(char('E'))
	f = r.scr.waitForText(t, "End 2 questions with an error result")
	wantContains(t, "the dialog", dialogText(f), "2 questions, the longest waiting 10m", "waiting on coder@local (2)", "End 2", "Cancel")
	r.scr.typeText("coder is gone")
	r.scr.press(key(tcell.KeyEnter), key(tcell.KeyEnter), key(tcell.KeyEnter)) // reason -> message -> End 2
	f = r.scr.waitForText(t, "1 repaired, 1 refused")
	wantContains(t, "the outcome", dialogText(f), "task "+short(m.questions[0])+": you inspected lease")
	if e, ok := m.api.entry(m.questions[1]); ok {
		t.Errorf("the other question is still %s, want ended", e.State)
	}
	if e, _ := m.api.entry(m.questions[0]); e.State != mailbox.TaskQueued {
		t.Errorf("the answered question is %s, want left queued", e.State)
	}
	r.scr.press(key(tcell.KeyEnter), char('p'))
	r.scr.waitForText(t, "resumed")
}

// A dialog on a queued task that its worker leased and finished while the
// dialog was open says so, not "finished or canceled".
func TestChangedTaskDialogSaysItsWorkerLeasedIt(t *testing.T) {
	t.Parallel()
	m := newDebtMailbox(t)
	r := m.ready(t, 160, 48)
	r.scr.press(char('1'))
	r.scr.waitForText(t, "[1] Queue 1-3 of 3")
	r.scr.press(char('R'))
	r.scr.waitForText(t, "Move queued task")
	task, lease := m.api.lease("coder@local")
	m.api.post(task.ID, lease.LeaseID, mailbox.StatusOK, "")
	f := r.scr.waitFor(t, "the dialog says what happened", joinedContains("leased and finished by its worker: coder@local posted ok"))
	if f.contains("finished or canceled") {
		t.Errorf("the dialog says finished or canceled:\n%s", f)
	}
}

// Marks work in the Deliveries pane: every dead letter marked, one is
// retried by a colleague while the console is paused; R retries the
// marked ones with one reason, skips the one that changed since it was
// marked and says so.
// deadLetters starts a daemon whose webhook receiver refuses until up is
// set, with three dead letters (three A2A tasks, each with a push config).
func deadLetters(t *testing.T, up *atomic.Bool) (*client.Client, string, []mailbox.NotificationStatus) {
	t.Helper()
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !up.Load() {
			http.Error(w, "receiver down", http.StatusBadGateway)
		}
	}))
	t.Cleanup(rcv.Close)
	d := daemontest.Start(t, daemontest.Options{
		Config: func(c *config.Config) { c.PushMaxAttempts = 2 },
		Daemon: []daemon.Option{daemon.WithNotifier(func(o *notify.Options) { o.RetryMin, o.RetryMax = time.Millisecond, 2*time.Millisecond })},
	})
	c := newClient(t, d.URL())
	ctx := context.Background()
	if _, err := c.RegisterAgent(ctx, "coder@local", mailbox.AgentCard{Name: "Coder"}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		body := `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"m-` + string(rune('a'+i)) + `","parts":[{"kind":"text","text":"hi"}]},` +
			`"configuration":{"blocking":false,"pushNotificationConfig":{"url":"` + rcv.URL + `/hook"}}}}`
		resp, err := http.Post(d.URL()+"/agents/coder@local/", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	var dead []mailbox.NotificationStatus
	waitUntil(t, "three dead letters", func() bool {
		list, err := c.Deliveries(ctx, false)
		if err != nil {
			return false
		}
		dead = dead[:0]
		for _, n := range list.Notifications {
			if n.State == mailbox.DeliveryDead {
				dead = append(dead, n)
			}
		}
		return len(dead) == 3
	})
	return c, rcv.URL, dead
}

func TestDeadLettersRetriedInBulkAroundOneRetriedMeanwhile(t *testing.T) {
	t.Parallel()
	var up atomic.Bool
	c, rcvURL, dead := deadLetters(t, &up)
	ctx := context.Background()

	r := runConsole(t, c, Options{})
	r.scr.waitForText(t, "no auth")
	r.scr.press(char('7'))
	r.scr.waitForText(t, "[7] Deliveries 1-3 of 3")
	r.scr.press(char('*'))
	f := r.scr.waitForText(t, "✓3 marked")
	if !f.contains("✓" + dead[0].ID) {
		t.Errorf("a marked dead letter is not marked in its row:\n%s", f)
	}
	r.scr.press(char('p'))
	r.scr.waitForText(t, "paused (0 events held)")
	up.Store(true)
	if _, err := c.RetryNotification(ctx, dead[1].ID, "a colleague got there first"); err != nil {
		t.Fatal(err)
	}
	r.scr.waitForNoText(t, "paused (0 events held)") // retried, maybe delivered too: unseen

	r.scr.press(char('R'))
	f = r.scr.waitForText(t, "Retry 3 push notifications")
	wantContains(t, "the dialog", dialogText(f), "Retry 3 now", rcvURL+"/hook (3)")
	r.scr.typeText("receiver is back")
	r.scr.press(key(tcell.KeyEnter), key(tcell.KeyEnter))
	f = r.scr.waitForText(t, "2 done, 1 skipped: they had changed")
	wantContains(t, "the outcome", dialogText(f), "Retried 2 notifications, 1 had changed and were left alone", "notification "+dead[1].ID)
	audit, err := c.Audit(ctx, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	retried := map[string]int{}
	for _, a := range audit {
		if a.Action == "push_retried" {
			retried[a.Reason]++
		}
	}
	if retried["receiver is back"] != 2 || retried["a colleague got there first"] != 1 {
		t.Errorf("the audit's retries by reason = %v, want 2 from the console and 1 from the colleague", retried)
	}
	r.scr.press(key(tcell.KeyEnter), char('p'))
	r.scr.waitForText(t, "[7] Deliveries 0")
}

// Read-only, marks are gone (they serve repairs only) and the help does
// not describe marking for a repair.
func TestReadOnlyHelpHasNoMarks(t *testing.T) {
	ro := defaultRegistry().withoutDangerous()
	for _, l := range ro.helpLines() {
		if strings.Contains(l, "Space") || strings.Contains(l, "mark") && strings.Contains(l, "repair") {
			t.Errorf("read-only help describes marking for a repair: %s", l)
		}
	}
	for _, p := range []paneID{paneLeases, paneQueue, paneWaiting, paneDeliveries} {
		if _, ok := ro.lookup(char(' '), p); ok {
			t.Errorf("read-only, Space still marks in %s", p)
		}
		if _, ok := defaultRegistry().lookup(char(' '), p); !ok {
			t.Errorf("Space does not mark in %s", p)
		}
	}
}

// An agent whose webhook refuses shows it on its row: the dead letters
// and the retries, for the Deliveries pane (7).
func TestAgentRowShowsAFailingWebhook(t *testing.T) {
	t.Parallel()
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "refusing", http.StatusServiceUnavailable)
	}))
	defer rcv.Close()
	d := daemontest.Start(t, daemontest.Options{
		Config: func(c *config.Config) { c.PushMaxAttempts = 1 },
		Daemon: []daemon.Option{daemon.WithNotifier(func(o *notify.Options) { o.RetryMin, o.RetryMax = time.Millisecond, 2*time.Millisecond })},
	})
	api := agentAPI{t, newClient(t, d.URL())}
	if _, err := api.c.RegisterAgent(context.Background(), "planner@local", mailbox.AgentCard{Name: "Planner", Webhook: &mailbox.Webhook{URL: rcv.URL + "/results"}}); err != nil {
		t.Fatal(err)
	}
	id := api.send("worker@local", "work")
	_, lease := api.lease("worker@local")
	api.post(id, lease.LeaseID, mailbox.StatusOK, "")
	r := runConsoleSized(t, api.c, Options{Addr: d.URL()}, 200, 50)
	r.scr.waitForText(t, "no auth")
	r.scr.press(char('5'))
	r.scr.waitFor(t, "planner's failing webhook on its row", func(f frame) bool {
		return strings.Contains(agentLine(f, "planner@local"), "webhook failing: 1 dead letter(s), 0 being retried (7)")
	})
}

// D drops the marked notifications with one reason, and only those.
func TestMarkedDeadLettersDropped(t *testing.T) {
	t.Parallel()
	var up atomic.Bool
	c, _, dead := deadLetters(t, &up)
	r := runConsole(t, c, Options{})
	r.scr.waitForText(t, "no auth")
	r.scr.press(char('7'))
	r.scr.waitForText(t, "[7] Deliveries 1-3 of 3")
	r.scr.press(char(' '), char('j'), char(' '))
	r.scr.waitForText(t, "✓2 marked")
	r.scr.press(char('D'))
	f := r.scr.waitForText(t, "Drop 2 push notifications")
	wantContains(t, "the dialog", dialogText(f), "Drop 2", "never delivered")
	r.scr.typeText("receiver retired")
	r.scr.press(key(tcell.KeyEnter), key(tcell.KeyEnter))
	r.scr.waitForText(t, "dropped 2 notifications")
	r.scr.waitForText(t, "[7] Deliveries 1 of 1")
	list, err := c.Deliveries(context.Background(), false)
	if err != nil || len(list.Notifications) != 1 || list.Notifications[0].ID != dead[2].ID {
		t.Errorf("after the drop the outbox holds %+v, %v; want only %s", list.Notifications, err, dead[2].ID)
	}
}
