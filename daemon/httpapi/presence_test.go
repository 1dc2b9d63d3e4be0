package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailroom/mailroom/daemon"
	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/daemon/daemontest"
	pushnotify "github.com/mailroom/mailroom/daemon/notify"
	"github.com/mailroom/mailroom/internal/testclock"
	"github.com/mailroom/mailroom/mailbox"
)

// A worker in a long poll is seen while it waits, right after a restart
// too: the listing says polling and its last_seen_ms is the listing's
// time, however long ago the worker last acted; when the poll ends it is
// last seen then.
func TestAgentsSeenWhileLongPollWaitsAfterARestart(t *testing.T) {
	t.Parallel()
	clock := testclock.New(time.UnixMilli(1_767_225_600_000))
	d := daemontest.Start(t, daemontest.Options{Now: clock.Now})
	sendTo(t, d, "worker@local", "one")
	sendTo(t, d, "worker@local", "two")
	leaseTask(t, d, "worker@local") // the worker is known, holding a lease
	d.Restart()
	clock.Advance(time.Hour) // long after its last action

	worker := func() mailbox.AgentInfo {
		t.Helper()
		var list mailbox.AgentsResponse
		call(t, d, "GET", "/a2a/agents", nil, &list)
		for _, a := range list.Agents {
			if a.Agent == "worker@local" {
				return a
			}
		}
		t.Fatalf("worker@local is not listed: %+v", list.Agents)
		return mailbox.AgentInfo{}
	}
	if w := worker(); w.Polling || clock.Now().UnixMilli()-w.LastSeenMs < time.Hour.Milliseconds() {
		t.Fatalf("before its poll worker@local = %+v, want last seen an hour ago", w)
	}
	ctx, cancel := context.WithCancel(t.Context())
	// Its queue holds "two": a drain for its own results waits instead.
	done := poll(t, ctx, d, "/a2a/results/next?sender=worker@local&max=1&wait_ms=20000")
	waitForWaiters(t, d, 1)
	for range 2 {
		clock.Advance(15 * time.Second)
		if w := worker(); !w.Polling || w.LastSeenMs != clock.Now().UnixMilli() {
			t.Fatalf("while its poll waits worker@local = %+v, want polling and seen now (%d)", w, clock.Now().UnixMilli())
		}
	}
	cancel()
	<-done
	waitForWaiters(t, d, 0)
	ended := clock.Now().UnixMilli()
	clock.Advance(time.Minute)
	if w := worker(); w.Polling || w.LastSeenMs != ended {
		t.Fatalf("after its poll worker@local = %+v, want last seen when the poll ended (%d)", w, ended)
	}
}

// A webhook being retried is pushed to the consoles' agents listing even
// though retries are no events: the listing marks the agent's webhook as
// failing (webhook_failing), and as no longer failing once delivered.
func TestAgentsListingPushesAFailingWebhook(t *testing.T) {
	t.Parallel()
	var up atomic.Bool
	gate := make(chan struct{}) // holds the first call until the listing without a failure was pushed
	var calls atomic.Int32
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			<-gate
		}
		if !up.Load() {
			http.Error(w, "refusing", http.StatusServiceUnavailable)
		}
	}))
	defer rcv.Close()
	defer func() {
		select {
		case <-gate:
		default:
			close(gate)
		}
	}()
	d := daemontest.Start(t, daemontest.Options{
		Config: func(c *config.Config) { c.PushMaxAttempts = 1000 },
		Daemon: []daemon.Option{daemon.WithNotifier(func(o *pushnotify.Options) { o.RetryMin, o.RetryMax = 5*time.Millisecond, 10*time.Millisecond })},
	})
	var reg mailbox.AgentRegisteredResponse
	call(t, d, "PUT", "/a2a/agents/planner@local", mailbox.AgentCard{Name: "Planner", Webhook: &mailbox.Webhook{URL: rcv.URL + "/results"}}, &reg)
	ctx := testContext(t)
	s := openStream(t, ctx, d, "?agents=true", nil)
	s.nextEvent(t) // the snapshot
	var out mailbox.TaskQueuedResponse
	call(t, d, "POST", "/a2a/tasks", mailbox.Task{Sender: "planner@local", Recipient: "worker@local", IntentText: "work"}, &out)
	l := leaseTask(t, d, "worker@local")
	call(t, d, "POST", "/a2a/results", mailbox.Result{TaskID: out.TaskID, LeaseID: l.Lease.LeaseID, Status: mailbox.StatusOK}, nil)

	planner := func(want func(mailbox.AgentInfo) bool) {
		t.Helper()
		for {
			b := nextBlock(t, s) // the stream's context bounds the wait
			if b.event != mailbox.EventAgents {
				continue
			}
			var lst mailbox.AgentsUpdate
			if err := json.Unmarshal([]byte(b.data), &lst); err != nil {
				t.Fatal(err)
			}
			for _, a := range lst.Agents {
				if a.Agent == "planner@local" && want(a) {
					return
				}
			}
		}
	}
	// The result is pushed (undrained) while the first call hangs: no
	// failure yet. Then the call fails and is retried: no event says so.
	planner(func(a mailbox.AgentInfo) bool { return a.Undrained == 1 && !a.WebhookIsFailing() })
	close(gate)
	planner(func(a mailbox.AgentInfo) bool { return a.WebhookFailing == 1 && a.WebhookIsFailing() })
	up.Store(true)
	planner(func(a mailbox.AgentInfo) bool { return !a.WebhookIsFailing() })
}
