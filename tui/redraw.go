package tui

import (
	"context"
	"fmt"
	"hash/maphash"
	"strconv"
	"time"

	"github.com/mailroom/mailroom/mailbox"
)

// The console draws a frame only when what it shows would change: on a
// key (tview draws after each), on an event or a listing that changes a
// row, a count or a title on screen, and when a relative age on screen
// crosses the unit it is shown in (formatAge: seconds below an hour, then
// minutes, then hours). An event that changes nothing shown (an agent's
// card registered again, the notifier's unchanged report, a long poll) is
// applied to the replica and drawn with the next frame that has a reason.
// The header's seq and events/s change with every event; they are brought
// up to date at most once a second.

// timePoints are the moments of the rows from which the panes show ages,
// countdowns or staleness: when any of them is about to cross its shown
// unit, a frame is due.
func timePoints(r *rows, staleAfterMs int64) []int64 {
	if r == nil {
		return nil
	}
	n := 3*(len(r.queued)+len(r.leases)+len(r.waiting)) + len(r.results) + len(r.audit) + 4*len(r.agents) + 3*len(r.deliveries)
	out := make([]int64, 0, n)
	add := func(ms ...int64) {
		for _, m := range ms {
			if m != 0 {
				out = append(out, m)
			}
		}
	}
	// Staleness turns at a moment plus the stale limit.
	stale := func(ms int64) {
		if ms != 0 {
			out = append(out, ms, ms+staleAfterMs)
		}
	}
	for _, es := range [][]mailbox.QueueEntry{r.queued, r.leases, r.waiting} {
		for _, e := range es {
			add(e.QueuedAtMs)
			stale(e.LeasedAtMs)
			stale(e.WaitingSinceMs)
			if e.Task.DeadlineMs != nil {
				add(*e.Task.DeadlineMs)
			}
		}
	}
	for i := range r.results {
		add(r.results[i].PostedAtMs)
	}
	for i := range r.audit {
		add(r.audit[i].AtMs)
	}
	for i := range r.agents {
		a := &r.agents[i]
		stale(a.LastSeenMs)
		add(a.RegisteredAtMs)
		stale(a.oldestLeasedAtMs)
		stale(a.oldestWaitingMs)
	}
	for i := range r.deliveries {
		d := &r.deliveries[i]
		add(d.CreatedAtMs, d.DeadAtMs, d.NextTryMs)
	}
	for _, l := range r.remote {
		if l.delivery != nil {
			add(l.delivery.NextTryMs)
		}
		if l.accepted != nil {
			add(l.accepted.AcceptedAtMs)
		}
	}
	return out
}

// nextAgeChange is the first moment after nowMs at which an age shown
// from one of points, as formatAge writes it, reads differently: a point
// under an hour away changes every second, then every minute, then every
// hour. It is never earlier than a second after nowMs: ages shown to the
// second are brought up to date once a second, all together. Without
// points it is zero: no time-driven frame is due.
func nextAgeChange(points []int64, nowMs int64) int64 {
	const (
		second = int64(time.Second / time.Millisecond)
		minute = 60 * second
		hour   = 60 * minute
		day    = 24 * hour
	)
	next := int64(0)
	for _, p := range points {
		d := nowMs - p
		if d < 0 {
			d = -d
		}
		unit := second
		switch {
		case d >= day:
			unit = hour
		case d >= hour:
			unit = minute
		}
		var in int64
		if p <= nowMs {
			in = unit - d%unit // the age grows into its next unit
		} else {
			in = d % unit // a countdown falls to its next unit
			if in == 0 {
				in = unit
			}
		}
		if at := nowMs + in; next == 0 || at < next {
			next = at
		}
		if next <= nowMs+second {
			break // nothing comes sooner than the once-a-second frame
		}
	}
	if next != 0 {
		next = max(next, nowMs+second)
	}
	return next
}

