package tui

import (
	"context"
	"strings"
	"testing"

	"github.com/gdamore/tcell/v2"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/mailbox"
)

// startAuthDaemon runs a daemon that requires tokens, and returns a client
// holding oncall-ann's admin token: repairs made through it are recorded
// under oncall-ann.
func startAuthDaemon(t *testing.T) (*daemontest.Daemon, *client.Client) {
	t.Helper()
	d := daemontest.Start(t, daemontest.Options{Tokens: []auth.Token{{Principal: "oncall-ann", Token: "t-ann", Caps: []string{"a2a.admin"}}}})
	c, err := client.New(d.URL(), client.WithToken("t-ann"))
	if err != nil {
		t.Fatalf("client.New: %v", err)
	}
	return d, c
}

// listedAbove reports whether a is on a line above b.
func listedAbove(f frame, a, b string) bool {
	ya, _, okA := f.find(a)
	yb, _, okB := f.find(b)
	return okA && okB && ya < yb
}

func (a agentAPI) repair(req mailbox.RepairRequest) {
	a.t.Helper()
	if _, err := a.c.Repair(context.Background(), req); err != nil {
		a.t.Fatalf("repair %s of %s: %v", req.Command.Action, req.TaskID, err)
	}
}

func TestAuditPaneShowsRepairsNewestFirst(t *testing.T) {
	t.Parallel()
	d, c := startAuthDaemon(t)
	api := agentAPI{t, c}
	requeued := api.send("worker-a@local", "summarize the on-call notes")
	forced := api.send("worker-b@local", "fetch the billing metrics")
	_, leaseA := api.lease("worker-a@local")
	_, leaseB := api.lease("worker-b@local")

	// The requeue happens before the console starts, so it arrives in the
	// snapshot; the forced error arrives as a live event.
	api.repair(mailbox.RepairRequest{TaskID: requeued, Reason: "worker-a crashed mid-task",
		Command: mailbox.RepairCommand{Action: mailbox.ActionRequeue, LeaseID: leaseA.LeaseID, DuplicateRisk: mailbox.RiskOperatorAccepted, Recipient: "worker-c@local", NewAgent: true}})
	r := runConsoleSized(t, c, Options{Addr: d.URL(), Principal: "oncall-ann"}, 160, 40)
	f := r.scr.waitForText(t, "worker-a crashed mid-task")
	if !strings.Contains(f.lines[0], "as oncall-ann") || !strings.Contains(f.lines[0], "● live") {
		t.Errorf("header does not say whom the console acts as:\n%s", f.lines[0])
	}
	api.repair(mailbox.RepairRequest{TaskID: forced, Reason: "worker-b is gone",
		Command: mailbox.RepairCommand{Action: mailbox.ActionForceError, LeaseID: leaseB.LeaseID, Message: "given up after the worker vanished"}})
	r.scr.waitForText(t, "worker-b is gone")

	r.scr.press(char('4'))
	f = r.scr.waitForText(t, "[4] Audit 1-2 of 2  newest first")
	forcedLine, requeuedLine := f.lineWith("worker-b is gone"), f.lineWith("worker-a crashed mid-task")
	for _, tt := range []struct{ line, task, lease, action, posture string }{
		{forcedLine, forced, leaseB.LeaseID, "forced_error", "-"},
		{requeuedLine, requeued, leaseA.LeaseID, "requeued worker-a@local -> worker-c@local", "operator_accepted"},
	} {
		for _, want := range []string{"oncall-ann", tt.action, short(tt.task), short(tt.lease), " 1 ", tt.posture} {
			if !strings.Contains(tt.line, want) {
				t.Errorf("audit row of %s lacks %q: %q", tt.action, want, tt.line)
			}
		}
	}
	if !listedAbove(f, "worker-b is gone", "worker-a crashed mid-task") {
		t.Errorf("the Audit pane should list the newer forced error above the older requeue:\n%s", f)
	}
	if !f.contains("<1-7> pane") {
		t.Errorf("the hint bar does not offer the Audit pane's key:\n%s", f)
	}

	// / filters the trail by reason; Esc brings both back.
	r.scr.press(char('/'))
	r.scr.typeText("crashed")
	f = r.scr.waitForText(t, "filter:/crashed")
	if !f.contains("[4] Audit 1 of 1 filtered from 2") || strings.Contains(f.lineWith("worker-b is gone"), "oncall-ann") {
		t.Errorf("filter crashed should leave only the requeue (1 of 1 filtered from 2):\n%s", f)
	}
	r.scr.press(key(tcell.KeyEscape))
	r.scr.waitForNoText(t, "filter:/crashed")

	// Enter on the requeue (the second row) opens its task, with the repair history.
	r.scr.press(char('j'), key(tcell.KeyEnter))
	f = r.scr.waitForText(t, "Task "+requeued)
	for _, want := range []string{"Repair history", "Lease history", "task_requeued", "requeued worker-a@local -> worker-c@local by oncall-ann", "moved -> worker-c@local"} {
		if !f.contains(want) {
			t.Errorf("detail view lacks %q:\n%s", want, f)
		}
	}
	entry := repairEntry(f.lines, "worker-a crashed mid-task")
	for _, want := range []string{"requeued worker-a@local -> worker-c@local by oncall-ann", "lease " + short(leaseA.LeaseID), "attempt 1", "posture operator_accepted"} {
		if !strings.Contains(entry, want) {
			t.Errorf("repair history entry %q lacks %q:\n%s", entry, want, f)
		}
	}
	if f.contains("worker-b is gone") {
		t.Errorf("the requeued task's detail lists another task's repair:\n%s", f)
	}
	r.scr.press(key(tcell.KeyEscape))
	r.scr.waitForText(t, "[4] Audit 1-2 of 2")

	// Tab goes down the screen: from Results to Waiting, Deliveries,
	// Audit, then Agents, and Tab from Agents wraps to Queue.
	r.scr.press(char('3'), key(tcell.KeyTab), char('/'))
	r.scr.waitForText(t, "filter Waiting:")
	r.scr.press(key(tcell.KeyEscape), key(tcell.KeyTab), char('/'))
	r.scr.waitForText(t, "filter Deliveries:")
	r.scr.press(key(tcell.KeyEscape), key(tcell.KeyTab), char('/'))
	r.scr.waitForText(t, "filter Audit:")
	r.scr.press(key(tcell.KeyEscape), key(tcell.KeyTab), char('/'))
	r.scr.waitForText(t, "filter Agents:")
	r.scr.press(key(tcell.KeyEscape), key(tcell.KeyTab), char('/'))
	r.scr.waitForText(t, "filter Queue:")
	r.scr.press(key(tcell.KeyEscape), key(tcell.KeyBacktab), key(tcell.KeyBacktab), char('/'))
	r.scr.waitForText(t, "filter Audit:")
	r.scr.press(key(tcell.KeyEscape))

	// ? lists 4 and what it focuses.
	r.scr.press(char('?'))
	f = r.scr.waitForText(t, "Help (Esc to go back)")
	if l := f.lineWith("Audit"); !strings.Contains(l, "1 2 3 4 5 6 7") {
		t.Errorf("help does not list 4 for the Audit pane: %q\n%s", l, f)
	}
}

