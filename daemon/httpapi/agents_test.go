package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/internal/testclock"
	"github.com/mailroom/mailroom/mailbox"
)

// agentJSON is one agent of GET /a2a/agents exactly as the wire has it.
// agentJSON is an agent's listing entry; its pending results are all
// finished ones (no questions), so each is undrained too.
func agentJSON(agent string, queued, inFlight int, oldestLeaseAgeMs int64, pending, ok5m, err5m int, lastSeenMs int64) string {
	undrained := ""
	if pending > 0 {
		undrained = fmt.Sprintf(`"undrained":%d,`, pending)
	}
	return fmt.Sprintf(`{"agent":%q,"queued":%d,"in_flight":%d,"oldest_lease_age_ms":%d,"results_pending":%d,"results_ok_5m":%d,"results_error_5m":%d,%s"last_seen_ms":%d}`,
		agent, queued, inFlight, oldestLeaseAgeMs, pending, ok5m, err5m, undrained, lastSeenMs)
}

func agentsBody(t *testing.T, d *daemontest.Daemon) string {
	t.Helper()
	r := request(t, d, "GET", "/a2a/agents", "", "", nil)
	if r.status != http.StatusOK {
		t.Fatalf("GET /a2a/agents = %d %s", r.status, r.body)
	}
	return strings.TrimSpace(string(r.body))
}

func wantAgents(t *testing.T, d *daemontest.Daemon, what string, agents ...string) {
	t.Helper()
	want := `{"kind":"a2a_agents","agents":[` + strings.Join(agents, ",") + `]}`
	if got := agentsBody(t, d); got != want {
		t.Errorf("%s: GET /a2a/agents =\n%s\nwant\n%s", what, got, want)
	}
}

// TestAgentsListing: GET /a2a/agents after several agents sent, leased,
// answered and drained, timed by the daemon's injected clock; results leave
// the five-minute window as the clock moves; a restart keeps the counts of
// the log and forgets what was only in memory.
func TestAgentsListing(t *testing.T) {
	t.Parallel()
	t0 := time.UnixMilli(1_767_225_600_000) // 2026-01-01T00:00:00Z
	clock := testclock.New(t0)
	d := daemontest.Start(t, daemontest.Options{Now: clock.Now})
	wantAgents(t, d, "a new daemon")
	at := func(s int) int64 { clock.Set(t0.Add(time.Duration(s) * time.Second)); return clock.Now().UnixMilli() }
	result := func(l mailbox.TaskOptResponse, status string) {
		t.Helper()
		call(t, d, "POST", "/a2a/results", mailbox.Result{TaskID: l.Task.ID, Status: status, LeaseID: l.Lease.LeaseID, Content: []mailbox.Content{}, ErrorMessage: "e"}, nil)
	}

	at(1)
	sendTask(t, d, task("planner@local", "coder@local", "one"))
	sendTask(t, d, task("planner@local", "coder@local", "two"))
	sendTask(t, d, task("planner@local", "coder@local", "three"))
	sendTask(t, d, task("other@local", "reviewer@local", "review"))
	at(2)
	first := leaseTask(t, d, "coder@local")
	at(3)
	if l := leaseTask(t, d, "idle@local"); l.Task != nil {
		t.Fatalf("idle@local leased %+v", l.Task)
	}
	okAt := at(4)
	result(first, mailbox.StatusOK)
	second := leaseTask(t, d, "coder@local")
	errAt := at(5)
	result(second, mailbox.StatusError)
	leasedAt := at(6)
	coderSeen := leasedAt
	leaseTask(t, d, "coder@local")
	drainedAt := at(7)
	call(t, d, "POST", "/a2a/results/next?sender=planner@local", nil, nil)
	now := at(10)

	coder := func(ok, failed int) string {
		return agentJSON("coder@local", 0, 1, now-leasedAt, 0, ok, failed, coderSeen)
	}
	idle := agentJSON("idle@local", 0, 0, 0, 0, 0, 0, 3000+t0.UnixMilli())
	other := agentJSON("other@local", 0, 0, 0, 0, 0, 0, 1000+t0.UnixMilli())
	planner := agentJSON("planner@local", 0, 0, 0, 1, 0, 0, drainedAt)
	reviewer := agentJSON("reviewer@local", 1, 0, 0, 0, 0, 0, 0)
	wantAgents(t, d, "after the calls", coder(1, 1), idle, other, planner, reviewer)

	now = clock.Now().Add(-10 * time.Second).Add(4*time.Second + 5*time.Minute).UnixMilli()
	clock.Set(time.UnixMilli(now))
	if now-okAt != 5*60*1000 {
		t.Fatalf("the clock is %d ms after the ok result, want 5 minutes", now-okAt)
	}
	wantAgents(t, d, "5 minutes after the ok result", coder(0, 1), idle, other, planner, reviewer)
	clock.Set(time.UnixMilli(errAt + 5*60*1000 - 1))
	now = clock.Now().UnixMilli()
	wantAgents(t, d, "just under 5 minutes after the error", coder(0, 1), idle, other, planner, reviewer)

	// The results window and the calls that changed nothing are memory: a
	// restart forgets them, and an agent known only by a poll (idle@local)
	// is gone. When each agent last acted is in the log: it stays.
	d.Restart()
	wantAgents(t, d, "after a restart", coder(0, 0), other, planner, reviewer)
}

