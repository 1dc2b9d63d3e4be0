package tui

import (
	"fmt"
	"testing"
	"time"

	"github.com/mailroom/mailroom/mailbox"
)

// These tests control the event stream exactly (a gap, a burst), which a
// real daemon never produces on demand.

func TestGapResyncsFromAFreshSnapshot(t *testing.T) {
	src := newSource(t)
	fb := newFakeBackend(src)
	src.send("worker-a@local", withIntent("known task"))
	r := runConsole(t, fb, Options{})
	r.scr.waitForText(t, "known task")
	<-fb.subscribed

	src.send("worker-a@local", withIntent("lost on the way")) // never published
	fb.publish(src.send("worker-a@local", withIntent("after the gap")))
	select {
	case <-fb.subscribed:
	case <-time.After(10 * time.Second):
		t.Fatal("the console did not resubscribe after a gap")
	}
	r.scr.waitForText(t, "resynced from a fresh snapshot after a gap")
	f := r.scr.waitFor(t, "all three tasks", func(f frame) bool {
		return f.contains("lost on the way") && f.contains("after the gap") && f.contains("known task")
	})
	if !f.contains("[1] Queue 1-3 of 3 ") {
		t.Errorf("after the resync the Queue should hold 3 tasks:\n%s", f)
	}
}

func TestBurstIsDrawnAtABoundedFrameRate(t *testing.T) {
	src := newSource(t)
	fb := newFakeBackend(src)
	r := runConsole(t, fb, Options{})
	r.scr.waitForText(t, "● live")
	<-fb.subscribed

	const n = 20000
	start := time.Now()
	framesBefore := r.scr.frames()
	evs := make([]mailbox.Event, 0, 1000)
	for i := range n {
		evs = append(evs, src.send(fmt.Sprintf("worker-%d@local", i%3), withIntent(fmt.Sprintf("burst %d", i))))
		if len(evs) == cap(evs) {
			fb.publish(evs...)
			evs = evs[:0]
		}
	}
	fb.publish(evs...)
	r.scr.waitForText(t, "queued "+commas(n)+" ")
	elapsed := time.Since(start)
	frames := r.scr.frames() - framesBefore
	// 30 frames a second at most, plus one for the last install.
	if limit := int(elapsed.Seconds()*30) + 2; frames > limit {
		t.Errorf("%d events drew %d frames in %v, want at most %d", n, frames, elapsed, limit)
	}
	t.Logf("%d events, %d frames in %v", n, frames, elapsed)
}
