package tui

import (
	"slices"
	"strconv"
	"strings"
	"time"

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
	p := c.panes[c.focus]
	switch a.id {
	case actFocusNext:
		c.focusPane(screenNeighbour(c.focus, 1))
	case actFocusPrev:
		c.focusPane(screenNeighbour(c.focus, -1))
	case actFocusPane:
		c.focusPane(paneID(ev.Rune() - '1'))
	case actDetail:
		c.showDetail()
	case actShowAgent:
		c.showAgent()
	case actFilter:
		c.filterInput.SetLabel("filter " + c.focus.String() + ": ").SetText(p.params.filter)
		c.main.ResizeItem(c.filterInput, 1, 0)
		c.app.SetFocus(c.filterInput)
	case actBack:
		c.clearNarrowing(p)
	case actSort:
		if s, ok := p.params.sort.next(c.focus, ev.Rune()); ok {
			p.params.sort = s
			p.show(c.rows)
		}
	case actStaleOnly:
		p.params.staleOnly = !p.params.staleOnly
		p.show(c.rows)
	case actMark:
		if !p.toggleMark() {
			c.flash(false, "no row selected")
		}
	case actMarkRange:
		if !p.markRange() {
			c.flash(false, "no row selected")
		}
	case actMarkAll:
		p.markAll()
	case actClearMarks:
		p.clearMarks()
	case actRequeue, actForceError, actMoveQueued, actCancelQueued:
		c.openRepair(a.id)
	case actRequeueWaiting:
		c.refuseRequeueWaiting()
	case actPushRetry, actPushDrop:
		c.openPushDialog(a.id)
	case actZoom:
		c.zoomed = !c.zoomed
	case actCopy:
		c.copySelected()
	case actSaveCSV, actSaveJSON:
		c.export(a.id == actSaveJSON)
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
	c.renderTitles()
	return nil
}

// screenNeighbour is the pane step places from p down the screen (up, for
// a negative step), wrapping around: Tab goes where the eye goes.
func screenNeighbour(p paneID, step int) paneID {
	at := slices.Index(screenOrder[:], p)
	n := len(screenOrder)
	return screenOrder[((at+step)%n+n)%n]
}

// clearNarrowing is Esc on a pane: the filter, stale-only and the marks
// go, so every row is back and nothing is acted on unseen.
func (c *Console) clearNarrowing(p *pane) {
	if p.params.agent != "" || p.id() == paneAgents && c.shownAgent() != "" {
		c.setAgent("")
	}
	if p.params.filter == "" && !p.params.staleOnly && len(p.content.marks) == 0 {
		return
	}
	p.params.filter, p.params.staleOnly = "", false
	if p.content.marks != nil {
		p.clearMarks()
	}
	p.show(c.rows)
}

// showAgent is Enter on the Agents pane: every other pane shows only the
// rows the selected agent takes part in.
func (c *Console) showAgent() {
	i, ok := c.panes[paneAgents].selected()
	if !ok {
		c.flash(false, "no agent selected")
		return
	}
	agent := c.rows.agents[i].Agent
	c.setAgent(agent)
	c.flash(true, "every pane shows only "+agent+"; Esc shows all again")
}

// setAgent narrows every pane but Agents to agent, or, with "", widens
// them again.
func (c *Console) setAgent(agent string) {
	for _, p := range c.panes {
		if p.id() != paneAgents && p.params.agent != agent {
			p.params.agent = agent
			p.show(c.rows)
		}
	}
}

// shownAgent is the agent the panes are narrowed to, or "".
func (c *Console) shownAgent() string { return c.panes[paneQueue].params.agent }

// focusPane moves the focus to pane p; the hint bar shows p's keys.
func (c *Console) focusPane(p paneID) {
	c.focus = p
	c.app.SetFocus(c.panes[p])
	c.renderTitles()
}

// renderTitles tells the panes what their titles say beyond their rows;
// each pane writes its title when it draws, knowing which rows fit.
func (c *Console) renderTitles() {
	live := c.status.conn.Live && c.status.gap == nil
	for id, p := range c.panes {
		focused := paneID(id) == c.focus
		p.live = live || !c.status.connSeen
		p.zoomed = c.zoomed && focused
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

// flashFor is how long an info flash stays.
const flashFor = 10 * time.Second

// flash shows one line of outcome: info in green (cleared after a while),
// errors in red (kept until the next flash).
func (c *Console) flash(ok bool, msg string) {
	color := "red"
	if ok {
		color = "green"
	}
	c.flashColored(color, ok, msg)
}

// flashNote shows a passing notice (a request being retried): neither a
// success nor an error, cleared after a while like an info flash.
func (c *Console) flashNote(msg string) { c.flashColored("yellow", true, msg) }

func (c *Console) flashColored(color string, transient bool, msg string) {
	c.flashAt, c.flashOK = c.opts.Now(), transient
	if transient {
		// A frame to clear it when it is due to go (install).
		c.wakeMs.Store(c.flashAt.Add(flashFor + time.Second).UnixMilli())
	}
	text := "[" + color + "]" + escapeTags(oneLine(msg)) + "[-]"
	c.flashView.SetText(text)
	if c.pageFlash != nil {
		c.pageFlash.SetText(text)
	}
}

// showHelp shows every registered key; Esc or ? goes back. Lines longer
// than the page are wrapped with a hanging indent (under a key's
// description, or two columns in), never back to column 0. A console that
// cannot repair (read-only, or a token without the right) says where
// repairs are made instead of explaining its dialogs.
func (c *Console) showHelp() {
	_, _, width, _ := c.pages.GetRect()
	width -= 2 // the border
	var b strings.Builder
	put := func(line string, indent int) {
		for _, l := range wrapHanging(line, width, indent) {
			b.WriteString(l + "\n")
		}
	}
	heading := "[::b]Keys[::-]"
	canRepair := !c.opts.ReadOnly && (c.who == nil || c.keys.has(actRequeue) || c.keys.has(actForceError))
	if c.opts.ReadOnly {
		heading += "  [aqua](read-only: keys that change the mailbox are disabled)[-]"
	} else if c.who == nil {
		heading += "  [aqua](repair keys appear once the daemon says what the token may do)[-]"
	}
	put(heading, 2)
	b.WriteString("\n")
	for _, l := range c.keys.helpLines() {
		put(l, 23)
	}
	b.WriteString("\n")
	put("Leases held longer than "+c.opts.StaleAfter.String()+" are stale: red, marked with "+strconv.Quote(staleMarker)+".", 2)
	wait := "So are questions unanswered as long: tasks whose worker asked its sender (input_required, auth_required) wait on that sender (Waiting, 6); " +
		"the header counts them, the Agents pane counts those waiting on each agent. Only the sender's reply, a forced error or a cancel ends the wait."
	put(wait, 2)
	if canRepair {
		put("Repairs are guarded: each applies only while the lease you inspected is still current (a queued task: still queued for the agent you saw).", 2)
		put("A requeue can hand the tasks to another recipient: the dialog's \"to\" field, Shift-Tab from the reason; it completes from the known agents. A name nobody has heard of is refused, naming the close matches; only the dialog's own Create new agent button confirms it.", 2)
	} else {
		why := "read-only"
		if !c.opts.ReadOnly {
			why = "its token may not requeue or force errors"
		}
		put("This console does not repair ("+why+"): repairs are made with mailroom requeue / mailroom force-error, or from a console whose token may.", 2)
	}
	put("Agents that owe anything (leases, queued tasks, questions waiting on their answer, undrained results) and were not seen for "+c.opts.StaleAfter.String()+" (or not since the daemon started) are probably gone: red, first.", 2)
	remote := "Remote agents (A2A servers the daemon delivers to) never call, so they are never probably gone: their STATUS is the daemon's " +
		"(remote healthy; remote failing, yellow; " + strconv.Quote(staleMarker) + "remote circuit open, red: no new task leased for it until a probe is answered). " +
		"The Leases pane's REMOTE column says how each of their leases is delivered (sending, failing and the next try, accepted/polling " +
		"as the remote's task); " + strconv.Quote(staleMarker) + "lost (the remote forgot it) and " + strconv.Quote(staleMarker) + "unknown (maybe sent, not idempotent) need an operator: repair them as any lease."
	put(remote, 2)
	put("Sorts: ↓ largest (oldest, most retried) first, ↑ smallest first.", 2)
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

// wrapHanging breaks line at spaces so that no piece is wider than width
// on screen (tags take no room), each piece after the first indented by
// indent columns. A width too small to wrap into leaves the line whole.
func wrapHanging(line string, width, indent int) []string {
	if width <= indent+10 || visibleWidth(line) <= width {
		return []string{line}
	}
	var out []string
	cur, curW := "", 0
	pad := strings.Repeat(" ", indent)
	for i, word := range strings.Split(line, " ") {
		w := visibleWidth(word)
		switch {
		case i == 0:
			cur, curW = word, w
		case curW+1+w > width && strings.TrimSpace(cur) != "":
			out = append(out, cur)
			cur, curW = pad+word, indent+w
		default:
			cur += " " + word
			curW += 1 + w
		}
	}
	return append(out, cur)
}

// visibleWidth is how many columns s takes on screen: its style tags none.
func visibleWidth(s string) int { return tview.TaggedStringWidth(s) }
