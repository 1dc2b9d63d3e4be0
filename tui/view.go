package tui

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gdamore/tcell/v2"
	"github.com/rivo/tview"
)

// onKey dispatches a key pressed on the main view through the registry.
// Keys the registry does not claim go on to the focused table (movement).
func (c *Console) onKey(ev *tcell.EventKey) *tcell.EventKey {
	if c.filterInput.HasFocus() {
		return ev
	}
	a, ok := c.keys.lookup(ev, c.focus)
	if !ok {
		return ev
	}
	switch a.id {
	case actFocusNext:
		c.focusPane((c.focus + 1) % paneCount)
	case actFocusPrev:
		c.focusPane((c.focus + paneCount - 1) % paneCount)
	case actFocusPane:
		c.focusPane(paneID(ev.Rune() - '1'))
	case actDetail:
		c.showDetail()
	case actFilter:
		c.filterInput.SetLabel("filter " + c.focus.String() + ": ").SetText(c.panes[c.focus].params.filter)
		c.main.ResizeItem(c.filterInput, 1, 0)
		c.app.SetFocus(c.filterInput)
	case actBack:
		if p := c.panes[c.focus]; p.params.filter != "" {
			p.params.filter = ""
			p.show(c.rows)
		}
	case actSort:
		p := c.panes[c.focus]
		p.params.sort = (p.params.sort + 1) % sortModes
		p.show(c.rows)
	case actStaleOnly:
		p := c.panes[paneLeases]
		p.params.staleOnly = !p.params.staleOnly
		p.show(c.rows)
	case actRequeue, actForceError:
		c.openRepair(a.id)
	case actPause:
		c.model.setPaused(!c.status.paused)
		c.status = c.model.status()
		if c.status.paused {
			c.flash(true, "paused: events are kept and applied when you press p again")
		} else {
			c.flash(true, "resumed")
		}
	case actHelp:
		c.showHelp()
	case actQuit:
		c.quit()
	}
	c.renderHeader()
	c.renderTitles()
	return nil
}

// focusPane moves the focus to pane p and shows p's keys in the hint bar.
func (c *Console) focusPane(p paneID) {
	c.focus = p
	c.app.SetFocus(c.panes[p])
	c.hints.SetText(c.keys.hintText(p))
	c.renderTitles()
}

func (c *Console) renderTitles() {
	live := c.status.conn.Live && c.status.gap == nil
	for id, p := range c.panes {
		focused := paneID(id) == c.focus
		p.SetTitle(p.title(focused, live || !c.status.connSeen))
		switch {
		case !live && c.status.connSeen:
			p.SetBorderColor(tcell.ColorGray)
		case focused:
			p.SetBorderColor(tcell.ColorAqua)
		default:
			p.SetBorderColor(tview.Styles.BorderColor)
		}
	}
}

// renderHeader writes the two header lines: where and how we are connected,
// then the counts.
func (c *Console) renderHeader() {
	st := c.status
	var b strings.Builder
	b.WriteString("[::b]mailroom[::-] " + escapeTags(c.opts.Addr))
	// Whom repairs are recorded under, next to where they go: an operator
	// holding two tokens must see which one this console uses.
	if c.opts.Principal != "" {
		b.WriteString(" as [::b]" + escapeTags(c.opts.Principal) + "[::-]   ")
	} else {
		b.WriteString(" [gray]no auth[-]   ")
	}
	switch {
	case !st.connSeen:
		b.WriteString("[yellow]connecting[-]")
	case st.conn.Live:
		b.WriteString("[green]● live[-]")
	default:
		b.WriteString(fmt.Sprintf("[yellow]reconnecting (attempt %d)[-]", st.conn.Attempt))
		if st.conn.Err != nil {
			b.WriteString(" [gray]" + escapeTags(oneLine(st.conn.Err.Error())) + "[-]")
		}
	}
	if st.paused {
		b.WriteString(fmt.Sprintf("   [aqua::b]paused[-::-] (%d events held)", st.held))
	}
	if c.opts.ReadOnly {
		b.WriteString("   [aqua]read-only[-]")
	}
	b.WriteString("\n")

	staleN := c.rows.countStale(staleness{nowMs: c.opts.Now().UnixMilli(), afterMs: c.opts.StaleAfter.Milliseconds()})
	fmt.Fprintf(&b, "queued %d   in flight %d   ", c.rows.len(paneQueue), c.rows.len(paneLeases))
	if staleN > 0 {
		fmt.Fprintf(&b, "[red::b]stale %d[-::-]", staleN)
	} else {
		b.WriteString("stale 0")
	}
	fmt.Fprintf(&b, "   results pending %d   events/s %.1f   seq %d", c.rows.len(paneResults), c.perS, st.seq)
	if st.connSeen && (!st.conn.Live || st.gap != nil) {
		b.WriteString("   [yellow]showing the last state received (stale)[-]")
	}
	c.header.SetText(b.String())
}

// flash shows one line of outcome: info in green (cleared after a while),
// errors in red (kept until the next flash).
func (c *Console) flash(ok bool, msg string) {
	color := "red"
	if ok {
		color = "green"
	}
	c.flashAt, c.flashOK = c.opts.Now(), ok
	c.flashView.SetText("[" + color + "]" + escapeTags(oneLine(msg)) + "[-]")
}

// showHelp shows every registered key; Esc or ? goes back.
func (c *Console) showHelp() {
	var b strings.Builder
	b.WriteString("[::b]Keys[::-]")
	if c.opts.ReadOnly {
		b.WriteString("  [aqua](read-only: keys that change the mailbox are disabled)[-]")
	}
	b.WriteString("\n\n")
	for _, l := range c.keys.helpLines() {
		b.WriteString(l + "\n")
	}
	b.WriteString("\nLeases held longer than " + c.opts.StaleAfter.String() + " are stale: red, marked with " + strconv.Quote(staleMarker) + ".\n")
	b.WriteString("Repairs are guarded: they apply only while the lease you inspected is still the current one.\n")
	tv := tview.NewTextView().SetDynamicColors(true).SetText(b.String())
	tv.SetBorder(true).SetTitle(" Help (Esc to go back) ")
	c.showPage(pageHelp, tv, func(ev *tcell.EventKey) bool {
		return ev.Key() == tcell.KeyEscape || ev.Key() == tcell.KeyRune && ev.Rune() == '?'
	})
}

// showPage shows a full-screen page that closes on the keys close accepts.
func (c *Console) showPage(name string, tv *tview.TextView, close func(*tcell.EventKey) bool) {
	tv.SetInputCapture(func(ev *tcell.EventKey) *tcell.EventKey {
		if close(ev) {
			c.pages.RemovePage(name)
			c.focusPane(c.focus)
			return nil
		}
		return ev
	})
	c.pages.AddPage(name, tv, true, true)
	c.app.SetFocus(tv)
}
