package tui

import (
	"strconv"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/mailroom/mailroom/mailbox"
)

// deliveriesColumns are the Deliveries pane's columns: the outbox of push
// notifications, oldest first. The state and the last error tell rows
// apart, so they come first and last (the error takes what is left).
var deliveriesColumns = []column{
	{heading: "ID"}, {heading: "STATE"}, {heading: "AGE"}, {heading: "TASK", maxWidth: idWidth}, {heading: "EVENT"},
	{heading: "TRIES"}, {heading: "NEXT"}, {heading: "WEBHOOK", maxWidth: textWidth},
	{heading: "LAST ERROR", maxWidth: textWidth, expand: true},
}

// deliveriesRenderer draws a notification: a dead one red, a failing one
// yellow.
type deliveriesRenderer struct{}

func (deliveriesRenderer) render(c *paneContent, w *rowWriter, i int) {
	n := &c.rows.deliveries[i]
	marked := c.markedAt(i)
	if marked {
		w.cell(markMarker + n.ID)
	} else {
		w.cell(n.ID)
	}
	state := w.cell(n.State)
	w.cell(formatAge(msAge(c.st.nowMs, n.CreatedAtMs)))
	w.cell(mailbox.ShortID(n.TaskID))
	w.cell(n.Event)
	w.cell(strconv.Itoa(n.Attempts))
	w.cell(nextTry(c.st.nowMs, n))
	w.cell(orDash(visible(n.URL)))
	w.cell(orDash(visible(oneLine(n.LastError))))
	switch n.State {
	case mailbox.DeliveryDead:
		state.Color = colorError
	case mailbox.DeliveryFailing:
		state.Color = colorAging
	}
	if marked {
		row := w.row()
		for k := range row {
			row[k].Attributes = tcell.AttrBold
		}
	}
}

// nextTry is when a failing notification is tried again, from now.
func nextTry(nowMs int64, n *mailbox.NotificationStatus) string {
	if n.State != mailbox.DeliveryFailing || n.NextTryMs == 0 {
		return "-"
	}
	if d := n.NextTryMs - nowMs; d > 0 {
		return "in " + formatAge(time.Duration(d)*time.Millisecond)
	}
	return "now"
}

func (deliveriesRenderer) exportTimes() []string { return []string{"CREATED AT"} }

func (deliveriesRenderer) record(x exportJob, i int) []string {
	n := &x.rows.deliveries[i]
	return []string{n.ID, n.State, formatAge(msAge(x.st.nowMs, n.CreatedAtMs)), n.TaskID, n.Event, strconv.Itoa(n.Attempts),
		nextTry(x.st.nowMs, n), n.URL, n.LastError, exportAt(n.CreatedAtMs)}
}

// deliveryMatches is the Deliveries pane's filter: the notification's id,
// its task, state, event, webhook and error.
func deliveryMatches(n *mailbox.NotificationStatus, filter string) bool {
	return containsFold(n.ID, filter) || containsFold(n.TaskID, filter) || containsFold(n.State, filter) ||
		containsFold(n.Event, filter) || containsFold(n.URL, filter) || containsFold(n.LastError, filter)
}
