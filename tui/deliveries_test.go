package tui

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/mailroom/mailroom/daemon"
	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/daemon/notify"
	"github.com/mailroom/mailroom/mailbox"
)

// The Deliveries pane shows a dead-lettered notification with its error;
// R retries it (the receiver back, it is delivered and leaves the pane);
// D drops one only with a reason, and the Audit pane shows both repairs.
func TestDeliveriesPaneRetryAndDrop(t *testing.T) {
	t.Parallel()
	var up atomic.Bool
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !up.Load() {
			http.Error(w, "receiver down", http.StatusBadGateway)
		}
	}))
	defer rcv.Close()
	d := daemontest.Start(t, daemontest.Options{
		Config: func(c *config.Config) { c.PushMaxAttempts = 2 },
		Daemon: []daemon.Option{daemon.WithNotifier(func(o *notify.Options) { o.RetryMin, o.RetryMax = time.Millisecond, 2*time.Millisecond })},
	})
	c := newClient(t, d.URL())
	ctx := context.Background()
	if _, err := c.RegisterAgent(ctx, "coder@local", mailbox.AgentCard{Name: "Coder"}); err != nil {
		t.Fatal(err)
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"m-1","parts":[{"kind":"text","text":"hi"}]},` +
		`"configuration":{"blocking":false,"pushNotificationConfig":{"url":"` + rcv.URL + `/hook"}}}}`
	resp, err := http.Post(d.URL()+"/agents/coder@local/", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	r := runConsole(t, c, Options{})
	r.scr.waitForText(t, "[7] Deliveries 1")
	r.scr.press(char('7'))
	f := r.scr.waitForText(t, "502 Bad Gateway")
	row := f.lineWith("502 Bad Gateway")
	for _, want := range []string{"dead", "push_config_set", "2 "} {
		if !strings.Contains(row, want) {
			t.Errorf("the dead letter's row lacks %q: %q\n%s", want, row, f)
		}
	}
	up.Store(true)
	r.scr.press(char('R'))
	r.scr.waitForText(t, "Retry push notification")
	r.scr.typeText("receiver is back")
	r.scr.press(key(tcell.KeyEnter), key(tcell.KeyEnter))
	r.scr.waitForText(t, "is back in line")
	r.scr.waitForText(t, "[7] Deliveries 0")

	// A second one, dead too, dropped: not without a reason.
	up.Store(false)
	if _, _, err := c.Lease(ctx, "coder@local"); err != nil {
		t.Fatal(err)
	}
	r.scr.waitForText(t, "task_leased")
	r.scr.waitForText(t, "502 Bad Gateway")
	r.scr.press(char('D'))
	r.scr.waitForText(t, "Drop push notification")
	r.scr.press(key(tcell.KeyEnter), key(tcell.KeyEnter))
	r.scr.waitForText(t, "a reason is required")
	r.scr.typeText("receiver retired") // the reason has the focus again
	r.scr.press(key(tcell.KeyEnter), key(tcell.KeyEnter))
	r.scr.waitForText(t, "dropped")
	r.scr.waitForText(t, "[7] Deliveries 0")
	r.scr.press(char('4'), char('z'))
	f = r.scr.waitForText(t, "push_retried")
	if !f.contains("push_dropped") || !f.contains("receiver retired") || !f.contains("receiver is back") {
		t.Errorf("the Audit pane lacks the retry and the drop:\n%s", f)
	}
}
