// Package tui is Mailroom's live operator console: a tview application that
// keeps a replica of the mailbox state from the daemon's event stream, shows
// queued tasks, leases, pending results, the repair audit trail, the agents
// and the tasks waiting on their senders' answers in panes, and repairs
// stuck leases, one or many, and unanswered questions through guarded
// requeue and force-error dialogs.
package tui

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gdamore/tcell/v2"
	"github.com/rivo/tview"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/mailbox"
)

// Backend is what the console needs from the daemon; *client.Client
// satisfies it.
type Backend interface {
	// SubscribeWith streams events, starting with a snapshot when fromSeq
	// is 0, reconnecting by itself; the channel closes when ctx ends. With
	// OnAgents it also reports the agents listing the daemon pushes.
	SubscribeWith(ctx context.Context, fromSeq uint64, o client.SubscribeOptions) <-chan mailbox.Event
	// Agents reads the agents listing, which the stream pushes only after
	// a change: the console reads it on every connect.
	Agents(ctx context.Context) ([]mailbox.AgentInfo, error)
	Repair(ctx context.Context, req mailbox.RepairRequest) (mailbox.RepairOutcome, error)
	// WhoAmI says whom the token speaks for and what it may do: the header
	// shows the one, the repair keys follow the other.
	WhoAmI(ctx context.Context) (mailbox.WhoAmI, error)
	// Deliveries, RetryNotification and DropNotification are the outbox
	// of push notifications: the console polls the failing ones (what the
	// notifier knows of them is not streamed), and repairs them.
	Deliveries(ctx context.Context, failedOnly bool) (mailbox.PushListing, error)
	RetryNotification(ctx context.Context, id, reason string) (mailbox.Notification, error)
	DropNotification(ctx context.Context, id, reason string) error
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
	// Principal is whom the console's token speaks for, as the daemon's
	// whoami said before the console started; the header shows it until
	// the console's own whoami is answered. The console asks the daemon
	// itself, for the principal and the capabilities the repair keys need,
	// and says "no auth" only once the daemon has said so.
	Principal string
	// Now is the clock ages and staleness are measured with; nil is
	// time.Now.
	Now func() time.Time
	// Screen is the terminal to draw on; nil opens the real terminal.
	Screen tcell.Screen
	// Clipboard receives the OSC 52 sequence that puts a copied id on the
	// operator's clipboard (y); nil writes it to the terminal, which works
	// over SSH and, with set-clipboard on, in tmux.
	Clipboard io.Writer
	// ExportDir is where Ctrl-S and J save a pane; empty is the current
	// directory.
	ExportDir string
}

// DefaultStaleAfter is how old a lease gets before it is shown as stale.
const DefaultStaleAfter = 5 * time.Minute

// repairTimeout bounds one repair request, so a hung daemon cannot leave a
// dialog waiting forever.
const repairTimeout = 30 * time.Second

// Console is the operator console.
type Console struct {
	opts    Options
	backend Backend
	// keys are the bindings in force: base less what the token may not do.
	keys, base registry
	model      *model

	app         *tview.Application
	pages       *tview.Pages
	main        *tview.Flex
	header      *fitView
	panes       [paneCount]*pane
	flashView   *tview.TextView
	filterInput *tview.InputField
	hints       *fitView

	// UI-goroutine state.
	focus   paneID
	zoomed  bool
	rows    *rows
	status  status
	spark   [sparkSeconds]int // the daemon's events per second, oldest first
	flashAt time.Time
	flashOK bool // an info flash, cleared after a while; errors stay
	dialog  *repairDialog
	details []string // the detail views open, the task ids, oldest first
	// pageFlash is the open detail view's outcome line.
	pageFlash *tview.TextView
	// who is the daemon's whoami answer; nil until it answers. whoErr is
	// its refusal of the token.
	who *mailbox.WhoAmI
	// role is the instance's part in a shared mailbox (nil on a daemon
	// with a local log, or before it answered).
	role   *mailbox.StoreRole
	whoErr error
	// lastRepair's reason and message are offered again by the next
	// dialog of the same kind, which says so (repair_dialog.go).
	lastRepair repairMemory
	// screen is the terminal the application draws on, for the clipboard.
	screen tcell.Screen
	// stopping is set on the UI goroutine when Run stops the application.
	stopping bool
	// drawnSig is the digest of the main page as last drawn, sigMode set
	// while one is taken (redraw.go); overlay says a page other than the
	// main one is in front, which is drawn on every change and every
	// second; wakeMs asks the draw loop for a frame at that moment of
	// the console's clock (an info flash to clear).
	drawnSig uint64
	sigMode  bool
	overlay  atomic.Bool
	wakeMs   atomic.Int64
	// draws counts the frames drawn, changed or not; looks the drawing
	// loop's looks, drawn or not (redraw.go): a test that a console
	// draws nothing waits on the looks, not on the clock.
	draws, looks atomic.Uint64

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
	c := &Console{opts: opts, backend: backend, base: defaultRegistry(), model: newModel(), app: tview.NewApplication()}
	if opts.ReadOnly {
		c.base = c.base.withoutDangerous()
	}
	// Until the daemon says what the token may do, nothing that needs a
	// capability is offered.
	c.keys = c.base.allowedBy(nil)
	c.layout()
	return c
}

