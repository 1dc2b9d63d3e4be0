package httpapi_test

import (
	"context"
	"testing"
	"time"

	"github.com/mailroom/mailroom/daemon/daemontest"
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
