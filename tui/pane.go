package tui

import (
	"strconv"
	"strings"
	"time"

	"github.com/gdamore/tcell/v2"
	"github.com/rivo/tview"

	"github.com/mailroom/mailroom/mailbox"
)

// Colors the panes use; one place so they stay consistent.
var (
	colorStale   = tcell.ColorRed
	colorAging   = tcell.ColorYellow
	colorPastDue = tcell.ColorRed
	colorHeading = tcell.ColorYellow
	colorOK      = tcell.ColorGreen
	colorPartial = tcell.ColorYellow
	colorError   = tcell.ColorRed
	// colorAsking marks a question: the turn is the sender's to take.
	colorAsking = tcell.ColorAqua
	colorText   = tview.Styles.PrimaryTextColor
)

// staleMarker starts the age of a stale lease, so it reads as stale even
// without colors.
const staleMarker = "! "

// markMarker starts the task id of a marked lease.
const markMarker = "✓"

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
	sort    sortSpec
	// agentCap caps agent ids at the pane's width.
	agentCap int
	// width is the pane's inner width, for the columns capped by it.
	width int
	// marks are the marked rows (Leases, Queue, Waiting and Deliveries
	// panes): task (or notification) id -> the guard seen when it was
	// marked (markKey).
	marks map[string]string
	// lastMark is the task of the lease Space or Ctrl-Space marked last:
	// where Ctrl-Space's range starts.
	lastMark string
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

