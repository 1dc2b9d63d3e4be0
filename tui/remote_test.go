package tui

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"
	"github.com/rivo/tview"

	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/internal/testclock"
	"github.com/mailroom/mailroom/mailbox"
)

// startRemoteMailbox starts a daemon behind the stand-in for its
// dispatcher's reports (daemontest.RemoteReports) over dir ("" for a
// fresh one), and returns the proxy and the agents' API through it.
func startRemoteMailbox(t *testing.T, dir string) (*daemontest.RemoteReports, agentAPI) {
	t.Helper()
	d := daemontest.Start(t, daemontest.Options{Dir: dir})
	rr := daemontest.StartRemoteReports(t, d.URL(), nil)
	return rr, agentAPI{t, newClient(t, rr.URL)}
}

func (a agentAPI) registerRemote(agent, url, binding string, concurrency int) {
	a.t.Helper()
	card := mailbox.AgentCard{Remote: &mailbox.RemoteSpec{URL: url, Binding: binding, Concurrency: concurrency}}
	if _, err := a.c.RegisterAgent(a.t.Context(), agent, card); err != nil {
		a.t.Fatalf("registering %s as remote: %v", agent, err)
	}
}

// remoteAgentLine is the Agents pane's row of a remote agent: the line
// with the agent's id and a remote agent's status.
func remoteAgentLine(f frame, agent string) string {
	row := regexp.MustCompile(regexp.QuoteMeta(agent) + ` +(! )?remote( healthy| failing| circuit open| standby| resolving|  )`)
	for _, l := range f.lines {
		if row.MatchString(l) {
			return l
		}
	}
	return ""
}

// styleOf is the colour text is drawn in on line: its foreground, or its
// background on the focused pane's selected row, which is inverted.
func styleOf(f frame, line, text string) tcell.Color {
	for y, l := range f.lines {
		if l == line && line != "" {
			if i := strings.Index(l, text); i >= 0 {
				fg, bg, _ := f.styles[y][len([]rune(l[:i]))].Decompose()
				if bg != tview.Styles.PrimitiveBackgroundColor && bg != tcell.ColorDefault {
					return bg
				}
				return fg
			}
		}
	}
	return tcell.ColorDefault
}

