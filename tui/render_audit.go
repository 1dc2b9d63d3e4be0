package tui

import (
	"strconv"

	"github.com/mailroom/mailroom/mailbox"
)

// auditColumns are the Audit pane's columns: the repairs, newest first.
// The reason comes before lease and posture: on an 80-column terminal it
// is what tells repairs apart, and the detail view has the rest.
var auditColumns = []column{
	{heading: "AGE"}, {heading: "AT"}, {heading: "BY", agent: true}, {heading: "ACTION"},
	{heading: "TASK", maxWidth: idWidth}, {heading: "ATT"}, {heading: "REASON", maxWidth: textWidth, expand: true},
	{heading: "LEASE", maxWidth: idWidth}, {heading: "POSTURE"},
}

// auditRenderer draws a repair in the words audit.go chooses; a forced
// error's action is red.
type auditRenderer struct{}

func (auditRenderer) render(c *paneContent, w *rowWriter, i int) {
	a := &c.rows.audit[i]
	w.cell(formatAge(msAge(c.st.nowMs, a.AtMs)))
	w.cell(formatClock(a.AtMs))
	w.cell(auditPrincipal(a))
	if action := w.cell(auditAction(a)); a.Action == mailbox.OutcomeForcedError {
		// A forced error ended the work for good; a requeue only retried it.
		action.Color = colorError
	}
	w.cell(mailbox.ShortID(a.TaskID))
	w.cell(strconv.Itoa(a.Attempt))
	w.cell(oneLine(a.Reason))
	w.cell(mailbox.ShortID(a.LeaseID))
	w.cell(auditPosture(a))
}

// exportTimes is empty: the Audit pane's columns hold everything in full
// already.
func (auditRenderer) exportTimes() []string { return nil }

func (auditRenderer) record(x exportJob, i int) []string {
	a := &x.rows.audit[i]
	return []string{formatAge(msAge(x.st.nowMs, a.AtMs)), exportAt(a.AtMs), auditPrincipal(a), auditAction(a), a.TaskID, strconv.Itoa(a.Attempt), a.Reason,
		a.LeaseID, auditPosture(a)}
}