// fill formats one row into its slot: each cell styled as its column says,
// the heading row here, a data row by the pane's renderer, then the
// selection style every row shares.
func (c *paneContent) fill(s *cellSlot, row int) {
	cols := paneColumns[c.pane]
	for i, col := range cols {
		s.cells[i] = tview.TableCell{Color: colorText, Align: tview.AlignLeft, MaxWidth: col.maxWidth}
		if col.agent {
			s.cells[i].MaxWidth = c.agentCap
		}
		if col.widthCap != nil {
			s.cells[i].MaxWidth = col.widthCap(c.width)
		}
		if col.expand {
			s.cells[i].Expansion = 1
		}
	}
	if row == 0 {
		for i, col := range cols {
			h := col.heading
			if col.only != nil && (c.rows == nil || !col.only(c.rows)) {
				h = ""
			}
			if col.sortKey != 0 && col.sortKey == c.sort.key {
				h += sortArrow(c.sort.desc)
			}
			s.cells[i].Text = h
			s.cells[i].MaxWidth = 0 // a heading is never cut
			s.cells[i].Color = colorHeading
			s.cells[i].Attributes = tcell.AttrBold
			s.cells[i].NotSelectable = true
		}
		return
	}
	w := rowWriter{cells: s.cells[:len(cols)]}
	renderers[c.pane].render(c, &w, int(c.idx[row-1]))
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
// rows move, and keeps that row on screen.
type pane struct {
	*tview.Table
	content     *paneContent
	params      viewParams
	selectedKey rowKey
	clock       func() time.Time
	staleAfter  time.Duration
	// The console sets these before a frame; the title says them.
	live, zoomed bool
}

func newPane(p paneID, clock func() time.Time, staleAfter time.Duration) *pane {
	pn := &pane{Table: tview.NewTable(), content: &paneContent{pane: p}, clock: clock, staleAfter: staleAfter, live: true}
	pn.params.sort = naturalSort(p)
	pn.content.sort = pn.params.sort
	if markable(p) {
		pn.content.marks = map[string]string{}
	}
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

func (p *pane) staleness() staleness {
	return staleness{nowMs: p.clock().UnixMilli(), afterMs: p.staleAfter.Milliseconds()}
}

// Draw refreshes the clock, so ages tick, keeps the selected row on
// screen, says in the title which rows are shown, then draws them.
func (p *pane) Draw(screen tcell.Screen) {
	p.content.gen++
	p.content.focused = p.HasFocus()
	p.content.st = p.staleness()
	if _, h := screen.Size(); len(p.content.slots) < 2*h {
		// Every visible row needs a slot of its own within one frame.
		p.content.slots = newSlots(2 * h)
	}
	_, _, w, h := p.GetInnerRect()
	p.content.agentCap, p.content.width = agentCap(w), w
	first, last := p.scrollToSelection(h - 1) // the heading takes a row
	p.SetTitle(p.title(first, last, w))
	p.Table.Draw(screen)
}

// scrollToSelection scrolls so that the selected row is one of the visible
// data rows, and the pane is filled down to its last row; it returns the
// first and last row shown (1-based, 0 when there are none). tview's own
// scrolling follows the end of a table that was once empty, which opened
// panes scrolled to the bottom with the selected first row off screen.
func (p *pane) scrollToSelection(visible int) (first, last int) {
	n := len(p.content.idx)
	visible = max(visible, 1)
	sel, _ := p.GetSelection()
	sel = max(1, min(sel, n))
	off, _ := p.GetOffset()
	if sel-1 < off {
		off = sel - 1
	}
	if sel-1 >= off+visible {
		off = sel - visible
	}
	off = max(0, min(off, n-visible))
	p.SetOffset(off, 0)
	if n == 0 {
		return 0, 0
	}
	return off + 1, min(n, off+visible)
}

// show installs new rows and re-selects the task that was selected, or
// the row in the same place when that task left the pane. Marks on leases
// that ended or that the pane no longer shows are dropped: a repair of
// many acts only on leases the operator can see.
func (p *pane) show(r *rows) {
	p.content.rows = r
	p.content.idx = selectRows(r, p.id(), p.params, p.staleness())
	p.content.sort = p.params.sort
	p.content.gen++
	p.pruneMarks()
	if cur, _ := p.GetSelection(); (p.id() == paneAudit || p.id() == paneAgents) && cur <= 1 {
		// A selection on the newest repair stays on the newest, like a
		// log's tail, so the Audit strip of a short terminal keeps showing
		// the latest; anywhere else it follows its repair down. Likewise
		// the first agent, the one gone longest, is the one R acts on.
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

// title renders the pane's title, most important first, so that a narrow
// pane cuts the least: number key, name and which rows are shown, marks,
// stale-only, filter, sort.
func (p *pane) title(first, last, width int) string {
	total, shown := p.content.rows.len(p.id()), len(p.content.idx)
	narrowed := p.params.filter != "" || p.params.staleOnly || p.params.agent != ""
	var pos strings.Builder
	pos.WriteString("[" + strconv.Itoa(int(p.id())+1) + "] " + p.id().String() + " ")
	switch {
	case shown == 0 && narrowed:
		pos.WriteString("0 filtered from " + commas(total))
	case shown == 0:
		pos.WriteString("0")
	default:
		pos.WriteString(commas(first))
		if last != first {
			pos.WriteString("-" + commas(last))
		}
		if narrowed {
			pos.WriteString(" of " + commas(shown) + " filtered from " + commas(total))
		} else {
			pos.WriteString(" of " + commas(total))
		}
	}
	segs := []segment{{prio: 100, variants: []string{escapeTags(pos.String())}}}
	add := func(prio int, variants ...string) {
		for i := range variants {
			variants[i] = escapeTags(variants[i])
		}
		segs = append(segs, segment{prio: prio, variants: variants})
	}
	if n := len(p.content.marks); n > 0 {
		add(90, markMarker+strconv.Itoa(n)+" marked")
	}
	if p.params.agent != "" {
		add(85, "agent:"+p.params.agent, "agent:"+truncate(p.params.agent, 16))
	}
	if p.params.staleOnly {
		add(80, "!stale-only")
	}
	if p.params.filter != "" {
		add(70, "filter:/"+p.params.filter, "/"+truncate(p.params.filter, 12))
	}
	switch p.id() {
	case paneAudit:
		add(40, "newest first", "")
	case paneAgents:
		if p.params.sort == naturalSort(paneAgents) {
			add(60, agentsOrder, "")
		} else {
			add(60, "sort:"+p.params.sort.label(paneAgents), "")
		}
		add(45, "OK/ERR: last 5m", "")
	default:
		add(50, "sort:"+p.params.sort.label(p.id()), "")
	}
	if p.zoomed {
		add(30, "zoomed", "")
	}
	if !p.live {
		add(95, "[STALE: not live]", "[STALE]")
	}
	return " " + fitSegments(segs, max(0, width-2), "  ", "  ") + " "
}

// Marks (Leases, Queue, Waiting and Deliveries panes). A mark remembers
// what the operator saw of the row, the guard its repair is sent with:
// the lease on the Leases pane, the recipient on the Queue pane, the lease
// that asked on the Waiting pane, the dead letter's state and when it died
// on the Deliveries pane. A row whose guard changed is no longer marked.

// markable reports whether pane p has marks.
func markable(p paneID) bool {
	return p == paneLeases || p == paneQueue || p == paneWaiting || p == paneDeliveries
}

// markKey is the id a mark of row i is kept under, and its guard.
func (c *paneContent) markKey(i int) (id, guard string) {
	switch c.pane {
	case paneQueue:
		e := &c.rows.queued[i]
		return e.Task.ID, e.Task.Recipient
	case paneWaiting:
		e := &c.rows.waiting[i]
		return e.Task.ID, waitGuard(e)
	case paneDeliveries:
		n := &c.rows.deliveries[i]
		return n.ID, deliveryGuard(n)
	}
	e := &c.rows.leases[i]
	return e.Task.ID, e.LeaseID
}

// waitGuard is what a mark of a waiting task remembers: the lease its
// question was asked under (the daemon's guard of a forced error).
func waitGuard(e *mailbox.QueueEntry) string { return questionOf(&e.Task).LeaseID }

// deliveryGuard is what a mark of a notification remembers: for a dead
// letter when it died, so one retried (and dead again) since it was
// marked is not the one marked; any other is still to be delivered
// (pending or failing alike).
func deliveryGuard(n *mailbox.NotificationStatus) string {
	if n.State == mailbox.DeliveryDead {
		return "dead@" + strconv.FormatInt(n.DeadAtMs, 10)
	}
	return "live"
}

// markGuard is what a mark of e (a Leases, Queue or Waiting row)
// remembers.
func (c *paneContent) markGuard(e *mailbox.QueueEntry) string {
	switch c.pane {
	case paneQueue:
		return e.Task.Recipient
	case paneWaiting:
		return waitGuard(e)
	}
	return e.LeaseID
}

// isMarked reports whether e (a Leases, Queue or Waiting row) is marked,
// as it is now.
func (c *paneContent) isMarked(e *mailbox.QueueEntry) bool {
	g, ok := c.marks[e.Task.ID]
	return ok && g == c.markGuard(e) && g != ""
}

// markedAt reports whether row i is marked, as it is now.
func (c *paneContent) markedAt(i int) bool {
	id, guard := c.markKey(i)
	g, ok := c.marks[id]
	return ok && g == guard && g != ""
}

// markedRow reports whether row i is marked.
func (p *pane) markedRow(i int) bool { return p.content.markedAt(i) }

func (p *pane) mark(i int) {
	id, guard := p.content.markKey(i)
	p.content.marks[id] = guard
}

// toggleMark marks or unmarks the selected row.
func (p *pane) toggleMark() bool {
	i, ok := p.selected()
	if !ok {
		return false
	}
	id, _ := p.content.markKey(i)
	if p.markedRow(i) {
		delete(p.content.marks, id)
	} else {
		p.mark(i)
		p.content.lastMark = id
	}
	p.content.gen++
	return true
}

// markRange marks the rows from the last one marked to the selected one,
// both included, in the pane's order (k9s's Ctrl-Space); with no mark
// still standing, the selected row alone.
func (p *pane) markRange() bool {
	i, ok := p.selected()
	if !ok {
		return false
	}
	sel, from := -1, -1
	for pos, j := range p.content.idx {
		if int(j) == i {
			sel = pos
		}
		if id, _ := p.content.markKey(int(j)); id == p.content.lastMark && p.markedRow(int(j)) {
			from = pos
		}
	}
	if sel < 0 {
		return false
	}
	if from < 0 {
		from = sel
	}
	for _, j := range p.content.idx[min(from, sel) : max(from, sel)+1] {
		p.mark(int(j))
	}
	p.content.lastMark, _ = p.content.markKey(i)
	p.content.gen++
	return true
}

// markAll marks every row the pane shows, or, when they all are marked
// already, unmarks them.
func (p *pane) markAll() {
	all := true
	for _, j := range p.content.idx {
		if !p.markedRow(int(j)) {
			all = false
			break
		}
	}
	for _, j := range p.content.idx {
		if all {
			id, _ := p.content.markKey(int(j))
			delete(p.content.marks, id)
		} else {
			p.mark(int(j))
		}
	}
	p.content.gen++
}

func (p *pane) clearMarks() {
	clear(p.content.marks)
	p.content.gen++
}

// marked returns the marked rows in the pane's order.
func (p *pane) marked() []int {
	if len(p.content.marks) == 0 {
		return nil
	}
	var out []int
	for _, j := range p.content.idx {
		if p.markedRow(int(j)) {
			out = append(out, int(j))
		}
	}
	return out
}

// pruneMarks drops the marks of rows the pane no longer shows as they
// were marked: leased, ended, moved, retried, or hidden by the filter.
func (p *pane) pruneMarks() {
	if len(p.content.marks) == 0 {
		return
	}
	shown := make(map[string]bool, len(p.content.marks))
	for _, j := range p.content.idx {
		if p.markedRow(int(j)) {
			id, _ := p.content.markKey(int(j))
			shown[id] = true
		}
	}
	for id := range p.content.marks {
		if !shown[id] {
			delete(p.content.marks, id)
		}
	}
}

// oneLine keeps a multi-line text on one table row.
func oneLine(s string) string {
	if strings.ContainsAny(s, "\n\r\t") {
		return strings.NewReplacer("\n", " ", "\r", " ", "\t", " ").Replace(s)
	}
	return s
}

// escapeTags keeps text from agents from being read as tview style tags.
// visible is s as it may be written to a terminal: as it is when every
// character in it prints, else quoted with the others escaped. A card
// registered before control characters were refused (an older daemon's
// log) may still hold an escape sequence or a bidi override.
func visible(s string) string {
	for _, r := range s {
		if !strconv.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

func escapeTags(s string) string {
	if strings.IndexByte(s, '[') < 0 {
		return s
	}
	return tview.Escape(s)
}

// truncate cuts s to n runes, ending with … when it was longer.
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if n <= 1 {
		return "…"
	}
	return string(r[:n-1]) + "…"
}

// commas writes n with thousands separators: 5,000.
func commas(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, d := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