// TestRequeueToAnotherRecipient hands a leased task to another agent over
// HTTP with tokens: who may, what is refused (changing nothing), and what
// follows: the new recipient leases it next, the old one cannot, and the
// audit trail records the move.
func TestRequeueToAnotherRecipient(t *testing.T) {
	t.Parallel()
	tokens := map[string][]string{
		"planner@local": {"a2a.send.coder@local", auth.CapDrain},
		"coder@local":   {auth.CapRecv, "a2a.respond.planner@local"},
		"coder2@local":  {auth.CapRecv, "a2a.respond.planner@local"},
		"operator":      {auth.CapRequeue, auth.CapForceError},
		"router":        {auth.CapRequeue, auth.CapForceError, "a2a.send.coder2@local"},
		"reader":        {auth.CapRead},
	}
	_, do := asTokens(t, tokens)
	var sent mailbox.TaskQueuedResponse
	do("planner@local", "POST", "/a2a/tasks", `{"sender":"planner@local","recipient":"coder@local","intent_text":"fix it"}`, &sent)
	var leased mailbox.TaskOptResponse
	do("coder@local", "POST", "/a2a/tasks/next", "", &leased)
	if leased.Task == nil || leased.Task.ID != sent.TaskID {
		t.Fatalf("coder@local leased %+v, want %s", leased.Task, sent.TaskID)
	}
	repair := func(command string) string {
		return `{"task_id":"` + sent.TaskID + `","reason":"coder@local is down","command":` + command + `}`
	}
	queue := func() string {
		t.Helper()
		return string(do("reader", "GET", "/a2a/queue", "", nil).body)
	}
	before := queue()
	refusals := []struct {
		name, as, command string
		status            int
		text              string
	}{
		{"without a2a.send.coder2@local", "operator", `{"action":"requeue","duplicate_risk":"operator_accepted","recipient":"coder2@local"}`, 403, "a2a.send.coder2@local"},
		{"with force_error", "router", `{"action":"force_error","message":"m","recipient":"coder2@local"}`, 400, "command.recipient"},
		{"empty", "router", `{"action":"requeue","duplicate_risk":"operator_accepted","recipient":""}`, 400, "command.recipient"},
		{"not an agent id", "router", `{"action":"requeue","duplicate_risk":"operator_accepted","recipient":"coder 2"}`, 400, "command.recipient"},
		// Bad input is a 400 before missing rights are a 403.
		{"not an agent id, by a token without the right", "operator", `{"action":"requeue","duplicate_risk":"operator_accepted","recipient":"Coder2"}`, 400, "command.recipient"},
		// coder2@local has not been heard of yet: a typo is refused,
		// naming the agents it is close to.
		{"to an agent nobody knows", "router", `{"action":"requeue","duplicate_risk":"operator_accepted","recipient":"coder2@local"}`, 400, `got \"coder2@local\", an agent the mailbox does not know (never registered, heard from, or holding tasks); did you mean coder@local; expected a known agent, or command.new_agent to confirm a new one`},
		{"new_agent without a recipient", "router", `{"action":"requeue","duplicate_risk":"operator_accepted","new_agent":true}`, 400, "command.new_agent: only with command.recipient"},
	}
	for _, r := range refusals {
		got := do(r.as, "POST", "/a2a/repair", repair(r.command), nil)
		if got.status != r.status || !strings.Contains(string(got.body), r.text) {
			t.Errorf("requeue to another recipient %s: %d %s, want %d naming %s", r.name, got.status, got.body, r.status, r.text)
		}
		if after := queue(); after != before {
			t.Errorf("the refused requeue %s changed the queue:\n%s\n%s", r.name, before, after)
		}
	}

	var out mailbox.RepairedResponse
	if r := do("router", "POST", "/a2a/repair", repair(`{"action":"requeue","duplicate_risk":"operator_accepted","lease_id":"`+leased.Lease.LeaseID+`","recipient":"coder2@local","new_agent":true}`), &out); r.status != 200 {
		t.Fatalf("requeue to coder2@local = %d %s", r.status, r.body)
	}
	if o := out.Outcome; o.Action != mailbox.OutcomeRequeued || o.State != mailbox.TaskQueued || o.Recipient != "coder2@local" || o.Attempt != 1 {
		t.Errorf("outcome = %+v, want requeued for coder2@local after attempt 1", o)
	}
	var none mailbox.TaskOptResponse
	do("coder@local", "POST", "/a2a/tasks/next", "", &none)
	if none.Task != nil {
		t.Errorf("coder@local still leased %s after it was handed on", none.Task.ID)
	}
	var next mailbox.TaskOptResponse
	do("coder2@local", "POST", "/a2a/tasks/next", "", &next)
	if next.Task == nil || next.Task.ID != sent.TaskID || next.Task.Recipient != "coder2@local" || next.Lease.Attempt != 2 {
		t.Fatalf("coder2@local leased %+v %+v, want %s for coder2@local at attempt 2", next.Task, next.Lease, sent.TaskID)
	}
	if r := do("coder2@local", "POST", "/a2a/results", `{"task_id":"`+sent.TaskID+`","status":"ok","content":[],"lease_id":"`+next.Lease.LeaseID+`"}`, nil); r.status != 200 {
		t.Fatalf("coder2@local's result = %d %s", r.status, r.body)
	}

	var audit mailbox.AuditResponse
	do("reader", "GET", "/a2a/audit?task_id="+sent.TaskID, "", &audit)
	if len(audit.Repairs) != 1 {
		t.Fatalf("audit = %+v, want one repair", audit)
	}
	a := audit.Repairs[0]
	if a.FromRecipient != "coder@local" || a.ToRecipient != "coder2@local" || a.LeasedTo != "coder@local" || a.Principal != "router" || a.Action != mailbox.OutcomeRequeued {
		t.Errorf("audit record = %+v, want router's requeue of coder@local's lease from coder@local to coder2@local", a)
	}
	raw := do("reader", "GET", "/a2a/audit?task_id="+sent.TaskID, "", nil).body
	if !strings.Contains(string(raw), `"from_recipient":"coder@local","to_recipient":"coder2@local"`) {
		t.Errorf("audit on the wire = %s, want from_recipient and to_recipient", raw)
	}
}

