package notify_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon"
	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/daemon/notify"
	"github.com/mailroom/mailroom/daemon/store/pgstore/pgtest"
	"github.com/mailroom/mailroom/mailbox"
)

// On a shared PostgreSQL mailbox only the leader delivers (the follower
// says it does not); when the leader goes, the new one delivers what the
// outbox holds, every notification, duplicates only with the same id.
func TestOnlyTheLeaderDeliversAndATakeoverContinues(t *testing.T) {
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url, t.Name())
	var up atomic.Bool
	var mu sync.Mutex
	got := map[string]int{}
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !up.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		mu.Lock()
		got[r.Header.Get(notify.HeaderID)]++
		mu.Unlock()
	}))
	defer rcv.Close()
	instance := func() (*daemontest.Daemon, *client.Client) {
		d := daemontest.Start(t, daemontest.Options{
			Config: func(c *config.Config) {
				c.Store, c.PostgresURL, c.PostgresSchema = config.StorePostgres, url, schema
				c.PostgresCampaignInterval = 20 * time.Millisecond
			},
			Daemon: []daemon.Option{daemon.WithNotifier(func(o *notify.Options) {
				o.RetryMin, o.RetryMax, o.MaxAttempts, o.LookEvery = time.Millisecond, 5*time.Millisecond, 1000000, 20*time.Millisecond
			})},
		})
		c, err := client.New(d.Addr())
		if err != nil {
			t.Fatal(err)
		}
		return d, c
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	a, ca := instance()
	if _, err := ca.RegisterAgent(ctx, "coder@local", mailbox.AgentCard{Name: "Coder"}); err != nil {
		t.Fatal(err)
	}
	_, cb := instance()
	body := `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"m-pg","parts":[{"kind":"text","text":"hi"}]},` +
		`"configuration":{"blocking":false,"pushNotificationConfig":{"url":"` + rcv.URL + `/hook","token":"t"}}}}`
	resp, err := http.Post(a.URL()+"/agents/coder@local/", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, _, err := ca.Lease(ctx, "coder@local"); err != nil {
		t.Fatal(err)
	}
	wait := func(c *client.Client, what string, ok func(mailbox.PushListing) bool) mailbox.PushListing {
		t.Helper()
		for {
			l, err := c.Deliveries(ctx, false)
			if err == nil && ok(l) {
				return l
			}
			select {
			case <-ctx.Done():
				t.Fatalf("never %s: %+v, %v", what, l, err)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	failing := func(l mailbox.PushListing) bool {
		return len(l.Notifications) == 2 && l.Notifications[0].State == mailbox.DeliveryFailing
	}
	pending := wait(ca, "failing on the leader", func(l mailbox.PushListing) bool { return l.Delivering && failing(l) })
	if l := wait(cb, "read on the follower", func(l mailbox.PushListing) bool { return len(l.Notifications) == 2 }); l.Delivering {
		t.Errorf("the follower says it delivers: %+v", l)
	}
	a.Stop()
	up.Store(true)
	wait(cb, "delivered by the new leader", func(l mailbox.PushListing) bool { return l.Delivering && len(l.Notifications) == 0 })
	mu.Lock()
	defer mu.Unlock()
	for _, n := range pending.Notifications {
		if got[n.ID] == 0 {
			t.Errorf("notification %s was never delivered (got %v)", n.ID, got)
		}
	}
	if len(got) != 2 {
		t.Errorf("the receiver got ids %v, want exactly the two notifications'", got)
	}
}
