package tui

import (
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
