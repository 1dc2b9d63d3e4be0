package tui

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"
	"github.com/rivo/tview"
)

// screen is a simulation screen that keeps a copy of every frame shown, so
// tests read what an operator would see without racing the UI goroutine
// (the simulation's own buffer is rewritten by every draw).
type screen struct {
	tcell.SimulationScreen
	w, h int

	mu      sync.Mutex
	frame   frame
	shown   int           // frames shown so far
	changed chan struct{} // closed and replaced on every frame
}

// frame is one shown screen: its text line by line and each cell's style.
type frame struct {
	lines  []string
	styles [][]tcell.Style
}

func newScreen(w, h int) *screen {
	return &screen{SimulationScreen: tcell.NewSimulationScreen("UTF-8"), w: w, h: h, changed: make(chan struct{})}
}

// Init sizes the screen: the simulation resets to 80x25 on every Init,
// which tview calls.
func (s *screen) Init() error {
	if err := s.SimulationScreen.Init(); err != nil {
		return err
	}
	s.SimulationScreen.SetSize(s.w, s.h)
	return nil
}

// Show runs on the UI goroutine after every draw; copying here is the one
// race-free moment to read the cells.
func (s *screen) Show() {
	s.SimulationScreen.Show()
	cells, w, h := s.SimulationScreen.GetContents()
	f := frame{lines: make([]string, h), styles: make([][]tcell.Style, h)}
	var b strings.Builder
	for y := 0; y < h; y++ {
		b.Reset()
		f.styles[y] = make([]tcell.Style, 0, w)
		for x := 0; x < w; x++ {
			c := cells[y*w+x]
			if len(c.Runes) == 0 {
				b.WriteRune(' ')
			} else {
				b.WriteString(string(c.Runes))
			}
			// One style per rune written, so indexes into the line's runes
			// find their style.
			for range max(1, len(c.Runes)) {
				f.styles[y] = append(f.styles[y], c.Style)
			}
		}
		f.lines[y] = b.String()
	}
	s.mu.Lock()
	s.frame = f
	s.shown++
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

func (s *screen) frames() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shown
}

func (f frame) String() string { return strings.Join(f.lines, "\n") }

func (f frame) contains(text string) bool {
	for _, l := range f.lines {
		if strings.Contains(l, text) {
			return true
		}
	}
	return false
}

// find returns the line and rune column where text first appears.
func (f frame) find(text string) (y, x int, ok bool) {
	for y, l := range f.lines {
		if i := strings.Index(l, text); i >= 0 {
			return y, len([]rune(l[:i])), true
		}
	}
	return 0, 0, false
}

// lineWith returns the first line containing text.
func (f frame) lineWith(text string) string {
	for _, l := range f.lines {
		if strings.Contains(l, text) {
			return l
		}
	}
	return ""
}

// screenWait is how long a console test waits for what it expects to
// show before it fails: long, since only a failing test waits it out, and
// parallel consoles under the race detector on a busy two-core machine
// have taken more than 10 s to show what a quiet one shows at once.
const screenWait = 30 * time.Second

// waitFor waits until a shown frame satisfies cond, and returns it. Frames
// come on every change and once a second of the console's clock (ages
// tick); a condition that never holds fails at the deadline with the last
// frame in the message.
func (s *screen) waitFor(t testing.TB, what string, cond func(frame) bool) frame {
	t.Helper()
	deadline := time.NewTimer(screenWait)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		f, changed := s.frame, s.changed
		s.mu.Unlock()
		if f.lines != nil && cond(f) {
			return f
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("waited %v for %s; the screen shows:\n%s", screenWait, what, f)
		}
	}
}

func (s *screen) waitForText(t testing.TB, text string) frame {
	t.Helper()
	return s.waitFor(t, strings.TrimSpace(text)+" on screen", func(f frame) bool { return f.contains(text) })
}

func (s *screen) waitForNoText(t testing.TB, text string) frame {
	t.Helper()
	return s.waitFor(t, strings.TrimSpace(text)+" to leave the screen", func(f frame) bool { return !f.contains(text) })
}

func (s *screen) press(keys ...*tcell.EventKey) {
	for _, k := range keys {
		s.InjectKey(k.Key(), k.Rune(), k.Modifiers())
	}
}

func (s *screen) typeText(text string) {
	for _, r := range text {
		s.InjectKey(tcell.KeyRune, r, tcell.ModNone)
	}
}

// running is a console running on a simulation screen.
type running struct {
	*Console
	scr     *screen
	stopped chan struct{} // closed when Run returned
	err     error         // what Run returned
}

// runConsole runs a console over backend on a 160x48 screen until the test
// ends.
func runConsole(t testing.TB, backend Backend, opts Options) *running {
	t.Helper()
	return runConsoleSized(t, backend, opts, 160, 48)
}

// runConsoleSized runs a console on a w x h screen, for layout tests.
func runConsoleSized(t testing.TB, backend Backend, opts Options, w, h int) *running {
	t.Helper()
	scr := newScreen(w, h)
	opts.Screen = scr
	c := New(backend, opts)
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{Console: c, scr: scr, stopped: make(chan struct{})}
	go func() {
		r.err = c.Run(ctx)
		close(r.stopped)
	}()
	t.Cleanup(func() {
		cancel()
		r.waitStopped(t)
		if r.err != nil {
			t.Errorf("console.Run: %v", r.err)
		}
	})
	return r
}

func (r *running) waitStopped(t testing.TB) {
	t.Helper()
	select {
	case <-r.stopped:
	case <-time.After(screenWait):
		t.Fatalf("the console did not stop within %v", screenWait)
	}
}

// The tests of issue 11, an incident-grade console, run at the smallest
// terminal an operator is likely to have and at a large one.
var sizes = []struct{ w, h int }{{80, 24}, {200, 60}}

func forSizes(t *testing.T, run func(t *testing.T, w, h int)) {
	t.Helper()
	for _, s := range sizes {
		t.Run(fmt.Sprintf("%dx%d", s.w, s.h), func(t *testing.T) { run(t, s.w, s.h) })
	}
}

// highlighted reports whether text is drawn as a selected row: inverted in
// the focused pane, underlined in the others.
func highlighted(f frame, text string) bool {
	y, x, ok := f.find(text)
	if !ok {
		return false
	}
	_, bg, attr := f.styles[y][x].Decompose()
	return attr&tcell.AttrUnderline != 0 || bg != tview.Styles.PrimitiveBackgroundColor && bg != tcell.ColorDefault
}

// inverted reports whether text is drawn as the focused pane's selection.
func inverted(f frame, text string) bool {
	y, x, ok := f.find(text)
	if !ok {
		return false
	}
	_, bg, _ := f.styles[y][x].Decompose()
	return bg != tview.Styles.PrimitiveBackgroundColor && bg != tcell.ColorDefault
}
