package daemon_test

import (
	"context"
	"io"
	"log/slog"
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
	"github.com/mailroom/mailroom/daemon/outbound"
	"github.com/mailroom/mailroom/daemon/store/pgstore/pgtest"
	"github.com/mailroom/mailroom/internal/remotetest"
	"github.com/mailroom/mailroom/mailbox"
)

// leadClock is a log handler that notes when its instance said it began
// to lead: the moment of a takeover, as the instance that took over saw it.
type leadClock struct {
	slog.Handler
	at chan time.Time
}

func (h leadClock) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "this instance leads the shared mailbox" {
		select {
		case h.at <- r.Time:
		default:
		}
	}
	return h.Handler.Handle(ctx, r)
}

func (h leadClock) WithAttrs(as []slog.Attr) slog.Handler {
	return leadClock{h.Handler.WithAttrs(as), h.at}
}

func (h leadClock) WithGroup(name string) slog.Handler {
	return leadClock{h.Handler.WithGroup(name), h.at}
}

// A takeover is acted on at once: the new leader's notifier and
// dispatcher begin the moment its engine says it leads, not at their next
// look at whether it does (a second, with the options this test leaves at
// their defaults). The old leader held a push notification and a remote
// agent's task it could not deliver (the receiver and the remote down,
// its retries an hour away); both come back, the old leader stops, and
// the new one delivers both. The time from the takeover to each first
// delivery is logged; only that they happen, after the takeover, is
// asserted.
func TestATakeoverDeliversAtOnce(t *testing.T) {
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url, t.Name())
	onPG := func(c *config.Config) {
		c.Store, c.PostgresURL, c.PostgresSchema = config.StorePostgres, url, schema
		c.PostgresCampaignInterval = 20 * time.Millisecond
	}
	var up atomic.Bool
	var once sync.Once
	posted := make(chan time.Time, 1)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !up.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		once.Do(func() { posted <- time.Now() })
	}))
	defer rcv.Close()
	remote := remotetest.StartGoRemote(t, "Go Coder", false)
	remote.Down.Store(true)

	// The old leader waits an hour before it tries again.
	patient := []daemon.Option{
		daemon.WithNotifier(func(o *notify.Options) { o.RetryMin, o.RetryMax = time.Hour, time.Hour }),
		daemon.WithOutbound(func(o *outbound.Options) { o.RetryMin, o.RetryMax, o.ProbeInterval = time.Hour, time.Hour, time.Hour }),
	}
	a := daemontest.Start(t, daemontest.Options{Config: onPG, Daemon: patient})
	waitRole(t, a.URL(), "leader")
	took := make(chan time.Time, 1)
	b := daemontest.Start(t, daemontest.Options{Config: onPG, Logger: slog.New(leadClock{slog.NewTextHandler(io.Discard, nil), took})})
	waitRole(t, b.URL(), "follower")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // a watchdog
	defer cancel()
	ca, err := client.New(a.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ca.RegisterAgent(ctx, "coder@local", mailbox.AgentCard{Name: "Coder"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ca.RegisterAgent(ctx, "coder@remote", mailbox.AgentCard{Name: "Remote", Remote: &mailbox.RemoteSpec{URL: remote.Srv.URL, Concurrency: 1}}); err != nil {
		t.Fatal(err)
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"m-takeover","parts":[{"kind":"text","text":"hi"}]},` +
		`"configuration":{"blocking":false,"pushNotificationConfig":{"url":"` + rcv.URL + `/hook","token":"t"}}}}`
	resp, err := http.Post(a.URL()+"/agents/coder@local/", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	sent, err := ca.Send(ctx, mailbox.Task{Sender: "planner@local", Recipient: "coder@remote", IntentText: "hello there"})
	if err != nil {
		t.Fatal(err)
	}

	// The old leader has tried both and waits out its hour.
	waitFor(t, ctx, "the old leader's notification failing and its remote failing", func() bool {
		l, err := ca.Deliveries(ctx, false)
		if err != nil || len(l.Notifications) != 1 || l.Notifications[0].State != mailbox.DeliveryFailing {
			return false
		}
		agents, err := ca.Agents(ctx)
		for _, ag := range agents {
			if ag.Agent == "coder@remote" && ag.Remote != nil {
				return err == nil && ag.Remote.State == mailbox.RemoteFailing
			}
		}
		return false
	})
	up.Store(true)
	remote.Down.Store(false)
	a.Stop()

	var takeover time.Time
	select {
	case takeover = <-took:
	case <-ctx.Done():
		t.Fatal("the follower never said it took over")
	}
	select {
	case at := <-posted:
		if at.Before(takeover) {
			t.Errorf("the notification was delivered at %v, before the takeover at %v", at, takeover)
		}
		t.Logf("takeover to the first push notification delivered: %v", at.Sub(takeover).Round(time.Millisecond))
	case <-ctx.Done():
		t.Fatal("the new leader never delivered the notification")
	}
	var reached time.Time
	waitFor(t, ctx, "the remote to get the task from the new leader", func() bool {
		reached = time.Now()
		return remote.Executor().Sent(sent.TaskID) > 0
	})
	t.Logf("takeover to the remote agent's task delivered: %v (seen by a look every millisecond)", reached.Sub(takeover).Round(time.Millisecond))
}

// waitFor looks at cond every millisecond until it holds, failing the
// test when ctx ends first.
func waitFor(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("never %s", what)
		case <-time.After(time.Millisecond):
		}
	}
}