// The Agents pane shows each remote agent's state as the daemon's
// dispatcher reports it (failing yellow, an open circuit red and marked,
// what needs the operator first in the note), and the Leases pane says of
// each lease a remote agent holds how its delivery goes: failing and when
// it is tried next, accepted and polled as the remote's task, lost by
// the remote (red). A lease of an agent that polls says nothing there.
// A new report reaches the console with the daemon's next agents push.
func TestRemoteAgentsAndTheirDeliveries(t *testing.T) {
	t.Parallel()
	rr, api := startRemoteMailbox(t, "")
	api.registerRemote("echo@remote", "http://127.0.0.1:9999/", mailbox.BindingJSONRPC03, 2)
	api.registerRemote("sum@remote", "https://sum.example.com/", mailbox.BindingAuto, 4)
	api.registerRemote("fast@remote", "http://127.0.0.1:9998/", mailbox.BindingAuto, 4)
	retrying := api.send("echo@remote", "echo this")
	lost := api.send("echo@remote", "echo that")
	polled := api.send("fast@remote", "be quick")
	local := api.send("worker-a@local", "poll for it")
	_, retryLease := api.lease("echo@remote")
	_, lostLease := api.lease("echo@remote")
	_, polledLease := api.lease("fast@remote")
	api.lease("worker-a@local")

	now := time.Now()
	clk := &testclock.Clock{}
	clk.Set(now)
	at := func(d time.Duration) int64 { return now.Add(d).UnixMilli() }
	reports := map[string]*mailbox.RemoteStatus{
		"echo@remote": {Binding: mailbox.BindingJSONRPC03, State: mailbox.RemoteFailing, SinceMs: at(-95 * time.Second),
			LastError: "dial tcp 127.0.0.1:9999: connection refused\x1b[31m", InFlight: 2, Limit: 2,
			Deliveries: []mailbox.DeliveryStatus{
				{TaskID: retrying, LeaseID: retryLease.LeaseID, State: mailbox.DeliveryRetrying, LastError: "connection refused", Attempts: 3, NextTryMs: at(7 * time.Second)},
				{TaskID: lost, LeaseID: lostLease.LeaseID, State: mailbox.DeliveryLost, RemoteTaskID: "rt-2"},
			}},
		"sum@remote": {Binding: mailbox.BindingJSONRPC10, State: mailbox.RemoteCircuitOpen, SinceMs: at(-3 * time.Minute),
			LastError: "503 Service Unavailable", NextProbeMs: at(30 * time.Second), Limit: 4},
		"fast@remote": {Binding: mailbox.BindingHTTPJSON10, State: mailbox.RemoteHealthy, SinceMs: at(-time.Hour), InFlight: 1, Limit: 4,
			Deliveries: []mailbox.DeliveryStatus{{TaskID: polled, LeaseID: polledLease.LeaseID, State: mailbox.DeliveryPolling, RemoteTaskID: "rt-9"}}},
	}
	rr.Set(func(agent string) *mailbox.RemoteStatus { return reports[agent] })

	// On 80 columns the state and the next try are left whole; the
	// error is what is cut.
	narrow := runConsoleSized(t, api.c, Options{Addr: rr.URL, Now: clk.Now}, 80, 24)
	f := narrow.scr.waitForText(t, "! lost by remote")
	for _, want := range []string{"failing, next try in 7s…", "! lost by remote (rt-2)"} {
		if !f.contains(want) {
			t.Errorf("on 80 columns the Leases pane lacks %q:\n%s", want, f)
		}
	}

	r := runConsoleSized(t, api.c, Options{Addr: rr.URL, Now: clk.Now}, 200, 60)
	f = r.scr.waitForText(t, "polling as rt-9")
	for _, tc := range []struct {
		task, want string
		color      tcell.Color
	}{
		// The column is cut after the next try, not before.
		{retrying, "failing, next try in 7s: connection ref…", colorAging},
		{lost, "! lost by remote (rt-2)", colorStale},
		{polled, "polling as rt-9", colorText},
	} {
		line := f.lineWith(short(tc.task))
		if !strings.Contains(line, tc.want) {
			t.Errorf("the lease of %s reads %q; want it to say %q", short(tc.task), line, tc.want)
		} else if got := styleOf(f, line, tc.want); got != tc.color {
			t.Errorf("%q is drawn in %v, want %v", tc.want, got, tc.color)
		}
	}
	if !strings.Contains(f.lineWith("HOLDER"), "HOLDER                      REMOTE") && !strings.Contains(f.lineWith("HOLDER"), "REMOTE") {
		t.Errorf("the Leases pane has no REMOTE column:\n%s", f)
	}
	if line := f.lineWith(short(local)); strings.Contains(line, "remote") || strings.Contains(line, "not reported") {
		t.Errorf("the lease of an agent that polls reads %q; want no delivery on it", line)
	}

	// The filter finds remote leases by their delivery's state and by
	// the remote's task id.
	for _, tc := range []struct{ filter, task string }{{"lost", lost}, {"RT-9", polled}} {
		r.scr.press(char('2'), char('/'))
		r.scr.typeText(tc.filter)
		f = r.scr.waitForText(t, "filter:/"+tc.filter)
		if !f.contains("[2] Leases 1 of 1 filtered from 4") || !f.contains(short(tc.task)) {
			t.Errorf("filter %s should leave the lease of %s alone:\n%s", tc.filter, short(tc.task), f)
		}
		r.scr.press(key(tcell.KeyEnter), key(tcell.KeyEscape))
		r.scr.waitForNoText(t, "filter:/")
	}

	r.scr.press(char('5'))
	f = r.scr.waitFor(t, "the remote agents' rows", func(f frame) bool {
		return agentsFocused(f) && remoteAgentLine(f, "sum@remote") != "" && remoteAgentLine(f, "echo@remote") != ""
	})
	echo, sum, fast := remoteAgentLine(f, "echo@remote"), remoteAgentLine(f, "sum@remote"), remoteAgentLine(f, "fast@remote")
	wantContains(t, "echo@remote's row", echo, "remote failing",
		// The error is quoted, its escape sequence escaped: cut here, whole
		// in the pane's JSON (J) and in agent list.
		`! 1 lost by the remote: repair their leases; 2/2 in flight; failing for 1m35s: "dial tcp 127.0.0.1:9999: conn`)
	wantContains(t, "sum@remote's row", sum, "! remote circuit open", "0/4 in flight; circuit open for 3m00s, probe in 30s: 503 Service Unavailable; at https://sum.example.com/")
	wantContains(t, "fast@remote's row", fast, "remote healthy", "1/4 in flight; healthy for 1h00m; at http://127.0.0.1:9998/ http+json-1.0 (auto)")
	for _, tc := range []struct {
		line, text string
		color      tcell.Color
	}{
		{echo, "echo@remote", colorAging}, {echo, "! 1 lost", colorStale}, {sum, "sum@remote", colorStale}, {fast, "fast@remote", colorText},
	} {
		if got := styleOf(f, tc.line, tc.text); got != tc.color {
			t.Errorf("%q is drawn in %v, want %v:\n%s", tc.text, got, tc.color, tc.line)
		}
	}
	for _, line := range []string{echo, sum, fast} {
		if strings.Contains(line, goneStatus) {
			t.Errorf("a remote agent never calls the daemon, so none is probably gone: %q", line)
		}
	}
	if strings.ContainsAny(f.String(), "\x1b") {
		t.Errorf("an escape sequence reached the screen:\n%q", f.String())
	}

	// The remote came back: the next listing the daemon pushes (after a
	// change of its own, here a send) says so.
	reports["echo@remote"] = &mailbox.RemoteStatus{Binding: mailbox.BindingJSONRPC03, State: mailbox.RemoteHealthy, SinceMs: at(0), InFlight: 2, Limit: 2,
		Deliveries: []mailbox.DeliveryStatus{{TaskID: retrying, LeaseID: retryLease.LeaseID, State: mailbox.DeliveryAccepted, RemoteTaskID: "rt-1"}}}
	rr.Set(func(agent string) *mailbox.RemoteStatus { return reports[agent] })
	api.send("worker-a@local", "anything")
	f = r.scr.waitFor(t, "echo@remote healthy", func(f frame) bool { return strings.Contains(remoteAgentLine(f, "echo@remote"), "remote healthy") })
	if got := styleOf(f, remoteAgentLine(f, "echo@remote"), "echo@remote"); got != colorText {
		t.Errorf("a healthy remote is drawn in %v, want %v", got, colorText)
	}
	r.scr.press(char('2'))
	f = r.scr.waitForText(t, "accepted as rt-1")
	if line := f.lineWith(short(lost)); !strings.Contains(line, "remote, not reported") {
		t.Errorf("a remote lease the dispatcher no longer reports reads %q; want it marked remote, not reported", line)
	}
}

