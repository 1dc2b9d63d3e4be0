package tui

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/internal/testclock"
	"github.com/mailroom/mailroom/mailbox"
)

// A requeue answered "the leader changed" (a shared mailbox whose lead
// moved did nothing with it) is sent again by the client; the console's
// flash line says so, and then shows the requeue done, once.
func TestConsoleSaysTheLeaderChangedAndRetries(t *testing.T) {
	t.Parallel()
	d, direct := startDaemon(t)
	api := agentAPI{t, direct}
	id := api.send("worker-a@local", "summarize the on-call notes")
	api.lease("worker-a@local")

	// The repair is refused once, with a Retry-After of a second: the
	// console shows the notice while the client waits it out.
	p := daemontest.StartLeaderChanged(t, d.URL(), daemontest.LeaderChangedOptions{
		N: 1, RetryAfter: "1",
		Match: func(r *http.Request) bool { return r.Method == http.MethodPost && r.URL.Path == "/a2a/repair" },
	})
	var con atomic.Pointer[Console]
	c, err := client.New(p.URL, client.WithTimeout(10*time.Second), client.WithRetryNotice(func(reason string) {
		if t := con.Load(); t != nil {
			t.Retrying(reason)
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	clk := &testclock.Clock{}
	clk.Set(time.Now().Add(time.Hour))
	r := runConsole(t, c, Options{Addr: p.URL, StaleAfter: time.Minute, Now: clk.Now})
	con.Store(r.Console)
	r.scr.waitFor(t, "the stale lease", func(f frame) bool { return strings.Contains(f.lineWith(short(id)), staleMarker) })

	openRequeue(t, r, id)
	r.scr.typeText("worker-a crashed mid-task")
	r.scr.press(key(tcell.KeyEnter), key(tcell.KeyEnter))
	r.scr.waitForText(t, "the leader changed; retrying")
	r.scr.waitForText(t, "requeued "+short(id)+" (attempt 1)")

	if e, ok := api.entry(id); !ok || e.State != mailbox.TaskQueued || e.Attempt != 1 {
		t.Fatalf("daemon has the task as %+v, want queued with attempt 1 kept", e)
	}
	if len(p.Refused()) != 1 || len(p.Passed()) != 1 || string(p.Refused()[0]) != string(p.Passed()[0]) {
		t.Fatalf("repair sent %d times refused and %d passed, want the same request once each", len(p.Refused()), len(p.Passed()))
	}
}
