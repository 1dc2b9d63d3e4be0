package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon"
	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/daemon/daemontest"
	pushnotify "github.com/mailroom/mailroom/daemon/notify"
	"github.com/mailroom/mailroom/daemon/store/pgstore/pgtest"
	"github.com/mailroom/mailroom/mailbox"
)

// With a receiver that never answers, a task's config and a sender's
// webhook each stop at push_outbox_per_receiver: the leader drops the
// oldest with push_dropped events (principal mailroom, the bound and its
// value in the reason), on the stream and in the audit; push list says
// so; a restart replays the same outbox.
func TestPushOutboxStopsAtItsBound(t *testing.T) {
	checkOutboxBound(t, func(c *config.Config) {})
}

// The same on a PostgreSQL mailbox: the leader drops, and the instance
// that leads after a restart holds the same outbox.
func TestPushOutboxStopsAtItsBoundOnPostgres(t *testing.T) {
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url, t.Name())
	checkOutboxBound(t, func(c *config.Config) {
		c.Store, c.PostgresURL, c.PostgresSchema = config.StorePostgres, url, schema
		c.PostgresCampaignInterval = 20 * time.Millisecond
	})
}

func checkOutboxBound(t *testing.T, store func(*config.Config)) {
	const bound = 5
	release := make(chan struct{})
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // never answers while the test runs
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer rcv.Close()
	defer close(release)
	opts := daemontest.Options{
		Dir: t.TempDir(),
		Config: func(c *config.Config) {
			store(c)
			c.PushOutboxPerReceiver, c.PushOutboxMax, c.PushDeadRetention, c.PushMaxAttempts = bound, 0, 0, 1000
		},
		Daemon: []daemon.Option{daemon.WithNotifier(func(o *pushnotify.Options) { o.LookEvery, o.Timeout = 10*time.Millisecond, time.Hour })},
	}
	d := daemontest.Start(t, opts)
	addr := d.Addr()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second) // a watchdog
	defer cancel()
	c, err := client.New(addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.RegisterAgent(ctx, "coder@local", mailbox.AgentCard{Name: "Coder"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RegisterAgent(ctx, "planner@local", mailbox.AgentCard{Name: "Planner", Webhook: &mailbox.Webhook{URL: rcv.URL + "/results"}}); err != nil {
		t.Fatal(err)
	}
	// An A2A task whose config is told of 9 changes: its setting, then
	// a lease and a requeue four times.
	body := `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"m-bound","parts":[{"kind":"text","text":"hi"}]},` +
		`"configuration":{"blocking":false,"pushNotificationConfig":{"url":"` + rcv.URL + `/hook","token":"t"}}}}`
	resp, err := http.Post(d.URL()+"/agents/coder@local/", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var task string
	for range 4 {
		l := leaseTask(t, addr, "coder@local")
		task = l.Task.ID
		if _, err := c.Repair(ctx, mailbox.RepairRequest{TaskID: task, Reason: "again",
			Command: mailbox.RepairCommand{Action: mailbox.ActionRequeue, LeaseID: l.Lease.LeaseID, DuplicateRisk: mailbox.RiskOperatorAccepted}}); err != nil {
			t.Fatal(err)
		}
	}
	// Planner's webhook is told of 8 results, one task each.
	for range 8 {
		id := sendTask(t, addr, "planner@local", "other@local", "work")
		l := leaseTask(t, addr, "other@local")
		mustCLI(t, addr, "result", "post", id, "--status", "ok", "--text", "done", "--lease-id", l.Lease.LeaseID)
	}
	const made, dropped = 9 + 8, 4 + 3
	l := waitDeliveries(t, ctx, c, func(l mailbox.PushListing) bool { return len(l.Notifications) == made-dropped && l.Dropped == dropped })

	// Kept: the newest of each receiver; dropped: the oldest, each an
	// event by mailroom naming the bound.
	kept := map[string][]uint64{}
	for _, n := range l.Notifications {
		kept[n.ConfigID+n.Agent] = append(kept[n.ConfigID+n.Agent], n.Seq)
	}
	if len(kept[task]) != bound || len(kept["planner@local"]) != bound {
		t.Errorf("kept %v; want %d of the task's config and %d of planner's webhook", kept, bound, bound)
	}
	last := d.State(t).Seq
	var drops []mailbox.Event
	for _, raw := range strings.Split(readStream(t, ctx, d.URL()+"/a2a/events?last_event_id=0", last, false), "\n") {
		data, ok := strings.CutPrefix(raw, "data: ")
		if !ok || !strings.Contains(data, `"type":"push_dropped"`) {
			continue
		}
		var ev mailbox.Event
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatal(err)
		}
		drops = append(drops, ev)
	}
	byReceiver := map[string]int{}
	for _, ev := range drops {
		switch {
		case ev.Principal != mailbox.OutboxPrincipal || !strings.HasPrefix(ev.Reason, "the outbox bound push_outbox_per_receiver=5 was passed by "):
			t.Errorf("a push_dropped event %+v; want principal mailroom and the bound named", ev)
		case strings.Contains(ev.Reason, "planner@local's webhook"):
			byReceiver["planner@local"]++
		case strings.Contains(ev.Reason, `push config "`+task+`" of task `+task):
			byReceiver[task]++
		}
		seq := notificationSeq(t, ev.Notification)
		for r, seqs := range kept {
			if strings.Contains(ev.Reason, r) && seqs[0] < seq {
				t.Errorf("dropped %s, newer than %s's oldest kept (seq %d)", ev.Notification, r, seqs[0])
			}
		}
	}
	if byReceiver[task] != 4 || byReceiver["planner@local"] != 3 {
		t.Errorf("push_dropped events by receiver %v; want 4 of the task's config and 3 of planner's webhook", byReceiver)
	}
	audit, err := c.Audit(ctx, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	var audited int
	for _, r := range audit {
		if r.Action == mailbox.OutcomePushDropped && r.Principal == mailbox.OutboxPrincipal {
			audited++
		}
	}
	if audited != dropped {
		t.Errorf("the audit holds %d drops by mailroom, want %d", audited, dropped)
	}
	wantContains(t, "push list", mustCLI(t, addr, "push", "list"), "bounds: 5 per receiver (push_outbox_per_receiver)", "no bound in all", "7 dropped by them")

	// A restart replays the same outbox (on PostgreSQL, read back from
	// the table by the instance that leads again).
	before := outboxIDs(d.State(t))
	d.Restart()
	if after := outboxIDs(d.State(t)); after != before {
		t.Errorf("after a restart the outbox is %s, before %s", after, before)
	}
	waitDeliveries(t, ctx, c, func(l mailbox.PushListing) bool { return l.Delivering })
	if after := outboxIDs(d.State(t)); after != before {
		t.Errorf("the restarted notifier changed the outbox: %s, before %s", after, before)
	}
}

func notificationSeq(t *testing.T, id string) uint64 {
	t.Helper()
	var seq uint64
	for _, c := range id {
		if c == '-' {
			return seq
		}
		seq = seq*10 + uint64(c-'0')
	}
	t.Fatalf("notification id %q is not <seq>-<n>", id)
	return 0
}

func outboxIDs(s *mailbox.Snapshot) string {
	var ids []string
	for _, n := range s.Outbox {
		ids = append(ids, n.ID)
	}
	sort.Strings(ids)
	return strings.Join(ids, " ")
}
