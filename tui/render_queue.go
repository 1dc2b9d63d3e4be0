package tui

import (
	"strconv"

	"github.com/gdamore/tcell/v2"

	"github.com/mailroom/mailroom/mailbox"
)

// queueColumns are the Queue pane's columns: tasks waiting for a lease.
var queueColumns = []column{
	{heading: "TASK", sortKey: 'T', sortName: "task", maxWidth: idWidth},
	{heading: "AGE", sortKey: 'A', sortName: "age", largestFirst: true},
	{heading: "ATT", sortKey: 'N', sortName: "attempt", largestFirst: true},
	{heading: "RECIPIENT", sortKey: 'C', sortName: "recipient", agent: true},
	{heading: "KIND", sortKey: 'K', sortName: "kind", maxWidth: 16},
	{heading: "DEADLINE", sortKey: 'D', sortName: "deadline"},
	{heading: "INTENT", sortKey: 'I', sortName: "intent", maxWidth: textWidth, expand: true},
	{heading: "SENDER", sortKey: 'S', sortName: "sender", agent: true},
}

// queueRenderer draws a queued task; a deadline already past is red, a
// marked task bold with the mark before its id.
type queueRenderer struct{}

func (queueRenderer) render(c *paneContent, w *rowWriter, i int) {
	e := &c.rows.queued[i]
	now := c.st.nowMs
	id := mailbox.ShortID(e.Task.ID)
	marked := c.isMarked(e)
	if marked {
		id = markMarker + id
	}
	task := w.cell(id)
	if marked {
		task.MaxWidth = idWidth + len([]rune(markMarker))
	}
	w.cell(formatAge(msAge(now, e.QueuedAtMs)))
	w.cell(strconv.Itoa(e.Attempt))
	w.cell(e.Task.Recipient)
	w.cell(e.Task.Kind())
	d, pastDue := formatDeadline(e.Task.DeadlineMs, now)
	if deadline := w.cell(d); pastDue {
		deadline.Color = colorPastDue
	}
	w.cell(intentCell(&e.Task))
	w.cell(e.Task.Sender)
	if marked {
		row := w.row()
		for k := range row {
			row[k].Attributes = tcell.AttrBold
		}
	}
}

// a2aMarker starts the text of a task (or result) that came through the
// A2A edge: its caller is an A2A client, not a mailbox agent.
const a2aMarker = "(a2a) "

// intentCell is a task's intent as the panes show it, marked when the task
// came through the A2A edge.
func intentCell(t *mailbox.Task) string {
	if t.A2A != nil {
		return a2aMarker + oneLine(t.IntentText)
	}
	return oneLine(t.IntentText)
}

func (queueRenderer) exportTimes() []string { return []string{"QUEUED AT", "DEADLINE AT"} }

func (queueRenderer) record(x exportJob, i int) []string {
	e := &x.rows.queued[i]
	now := x.st.nowMs
	d, _ := formatDeadline(e.Task.DeadlineMs, now)
	return []string{e.Task.ID, formatAge(msAge(now, e.QueuedAtMs)), strconv.Itoa(e.Attempt), e.Task.Recipient, e.Task.Kind(), d, e.Task.IntentText, e.Task.Sender,
		exportAt(e.QueuedAtMs), exportDeadline(e.Task.DeadlineMs)}
}
