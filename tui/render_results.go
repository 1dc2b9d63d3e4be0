package tui

import "github.com/mailroom/mailroom/mailbox"

// resultsColumns are the Results pane's columns: results waiting for
// their senders.
var resultsColumns = []column{
	{heading: "STATUS", sortKey: 'U', sortName: "status"},
	{heading: "TASK", sortKey: 'T', sortName: "task", maxWidth: idWidth},
	{heading: "FROM", sortKey: 'F', sortName: "from", agent: true},
	{heading: "AGE", sortKey: 'A', sortName: "age", largestFirst: true},
	{heading: "ERROR", sortKey: 'M', sortName: "message", maxWidth: textWidth, expand: true},
	{heading: "SENDER", sortKey: 'S', sortName: "sender", agent: true},
}

// resultsRenderer draws a pending result, its status coloured: ok green,
// partial yellow, an error (or a forced one) red.
type resultsRenderer struct{}

func (resultsRenderer) render(c *paneContent, w *rowWriter, i int) {
	r := &c.rows.results[i]
	status := w.cell(resultStatus(&r.PendingResult))
	switch {
	case r.Forced:
		status.Color = colorError
	case r.Status == mailbox.StatusOK:
		status.Color = colorOK
	case r.Status == mailbox.StatusPartial:
		status.Color = colorPartial
	default:
		status.Color = colorError
	}
	w.cell(mailbox.ShortID(r.TaskID))
	w.cell(r.Recipient)
	w.cell(formatAge(msAge(c.st.nowMs, r.PostedAtMs)))
	msg := oneLine(r.ErrorMessage)
	if r.a2a {
		msg = a2aMarker + msg
	}
	w.cell(msg)
	w.cell(r.Sender)
}

func (resultsRenderer) exportTimes() []string { return []string{"POSTED AT"} }

func (resultsRenderer) record(x exportJob, i int) []string {
	r := &x.rows.results[i]
	return []string{resultStatus(&r.PendingResult), r.TaskID, r.Recipient, formatAge(msAge(x.st.nowMs, r.PostedAtMs)), r.ErrorMessage, r.Sender, exportAt(r.PostedAtMs)}
}
