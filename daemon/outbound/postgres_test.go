package outbound_test

import (
	"context"
	"testing"
	"time"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon"
	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/daemon/store/pgstore/pgtest"
	"github.com/mailroom/mailroom/internal/testlog"
	"github.com/mailroom/mailroom/mailbox"
)

// On a shared PostgreSQL mailbox only the leader delivers; the follower
// reads standby. When the leader goes, the new one follows the task the
// remote accepted, never sending it again.
func TestOnlyTheLeaderDeliversAndATakeoverFollows(t *testing.T) {
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url, t.Name())
	onPG := func(c *config.Config) {
		c.Store, c.PostgresURL, c.PostgresSchema = config.StorePostgres, url, schema
		c.PostgresCampaignInterval = 20 * time.Millisecond
	}
	instance := func() *world {
		logs := &testlog.Buffer{}
		d := daemontest.Start(t, daemontest.Options{Config: onPG, Logger: logs.Logger(), Daemon: []daemon.Option{daemon.WithOutbound(fast)}})
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		t.Cleanup(cancel)
		c, err := client.New(d.Addr())
		if err != nil {
			t.Fatal(err)
		}
		return &world{t: t, ctx: ctx, d: d, c: c, logs: logs, drained: map[string]mailbox.PendingResult{}}
	}
	a := instance()
	g := startGoRemote(t, "Go Coder", false)
	a.register("coder@remote", g.Srv.URL, 1)
	a.waitRemote("coder@remote", "healthy on the leader", func(st *mailbox.RemoteStatus) bool { return st.State == mailbox.RemoteHealthy })
	b := instance()
	b.waitRemote("coder@remote", "standby on the follower", func(st *mailbox.RemoteStatus) bool { return st.State == mailbox.RemoteStandby })

	id := a.send("planner@local", "coder@remote", "slow work", false)
	a.waitDelivery("coder@remote", id, "accepted", func(d mailbox.DeliveryStatus) bool { return d.RemoteTaskID != "" })
	a.d.Stop()
	b.waitDelivery("coder@remote", id, "followed by the new leader", func(d mailbox.DeliveryStatus) bool { return d.State == mailbox.DeliveryPolling })
	close(g.Executor().Release)
	if res := b.result("planner@local", id); res.Status != mailbox.StatusOK || text(res) != "slowly done" {
		t.Fatalf("result %+v", res)
	}
	if n := g.Executor().Sent(id); n != 1 {
		t.Fatalf("the remote got the task %d times, want once", n)
	}
}