func (c *Console) layout() {
	c.header = newFitView(c.headerText)
	c.flashView = tview.NewTextView().SetDynamicColors(true).SetWrap(true)
	c.hints = newFitView(func(width int) string { return c.keys.hintText(c.focus, width) })
	c.filterInput = tview.NewInputField().SetFieldWidth(40)
	c.filterInput.SetChangedFunc(func(text string) {
		p := c.panes[c.focus]
		p.params.filter = text
		p.show(c.rows)
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
	}
	for _, p := range screenOrder {
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
	c.app.SetBeforeDrawFunc(func(screen tcell.Screen) bool {
		c.screen = screen
		// The outcome line grows to three rows for a long outcome (where a
		// file was saved, an error): it is shown whole.
		w, _ := screen.Size()
		c.main.ResizeItem(c.flashView, max(1, min(3, wrappedRows(c.flashView.GetText(false), w))), 0)
		front, _ := c.pages.GetFrontPage()
		c.overlay.Store(front != pageMain)
		return false
	})
	c.app.SetAfterDrawFunc(func(tcell.Screen) {
		c.draws.Add(1)
		if !c.overlay.Load() {
			c.drawnSig = c.screenSig()
		}
	})
	c.pages = tview.NewPages().AddPage(pageMain, c.main, true, true)
	c.app.SetRoot(c.pages, true)
	c.focusPane(paneQueue)
}

// Page names.
const (
	pageMain    = "main"
	pageDetail  = "detail"
	pageHelp    = "help"
	pageDialog  = "dialog"
	pageOutcome = "outcome"
)

// Run shows the console until the operator quits (nil) or ctx ends. A
// console runs once.
func (c *Console) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c.runCtx, c.quit = ctx, cancel
	scr := c.opts.Screen
	if scr == nil {
		var err error
		if scr, err = tcell.NewScreen(); err != nil {
			return err
		}
	}
	// The application draws through a screen that passes on only the
	// cells that changed (diffscreen.go).
	ds := newDiffScreen(scr)
	c.app.SetScreen(ds)
	if ds.initErr != nil {
		return ds.initErr
	}

	streamDone := make(chan struct{})
	go func() {
		defer close(streamDone)
		c.readStream(ctx)
	}()
	c.bg.spawn(func() { c.drawLoop(ctx) })
	c.bg.spawn(func() { c.askWhoAmI(ctx) })
	if sr, ok := c.backend.(statusReader); ok {
		c.bg.spawn(func() { c.watchRole(ctx, sr) })
	}
	c.bg.spawn(func() { c.readAgents(ctx) })
	c.bg.spawn(func() { c.pollDeliveries(ctx) })

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
		events := c.backend.SubscribeWith(sub, 0, client.SubscribeOptions{OnState: c.model.setConn, OnAgents: c.model.pushAgents})
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

// Retrying tells the console that its client sent a request again by
// itself, for reason (client.ReasonLeaderChanged: a shared mailbox's lead
// changed and nothing was done); the flash line says so until the next
// message or a while passes. Give it to the client with
// client.WithRetryNotice. It may be called from any goroutine, before Run
// and after it ends.
func (c *Console) Retrying(reason string) { c.model.noteRetry(reason) }

// askWhoAmI asks the daemon whom the token speaks for until it answers (it
// may not be up yet: then again when the stream connects, or after a
// while), and installs the answer on the UI goroutine.
func (c *Console) askWhoAmI(ctx context.Context) {
	wait := 100 * time.Millisecond
	for {
		rctx, cancel := context.WithTimeout(ctx, repairTimeout)
		who, err := c.backend.WhoAmI(rctx)
		cancel()
		var appErr *mailbox.Error
		if err == nil || errors.As(err, &appErr) {
			c.app.QueueUpdateDraw(func() { c.setWhoAmI(who, err) })
			return
		}
		retry := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			retry.Stop()
			return
		case <-retry.C:
		case <-c.model.wentLive:
			retry.Stop()
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// statusReader is a backend that says, through /healthz, which instance of
// a shared mailbox the console is on (client.Client does).
type statusReader interface {
	Status(ctx context.Context) (mailbox.Status, error)
}

// roleEvery is how often the console asks which instance leads.
const roleEvery = 2 * time.Second

// watchRole keeps the header's "leader" or "follower of ..." current: an
// operator in an incident must see when the instance they are on stops
// leading.
func (c *Console) watchRole(ctx context.Context, sr statusReader) {
	for {
		rctx, cancel := context.WithTimeout(ctx, repairTimeout)
		st, err := sr.Status(rctx)
		cancel()
		if err == nil {
			c.app.QueueUpdate(func() {
				if (c.role == nil) != (st.Store == nil) || c.role != nil && *c.role != *st.Store {
					c.role = st.Store
					c.app.ForceDraw()
				}
			})
		}
		t := time.NewTimer(roleEvery)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// readAgents reads the agents listing each time the stream connects: the
// stream pushes one only after a change. A listing pushed while the
// question was out is newer, and wins.
func (c *Console) readAgents(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.model.agentsWanted:
		}
		gen := c.model.agentsGeneration()
		rctx, cancel := context.WithTimeout(ctx, repairTimeout)
		list, err := c.backend.Agents(rctx)
		cancel()
		if err == nil {
			c.model.setAgents(list, gen)
		}
	}
}

// pollDeliveries asks the daemon once a second what its notifier knows of
// the failing push notifications (attempts, last error, next try), while
// the outbox holds any: the outbox itself comes with the events.
func (c *Console) pollDeliveries(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if c.model.outboxEmpty() {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, repairTimeout)
		list, err := c.backend.Deliveries(rctx, true)
		cancel()
		if err == nil {
			c.model.setPushAttempts(list)
		}
	}
}

// setWhoAmI installs the daemon's answer: the header names the principal,
// and the repair keys are those the token's capabilities allow.
func (c *Console) setWhoAmI(who mailbox.WhoAmI, err error) {
	if err != nil {
		c.whoErr = err
		return
	}
	c.who = &who
	c.keys = c.base.allowedBy(who.Capabilities)
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