func TestHeaderSaysNoAuthWithoutAPrincipal(t *testing.T) {
	t.Parallel()
	d, c := startDaemon(t)
	api := agentAPI{t, c}
	id := api.send("worker-a@local", "classify the tickets")
	_, lease := api.lease("worker-a@local")
	api.repair(mailbox.RepairRequest{TaskID: id, Reason: "stuck for an hour",
		Command: mailbox.RepairCommand{Action: mailbox.ActionRequeue, LeaseID: lease.LeaseID, DuplicateRisk: mailbox.RiskOperatorAccepted}})
	r := runConsole(t, c, Options{Addr: d.URL()})
	// The header learns who the console is from its own request, which may
	// answer after the stream has shown the repair: wait for both.
	f := r.scr.waitFor(t, "the repair and a header that says no auth", func(f frame) bool {
		return f.contains("stuck for an hour") && strings.Contains(f.lines[0], d.URL()+" no auth")
	})
	if l := f.lineWith("stuck for an hour"); !strings.Contains(l, mailbox.NoAuth) {
		t.Errorf("a repair made without auth should say %s: %q", mailbox.NoAuth, l)
	}
}

func TestAuditPaneLayout(t *testing.T) {
	// The replica's three repairs, oldest first: a requeue by oncall-ann, a
	// forced error without auth, a retry-stale requeue. The requeued task is
	// leased again and more work waits, so every pane has rows.
	rp := newRepaired(t)
	rp.src.lease("worker-a@local")
	for _, intent := range []string{"rotate the keys", "archive the logs"} {
		rp.src.send("worker-d@local", withIntent(intent))
	}
	fb := newFakeBackend(rp.src)

	t.Run("160x48", func(t *testing.T) {
		// Tall enough for four readable panes: every repair shows unfocused.
		r := runConsoleSized(t, fb, Options{}, 160, 48)
		f := r.scr.waitForText(t, "[4] Audit 1-3 of 3")
		for _, want := range []string{"requeued (auto)", "(no auth)", "worker-a crashed mid-task", "archive the logs", "error (forced)"} {
			if !f.contains(want) {
				t.Errorf("a 160x48 console lacks %q:\n%s", want, f)
			}
		}
	})
	t.Run("80x24", func(t *testing.T) {
		r := runConsoleSized(t, fb, Options{}, 80, 24)
		f := r.scr.waitForText(t, "[4] Audit 1 of 3") // the strip shows the newest
		// Queue, Leases and Results keep their rows, from the first;
		// Audit is a strip with the newest repair, at the bottom.
		for _, want := range []string{short(rp.autoID), "never repair", "worker-a@local", "error (forced)", "requeued (auto)"} {
			if !f.contains(want) {
				t.Errorf("an 80x24 console lacks %q:\n%s", want, f)
			}
		}
		if f.contains(mailbox.NoAuth) {
			t.Errorf("the unfocused Audit strip should show only the newest repair:\n%s", f)
		}
		if !listedAbove(f, "error (forced)", "requeued (auto)") {
			t.Errorf("the Audit strip should be below Results:\n%s", f)
		}
		// Focused, the Audit pane takes a full share and shows older repairs.
		r.scr.press(char('4'))
		f = r.scr.waitForText(t, mailbox.NoAuth)
		for _, want := range []string{"[1] Queue", "[2] Leases", "[3] Results", "requeued (auto)"} {
			if !f.contains(want) {
				t.Errorf("with Audit focused an 80x24 console lacks %q:\n%s", want, f)
			}
		}
		r.scr.press(char('1'))
		r.scr.waitForNoText(t, mailbox.NoAuth)

		// A repair made now takes the strip's one row.
		lease := rp.src.lease("worker-c@local")
		fb.publish(lease, rp.src.emit(rp.src.s.DecideRepair(mailbox.RepairRequest{TaskID: lease.TaskID, Reason: "worker-c keeps timing out",
			Command: mailbox.RepairCommand{Action: mailbox.ActionForceError, LeaseID: lease.LeaseID, Message: "timed out"}}, "oncall-bob", rp.src.nowMs)))
		f = r.scr.waitForText(t, "[4] Audit 1 of 4")
		if !f.contains("oncall-bob") || f.contains("requeued (auto)") {
			t.Errorf("the Audit strip should show the repair just made, and only it:\n%s", f)
		}
	})
}

