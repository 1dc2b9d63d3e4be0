package tui

import (
	"fmt"
	"strconv"
	"strings"
)

// agentsColumns are the Agents pane's columns. What tells a dead agent is
// first: whether it is probably gone, when it was last seen, what it holds;
// the note says why in full. Its letters keep clear of R, E, J and G, which
// the pane binds.
var agentsColumns = []column{
	{heading: "AGENT", sortKey: 'A', sortName: "agent", agent: true},
	{heading: "STATUS", sortKey: 'U', sortName: "status"},
	{heading: "SEEN", sortKey: 'S', sortName: "seen", largestFirst: true},
	{heading: "HELD", sortKey: 'H', sortName: "held", largestFirst: true},
	{heading: "OLDEST", sortKey: 'O', sortName: "oldest", largestFirst: true},
	{heading: "QUEUED", sortKey: 'Q', sortName: "queued", largestFirst: true},
	{heading: "RESULTS", sortKey: 'P', sortName: "results", largestFirst: true},
	{heading: "OK/ERR", sortKey: 'K', sortName: "ok/err", largestFirst: true},
	{heading: "NOTE", expand: true},
}

// agentsRenderer draws an agent; one probably gone is red throughout.
type agentsRenderer struct{}

func (agentsRenderer) render(c *paneContent, w *rowWriter, i int) {
	a := &c.rows.agents[i]
	for _, v := range agentCells(a, c.st) {
		w.cell(v)
	}
	if c.st.gone(a) {
		row := w.row()
		for k := range row {
			row[k].Color = colorStale
		}
	}
}

func (agentsRenderer) exportTimes() []string { return []string{"LAST SEEN AT", "OLDEST LEASED AT"} }

func (agentsRenderer) record(x exportJob, i int) []string {
	a := &x.rows.agents[i]
	cells := agentCells(a, x.st)
	seenAt, oldestAt := "", ""
	if a.LastSeenMs != 0 {
		seenAt = exportAt(a.LastSeenMs)
	}
	if a.held > 0 {
		oldestAt = exportAt(a.oldestLeasedAtMs)
	}
	return append(cells[:], seenAt, oldestAt)
}

// goneStatus is the Agents pane's status of an agent that is probably gone.
const goneStatus = "probably gone"

// agentCells are the Agents pane's cells for one agent, in column order.
func agentCells(a *agentRow, st staleness) [9]string {
	status, seen, oldest, note := "idle", "never", "-", ""
	if a.held > 0 {
		status, oldest = "working", formatAge(msAge(st.nowMs, a.oldestLeasedAtMs))
	}
	if a.LastSeenMs != 0 {
		seen = formatAge(msAge(st.nowMs, a.LastSeenMs)) + " ago"
	}
	if a.Card != nil {
		// A registered agent: the daemon serves it as an A2A server.
		ids := make([]string, len(a.Card.Skills))
		for i, sk := range a.Card.Skills {
			ids[i] = visible(sk.ID)
		}
		note = "A2A " + strconv.Quote(a.Card.Name)
		if len(ids) > 0 {
			note += " skills " + strings.Join(ids, ",")
		}
	}
	if st.gone(a) {
		status, seen = goneStatus, staleMarker+seen
		note = fmt.Sprintf("holds %d lease(s) and has not been seen for %s", a.held, formatAge(msAge(st.nowMs, a.LastSeenMs)))
		if a.LastSeenMs == 0 {
			note = fmt.Sprintf("holds %d lease(s) and has not been seen since the daemon started", a.held)
		}
	}
	return [9]string{a.Agent, status, seen, strconv.Itoa(a.held), oldest, strconv.Itoa(a.Queued), strconv.Itoa(a.ResultsPending),
		strconv.Itoa(a.ResultsOK5m) + "/" + strconv.Itoa(a.ResultsError5m), note}
}
