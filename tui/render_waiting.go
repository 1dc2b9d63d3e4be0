package tui

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/gdamore/tcell/v2"

	"github.com/mailroom/mailroom/mailbox"
)

// waitingColumns are the Waiting pane's columns: tasks whose worker asked
// their sender a question. Whom the task waits on and for how long come
// first, as a lease's holder and age do; the question takes the rest, and
// the worker that asked, which matters less, comes after it. Its letters
// keep clear of R and E, which the pane binds.
var waitingColumns = []column{
	{heading: "TASK", sortKey: 'T', sortName: "task", maxWidth: idWidth},
	{heading: "WAITED", sortKey: 'A', sortName: "waited", largestFirst: true},
	{heading: "WAITING ON", sortKey: 'S', sortName: "waiting on", agent: true},
	{heading: "STATUS", sortKey: 'U', sortName: "status"},
	{heading: "ATT", sortKey: 'N', sortName: "attempt", largestFirst: true},
	{heading: "QUESTION", sortKey: 'Q', sortName: "question", maxWidth: textWidth, expand: true},
	{heading: "ASKED BY", sortKey: 'C', sortName: "asked by", agent: true},
}

// waitingRenderer draws a task waiting on its sender: like a lease, the
// whole row red (its age marked) once the question has waited longer than
// the stale limit, yellow as it gets there; otherwise its status is
// aqua, the colour of a turn that is the sender's to take.
type waitingRenderer struct{}

func (waitingRenderer) render(c *paneContent, w *rowWriter, i int) {
	e := &c.rows.waiting[i]
	q := questionOf(&e.Task)
	age := formatAge(msAge(c.st.nowMs, e.WaitingSinceMs))
	color := colorText
	switch {
	case c.st.stale(e.WaitingSinceMs):
		age, color = staleMarker+age, colorStale
	case c.st.aging(e.WaitingSinceMs):
		color = colorAging
	}
	id := mailbox.ShortID(e.Task.ID)
	marked := c.isMarked(e)
	if marked {
		id = markMarker + id
	}
	task := w.cell(id)
	if marked {
		task.MaxWidth = idWidth + len([]rune(markMarker))
	}
	w.cell(age)
	w.cell(e.Task.Sender)
	status := w.cell(q.Status)
	w.cell(strconv.Itoa(e.Attempt))
	w.cell(orDash(questionText(&e.Task)))
	w.cell(askedBy(e))
	row := w.row()
	for k := range row {
		row[k].Color = color
		if marked {
			row[k].Attributes = tcell.AttrBold
		}
	}
	if color == colorText {
		status.Color = colorAsking
	}
}

func (waitingRenderer) exportTimes() []string { return []string{"ASKED AT"} }

func (waitingRenderer) record(x exportJob, i int) []string {
	e := &x.rows.waiting[i]
	q := questionOf(&e.Task)
	age := formatAge(msAge(x.st.nowMs, e.WaitingSinceMs))
	if x.st.stale(e.WaitingSinceMs) {
		age = staleMarker + age
	}
	return []string{e.Task.ID, age, e.Task.Sender, q.Status, strconv.Itoa(e.Attempt), contentText(q.Content), askedBy(e), exportAt(e.WaitingSinceMs)}
}

// questionOf is a waiting task's question: its worker's newest turn (the
// zero turn for a task that never asked).
func questionOf(t *mailbox.Task) mailbox.Turn {
	q, _ := t.Question()
	return q
}

// askedBy is the worker that asked a waiting task's question.
func askedBy(e *mailbox.QueueEntry) string {
	if q := questionOf(&e.Task); q.Agent != "" {
		return q.Agent
	}
	return e.Task.Recipient
}

// questionText is a waiting task's question on one line, as it may be
// written to a terminal: an agent's text may hold control characters.
func questionText(t *mailbox.Task) string {
	return visible(oneLine(contentText(questionOf(t).Content)))
}

// contentText is what a turn or a result says: its text parts, and its
// JSON parts compacted, one after another.
func contentText(cs []mailbox.Content) string {
	var parts []string
	for _, c := range cs {
		switch {
		case c.Type == mailbox.ContentText:
			parts = append(parts, c.Text)
		case len(c.Value) > 0:
			var buf bytes.Buffer
			if json.Compact(&buf, c.Value) != nil {
				buf.Reset()
				buf.Write(c.Value)
			}
			parts = append(parts, buf.String())
		}
	}
	return strings.Join(parts, " ")
}
