package tui

import "github.com/rivo/tview"

// A renderer draws one pane's rows, as a k9s internal/render type draws one
// resource: its file holds the pane's columns (heading, width, sort letter)
// and writes each row's cells in that same order, with their colours, so no
// other file knows which cell holds what. The text that tells rows apart
// (intent, error, reason) takes the width left over; only a sender, which
// matters less there, comes after it, so that on an 80-column terminal the
// text keeps its room and the sender gives way.
type renderer interface {
	// render writes row i of the pane's rows (an index into c.rows) into w,
	// one cell per column.
	render(c *paneContent, w *rowWriter, i int)
	// exportTimes head the absolute times a CSV export adds after the
	// columns, which count ages from them.
	exportTimes() []string
	// record is row i as a CSV export writes it: every column in full,
	// nothing cut, then the exportTimes.
	record(x exportJob, i int) []string
}

// renderers are the panes' renderers; paneColumns lists their columns.
var renderers = [paneCount]renderer{
	paneQueue:      queueRenderer{},
	paneLeases:     leasesRenderer{},
	paneResults:    resultsRenderer{},
	paneAudit:      auditRenderer{},
	paneAgents:     agentsSinceRenderer{},
	paneWaiting:    waitingRenderer{},
	paneDeliveries: deliveriesRenderer{},
}

// rowWriter hands a renderer its row's cells, already styled as their
// columns say, one at a time in column order.
type rowWriter struct {
	cells []tview.TableCell
	n     int
}

// cell writes text into the next column's cell and returns the cell, for
// the renderer to colour. Text from agents is escaped so that it cannot be
// read as tview style tags.
func (w *rowWriter) cell(text string) *tview.TableCell {
	c := &w.cells[w.n]
	w.n++
	c.Text = escapeTags(text)
	return c
}

// row is the cells written so far: the whole row once every column's is.
func (w *rowWriter) row() []tview.TableCell { return w.cells[:w.n] }
