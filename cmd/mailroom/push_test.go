package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon"
	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/daemon/daemontest"
	pushnotify "github.com/mailroom/mailroom/daemon/notify"
	"github.com/mailroom/mailroom/mailbox"
)

// push list shows a dead letter with its error; push retry delivers it
// once the receiver is back; push drop needs a reason and is audited.
func TestPushVerbs(t *testing.T) {
	var up atomic.Bool
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !up.Load() {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
		}
	}))
	defer rcv.Close()
	addr, c, ctx := pushDaemon(t, 2)
	if _, err := c.RegisterAgent(ctx, "coder@local", mailbox.AgentCard{Name: "Coder"}); err != nil {
		t.Fatal(err)
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"m-1","parts":[{"kind":"text","text":"hi"}]},` +
		`"configuration":{"blocking":false,"pushNotificationConfig":{"url":"` + rcv.URL + `/hook","token":"t"}}}}`
	resp, err := http.Post("http://"+addr+"/agents/coder@local/", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	dead := waitDeliveries(t, ctx, c, func(l mailbox.PushListing) bool {
		return len(l.Notifications) == 1 && l.Notifications[0].State == mailbox.DeliveryDead
	})
	id := dead.Notifications[0].ID

	out := mustCLI(t, addr, "push", "list", "--failed")
	wantContains(t, "push list --failed", out, id, "dead", "push_config_set", rcv.URL+"/hook", "503 Service Unavailable")
	wantUsage(t, addr, []string{"push", "drop", id}, "--reason")
	wantUsage(t, addr, []string{"push", "drop", id, "--reason", "  "}, "--reason")

	up.Store(true)
	out = mustCLI(t, addr, "push", "retry", id, "--reason", "the receiver is back")
	wantContains(t, "push retry", out, id, "back in line")
	waitDeliveries(t, ctx, c, func(l mailbox.PushListing) bool { return len(l.Notifications) == 0 })
	wantContains(t, "push list", mustCLI(t, addr, "push", "list"), "the outbox is empty")
	o := cli(t, addr, "push", "retry", id)
	if o.code != 1 || !strings.Contains(o.stderr, "not in the outbox") {
		t.Errorf("retry of a delivered notification: exit %d, %q; want 1 saying it is not in the outbox", o.code, o.stderr)
	}

	// A second one, dropped.
	up.Store(false)
	lease := leaseTask(t, addr, "coder@local")
	failing := waitDeliveries(t, ctx, c, func(l mailbox.PushListing) bool {
		return len(l.Notifications) == 1 && l.Notifications[0].State == mailbox.DeliveryDead
	})
	drop := failing.Notifications[0].ID
	out = mustCLI(t, addr, "push", "drop", drop, "--reason", "the receiver was retired")
	wantContains(t, "push drop", out, drop, "dropped")
	wantContains(t, "audit", mustCLI(t, addr, "audit"), "push_dropped", "the receiver was retired", "push_retried", lease.Task.ID)
}

func waitDeliveries(t *testing.T, ctx context.Context, c *client.Client, ok func(mailbox.PushListing) bool) mailbox.PushListing {
	t.Helper()
	for {
		l, err := c.Deliveries(ctx, false)
		if err != nil {
			t.Fatal(err)
		}
		if ok(l) {
			return l
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the outbox never came to the state wanted: %+v", l)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// agent register --webhook gives a native sender a webhook: a result
// waiting for it is posted there with the token; a webhook the daemon
// refuses names the flag.
func TestAgentRegisterWebhook(t *testing.T) {
	got := make(chan string, 4)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get(pushnotify.HeaderToken)
	}))
	defer rcv.Close()
	addr := startDaemon(t)
	wantUsage(t, addr, []string{"agent", "register", "planner@local", "--name", "Planner", "--webhook", "ftp://127.0.0.1/x"}, "--webhook", `scheme "ftp"`)
	wantUsage(t, addr, []string{"agent", "register", "planner@local", "--name", "Planner", "--webhook", "https://hooks.example.com/x"}, "--webhook", "push_allow_hosts")
	wantUsage(t, addr, []string{"agent", "register", "planner@local", "--name", "Planner", "--webhook-token", "t"}, "--webhook-token", "--webhook URL")
	mustCLI(t, addr, "agent", "register", "planner@local", "--name", "Planner", "--webhook", rcv.URL+"/results", "--webhook-token", "tok-cli")
	id := sendTask(t, addr, "planner@local", "coder@local", "work")
	l := leaseTask(t, addr, "coder@local")
	mustCLI(t, addr, "result", "post", id, "--status", "ok", "--text", "done", "--lease-id", l.Lease.LeaseID)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // a watchdog
	defer cancel()
	select {
	case token := <-got:
		if token != "tok-cli" {
			t.Errorf("the webhook was called with token %q, want tok-cli", token)
		}
	case <-ctx.Done():
		t.Fatal("the webhook was never called")
	}
}

// A refusing webhook's dead letters in bulk: agent list marks the agent's
// webhook as failing; push retry --receiver (and --agent, --all-dead)
// lists them with --dry-run and changes nothing, then retries each, one
// retried meanwhile by someone else skipped and said so, with a summary;
// push drop --all-dead drops them. A typo in --agent is refused.
func TestPushBulkRetryAndDrop(t *testing.T) {
	var up, stall atomic.Bool
	release := make(chan struct{})
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if stall.Load() {
			// Holds a notification under way (pending) until released.
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		if !up.Load() {
			http.Error(w, "refusing", http.StatusServiceUnavailable)
		}
	}))
	defer rcv.Close()
	addr, c, ctx := pushDaemon(t, 1)
	hook := rcv.URL + "/results"
	mustCLI(t, addr, "agent", "register", "planner@local", "--name", "Planner", "--webhook", hook)
	for range 3 {
		sendTask(t, addr, "planner@local", "worker@local", "work")
		l := leaseTask(t, addr, "worker@local")
		mustCLI(t, addr, "result", "post", l.Task.ID, "--status", "ok", "--text", "done", "--lease-id", l.Lease.LeaseID)
	}
	deadN := func(n int) func(mailbox.PushListing) bool {
		return func(l mailbox.PushListing) bool {
			dead := 0
			for _, x := range l.Notifications {
				if x.State == mailbox.DeliveryDead {
					dead++
				}
			}
			return dead == n && len(l.Notifications) == n
		}
	}
	listing := waitDeliveries(t, ctx, c, deadN(3))
	var ids []string
	for _, n := range listing.Notifications {
		ids = append(ids, n.ID)
	}
	wantContains(t, "agent list", mustCLI(t, addr, "agent", "list"), "failing: 3 dead, 0 retrying")
	if a := agentOf(t, c, "planner@local"); a.WebhookDead != 3 || !a.WebhookIsFailing() {
		t.Fatalf("planner@local = %+v, want its webhook failing with 3 dead letters", a)
	}
	// One at a time: the sentence names where it goes.
	wantContains(t, "push retry", mustCLI(t, addr, "push", "retry", ids[0]), "push notification "+ids[0]+" of task ", " is back in line for planner@local's webhook\n")
	waitDeliveries(t, ctx, c, deadN(3))

	wantUsage(t, addr, []string{"push", "retry", "--agent", "planer@local"}, `--agent: got "planer@local"`, "did you mean planner@local")
	wantUsage(t, addr, []string{"push", "retry", ids[0], "--all-dead"}, "give an ID or --all-dead, not both")
	wantUsage(t, addr, []string{"push", "retry", "--all-dead", "--receiver", hook}, "--receiver and --all-dead: give one of them")
	wantUsage(t, addr, []string{"push", "retry", ids[0], "--dry-run"}, "--dry-run: only with --receiver, --agent or --all-dead")
	wantUsage(t, addr, []string{"push", "drop", "--all-dead"}, "--reason")

	for _, sel := range [][]string{{"--receiver", hook}, {"--agent", "planner@local"}, {"--all-dead"}} {
		out := mustCLI(t, addr, append([]string{"push", "retry", "--dry-run"}, sel...)...)
		for _, id := range ids {
			wantContains(t, "dry run", out, "would retry "+id+" (task ")
		}
		wantContains(t, "dry run", out, "dry run: would retry 3 of the ")
	}
	waitDeliveries(t, ctx, c, deadN(3)) // nothing changed

	// The receiver comes back, and a colleague retries the second dead
	// letter between the listing and the retries.
	pushBulkListed = func() {
		up.Store(true)
		if _, err := c.RetryNotification(ctx, ids[1], "a colleague got there first"); err != nil {
			t.Error(err)
		}
		waitDeliveries(t, ctx, c, func(l mailbox.PushListing) bool {
			for _, n := range l.Notifications {
				if n.ID == ids[1] {
					return false
				}
			}
			return true
		})
	}
	defer func() { pushBulkListed = nil }()
	out := mustCLI(t, addr, "push", "retry", "--receiver", hook, "--reason", "the receiver is back")
	pushBulkListed = nil
	wantContains(t, "bulk retry", out, "retried "+ids[0]+" (task ", "skipped "+ids[1]+": ", "not in the outbox", "retried "+ids[2],
		"push retry: 2 retried, 1 skipped (changed since they were listed), of 3 of the dead letters to "+hook+"\n")
	waitDeliveries(t, ctx, c, func(l mailbox.PushListing) bool { return len(l.Notifications) == 0 })
	if a := agentOf(t, c, "planner@local"); a.WebhookIsFailing() {
		t.Fatalf("planner@local = %+v after the retries were delivered", a)
	}

	// Down again: a new dead letter, dropped with --all-dead.
	up.Store(false)
	sendTask(t, addr, "planner@local", "worker@local", "more")
	l := leaseTask(t, addr, "worker@local")
	mustCLI(t, addr, "result", "post", l.Task.ID, "--status", "ok", "--text", "done", "--lease-id", l.Lease.LeaseID)
	last := waitDeliveries(t, ctx, c, deadN(1)).Notifications[0].ID
	out = mustCLI(t, addr, "push", "drop", "--all-dead", "--reason", "the receiver was retired", "--json")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var item pushBulkLine
	var sum pushBulkSummary
	if len(lines) != 2 || json.Unmarshal([]byte(lines[0]), &item) != nil || item.ID != last || item.Outcome != "dropped" ||
		json.Unmarshal([]byte(lines[1]), &sum) != nil || sum.Listed != 1 || sum.Done != 1 || sum.Action != "drop" {
		t.Fatalf("push drop --all-dead --json = %s", out)
	}
	waitDeliveries(t, ctx, c, func(l mailbox.PushListing) bool { return len(l.Notifications) == 0 })
	wantContains(t, "audit", mustCLI(t, addr, "audit"), "push_dropped", "the receiver was retired", "push_retried", "the receiver is back")

	// Two dead letters; a colleague retries the first between the listing
	// and the drops, and its new try is under way (pending): the bulk drop
	// of the dead keeps it (dead_only) and drops the other.
	for range 2 {
		sendTask(t, addr, "planner@local", "worker@local", "again")
		l := leaseTask(t, addr, "worker@local")
		mustCLI(t, addr, "result", "post", l.Task.ID, "--status", "ok", "--text", "done", "--lease-id", l.Lease.LeaseID)
	}
	two := waitDeliveries(t, ctx, c, deadN(2)).Notifications
	kept, dropped := two[0].ID, two[1].ID
	pushBulkListed = func() {
		stall.Store(true)
		if _, err := c.RetryNotification(ctx, kept, "a colleague retries it"); err != nil {
			t.Error(err)
		}
		waitDeliveries(t, ctx, c, func(l mailbox.PushListing) bool {
			for _, n := range l.Notifications {
				if n.ID == kept {
					return n.State != mailbox.DeliveryDead
				}
			}
			return false
		})
	}
	out = mustCLI(t, addr, "push", "drop", "--all-dead", "--reason", "the receiver was retired")
	pushBulkListed = nil
	wantContains(t, "bulk drop around a retry", out, "skipped "+kept+": ", "not dead-lettered any more", "dropped "+dropped+" (task ",
		"push drop: 1 dropped, 1 skipped (changed since they were listed), of 2 of the dead letters\n")
	stall.Store(false)
	close(release)
	if l := waitDeliveries(t, ctx, c, deadN(1)); l.Notifications[0].ID != kept {
		t.Fatalf("after the bulk drop the outbox holds %+v, want only %s (retried, failed again)", l.Notifications, kept)
	}
}

// pushDaemon starts a daemon that tries a push notification attempts
// times, a millisecond or two apart, and returns its address, a client of
// it and a context that gives the test 30 s.
func pushDaemon(t *testing.T, attempts int) (string, *client.Client, context.Context) {
	t.Helper()
	d := daemontest.Start(t, daemontest.Options{
		Config: func(c *config.Config) { c.PushMaxAttempts = attempts },
		Daemon: []daemon.Option{daemon.WithNotifier(func(o *pushnotify.Options) { o.RetryMin, o.RetryMax = time.Millisecond, 2*time.Millisecond })},
	})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	c, err := client.New(d.Addr())
	if err != nil {
		t.Fatal(err)
	}
	return d.Addr(), c, ctx
}