// screenSig digests what the main page would show but for the header's
// seq and events/s (see above): the header's counts, and for each pane on
// screen its size, scroll and selection, its title's counts, and the text
// and colour of every cell on its visible rows, as its renderer writes
// them now (ages as of the pane's last frame: time is the tick's). Equal
// digests mean a frame would show the same.
func (c *Console) screenSig() uint64 {
	var h maphash.Hash
	h.SetSeed(sigSeed)
	_, _, w, _ := c.header.GetInnerRect()
	c.sigMode = true
	h.WriteString(c.headerText(w))
	c.sigMode = false
	h.WriteString(c.flashView.GetText(false))
	for id, p := range c.panes {
		_, _, pw, ph := p.GetInnerRect()
		row, _ := p.GetSelection()
		off, _ := p.GetOffset()
		total := 0
		if p.content.rows != nil {
			total = p.content.rows.len(paneID(id))
		}
		h.WriteString(strconv.Itoa(id) + " " + strconv.Itoa(pw) + "x" + strconv.Itoa(ph) + " " + strconv.Itoa(row) + " " + strconv.Itoa(off) +
			" " + strconv.Itoa(total) + " " + strconv.Itoa(len(p.content.idx)) + " " + strconv.Itoa(len(p.content.marks)) + "\n")
		if ph <= 0 || pw <= 0 {
			continue // not on screen, or folded to its title (counted above)
		}
		cols := p.content.GetColumnCount()
		last := min(len(p.content.idx), off+ph-1)
		for r := 0; r <= last; r++ {
			if r > 0 && r <= off {
				continue // row 0 is the heading, always shown
			}
			for col := range cols {
				cell := p.content.GetCell(r, col)
				if cell == nil {
					continue
				}
				h.WriteString(cell.Text)
				h.WriteString("\x00" + strconv.FormatUint(uint64(cell.Color), 16) + "\x00")
			}
			h.WriteString("\n")
		}
	}
	return h.Sum64()
}

var sigSeed = maphash.MakeSeed()

// frameInterval caps drawing at about 30 frames a second, however fast
// events arrive.
const frameInterval = time.Second / 30

// idleLookInterval is how often the drawing loop looks for changes once
// nothing changed for a second.
const idleLookInterval = 100 * time.Millisecond

// drawLoop is the only source of redraws not caused by a key. It looks
// every frameInterval at what changed (cheaply: nothing is drawn to find
// out) and asks for a frame only when something shown would change:
// rows or status changed and the screen's digest with them, a shown age
// crosses its unit on the console's clock (Options.Now), the header's seq
// or rate moved (at most once a second), or an info flash is due to go.
// Rows are copied out of the model here, off the UI goroutine; the UI
// goroutine only installs them.
func (c *Console) drawLoop(ctx context.Context) {
	tick := time.NewTimer(frameInterval)
	defer tick.Stop()
	lk := looking{timedAt: c.opts.Now(), staleMs: c.opts.StaleAfter.Milliseconds()}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		// Pacing is real time; what the rows show is the console's clock.
		now, clock := time.Now(), c.opts.Now()
		// Looking costs a wake-up: while nothing changes for a second it
		// looks ten times a second, not thirty (keys draw by themselves).
		if now.Sub(lk.lastChange) < time.Second {
			tick.Reset(frameInterval)
		} else {
			tick.Reset(idleLookInterval)
		}
		c.look(&lk, now, clock)
		c.looks.Add(1)
	}
}

// looking is what the drawing loop built and drew last, which each look
// compares against.
type looking struct {
	builtVer, drawnConn, drawnGap, drawnHeld, drawnRetry, drawnSeq uint64
	drawnSpark                                                     [sparkSeconds]int
	// timedAt is the console's clock at the last time-driven frame;
	// dueMs when the next shown age crosses its unit (0: none), from the
	// moments of the rows built last (points).
	timedAt   time.Time
	points    []int64
	dueMs     int64
	staleMs   int64
	nextBuild time.Time // a build waits for it
	// lastChange is when rows or status last changed, in real time.
	lastChange time.Time
}

