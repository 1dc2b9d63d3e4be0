// Package tui is Mailroom's live operator console: a tview application that
// keeps a replica of the mailbox state from the daemon's event stream, shows
// queued tasks, leases, pending results and the repair audit trail in four
// panes, and repairs stuck leases through guarded requeue and force-error
// dialogs.
package tui

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/gdamore/tcell/v2"
	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/mailbox"
	"github.com/rivo/tview"
)

// Backend is what the console needs from the daemon; *client.Client
// satisfies it.
type Backend interface {
	// Subscribe streams events, starting with a snapshot when fromSeq is 0,
	// reconnecting by itself; the channel closes when ctx ends.
	Subscribe(ctx context.Context, fromSeq uint64, onState func(client.ConnState)) <-chan mailbox.Event
	Repair(ctx context.Context, req mailbox.RepairRequest) (mailbox.RepairOutcome, error)
	BaseURL() string
}

var _ Backend = (*client.Client)(nil)

// Options configure a console.
type Options struct {
	// Addr is the daemon address shown in the header; empty means the
	// backend's base URL.
	Addr string
	// ReadOnly removes every key that changes the mailbox.
	ReadOnly bool
	// StaleAfter is how long a lease is held before the console calls it
	// stale. Zero means DefaultStaleAfter.
	StaleAfter time.Duration
	// Principal is whom the console's token speaks for (as the daemon's
	// whoami says), shown in the header; empty means the daemon runs
	// without tokens, and the header says "no auth".
	Principal string
	// Now is the clock ages and staleness are measured with; nil is
	// time.Now.
	Now func() time.Time
	// Screen is the terminal to draw on; nil opens the real terminal.
	Screen tcell.Screen
}

// DefaultStaleAfter is how old a lease gets before it is shown as stale.
const DefaultStaleAfter = 5 * time.Minute

// frameInterval caps drawing at about 30 frames a second, however fast
// events arrive.
const frameInterval = time.Second / 30

// repairTimeout bounds one repair request, so a hung daemon cannot leave a
// dialog waiting forever.
const repairTimeout = 30 * time.Second

// Console is the operator console.
type Console struct {
	opts    Options
	backend Backend
	keys    registry
	model   *model

	app         *tview.Application
	pages       *tview.Pages
	main        *tview.Flex
	header      *tview.TextView
	panes       [paneCount]*pane
	flashView   *tview.TextView
	filterInput *tview.InputField
	hints       *tview.TextView

	// UI-goroutine state.
	focus   paneID
	rows    *rows
	status  status
	perS    float64
	flashAt time.Time
	flashOK bool // an info flash, cleared after a while; errors stay
	dialog  *repairDialog
	// stopping is set on the UI goroutine when Run stops the application.
	stopping bool

	runCtx context.Context
	quit   context.CancelFunc
	bg     group
}

// New builds a console over backend. Nothing runs until Run.
func New(backend Backend, opts Options) *Console {
	if opts.StaleAfter <= 0 {
		opts.StaleAfter = DefaultStaleAfter
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Addr == "" {
		opts.Addr = backend.BaseURL()
	}
	c := &Console{opts: opts, backend: backend, keys: defaultRegistry(), model: newModel(), app: tview.NewApplication()}
	if opts.ReadOnly {
		c.keys = c.keys.withoutDangerous()
	}
	c.layout()
	return c
}

func (c *Console) layout() {
	c.header = tview.NewTextView().SetDynamicColors(true).SetWrap(false)
	c.flashView = tview.NewTextView().SetDynamicColors(true).SetWrap(false)
	c.hints = tview.NewTextView().SetDynamicColors(true).SetWrap(false)
	c.filterInput = tview.NewInputField().SetFieldWidth(40)
	c.filterInput.SetChangedFunc(func(text string) {
		p := c.panes[c.focus]
		p.params.filter = text
		p.show(c.rows)
		c.renderTitles()
	})
	c.filterInput.SetDoneFunc(func(key tcell.Key) {
		if key == tcell.KeyEscape {
			c.filterInput.SetText("") // the changed func clears the pane's filter
		}
		c.main.ResizeItem(c.filterInput, 0, 0)
		c.focusPane(c.focus)
	})
	stack := &paneStack{Flex: tview.NewFlex().SetDirection(tview.FlexRow), c: c}
	for p := paneQueue; p < paneCount; p++ {
		c.panes[p] = newPane(p, c.opts.Now, c.opts.StaleAfter)
		stack.AddItem(c.panes[p], 0, 1, p == paneQueue)
	}
	c.main = tview.NewFlex().SetDirection(tview.FlexRow).AddItem(c.header, 2, 0, false).AddItem(stack, 0, 1, true)
	c.main.AddItem(c.flashView, 1, 0, false).AddItem(c.filterInput, 0, 0, false).AddItem(c.hints, 1, 0, false)
	c.main.SetInputCapture(c.onKey)
	// tview stops the application on Ctrl-C by itself, which Run would
	// report as a lost terminal; an operator's Ctrl-C, on any page, is a quit.
	c.app.SetInputCapture(func(ev *tcell.EventKey) *tcell.EventKey {
		if ev.Key() == tcell.KeyCtrlC {
			c.quit()
			return nil
		}
		return ev
	})
	c.pages = tview.NewPages().AddPage(pageMain, c.main, true, true)
	c.app.SetRoot(c.pages, true)
	c.focusPane(paneQueue)
	c.renderHeader()
}

// Page names.
const (
	pageMain     = "main"
	pageDetail   = "detail"
	pageHelp     = "help"
	pageDialog   = "dialog"
	pageConflict = "conflict"
)

// Run shows the console until the operator quits (nil) or ctx ends. A
// console runs once.
func (c *Console) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c.runCtx, c.quit = ctx, cancel
	if c.opts.Screen != nil {
		c.app.SetScreen(c.opts.Screen)
	}

	streamDone := make(chan struct{})
	go func() {
		defer close(streamDone)
		c.readStream(ctx)
	}()
	c.bg.spawn(func() { c.drawLoop(ctx) })

	// Stop the application only after every goroutine that queues updates
	// has finished: an update queued after the event loop ends would block
	// its goroutine forever.
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-ctx.Done()
		c.bg.closeAndWait()
		// Stopping from inside an update also waits for the event loop to
		// have started: Stop before Run would make Run open a new terminal.
		c.app.QueueUpdate(func() {
			c.stopping = true
			c.app.Stop()
		})
	}()

	err := c.app.Run()
	cancel()
	<-streamDone
	// stopping was set by the update above, on this goroutine (the event
	// loop runs inside app.Run), so reading it here is safe.
	if c.stopping {
		<-stopped
	} else if err == nil {
		// The event loop ended by itself. Goroutines blocked queueing
		// updates cannot finish now; do not wait for them.
		err = errors.New("console: the terminal closed")
	}
	return err
}

