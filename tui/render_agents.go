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
	// Tasks waiting on the agent, as their sender, to answer a question.
	{heading: "WAITING", sortKey: 'W', sortName: "waiting", largestFirst: true},
	{heading: "OK/ERR", sortKey: 'K', sortName: "ok/err", largestFirst: true},
	{heading: "NOTE", expand: true},
}

// agentsRenderer draws an agent; one probably gone is red throughout, and
// so is the count of questions waiting on one when the longest has waited
// past the stale limit.
type agentsRenderer struct{}

func (agentsRenderer) render(c *paneContent, w *rowWriter, i int) {
	a := &c.rows.agents[i]
	for k, v := range agentCells(a, c.st) {
		cell := w.cell(v)
		if k == agentsWaitingColumn && a.waiting > 0 && c.st.stale(a.oldestWaitingMs) {
			cell.Color = colorStale
		}
	}
	if c.st.gone(a) {
		row := w.row()
		for k := range row {
			row[k].Color = colorStale
		}
	}
	if isRemote(&a.AgentInfo) {
		if _, color := remoteStatusCell(a.Remote); color != colorText {
			row := w.row()
			for k := range row {
				row[k].Color = color
			}
		}
		if lost, unknown := remoteNeedsOperator(a.Remote); lost+unknown > 0 {
			w.row()[agentsNoteColumn].Color = colorStale
		}
	}
	if a.WebhookIsFailing() && !c.st.gone(a) {
		w.row()[agentsNoteColumn].Color = colorAging
	}
}

// agentsNoteColumn is the NOTE column's place in agentCells.
const agentsNoteColumn = 9

// agentsWaitingColumn is the WAITING column's place in agentCells.
const agentsWaitingColumn = 7

func (agentsRenderer) exportTimes() []string {
	return []string{"LAST SEEN AT", "OLDEST LEASED AT", "OLDEST WAITING SINCE"}
}

func (agentsRenderer) record(x exportJob, i int) []string {
	a := &x.rows.agents[i]
	cells := agentCells(a, x.st)
	seenAt, oldestAt, waitingAt := "", "", ""
	if a.LastSeenMs != 0 {
		seenAt = exportAt(a.LastSeenMs)
	}
	if a.held > 0 {
		oldestAt = exportAt(a.oldestLeasedAtMs)
	}
	if a.waiting > 0 {
		waitingAt = exportAt(a.oldestWaitingMs)
	}
	return append(cells[:], seenAt, oldestAt, waitingAt)
}

// goneStatus is the Agents pane's status of an agent that is probably gone.
const goneStatus = "probably gone"

// agentCells are the Agents pane's cells for one agent, in column order.
func agentCells(a *agentRow, st staleness) [10]string {
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
		if a.Card.Remote != nil {
			if a.Card.Name == "" && len(ids) == 0 {
				note = "" // the remote's own name and skills are served
			}
			status = remoteStatusText(a.Remote)
			note = joinNote(remoteNote(a, st.nowMs), note)
		}
	}
	waiting := strconv.Itoa(a.waiting)
	if a.waiting > 0 {
		longest := formatAge(msAge(st.nowMs, a.oldestWaitingMs))
		if st.stale(a.oldestWaitingMs) {
			waiting = staleMarker + waiting
		}
		// The questions come before the card: an agent that leaves its
		// workers waiting is what the operator has to chase.
		note = joinNote(fmt.Sprintf("%d task(s) wait on its answer, the longest for %s", a.waiting, longest), note)
	}
	if st.gone(a) {
		status, seen = goneStatus, staleMarker+seen
		// Everything it owes, which R settles in one dialog.
		var owes []string
		if a.held > 0 {
			owes = append(owes, fmt.Sprintf("holds %d lease(s)", a.held))
		}
		if a.Queued > 0 {
			owes = append(owes, fmt.Sprintf("has %d task(s) queued", a.Queued))
		}
		if a.waiting > 0 {
			owes = append(owes, fmt.Sprintf("%d question(s) wait on its answer", a.waiting))
		}
		if a.undrained > 0 {
			owes = append(owes, fmt.Sprintf("%d result(s) wait for it to drain them", a.undrained))
		}
		what := strings.Join(owes, ", ")
		if len(owes) > 1 {
			what += ","
		}
		note = fmt.Sprintf("%s and has not been seen for %s", what, formatAge(msAge(st.nowMs, a.LastSeenMs)))
		if a.LastSeenMs == 0 {
			note = what + " and has never been seen"
		}
	}
	if a.WebhookIsFailing() {
		// Its webhook refuses: the Deliveries pane (7) retries or drops
		// what it holds.
		note = joinNote(note, fmt.Sprintf("webhook failing: %d dead letter(s), %d being retried (7)", a.WebhookDead, a.WebhookFailing))
	}
	return [10]string{a.Agent, status, seen, strconv.Itoa(a.held), oldest, strconv.Itoa(a.Queued), strconv.Itoa(a.ResultsPending), waiting,
		strconv.Itoa(a.ResultsOK5m) + "/" + strconv.Itoa(a.ResultsError5m), note}
}

// joinNote puts two notes on one line, either of which may be empty.
func joinNote(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "; " + b
}