func TestAuditEnterOnAForgottenTask(t *testing.T) {
	rp := newRepaired(t)
	fb := newFakeBackend(rp.src)
	r := runConsole(t, fb, Options{})
	r.scr.waitForText(t, "[4] Audit 1-3 of 3")
	<-fb.subscribed
	// The replica forgets drained tasks at once, as a daemon with a small
	// retention would; the repair trail keeps them.
	r.model.mu.Lock()
	r.model.state.RetainDone = 0
	r.model.mu.Unlock()
	fb.publish(rp.src.drain("planner@local")) // the force-errored task's result
	r.scr.waitForText(t, "results pending 0")

	r.scr.press(char('4'), char('j'), key(tcell.KeyEnter)) // the forced error, second newest
	f := r.scr.waitForText(t, "is no longer remembered")
	if !strings.Contains(f.String(), "task "+short(rp.forcedID)) || f.contains("Task "+rp.forcedID) {
		t.Errorf("Enter on a forgotten task's repair should say so, not open a detail view:\n%s", f)
	}
	if !f.contains("worker-b is gone") {
		t.Errorf("the forgotten task's repair left the Audit pane:\n%s", f)
	}
	// A remembered task still opens.
	r.scr.press(char('j'), key(tcell.KeyEnter))
	r.scr.waitForText(t, "Task "+rp.requeuedID)
}
