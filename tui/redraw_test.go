package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/internal/testclock"
	"github.com/mailroom/mailroom/mailbox"
)

// settle waits until the drawing loop has looked quietLooks times in a
// row without drawing (what it had to show is shown), and returns how
// many frames the console drew.
func (r *running) settle(t *testing.T) uint64 {
	t.Helper()
	const quietLooks = 10
	deadline := time.Now().Add(screenWait)
	for time.Now().Before(deadline) {
		n := r.draws.Load()
		r.looked(t, quietLooks)
		if m := r.draws.Load(); m == n {
			return m
		}
	}
	t.Fatalf("the console kept drawing for %v", screenWait)
	return 0
}

// looked waits until the drawing loop has looked n more times and the UI
// goroutine has run what those looks queued: whatever they asked to draw
// is drawn.
func (r *running) looked(t *testing.T, n uint64) {
	t.Helper()
	want := r.looks.Load() + n
	waitUntil(t, fmt.Sprintf("the drawing loop to look %d times", n), func() bool { return r.looks.Load() >= want })
	done := make(chan struct{})
	r.app.QueueUpdate(func() { close(done) })
	select {
	case <-done:
	case <-time.After(screenWait):
		t.Fatalf("the UI goroutine ran nothing for %v", screenWait)
	}
}

// An idle console draws nothing: no frame while nothing changes, none for
// an event that changes nothing it shows (an agent's card registered again
// unchanged); a frame for a new row, and one when a shown age crosses a
// second of the console's clock.
func TestAnIdleConsoleDoesNotRedraw(t *testing.T) {
	t.Parallel()
	clk := &testclock.Clock{}
	clk.Set(time.UnixMilli(1_800_000_000_000))
	d := daemontest.Start(t, daemontest.Options{Now: clk.Now})
	c := newClient(t, d.URL())
	api := agentAPI{t, c}
	card := mailbox.AgentCard{Name: "Coder"}
	if _, err := c.RegisterAgent(t.Context(), "coder@local", card); err != nil {
		t.Fatal(err)
	}
	api.send("coder@local", "first task")
	r := runConsoleSized(t, c, Options{Addr: d.URL(), Now: clk.Now}, 200, 50)
	r.scr.waitForText(t, "first task")
	r.scr.waitForText(t, "coder@local")

	// Nothing changes: the loop looks many times, draws nothing.
	drawn := r.settle(t)
	r.looked(t, 10)
	if n := r.draws.Load(); n != drawn {
		t.Errorf("an idle console drew %d frames", n-drawn)
	}

	// An event that changes nothing shown.
	seq := r.model.status().seq
	if _, err := c.RegisterAgent(t.Context(), "coder@local", card); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the event in the replica", func() bool { return r.model.status().seq != seq })
	r.looked(t, 10)
	if n := r.draws.Load(); n != drawn {
		t.Errorf("an event that changes nothing shown drew %d frames", n-drawn)
	}

	// A new row is drawn.
	api.send("coder@local", "second task")
	f := r.scr.waitForText(t, "second task")
	if r.draws.Load() == drawn {
		t.Error("the new row was shown without a frame")
	}
	if !strings.Contains(f.lineWith("first task"), "0s") {
		t.Errorf("the first task's age is not 0s: %q", f.lineWith("first task"))
	}
	// Ages tick with the console's clock.
	drawn = r.settle(t)
	clk.Advance(3 * time.Second)
	r.scr.waitFor(t, "the first task 3s old", func(f frame) bool { return strings.Contains(f.lineWith("first task"), "3s") })
	if r.draws.Load() == drawn {
		t.Error("the ages moved without a frame")
	}
}

// nextAgeChange follows formatAge's units: seconds below an hour, minutes
// below a day, then hours; never sooner than a second.
func TestNextAgeChange(t *testing.T) {
	const now = int64(10_000_000_000)
	tests := []struct {
		name   string
		points []int64
		want   int64
	}{
		{"none", nil, 0},
		{"seconds old", []int64{now - 5_300}, now + 1_000},
		{"an hour and a bit old", []int64{now - 3_600_000 - 20_000}, now + 40_000},
		{"two days old", []int64{now - 2*86_400_000 - 600_000}, now + 3_000_000},
		{"a deadline in 90 minutes", []int64{now + 90*60_000 + 15_000}, now + 15_000},
		{"the soonest wins", []int64{now - 2*86_400_000, now - 3_600_000 - 50_000}, now + 10_000},
	}
	for _, tt := range tests {
		if got := nextAgeChange(tt.points, now); got != tt.want {
			t.Errorf("%s: nextAgeChange = now%+d, want now%+d", tt.name, got-now, tt.want-now)
		}
	}
}

// The screen the application draws on passes on only the cells that
// changed: a frame drawn again the same, after a clear, shows nothing.
func TestDiffScreenShowsOnlyChanges(t *testing.T) {
	scr := newScreen(20, 3)
	d := newDiffScreen(scr)
	if err := d.Init(); err != nil {
		t.Fatal(err)
	}
	draw := func(text string) {
		d.Clear()
		d.PutStrStyled(0, 1, text, tcell.StyleDefault.Foreground(tcell.ColorRed))
		d.Show()
	}
	draw("age 1s")
	if scr.frames() != 1 || !scr.frame.contains("age 1s") {
		t.Fatalf("the first frame: %d shown:\n%s", scr.frames(), scr.frame)
	}
	draw("age 1s")
	if scr.frames() != 1 {
		t.Errorf("the same frame again was shown")
	}
	draw("age 2s")
	if scr.frames() != 2 || !scr.frame.contains("age 2s") {
		t.Errorf("a changed cell was not shown: %d shown:\n%s", scr.frames(), scr.frame)
	}
	d.Sync()
	if !scr.frame.contains("age 2s") {
		t.Errorf("Sync lost the frame:\n%s", scr.frame)
	}
}
