package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/internal/testclock"
	"github.com/mailroom/mailroom/mailbox"
)

// The header's rate is the daemon's: events counted by the time they
// happened (at_ms), over the last ten seconds, paused or not, with a
// sparkline of the last minute.
func TestHeaderShowsTheDaemonsEventRate(t *testing.T) {
	t.Parallel()
	clk := &testclock.Clock{}
	clk.Set(time.UnixMilli(1_800_000_000_000))
	d := daemontest.Start(t, daemontest.Options{Now: clk.Now})
	c := newClient(t, d.URL())
	api := agentAPI{t, c}
	r := runConsole(t, c, Options{Addr: d.URL(), Now: clk.Now})
	r.scr.waitForText(t, "● live")
	// One event, then twenty seconds later twenty: the rate counts the
	// twenty only, whether the first came in the snapshot or the stream.
	api.send("worker-a@local", "marker")
	r.scr.waitForText(t, "marker")
	clk.Set(clk.Now().Add(20 * time.Second))
	api.fill("worker-a@local", "burst", 20)
	f := r.scr.waitForText(t, "events/s 2.0 ")
	if spark := sparkOf(f); !strings.HasSuffix(spark, "█") || len([]rune(spark)) != sparkSeconds {
		t.Errorf("the sparkline %q should end with the burst's full bar, 60 seconds long", spark)
	}

	// Paused, the daemon's events still count.
	r.scr.press(char('p'))
	r.scr.waitForText(t, "paused (0 events held)")
	api.fill("worker-b@local", "while paused", 10)
	f = r.scr.waitForText(t, "events/s 3.0 ")
	if !f.contains("paused (10 events held)") {
		t.Errorf("the held events are not in the header:\n%s", f.lines[0])
	}
	// Resuming applies them: they are not counted again.
	r.scr.press(char('p'))
	f = r.scr.waitForText(t, "queued 31")
	if !f.contains("events/s 3.0 ") {
		t.Errorf("after resume the rate should stay the daemon's:\n%s", f.lines[1])
	}
	// Eleven quiet seconds later the burst has left the window.
	clk.Set(clk.Now().Add(11 * time.Second))
	r.scr.waitForText(t, "events/s 0.0 ")
	if v, _ := c.Queue(t.Context(), mailbox.QueueFilter{}); len(v.Tasks) == 0 {
		t.Error("the daemon lost the tasks")
	}
}

// sparkOf returns the sparkline in the header's second line.
func sparkOf(f frame) string {
	l := f.lines[1]
	i := strings.Index(l, "events/s ")
	if i < 0 {
		return ""
	}
	fields := strings.Fields(l[i:])
	if len(fields) < 3 {
		return ""
	}
	return fields[2]
}

func TestSparkline(t *testing.T) {
	tests := []struct {
		in   []int
		want string
	}{
		{[]int{0, 0, 0}, "▁▁▁"},
		{[]int{0, 1, 7}, "▁▂█"},
		{[]int{1, 100, 50}, "▂█▅"},
	}
	for _, tt := range tests {
		if got := sparkline(tt.in); got != tt.want {
			t.Errorf("sparkline(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestEventCounterCountsEachEventOnce(t *testing.T) {
	var e eventCounter
	at := int64(1_800_000_000_500)
	e.count(mailbox.Event{Seq: 5, Type: mailbox.EventSnapshot, AtMs: at})
	for _, seq := range []uint64{4, 5, 6, 7, 7, 8} { // 4 and 5 were in the snapshot, 7 comes twice
		e.count(mailbox.Event{Seq: seq, Type: mailbox.EventTaskSent, AtMs: at})
	}
	e.count(mailbox.Event{Seq: 9, Type: mailbox.EventTaskSent, AtMs: at - 2000})
	got := e.perSecond(at)
	if got[sparkSeconds-1] != 3 || got[sparkSeconds-3] != 1 || sum(got[:]) != 4 {
		t.Errorf("per second = %v, want 3 now and 1 two seconds ago", got)
	}
	if later := e.perSecond(at + 120_000); sum(later[:]) != 0 {
		t.Errorf("two minutes later the counts are %v, want none", later)
	}
}

// At 80 columns the hint bar keeps ? and q on every pane, dropping other
// hints first; the header drops what matters least rather than cut a
// number.
func TestHintBarAndHeaderAt80Columns(t *testing.T) {
	src := newSource(t)
	const n = 12345
	for i := range n {
		src.send(fmt.Sprintf("worker-%d@local", i%3))
	}
	for i := range n - 1000 {
		src.lease(fmt.Sprintf("worker-%d@local", i%3))
	}
	fb := newFakeBackend(src)
	clock := func() time.Time { return time.UnixMilli(src.nowMs).Add(time.Hour) }
	r := runConsoleSized(t, fb, Options{Now: clock, StaleAfter: time.Minute}, 80, 24)
	f := r.scr.waitForText(t, "1,000")
	for _, want := range []string{"queued 1,000", " 11,345", "stale 11,345", "results", "events/s"} {
		if !strings.Contains(f.lines[1], want) {
			t.Errorf("the header lacks %q whole:\n%s", want, f.lines[1])
		}
	}
	for p := '1'; p <= '4'; p++ {
		r.scr.press(char(p))
		f = r.scr.waitForText(t, "["+string(p)+"]")
		hints := f.lines[len(f.lines)-1]
		if !strings.Contains(hints, "<?> help") || !strings.Contains(hints, "<q> quit") {
			t.Errorf("pane %c: the hint bar lost help or quit: %q", p, hints)
		}
	}
}

func TestFitSegmentsNeverCutsAVariant(t *testing.T) {
	segs := []segment{
		{prio: 100, variants: []string{"queued 12,345"}},
		{prio: 90, variants: []string{"in flight 11,345", "leased 11,345"}},
		{prio: 50, variants: []string{"seq 1,234,567", ""}},
	}
	tests := []struct {
		width int
		want  string
	}{
		{80, "queued 12,345   in flight 11,345   seq 1,234,567"},
		{47, "queued 12,345  in flight 11,345  seq 1,234,567"},
		{40, "queued 12,345  in flight 11,345"},
		{30, "queued 12,345  leased 11,345"},
	}
	for _, tt := range tests {
		if got := fitSegments(segs, tt.width, "   ", "  "); got != tt.want {
			t.Errorf("fitSegments(width %d) = %q, want %q", tt.width, got, tt.want)
		}
	}
}
