package tui

import (
	"regexp"
	"testing"
	"time"

	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/daemon/store/pgstore/pgtest"
)

// On a shared PostgreSQL mailbox, when an agent was last seen comes from
// the log: a follower that never saw the agent call shows it, and so does
// an instance started after the agent went quiet (a restart).
func TestLastSeenOnPostgresFromTheLog(t *testing.T) {
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url, t.Name())
	onPG := func(c *config.Config) {
		c.Store, c.PostgresURL, c.PostgresSchema = config.StorePostgres, url, schema
		c.PostgresCampaignInterval = 20 * time.Millisecond
	}
	a := daemontest.Start(t, daemontest.Options{Config: onPG})
	waitUntil(t, "a to lead", func() bool { return role(t, a.URL()) == "leader" })
	api := agentAPI{t, newClient(t, a.URL())}
	api.send("worker-a@local", "rebuild the search index")
	api.lease("worker-a@local")
	// worker-a goes quiet past the stale limit below. Real time has to
	// pass (no signal stands for it): the daemons stamp when they last saw
	// an agent with their own clocks.
	time.Sleep(1200 * time.Millisecond)

	// An instance started now: it never heard worker-a call.
	b := daemontest.Start(t, daemontest.Options{Config: onPG})
	if got := role(t, b.URL()); got != "follower" {
		t.Fatalf("b is %s, want follower", got)
	}
	r := runConsoleSized(t, newClient(t, b.URL()), Options{Addr: b.URL(), StaleAfter: time.Second}, 200, 60)
	r.scr.waitForText(t, "● live")
	r.scr.press(char('5'))
	f := r.scr.waitGone(t, "worker-a@local")
	if l := agentLine(f, "worker-a@local"); !regexp.MustCompile(`! [1-9]\d*s ago`).MatchString(l) {
		t.Errorf("on the follower worker-a's row = %q, want it last seen seconds ago, at its lease (not never)", l)
	}
}
