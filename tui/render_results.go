package tui

import "github.com/mailroom/mailroom/mailbox"

// resultsColumns are the Results pane's columns: results waiting for
// their senders.
var resultsColumns = []column{
	{heading: "STATUS", sortKey: 'U', sortName: "status"},
	{heading: "TASK", sortKey: 'T', sortName: "task", maxWidth: idWidth},
	{heading: "FROM", sortKey: 'F', sortName: "from", agent: true},
	{heading: "AGE", sortKey: 'A', sortName: "age", largestFirst: true},
	// The error of an error or a rejection; the question of a result that
	// asks the sender (input_required, auth_required).
	{heading: "MESSAGE", sortKey: 'M', sortName: "message", maxWidth: textWidth, expand: true},
	{heading: "SENDER", sortKey: 'S', sortName: "sender", agent: true},
}

// resultsRenderer draws a pending result, its status coloured: ok green,
// partial yellow, a question aqua (the task waits on its sender, see the
// Waiting pane), an error, a rejection or a forced error red.
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
	case mailbox.Asks(r.Status):
		status.Color = colorAsking
	default:
		status.Color = colorError
	}
	w.cell(mailbox.ShortID(r.TaskID))
	w.cell(r.Recipient)
	w.cell(formatAge(msAge(c.st.nowMs, r.PostedAtMs)))
	msg := visible(oneLine(resultMessage(&r.PendingResult)))
	if r.a2a {
		msg = a2aMarker + msg
	}
	w.cell(msg)
	w.cell(r.Sender)
}

// resultMessage is what the Results pane says of a result: its error
// message, or, for a question, what the worker asked.
func resultMessage(r *mailbox.PendingResult) string {
	if mailbox.Asks(r.Status) && r.ErrorMessage == "" {
		return contentText(r.Content)
	}
	return r.ErrorMessage
}

func (resultsRenderer) exportTimes() []string { return []string{"POSTED AT"} }

func (resultsRenderer) record(x exportJob, i int) []string {
	r := &x.rows.results[i]
	return []string{resultStatus(&r.PendingResult), r.TaskID, r.Recipient, formatAge(msAge(x.st.nowMs, r.PostedAtMs)), resultMessage(&r.PendingResult), r.Sender, exportAt(r.PostedAtMs)}
}
