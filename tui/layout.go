package tui

import (
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
	for id, p := range s.c.panes {
		switch {
		case s.c.zoomed && paneID(id) == s.c.focus:
			s.ResizeItem(p, 0, 1)
		case s.c.zoomed:
			// Zoomed (z), the focused pane takes all the room.
			s.ResizeItem(p, 0, 0)
		case paneID(id) == paneWaiting && !waiting, paneID(id) == paneDeliveries && !deliveries:
			s.ResizeItem(p, 0, 0)
		case paneID(id) != paneAudit && paneID(id) != paneAgents:
			s.ResizeItem(p, 0, 1)
		case h >= shares*roomyPaneRows || s.c.focus == paneID(id):
			s.ResizeItem(p, 0, 1)
		case paneID(id) == paneAgents || s.c.focus == paneAgents:
			// Short, the Agents pane is there only while focused (5), and
			// then the Audit strip gives it its room.
			s.ResizeItem(p, 0, 0)
		default:
			s.ResizeItem(p, auditStripRows, 0)
		}
	}
	s.Flex.Draw(screen)
}