// A task a remote accepted (remote_accepted in the log) shows in the
// detail view where the remote keeps it and how its delivery goes, and
// its history says the remote's task id; requeueing its lease to an
// agent that polls works as for any lease, and the remote's record stays
// on the task (the accepting lease named as an earlier one).
func TestRemoteLeaseDetailAndRequeue(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	start := time.Now().Add(-time.Minute).UnixMilli()
	task, lease := "7a5c0000-0000-4000-8000-000000000024", "1ea5e000-0000-4000-8000-000000000026"
	daemontest.WriteLog(t, dir,
		fmt.Sprintf(`{"seq":1,"at_ms":%d,"type":"agent_registered","principal":"oncall","agent":"echo@remote","card":{"name":"","description":"","version":"","skills":[],"default_input_modes":[],"default_output_modes":[],"remote":{"url":"http://127.0.0.1:9999/","binding":"jsonrpc-0.3","concurrency":2}}}`, start),
		fmt.Sprintf(`{"seq":2,"at_ms":%d,"type":"task_sent","task":{"id":"%s","sender":"planner@local","recipient":"echo@remote","intent_text":"summarize the incident"}}`, start+1000, task),
		fmt.Sprintf(`{"seq":3,"at_ms":%d,"type":"task_leased","task_id":"%s","lease_id":"%s","leased_to":"echo@remote","attempt":1}`, start+2000, task, lease),
		fmt.Sprintf(`{"seq":4,"at_ms":%d,"type":"remote_accepted","task_id":"%s","lease_id":"%s","leased_to":"echo@remote","attempt":1,"remote":{"task_id":"remote-task-24","context_id":"remote-ctx-24","binding":"jsonrpc-0.3"}}`, start+3000, task, lease),
	)
	rr, api := startRemoteMailbox(t, dir)
	rr.Set(func(agent string) *mailbox.RemoteStatus {
		return &mailbox.RemoteStatus{Binding: mailbox.BindingJSONRPC03, State: mailbox.RemoteHealthy, InFlight: 1, Limit: 2,
			Deliveries: []mailbox.DeliveryStatus{{TaskID: task, LeaseID: lease, State: mailbox.DeliveryPolling, RemoteTaskID: "remote-task-24", Attempts: 1}}}
	})
	r := runConsole(t, api.c, Options{Addr: rr.URL})
	r.scr.waitForText(t, "polling as remote-task-24")

	r.scr.press(char('2'), key(tcell.KeyEnter))
	f := r.scr.waitForText(t, "Task "+task)
	accepted := formatClock(start + 3000)
	for _, want := range []string{
		"delivery to remote echo@remote at http://127.0.0.1:9999/: polling as remote-task-24 (1 send attempt(s))",
		"remote task remote-task-24  context remote-ctx-24  binding jsonrpc-0.3",
		"accepted by echo@remote at " + accepted + " (", "under the current lease",
		"remote_accepted", "remote task remote-task-24",
	} {
		if !f.contains(want) {
			t.Errorf("the detail view lacks %q:\n%s", want, f)
		}
	}
	r.scr.press(key(tcell.KeyEscape))
	r.scr.waitForNoText(t, "Lease history")

	// The remote lost the task: the operator hands it to an agent that
	// polls, as any lease.
	f = openRequeue(t, r, task)
	if !f.contains("echo@remote") {
		t.Errorf("the requeue dialog does not name the remote holder:\n%s", f)
	}
	r.scr.press(key(tcell.KeyBacktab)) // reason -> to
	r.scr.typeText("worker-b@local")
	r.scr.press(key(tcell.KeyTab))
	r.scr.typeText("the remote lost it")
	// worker-b@local has never been heard of: the press warns, and the
	// dialog's own button confirms the new agent (to -> reason ->
	// Requeue -> Cancel -> Create new agent).
	r.scr.press(key(tcell.KeyEnter), key(tcell.KeyEnter))
	r.scr.waitForText(t, "worker-b@local is not an agent the mailbox knows")
	pressCreate(r, 4)
	r.scr.waitForText(t, "requeued "+short(task))
	e, ok := api.entry(task)
	if !ok || e.State != mailbox.TaskQueued || e.Task.Recipient != "worker-b@local" {
		t.Fatalf("after the requeue the daemon has the task as %+v; want it queued for worker-b@local", e)
	}
	r.scr.waitForText(t, "in flight 0")
	r.scr.press(char('1'), key(tcell.KeyEnter))
	f = r.scr.waitForText(t, "Task "+task)
	for _, want := range []string{"remote task remote-task-24", "under an earlier lease " + short(lease), "task_requeued"} {
		if !f.contains(want) {
			t.Errorf("after the requeue the detail view lacks %q:\n%s", want, f)
		}
	}
	if f.contains("delivery to remote") {
		t.Errorf("a queued task has no delivery under way:\n%s", f)
	}

	// The help page says what the marks mean.
	r.scr.press(key(tcell.KeyEscape), char('?'))
	r.scr.waitForText(t, "Help (Esc to go back)")
	r.scr.press(char('G')) // its end: the notes follow the keys
	f = r.scr.waitForText(t, "Sorts: ")
	for _, want := range []string{"Remote agents (A2A servers the daemon delivers to) never call", `"! "remote circuit open, red`, "REMOTE column", `"! "lost (the remote forgot it)`} {
		if !f.contains(want) {
			t.Errorf("the help page lacks %q:\n%s", want, f)
		}
	}
}

