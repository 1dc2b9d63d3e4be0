package tui

import (
	"strconv"
	"strings"
	"time"

	"github.com/gdamore/tcell/v2"
	"github.com/mailroom/mailroom/mailbox"
	"github.com/rivo/tview"
)

// columns of each pane, in screen order.
var paneColumns = [paneCount][]string{
	paneQueue:   {"TASK", "AGE", "SENDER -> RECIPIENT", "KIND", "INTENT", "DEADLINE"},
	paneLeases:  {"TASK", "LEASE AGE", "LEASED TO", "ATT", "LEASE", "SENDER", "INTENT"},
	paneResults: {"STATUS", "TASK", "SENDER", "FROM", "AGE", "ERROR"},
	// The reason comes before lease and posture: on an 80-column terminal
	// it is what tells repairs apart, and the detail view has the rest.
	paneAudit: {"AGE", "AT", "BY", "ACTION", "TASK", "ATT", "REASON", "LEASE", "POSTURE"},
}

const maxColumns = 9

// Colors the panes use; one place so they stay consistent.
var (
	colorStale   = tcell.ColorRed
	colorAging   = tcell.ColorYellow
	colorPastDue = tcell.ColorRed
	colorHeading = tcell.ColorYellow
	colorOK      = tcell.ColorGreen
	colorPartial = tcell.ColorYellow
	colorError   = tcell.ColorRed
	colorText    = tview.Styles.PrimaryTextColor
)

// staleMarker starts the age of a stale lease, so it reads as stale even
// without colors.
const staleMarker = "! "

// paneContent is a tview.TableContent over rows: the table asks for the
// cells it draws and nothing else, so a 100k-row pane costs what its visible
// rows cost. Cells live in a ring reused frame after frame, so drawing does
// not allocate a cell per row either.
type paneContent struct {
	tview.TableContentReadOnly
	pane  paneID
	rows  *rows
	idx   []int32
	st    staleness
	gen   uint64 // bumped every frame so ages are formatted afresh
	slots []cellSlot
	// focused panes show their selection inverted; the others underline
	// it in the row's own color, so a stale row stays red.
	focused bool
}

type cellSlot struct {
	row   int
	gen   uint64
	cells [maxColumns]tview.TableCell
}

func (c *paneContent) GetRowCount() int    { return len(c.idx) + 1 }
func (c *paneContent) GetColumnCount() int { return len(paneColumns[c.pane]) }

func (c *paneContent) GetCell(row, col int) *tview.TableCell {
	if row < 0 || row > len(c.idx) || col < 0 || col >= len(paneColumns[c.pane]) {
		return nil
	}
	if len(c.slots) == 0 {
		c.slots = newSlots(64)
	}
	s := &c.slots[row%len(c.slots)]
	if s.row != row || s.gen != c.gen {
		s.row, s.gen = row, c.gen
		c.fill(s, row)
	}
	return &s.cells[col]
}

// newSlots returns n empty slots. They hold no row yet: a zero slot would
// claim to hold row 0 of generation 0 and hand out a blank header.
func newSlots(n int) []cellSlot {
	slots := make([]cellSlot, n)
	for i := range slots {
		slots[i].row = -1
	}
	return slots
}

// fill formats one row into its slot.
func (c *paneContent) fill(s *cellSlot, row int) {
	cols := paneColumns[c.pane]
	for i := range cols {
		s.cells[i] = tview.TableCell{Color: colorText, Align: tview.AlignLeft}
	}
	if row == 0 {
		for i, h := range cols {
			s.cells[i].Text = h
			s.cells[i].Color = colorHeading
			s.cells[i].Attributes = tcell.AttrBold
			s.cells[i].NotSelectable = true
		}
		return
	}
	i := int(c.idx[row-1])
	text := func(col int, v string) { s.cells[col].Text = escapeTags(v) }
	now := c.st.nowMs
	switch c.pane {
	case paneQueue:
		e := &c.rows.queued[i]
		text(0, mailbox.ShortID(e.Task.ID))
		text(1, formatAge(msAge(now, e.QueuedAtMs)))
		text(2, e.Task.Sender+" -> "+e.Task.Recipient)
		text(3, e.Task.Kind())
		text(4, oneLine(e.Task.IntentText))
		s.cells[4].MaxWidth, s.cells[4].Expansion = 48, 1
		d, pastDue := formatDeadline(e.Task.DeadlineMs, now)
		text(5, d)
		if pastDue {
			s.cells[5].Color = colorPastDue
		}
	case paneLeases:
		e := &c.rows.leases[i]
		age := formatAge(msAge(now, e.LeasedAtMs))
		color := colorText
		switch {
		case c.st.stale(e.LeasedAtMs):
			age, color = staleMarker+age, colorStale
		case c.st.aging(e.LeasedAtMs):
			color = colorAging
		}
		text(0, mailbox.ShortID(e.Task.ID))
		text(1, age)
		text(2, e.LeasedTo)
		text(3, strconv.Itoa(e.Attempt))
		text(4, mailbox.ShortID(e.LeaseID))
		text(5, e.Task.Sender)
		text(6, oneLine(e.Task.IntentText))
		s.cells[6].MaxWidth, s.cells[6].Expansion = 48, 1
		for col := range cols {
			s.cells[col].Color = color
		}
	case paneResults:
		r := &c.rows.results[i]
		status := r.Status
		switch {
		case r.Forced:
			status += " (forced)"
			s.cells[0].Color = colorError
		case r.Status == mailbox.StatusOK:
			s.cells[0].Color = colorOK
		case r.Status == mailbox.StatusPartial:
			s.cells[0].Color = colorPartial
		default:
			s.cells[0].Color = colorError
		}
		text(0, status)
		text(1, mailbox.ShortID(r.TaskID))
		text(2, r.Sender)
		text(3, r.Recipient)
		text(4, formatAge(msAge(now, r.PostedAtMs)))
		text(5, oneLine(r.ErrorMessage))
		s.cells[5].MaxWidth, s.cells[5].Expansion = 60, 1
	case paneAudit:
		c.fillAudit(s, i)
	}
	for col := range cols {
		cell := &s.cells[col]
		if c.focused {
			cell.SelectedStyle = tcell.StyleDefault.Foreground(tcell.ColorBlack).Background(cell.Color)
		} else {
			cell.SelectedStyle = tcell.StyleDefault.Foreground(cell.Color).Underline(true)
		}
	}
}

