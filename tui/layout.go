package tui

import (
	"strconv"

	"github.com/gdamore/tcell/v2"
	"github.com/rivo/tview"
)

// The panes are stacked top to bottom, full width, in key order: Queue,
// Leases, Results, Audit (all but Waiting, see below). Full width matters
// more than height for every pane: intents, error messages and repair
// reasons are the columns that tell rows apart, and they are the last ones.
//
// On a tall terminal (160x48) the four panes share the height equally. On
// a short one (80x24) four equal panes would leave each two rows, so the
// Audit pane shrinks to a strip showing its title and the newest repair,
// and the three working panes keep the room; focusing Audit (4) gives it an
// equal share while it is being read. The Agents pane, last, takes an equal
// share on a tall terminal; on a short one it is shown only while focused
// (5), in the Audit strip's place.
//
// The Waiting pane's key (6) comes last so that the keys of the others
// stay put, but on screen it is below Results, with the working panes
// (screenOrder). It takes an equal share while some task waits on its
// sender, or while it is focused; with nothing waiting it gives its room
// back, and the header's "waiting 0" says there is nothing to see. The
// tall layout asks room for the panes that take a share.

// screenOrder is the panes from top to bottom.
var screenOrder = [paneCount]paneID{paneQueue, paneLeases, paneResults, paneWaiting, paneDeliveries, paneAudit, paneAgents}

const (
	// roomyPaneRows is the height below which a pane stops being worth
	// reading: border, column header and five rows.
	roomyPaneRows = 8
	// auditStripRows shows the Audit pane's title, column header and the
	// newest repair.
	auditStripRows = 4
)

// paneStack is the Flex holding the panes; it sizes the Audit pane for the
// height it is given each time it draws, so a resized terminal re-lays out
// by itself.
type paneStack struct {
	*tview.Flex
	c *Console
	// folded are the panes drawn as their title line alone (foldPanes).
	folded [paneCount]bool
}

func (s *paneStack) Draw(screen tcell.Screen) {
	_, _, _, h := s.GetRect()
	waiting := s.c.focus == paneWaiting || s.c.rows.len(paneWaiting) > 0
	// The Deliveries pane, like Waiting, takes a share only while the
	// outbox holds something, or while it is focused.
	deliveries := s.c.focus == paneDeliveries || s.c.rows.len(paneDeliveries) > 0
	shares := int(paneCount)
	if !waiting {
		shares--
	}
	if !deliveries {
		shares--
	}
	var fixed [paneCount]int
	var share [paneCount]bool
	for id := range s.c.panes {
		switch {
		case s.c.zoomed && paneID(id) == s.c.focus:
			share[id] = true
		case s.c.zoomed:
			// Zoomed (z), the focused pane takes all the room.
		case paneID(id) == paneWaiting && !waiting, paneID(id) == paneDeliveries && !deliveries:
		case paneID(id) != paneAudit && paneID(id) != paneAgents:
			share[id] = true
		case h >= shares*roomyPaneRows || s.c.focus == paneID(id):
			share[id] = true
		case paneID(id) == paneAgents || s.c.focus == paneAgents:
			// Short, the Agents pane is there only while focused (5), and
			// then the Audit strip gives it its room.
		default:
			fixed[id] = auditStripRows
		}
	}
	s.folded = foldPanes(h, s.c.focus, &fixed, &share)
	for id, p := range s.c.panes {
		if share[id] {
			s.ResizeItem(p, 0, 1)
		} else {
			s.ResizeItem(p, fixed[id], 0)
		}
	}
	s.Flex.Draw(screen)
	for id, p := range s.c.panes {
		if s.folded[id] {
			s.drawFolded(screen, p)
		}
	}
}

// minPaneRows is the height at which a pane shows a row: its border, the
// column headings and one row.
const minPaneRows = 4

// foldPanes folds, when the panes shown would share h rows so that one of
// them shows no row, every pane but the focused one to a line of its own
// (its title), and gives the focused pane the rest: whatever the panes on
// screen, the one the keys act on shows its rows. It returns the folded
// panes, and changes fixed and share to match.
func foldPanes(h int, focus paneID, fixed *[paneCount]int, share *[paneCount]bool) (folded [paneCount]bool) {
	rest, n := h, 0
	for id := range fixed {
		rest -= fixed[id]
		if share[id] {
			n++
		}
	}
	if n == 0 || rest/n >= minPaneRows && (fixed[focus] == 0 || fixed[focus] >= minPaneRows) {
		return folded
	}
	for id := range fixed {
		if paneID(id) == focus || !share[id] && fixed[id] == 0 {
			continue
		}
		folded[id], share[id], fixed[id] = true, false, 1
	}
	share[focus], fixed[focus] = true, 0
	return folded
}

// drawFolded draws a folded pane's line: its border's top line with its
// name and how many rows it has, and nothing of them.
func (s *paneStack) drawFolded(screen tcell.Screen, p *pane) {
	x, y, w, _ := p.GetRect()
	if w < 2 {
		return
	}
	style := tcell.StyleDefault.Foreground(p.GetBorderColor()).Background(tview.Styles.PrimitiveBackgroundColor)
	for i := x; i < x+w; i++ {
		screen.SetContent(i, y, tview.Borders.Horizontal, nil, style)
	}
	title := " [" + strconv.Itoa(int(p.id())+1) + "] " + p.id().String() + " " + commas(p.content.rows.len(p.id())) + " (folded: " + strconv.Itoa(int(p.id())+1) + " shows them) "
	tview.Print(screen, escapeTags(title), x+1, y, w-2, tview.AlignCenter, tview.Styles.TitleColor)
}
