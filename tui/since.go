package tui

import "time"

// formatSince says when something happened as the console's wall clock
// read then: the time of day within the last 20 hours, the date too
// before that. Beside a relative age ("5m ago") it is what an operator
// compares with a log or a page from an incident.
func formatSince(atMs, nowMs int64) string {
	at := time.UnixMilli(atMs)
	if d := msAge(nowMs, atMs); d < 20*time.Hour && d > -time.Hour {
		return at.Format("15:04:05")
	}
	return at.Format("Jan 02 15:04")
}

// agentsSeenColumn is the SEEN column's place in agentCells.
const agentsSeenColumn = 2

// seenAtWidth is the pane width from which an agent probably gone has its
// SEEN say when as a time of day too, after how long ago: narrower, the
// NOTE keeps the room.
const seenAtWidth = 180

// agentsSinceRenderer is the Agents pane's renderer with SEEN saying
// since when: "now (long poll)" while one of the agent's long polls waits
// (it is seen, however long ago the poll began: the listing says so), and
// for an agent probably gone, on a wide pane, the time of day it was last
// seen (finding 7 of issue 37).
type agentsSinceRenderer struct{ agentsRenderer }

func (r agentsSinceRenderer) render(c *paneContent, w *rowWriter, i int) {
	r.agentsRenderer.render(c, w, i)
	a := &c.rows.agents[i]
	row := w.row()
	if agentsSeenColumn >= len(row) {
		return
	}
	cell := &row[agentsSeenColumn]
	switch {
	case a.Polling:
		cell.Text = "now (long poll)"
	case a.LastSeenMs != 0 && c.width >= seenAtWidth && c.st.gone(a):
		cell.Text += " (" + formatSince(a.LastSeenMs, c.st.nowMs) + ")"
	}
}
