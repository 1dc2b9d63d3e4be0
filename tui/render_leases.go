package tui

import (
	"strconv"

	"github.com/gdamore/tcell/v2"

	"github.com/mailroom/mailroom/mailbox"
)

// leasesColumns are the Leases pane's columns: tasks in flight.
var leasesColumns = []column{
	{heading: "TASK", sortKey: 'T', sortName: "task", maxWidth: idWidth},
	{heading: "AGE", sortKey: 'A', sortName: "age", largestFirst: true}, // the lease's
	{heading: "HOLDER", sortKey: 'H', sortName: "holder", agent: true},
	// How the daemon delivers a lease a remote agent holds (remote.go);
	// empty for the leases of agents that poll.
	{heading: "REMOTE", widthCap: remoteCap, only: func(r *rows) bool { return len(r.remote) > 0 }},
	{heading: "ATT", sortKey: 'N', sortName: "attempt", largestFirst: true},
	{heading: "DEADLINE", sortKey: 'D', sortName: "deadline"},
	{heading: "LEASE", sortKey: 'L', sortName: "lease", maxWidth: idWidth},
	{heading: "INTENT", sortKey: 'I', sortName: "intent", maxWidth: textWidth, expand: true},
	{heading: "SENDER", sortKey: 'S', sortName: "sender", agent: true},
}

// remoteCap caps the REMOTE column in a pane w cells wide: on 80
// columns room for "failing, next try in 7s" (the error is cut first),
// on wide panes for the start of the error too; the detail view has it
// whole.
func remoteCap(w int) int { return max(24, min(40, w/4)) }

// leasesRenderer draws a lease: the whole row red (its age marked) once
// the lease is stale, yellow as it ages; a marked lease bold, its task id
// marked; a deadline already past red; a remote delivery that fails
// yellow, and one left for the operator red, in its REMOTE cell.
type leasesRenderer struct{}

func (leasesRenderer) render(c *paneContent, w *rowWriter, i int) {
	e := &c.rows.leases[i]
	now := c.st.nowMs
	age := formatAge(msAge(now, e.LeasedAtMs))
	color := colorText
	switch {
	case c.st.stale(e.LeasedAtMs):
		age, color = staleMarker+age, colorStale
	case c.st.aging(e.LeasedAtMs):
		color = colorAging
	}
	id := mailbox.ShortID(e.Task.ID)
	marked := c.isMarked(e)
	if marked {
		id = markMarker + id
	}
	task := w.cell(id)
	w.cell(age)
	w.cell(e.LeasedTo)
	remoteText, remoteColor := "", colorText
	if rl, ok := c.rows.remote[e.LeaseID]; ok {
		remoteText, remoteColor = deliveryCell(rl, now)
	}
	remote := w.cell(remoteText)
	w.cell(strconv.Itoa(e.Attempt))
	d, pastDue := formatDeadline(e.Task.DeadlineMs, now)
	deadline := w.cell(d)
	w.cell(mailbox.ShortID(e.LeaseID))
	w.cell(intentCell(&e.Task))
	w.cell(e.Task.Sender)
	row := w.row()
	for k := range row {
		row[k].Color = color
		if marked {
			row[k].Attributes = tcell.AttrBold
		}
	}
	if pastDue {
		deadline.Color = colorPastDue
	}
	if remoteColor != colorText {
		remote.Color = remoteColor
	}
	if marked {
		task.MaxWidth = idWidth + len([]rune(markMarker))
	}
}

func (leasesRenderer) exportTimes() []string { return []string{"LEASED AT", "DEADLINE AT"} }

func (leasesRenderer) record(x exportJob, i int) []string {
	e := &x.rows.leases[i]
	now := x.st.nowMs
	age := formatAge(msAge(now, e.LeasedAtMs))
	if x.st.stale(e.LeasedAtMs) {
		age = staleMarker + age
	}
	d, _ := formatDeadline(e.Task.DeadlineMs, now)
	remote := ""
	if rl, ok := x.rows.remote[e.LeaseID]; ok {
		remote, _ = deliveryCell(rl, now)
	}
	return []string{e.Task.ID, age, e.LeasedTo, remote, strconv.Itoa(e.Attempt), d, e.LeaseID, e.Task.IntentText, e.Task.Sender,
		exportAt(e.LeasedAtMs), exportDeadline(e.Task.DeadlineMs)}
}