// TestEventStreamAgentsFrame: a stream opened with ?agents=true carries,
// after a change, the agents listing as a block without an id; a stream
// without it never does; and resuming from the last id seen has no gap.
func TestEventStreamAgentsFrame(t *testing.T) {
	t.Parallel()
	clock := testclock.New(time.UnixMilli(1_767_225_600_000))
	d := daemontest.Start(t, daemontest.Options{Now: clock.Now})
	ctx := testContext(t)
	withAgents := openStream(t, ctx, d, "?agents=true", nil)
	plain := openStream(t, ctx, d, "", nil)
	for _, s := range []*stream{withAgents, plain} {
		if ev := s.nextEvent(t); ev.Type != mailbox.EventSnapshot || ev.Seq != 0 {
			t.Fatalf("first event = %s at %d, want the snapshot at 0", ev.Type, ev.Seq)
		}
	}

	first := sendTask(t, d, task("p@x", "w@x", "one"))
	if ev := withAgents.nextEvent(t); ev.Seq != 1 || ev.Task == nil || ev.Task.ID != first {
		t.Fatalf("after the snapshot: %s at %d, want task_sent %s at 1 (no listing before a change)", ev.Type, ev.Seq, first)
	}
	// The daemon pushes the listing within about a second of the change;
	// the stream's context bounds the wait.
	b := nextBlock(t, withAgents)
	if b.id != "" || b.event != mailbox.EventAgents {
		t.Fatalf("block after task_sent: id %q event %q, want an agents block without an id", b.id, b.event)
	}
	var up mailbox.AgentsUpdate
	if err := json.Unmarshal([]byte(b.data), &up); err != nil {
		t.Fatalf("agents data %s: %v", b.data, err)
	}
	now := clock.Now().UnixMilli()
	want := []mailbox.AgentInfo{{Agent: "p@x", LastSeenMs: now}, {Agent: "w@x", Queued: 1}}
	if up.Type != mailbox.EventAgents || up.AtMs != now || fmt.Sprint(up.Agents) != fmt.Sprint(want) {
		t.Errorf("agents block = %s, want type agents at %d with %+v", b.data, now, want)
	}
	if strings.Contains(b.data, `"seq"`) {
		t.Errorf("agents block %s has a seq; it is no log event", b.data)
	}

	second := sendTask(t, d, task("p@x", "w@x", "two"))
	if ev := withAgents.nextEvent(t); ev.Seq != 2 || ev.Task.ID != second {
		t.Errorf("after the listing: %s at %d, want task_sent %s at 2", ev.Type, ev.Seq, second)
	}
	// nextEvent fails on a block whose id is not its seq: the plain stream
	// carried the two sends and nothing between them.
	for seq := uint64(1); seq <= 2; seq++ {
		if ev := plain.nextEvent(t); ev.Seq != seq || ev.Type != mailbox.EventTaskSent {
			t.Errorf("plain stream: %s at %d, want task_sent at %d", ev.Type, ev.Seq, seq)
		}
	}

	// Resuming after the last id received (the listing moved nothing)
	// misses nothing and repeats nothing.
	resumed := openStream(t, ctx, d, "?agents=true", map[string]string{"Last-Event-ID": "1"})
	if ev := resumed.nextEvent(t); ev.Seq != 2 || ev.Task.ID != second {
		t.Errorf("resumed after 1: %s at %d, want task_sent %s at 2", ev.Type, ev.Seq, second)
	}
}

