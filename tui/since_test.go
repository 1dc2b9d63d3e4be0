package tui

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/internal/testclock"
)

// Finding 7 of issue 37: the Agents pane says since when an agent
// probably gone was last seen as a time of day too, not only how long ago
// (on a wide pane: narrower, its note keeps the room).
func TestAgentsPaneSaysWhenAnAgentWasLastSeen(t *testing.T) {
	t.Parallel()
	clk := testclock.New(time.Date(2026, 11, 29, 9, 12, 3, 0, time.Local))
	d := daemontest.Start(t, daemontest.Options{Now: clk.Now})
	api := agentAPI{t, newClient(t, d.URL())}
	api.send("worker-a@local", "migrate the schemas")
	api.lease("worker-a@local") // seen now, at 09:12:03
	clk.Advance(10 * time.Minute)
	r := runConsoleSized(t, api.c, Options{Addr: d.URL(), Now: clk.Now}, 200, 50)
	r.scr.waitForText(t, "● live")
	r.scr.press(char('5'))
	f := r.scr.waitFor(t, "worker-a's SEEN", func(f frame) bool {
		return strings.Contains(agentLine(f, "worker-a@local"), "10m00s ago (09:12:03)")
	})
	if l := agentLine(f, "worker-a@local"); !strings.Contains(l, "probably gone") {
		t.Errorf("worker-a's row: %q", l)
	}
}

func TestFormatSince(t *testing.T) {
	at := time.Date(2026, 11, 27, 23, 5, 9, 0, time.Local)
	for _, tt := range []struct {
		later time.Duration
		want  string
	}{
		{time.Minute, "23:05:09"},
		{19 * time.Hour, "23:05:09"},
		{21 * time.Hour, "Nov 27 23:05"},
		{30 * 24 * time.Hour, "Nov 27 23:05"},
	} {
		if got := formatSince(at.UnixMilli(), at.Add(tt.later).UnixMilli()); got != tt.want {
			t.Errorf("%v later: formatSince = %q, want %q", tt.later, got, tt.want)
		}
	}
}

// An agent whose long poll waits is seen, however long ago the poll
// began: its SEEN says so, and it is not probably gone while it holds a
// lease older than the stale limit. The daemon has just restarted, as in
// an incident: the worker's last action is ten minutes old, and the long
// poll it makes now is what shows it alive.
func TestAnAgentInALongPollIsSeen(t *testing.T) {
	t.Parallel()
	clk := testclock.New(time.Now())
	d := daemontest.Start(t, daemontest.Options{Now: clk.Now})
	api := agentAPI{t, newClient(t, d.URL())}
	api.send("worker-a@local", "migrate the schemas")
	api.lease("worker-a@local")
	clk.Advance(10 * time.Minute)
	d.Restart()
	r := runConsoleSized(t, api.c, Options{Addr: d.URL(), Now: clk.Now}, 200, 50)
	r.scr.waitForText(t, "● live")
	r.scr.press(char('5'))
	r.scr.waitFor(t, "worker-a probably gone", func(f frame) bool {
		return strings.Contains(agentLine(f, "worker-a@local"), "probably gone")
	})

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = api.c.LeaseN(ctx, "worker-a@local", 1, 20*time.Second) // nothing queued: it waits
	}()
	defer func() {
		cancel()
		<-done
	}()
	f := r.scr.waitFor(t, "worker-a seen in its long poll", func(f frame) bool {
		return strings.Contains(agentLine(f, "worker-a@local"), "now (long poll)")
	})
	if l := agentLine(f, "worker-a@local"); strings.Contains(l, "probably gone") {
		t.Errorf("an agent in a long poll is still probably gone: %q", l)
	}
}