// pane is one of the tables: a tview.Table over paneContent that remembers
// which row is selected, so the selection follows the task (or repair) when
// rows move.
type pane struct {
	*tview.Table
	content     *paneContent
	params      viewParams
	selectedKey rowKey
	clock       func() time.Time
	staleAfter  time.Duration
}

func newPane(p paneID, clock func() time.Time, staleAfter time.Duration) *pane {
	pn := &pane{Table: tview.NewTable(), content: &paneContent{pane: p}, clock: clock, staleAfter: staleAfter}
	pn.Table.SetContent(pn.content).SetFixed(1, 0).SetSelectable(true, false).SetBorder(true)
	pn.Table.SetSelectionChangedFunc(func(row, _ int) {
		pn.selectedKey = pn.keyAt(row)
	})
	return pn
}

func (p *pane) id() paneID { return p.content.pane }

// keyAt returns the key of the row shown on table row row, or the zero key.
func (p *pane) keyAt(row int) rowKey {
	if row < 1 || row > len(p.content.idx) {
		return rowKey{}
	}
	return p.content.rows.key(p.id(), int(p.content.idx[row-1]))
}

// selected returns the index into rows of the selected row.
func (p *pane) selected() (int, bool) {
	row, _ := p.GetSelection()
	if row < 1 || row > len(p.content.idx) {
		return 0, false
	}
	return int(p.content.idx[row-1]), true
}

// Draw refreshes the clock, so ages tick, then draws the visible rows.
func (p *pane) Draw(screen tcell.Screen) {
	p.content.gen++
	p.content.focused = p.HasFocus()
	p.content.st = staleness{nowMs: p.clock().UnixMilli(), afterMs: p.staleAfter.Milliseconds()}
	if _, h := screen.Size(); len(p.content.slots) < 2*h {
		// Every visible row needs a slot of its own within one frame.
		p.content.slots = newSlots(2 * h)
	}
	p.Table.Draw(screen)
}

// show installs new rows and re-selects the task that was selected, or
// the row in the same place when that task left the pane.
func (p *pane) show(r *rows) {
	p.content.rows = r
	p.content.idx = selectRows(r, p.id(), p.params, staleness{nowMs: p.clock().UnixMilli(), afterMs: p.staleAfter.Milliseconds()})
	p.content.gen++
	if cur, _ := p.GetSelection(); p.id() == paneAudit && cur <= 1 {
		// A selection on the newest repair stays on the newest, like a
		// log's tail, so the Audit strip of a short terminal keeps showing
		// the latest; anywhere else it follows its repair down.
		p.selectedKey = rowKey{}
	}
	row := -1
	if p.selectedKey != (rowKey{}) {
		for i, j := range p.content.idx {
			if r.key(p.id(), int(j)) == p.selectedKey {
				row = i + 1
				break
			}
		}
	}
	if row < 0 {
		row, _ = p.GetSelection()
		row = max(1, min(row, len(p.content.idx)))
	}
	p.Select(row, 0)
}

// title renders the pane's title: number key, name, counts, sort, filter.
func (p *pane) title(focused, live bool) string {
	total, shown := p.content.rows.len(p.id()), len(p.content.idx)
	var b strings.Builder
	b.WriteString(" [" + strconv.Itoa(int(p.id())+1) + "] " + p.id().String() + " ")
	if shown != total {
		b.WriteString(strconv.Itoa(shown) + " of ")
	}
	b.WriteString(strconv.Itoa(total))
	if p.id() == paneAudit {
		b.WriteString("  newest first")
	} else {
		b.WriteString("  sort:" + p.params.sort.String())
	}
	if p.params.filter != "" {
		b.WriteString("  filter:/" + p.params.filter)
	}
	if p.params.staleOnly {
		b.WriteString("  !stale-only")
	}
	if !live {
		b.WriteString("  [STALE: not live]")
	}
	b.WriteString(" ")
	return escapeTags(b.String())
}

// oneLine keeps a multi-line text on one table row.
func oneLine(s string) string {
	if strings.ContainsAny(s, "\n\r\t") {
		return strings.NewReplacer("\n", " ", "\r", " ", "\t", " ").Replace(s)
	}
	return s
}

// escapeTags keeps text from agents from being read as tview style tags.
func escapeTags(s string) string {
	if strings.IndexByte(s, '[') < 0 {
		return s
	}
	return tview.Escape(s)
}