// look is one look of the drawing loop at real time now and the
// console's clock: it queues a frame when one is due.
func (c *Console) look(lk *looking, now, clock time.Time) {
	nowMs := clock.UnixMilli()
	st := c.model.status()
	spark := c.model.eventsPerSecond(nowMs)
	fresh := c.buildRows(lk, st, now, nowMs)
	statusChanged := st.connVer != lk.drawnConn || st.gapVer != lk.drawnGap || st.retryVer != lk.drawnRetry || uint64(st.held) != lk.drawnHeld
	timed := lk.timeDue(clock, spark, st.seq, c.overlay.Load())
	if w := c.wakeMs.Load(); w != 0 && nowMs >= w && c.wakeMs.CompareAndSwap(w, 0) {
		timed = true
	}
	if fresh == nil && !statusChanged && !timed {
		return
	}
	if fresh != nil || statusChanged {
		lk.lastChange = now
	}
	lk.drawnConn, lk.drawnGap, lk.drawnRetry, lk.drawnHeld = st.connVer, st.gapVer, st.retryVer, uint64(st.held)
	if timed {
		lk.timedAt, lk.drawnSpark, lk.drawnSeq = clock, spark, st.seq
		lk.dueMs = nextAgeChange(lk.points, nowMs)
	}
	force := statusChanged || timed
	c.app.QueueUpdate(func() {
		if c.install(fresh, st, spark, force) {
			c.app.ForceDraw()
		}
	})
}

// buildRows copies the rows out of the model when they changed since the
// last build (nil otherwise), and notes when a shown age of theirs is due
// to cross its unit.
func (c *Console) buildRows(lk *looking, st status, now time.Time, nowMs int64) *rows {
	if st.version == lk.builtVer || now.Before(lk.nextBuild) {
		return nil
	}
	fresh := c.model.rows()
	lk.points = timePoints(fresh, lk.staleMs)
	// A huge state costs milliseconds to copy; build it at most a
	// quarter of the time so events keep flowing into the model.
	lk.nextBuild = now.Add(3 * time.Since(now))
	lk.builtVer = fresh.version
	if next := nextAgeChange(lk.points, nowMs); lk.dueMs == 0 || next != 0 && next < lk.dueMs {
		lk.dueMs = next
	}
	return fresh
}

// timeDue reports whether the console's clock asks for a frame: a shown
// age crosses its unit, or a second passed and the header's rate or seq
// moved (or a page other than the main one is in front).
func (lk *looking) timeDue(clock time.Time, spark [sparkSeconds]int, seq uint64, overlay bool) bool {
	// A clock set back (a test's) starts the time-driven frames over.
	second := clock.Sub(lk.timedAt) >= time.Second || clock.Before(lk.timedAt)
	return clock.Before(lk.timedAt) || lk.dueMs != 0 && clock.UnixMilli() >= lk.dueMs ||
		second && (spark != lk.drawnSpark || seq != lk.drawnSeq || overlay)
}

// install shows new rows and status, and says whether a frame would
// show anything new: always when force, else when the screen's digest
// changed. It runs on the UI goroutine.
func (c *Console) install(fresh *rows, st status, spark [sparkSeconds]int, force bool) bool {
	if st.gapVer != c.status.gapVer {
		// A gap can open and close between two frames; say so either way.
		if st.gap != nil {
			c.flash(false, "event stream gap ("+st.gap.Error()+"); resyncing from a fresh snapshot")
		} else {
			c.flash(true, "resynced from a fresh snapshot after a gap in the event stream")
		}
	}
	if st.retryVer != c.status.retryVer {
		c.flashNote(st.retry + "; retrying")
	}
	if st.reconnects != c.status.reconnects {
		c.flash(true, fmt.Sprintf("reconnected after %s cut off; resumed after seq %d, nothing missed", formatAge(st.lastCut), st.resumedAfter))
	}
	if st.reloads != c.status.reloads {
		// Said after the reconnect: the snapshot arrives after the stream
		// is live again.
		c.flash(true, fmt.Sprintf("the daemon's log was compacted past seq %d while the console was away: reloaded a snapshot at seq %d", st.reloadedFrom, st.seq))
	}
	c.status, c.spark = st, spark
	if fresh != nil {
		c.rows = fresh
		for _, p := range c.panes {
			p.show(fresh)
		}
	} else if c.rows != nil {
		for _, id := range []paneID{paneLeases, paneWaiting} {
			if p := c.panes[id]; p.params.staleOnly {
				p.show(c.rows) // leases and questions turn stale as time passes
			}
		}
		c.panes[paneAgents].show(c.rows) // and agents that hold them go quiet
	}
	if c.flashOK && !c.flashAt.IsZero() && c.opts.Now().Sub(c.flashAt) > flashFor {
		c.flashView.SetText("")
		c.flashAt = time.Time{}
	}
	c.refreshDialog()
	c.renderTitles()
	if force || c.overlay.Load() {
		return true
	}
	return c.screenSig() != c.drawnSig
}