func wantContains(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s = %q, want it to contain %q", what, got, w)
		}
	}
}

// Every delivery state reads as the Leases pane shows it, in its colour.
func TestDeliveryCell(t *testing.T) {
	const now = int64(1_000_000)
	accepted := &mailbox.RemoteDelivery{RemoteRef: mailbox.RemoteRef{TaskID: "rt-7", Binding: mailbox.BindingJSONRPC03}}
	d := func(state string, f ...func(*mailbox.DeliveryStatus)) *mailbox.DeliveryStatus {
		ds := &mailbox.DeliveryStatus{State: state}
		for _, fn := range f {
			fn(ds)
		}
		return ds
	}
	withID := func(ds *mailbox.DeliveryStatus) { ds.RemoteTaskID = "rt-1" }
	for _, tc := range []struct {
		in    remoteLease
		want  string
		color tcell.Color
	}{
		{remoteLease{}, "remote, not reported", colorText},
		{remoteLease{accepted: accepted}, "accepted as rt-7", colorText},
		{remoteLease{delivery: d(mailbox.DeliverySending)}, "sending", colorText},
		{remoteLease{delivery: d(mailbox.DeliverySending, func(ds *mailbox.DeliveryStatus) { ds.Attempts = 2 })}, "sending (try 2)", colorText},
		{remoteLease{delivery: d(mailbox.DeliveryRetrying, func(ds *mailbox.DeliveryStatus) { ds.NextTryMs, ds.LastError = now+12_000, "EOF\n\x1b[2J" })},
			`failing, next try in 12s: "EOF \x1b[2J"`, colorAging},
		{remoteLease{delivery: d(mailbox.DeliveryRetrying)}, "failing", colorAging},
		{remoteLease{delivery: d(mailbox.DeliveryAccepted, withID)}, "accepted as rt-1", colorText},
		// The replica's record stands in for an id the report lacks.
		{remoteLease{delivery: d(mailbox.DeliveryAccepted), accepted: accepted}, "accepted as rt-7", colorText},
		{remoteLease{delivery: d(mailbox.DeliveryStreaming, withID)}, "streaming as rt-1", colorText},
		{remoteLease{delivery: d(mailbox.DeliveryPolling, withID)}, "polling as rt-1", colorText},
		{remoteLease{delivery: d(mailbox.DeliveryCanceling, withID)}, "canceling at the remote as rt-1", colorAging},
		{remoteLease{delivery: d(mailbox.DeliveryLost, withID)}, "! lost by remote (rt-1)", colorStale},
		{remoteLease{delivery: d(mailbox.DeliveryLost)}, "! lost by remote", colorStale},
		{remoteLease{delivery: d(mailbox.DeliveryUnknown)}, "! unknown: maybe sent, not resent", colorStale},
		{remoteLease{delivery: d("paused\x1b[1m", withID)}, `"paused\x1b[1m" as rt-1`, colorText},
	} {
		got, color := deliveryCell(tc.in, now)
		if got != tc.want || color != tc.color {
			t.Errorf("deliveryCell(%+v) = %q, %v; want %q, %v", tc.in.delivery, got, color, tc.want, tc.color)
		}
	}
}

// Every remote state reads as the Agents pane's STATUS shows it.
func TestRemoteStatusCell(t *testing.T) {
	for _, tc := range []struct {
		in    *mailbox.RemoteStatus
		want  string
		color tcell.Color
	}{
		{nil, "remote", colorText},
		{&mailbox.RemoteStatus{State: mailbox.RemoteResolving}, "remote resolving", colorText},
		{&mailbox.RemoteStatus{State: mailbox.RemoteHealthy}, "remote healthy", colorText},
		{&mailbox.RemoteStatus{State: mailbox.RemoteFailing}, "remote failing", colorAging},
		{&mailbox.RemoteStatus{State: mailbox.RemoteCircuitOpen}, "! remote circuit open", colorStale},
		{&mailbox.RemoteStatus{State: mailbox.RemoteStandby}, "remote standby", colorText},
	} {
		got, color := remoteStatusCell(tc.in)
		if got != tc.want || color != tc.color {
			t.Errorf("remoteStatusCell(%+v) = %q, %v; want %q, %v", tc.in, got, color, tc.want, tc.color)
		}
	}
}