// nextBlock returns the next block that is not a heartbeat.
func nextBlock(t *testing.T, s *stream) sseBlock {
	t.Helper()
	for {
		if b := s.next(t); !(b.comment && b.id == "" && b.data == "") {
			return b
		}
	}
}

// TestAgentsListingNeverGetsAheadOfTheEvents: under a stream of sends,
// every listing a stream carries counts no task its reader has not been
// sent yet (the queue it shows for an agent is at most the task_sent
// events the stream gave before it), and listings held for their events
// are still given (the stream carries at least two). The order itself is
// pinned deterministically by TestAListingWaitsForTheEventsItCounts, which
// feeds a listing before its events; here the real daemon rarely does.
func TestAgentsListingNeverGetsAheadOfTheEvents(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Options{})
	ctx := testContext(t)
	s := openStream(t, ctx, d, "?agents=true", nil)
	if ev := s.nextEvent(t); ev.Type != mailbox.EventSnapshot {
		t.Fatalf("first event %s, want the snapshot", ev.Type)
	}
	const n = 300
	go func() {
		for i := range n {
			sendTask(t, d, task("p@x", "w@x", fmt.Sprint("task ", i)))
			if i%25 == 0 {
				time.Sleep(100 * time.Millisecond) // spread over a few listing intervals
			}
		}
	}()
	seen, listings, more := 0, 0, 0
	for seen < n || listings < 2 {
		b := nextBlock(t, s)
		switch b.event {
		case mailbox.EventTaskSent:
			var ev mailbox.Event
			if err := json.Unmarshal([]byte(b.data), &ev); err != nil {
				t.Fatal(err)
			}
			if ev.Task.Recipient == "w@x" {
				seen++
			}
		case mailbox.EventAgents:
			listings++
			var up mailbox.AgentsUpdate
			if err := json.Unmarshal([]byte(b.data), &up); err != nil {
				t.Fatal(err)
			}
			for _, a := range up.Agents {
				if a.Agent == "w@x" && a.Queued > seen {
					t.Fatalf("a listing counts %d tasks queued for w@x after the stream gave %d of their task_sent events", a.Queued, seen)
				}
			}
		}
		if seen == n && listings < 2 && more == listings {
			// One more change, so that a listing follows the last send.
			sendTask(t, d, task("p@x", "v@x", "one more change"))
			more++
		}
	}
}