// readStream feeds the model from the backend until ctx ends. When the
// replica finds a gap it starts over from a fresh snapshot.
func (c *Console) readStream(ctx context.Context) {
	for {
		sub, cancel := context.WithCancel(ctx)
		events := c.backend.Subscribe(sub, 0, c.model.setConn)
		resync := false
	read:
		for {
			select {
			case ev, ok := <-events:
				if !ok {
					break read
				}
				c.model.receive(ev)
			case <-c.model.resync:
				resync = true
				break read
			}
		}
		cancel()
		for range events {
			// The client closes the channel once sub has ended.
		}
		if !resync || ctx.Err() != nil {
			return
		}
	}
}

// drawLoop is the only source of redraws not caused by a key: at most one
// frame per frameInterval, and only when something changed or, on the
// console's clock (Options.Now), a second passed: ages tick without events.
// Rows are copied out of the model here, off the UI goroutine; the UI
// goroutine only installs them.
func (c *Console) drawLoop(ctx context.Context) {
	tick := time.NewTicker(frameInterval)
	defer tick.Stop()
	var (
		builtVer, drawnConn, drawnGap uint64
		drawnPerS                     float64
		agedAt, nextBuild             time.Time
		r                             rate
	)
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		// Pacing is real time; what the rows show is the console's clock.
		now, clock := time.Now(), c.opts.Now()
		st := c.model.status()
		perS := r.update(now, st.applied)
		var fresh *rows
		if st.version != builtVer && !now.Before(nextBuild) {
			fresh = c.model.rows()
			cost := time.Since(now)
			// A huge state costs milliseconds to copy; build it at most a
			// quarter of the time so events keep flowing into the model.
			nextBuild = now.Add(3 * cost)
			builtVer = fresh.version
		}
		aged := clock.Sub(agedAt) >= time.Second || clock.Before(agedAt)
		if fresh == nil && st.connVer == drawnConn && st.gapVer == drawnGap && perS == drawnPerS && !aged {
			continue
		}
		drawnConn, drawnGap, drawnPerS, agedAt = st.connVer, st.gapVer, perS, clock
		c.app.QueueUpdateDraw(func() { c.install(fresh, st, perS) })
	}
}

// install shows new rows and status; it runs on the UI goroutine.
func (c *Console) install(fresh *rows, st status, perS float64) {
	if st.gapVer != c.status.gapVer {
		// A gap can open and close between two frames; say so either way.
		if st.gap != nil {
			c.flash(false, "event stream gap ("+st.gap.Error()+"); resyncing from a fresh snapshot")
		} else {
			c.flash(true, "resynced from a fresh snapshot after a gap in the event stream")
		}
	}
	c.status, c.perS = st, perS
	if fresh != nil {
		c.rows = fresh
		for _, p := range c.panes {
			p.show(fresh)
		}
	} else if lp := c.panes[paneLeases]; lp.params.staleOnly {
		lp.show(c.rows) // leases turn stale as time passes
	}
	if c.flashOK && !c.flashAt.IsZero() && c.opts.Now().Sub(c.flashAt) > 10*time.Second {
		c.flashView.SetText("")
		c.flashAt = time.Time{}
	}
	c.renderHeader()
	c.renderTitles()
}

// group runs the goroutines that queue UI updates, and lets Run wait for
// them before it stops the application.
type group struct {
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

// spawn runs f unless the group is closing; it reports whether f runs.
func (g *group) spawn(f func()) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		f()
	}()
	return true
}

func (g *group) closeAndWait() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.wg.Wait()
}
