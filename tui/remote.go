package tui

import (
	"fmt"
	"strings"

	"github.com/gdamore/tcell/v2"

	"github.com/mailroom/mailroom/mailbox"
)

// Remote agents: A2A servers the daemon delivers to, leasing their tasks
// on their behalf. Their leases are leases like any other (the console
// repairs them the same way); what the console adds is what the daemon's
// dispatcher reports of them in the agents listing (memory only, absent
// where no dispatcher runs) and what the replica recorded when a remote
// accepted a task (remote_accepted).

// remoteLease is what the console knows of a lease a remote agent holds.
type remoteLease struct {
	// delivery is the dispatcher's report of this lease; nil when it
	// reported none.
	delivery *mailbox.DeliveryStatus
	// accepted is the remote's acceptance recorded under this lease; nil
	// until the remote accepted the task.
	accepted *mailbox.RemoteDelivery
}

// isRemote reports an agent registered as a remote A2A server.
func isRemote(a *mailbox.AgentInfo) bool { return a.Card != nil && a.Card.Remote != nil }

// remoteLeases finds, among leases, those held by the remote agents of
// list, keyed by lease id, with the dispatcher's report of each and the
// acceptance accepted finds in the replica. Nil when no agent is remote.
func remoteLeases(list []mailbox.AgentInfo, leases []mailbox.QueueEntry, accepted func(taskID, leaseID string) *mailbox.RemoteDelivery) map[string]remoteLease {
	var remotes map[string]*mailbox.RemoteStatus
	for i := range list {
		if isRemote(&list[i]) {
			if remotes == nil {
				remotes = map[string]*mailbox.RemoteStatus{}
			}
			remotes[list[i].Agent] = list[i].Remote
		}
	}
	if remotes == nil {
		return nil
	}
	out := map[string]remoteLease{}
	for i := range leases {
		e := &leases[i]
		st, ok := remotes[e.LeasedTo]
		if !ok || e.LeaseID == "" {
			continue
		}
		var rl remoteLease
		rl.delivery = deliveryOf(st, e.Task.ID, e.LeaseID)
		rl.accepted = accepted(e.Task.ID, e.LeaseID)
		out[e.LeaseID] = rl
	}
	return out
}

// deliveryOf is the dispatcher's report of one lease, nil if none.
func deliveryOf(st *mailbox.RemoteStatus, taskID, leaseID string) *mailbox.DeliveryStatus {
	if st == nil {
		return nil
	}
	for i := range st.Deliveries {
		if d := &st.Deliveries[i]; d.TaskID == taskID && d.LeaseID == leaseID {
			return d
		}
	}
	return nil
}

// remoteID is a remote's task id for a table cell: on one line, escaped,
// short enough to leave room for the rest.
func remoteID(id string) string { return truncate(visible(id), 24) }

// deliveryCell is the Leases pane's REMOTE cell of a lease a remote agent
// holds, and its colour (colorText when it needs nothing): red when the
// lease is left for the operator, yellow while sends fail. The next try
// comes before the error, so that a narrow column cuts the error's tail
// rather than when the daemon tries again.
func deliveryCell(rl remoteLease, nowMs int64) (string, tcell.Color) {
	d := rl.delivery
	remoteTask := ""
	switch {
	case d != nil && d.RemoteTaskID != "":
		remoteTask = d.RemoteTaskID
	case rl.accepted != nil:
		remoteTask = rl.accepted.TaskID
	}
	as := ""
	if remoteTask != "" {
		as = " as " + remoteID(remoteTask)
	}
	if d == nil {
		if remoteTask != "" {
			return "accepted" + as, colorText
		}
		// A remote agent's lease the dispatcher says nothing of: another
		// instance delivers it, or none does.
		return "remote, not reported", colorText
	}
	switch d.State {
	case mailbox.DeliverySending:
		if d.Attempts > 1 {
			return fmt.Sprintf("sending (try %d)", d.Attempts), colorText
		}
		return "sending", colorText
	case mailbox.DeliveryRetrying:
		s := "failing"
		if d.NextTryMs > 0 {
			s += ", next try in " + formatAge(msAge(d.NextTryMs, nowMs))
		}
		if d.LastError != "" {
			s += ": " + visible(oneLine(d.LastError))
		}
		return s, colorAging
	case mailbox.DeliveryAccepted:
		return "accepted" + as, colorText
	case mailbox.DeliveryStreaming, mailbox.DeliveryPolling:
		return d.State + as, colorText
	case mailbox.DeliveryCanceling:
		return "canceling at the remote" + as, colorAging
	case mailbox.DeliveryLost:
		lost := staleMarker + "lost by remote"
		if remoteTask != "" {
			lost += " (" + remoteID(remoteTask) + ")"
		}
		return lost, colorStale
	case mailbox.DeliveryUnknown:
		return staleMarker + "unknown: maybe sent, not resent", colorStale
	}
	return visible(d.State) + as, colorText
}

// remoteNeedsOperator counts a remote's deliveries left for the operator.
func remoteNeedsOperator(st *mailbox.RemoteStatus) (lost, unknown int) {
	if st == nil {
		return 0, 0
	}
	for _, d := range st.Deliveries {
		switch d.State {
		case mailbox.DeliveryLost:
			lost++
		case mailbox.DeliveryUnknown:
			unknown++
		}
	}
	return lost, unknown
}

// remoteStatusCell is a remote agent's STATUS cell and the colour of its
// row: an open circuit is red and marked, as a gone agent is; a failing
// remote yellow, as an aging lease is.
func remoteStatusCell(st *mailbox.RemoteStatus) (string, tcell.Color) {
	if st == nil {
		return "remote", colorText
	}
	switch st.State {
	case mailbox.RemoteCircuitOpen:
		return staleMarker + "remote circuit open", colorStale
	case mailbox.RemoteFailing:
		return "remote failing", colorAging
	}
	return "remote " + visible(st.State), colorText
}

// remoteNote is what the Agents pane's note says of a remote agent: what
// needs the operator first, then what is in flight against its limit,
// its state and since when with the last error, and last (where a narrow
// pane cuts it) where it is and how it is called.
func remoteNote(a *agentRow, nowMs int64) string {
	spec, st := a.Card.Remote, a.Remote
	var parts []string
	if lost, unknown := remoteNeedsOperator(st); lost+unknown > 0 {
		var what []string
		if lost > 0 {
			what = append(what, fmt.Sprintf("%d lost by the remote", lost))
		}
		if unknown > 0 {
			what = append(what, fmt.Sprintf("%d maybe sent", unknown))
		}
		parts = append(parts, staleMarker+strings.Join(what, ", ")+": repair their leases")
	}
	if st == nil {
		parts = append(parts, "no delivery reported by this daemon")
	} else {
		state := strings.ReplaceAll(visible(st.State), "_", " ")
		if st.SinceMs > 0 {
			state += " for " + formatAge(msAge(nowMs, st.SinceMs))
		}
		if st.State == mailbox.RemoteCircuitOpen && st.NextProbeMs > 0 {
			state += ", probe in " + formatAge(msAge(st.NextProbeMs, nowMs))
		}
		if st.LastError != "" {
			state += ": " + visible(oneLine(st.LastError))
		}
		parts = append(parts, fmt.Sprintf("%d/%d in flight", st.InFlight, st.Limit), state)
	}
	binding := spec.Binding
	if st != nil && st.Binding != "" && st.Binding != spec.Binding {
		binding = st.Binding + " (" + spec.Binding + ")"
	}
	parts = append(parts, "at "+visible(spec.URL)+" "+visible(binding))
	return strings.Join(parts, "; ")
}

// remoteStatusText is remoteStatusCell's text.
func remoteStatusText(st *mailbox.RemoteStatus) string {
	s, _ := remoteStatusCell(st)
	return s
}

// renderRemote writes, in the detail view, how the daemon delivers a task
// a remote agent holds (the dispatcher's report of its lease) and where
// the remote keeps it once it accepted it, from the replica: for the
// task's whole life, so an answer to its question goes to the same remote
// task.
func renderRemote(b *strings.Builder, d detail, nowMs int64) {
	r := &d.record
	if a := d.holder; a != nil && r.LeaseID != "" {
		rl := remoteLease{delivery: deliveryOf(a.Remote, r.Task.ID, r.LeaseID)}
		if r.AcceptedUnder(r.LeaseID) {
			rl.accepted = r.Remote
		}
		text, color := deliveryCell(rl, nowMs)
		tag := "-"
		switch color {
		case colorStale:
			tag = "red"
		case colorAging:
			tag = "yellow"
		}
		fmt.Fprintf(b, "[::b]delivery[::-] to remote %s at %s: [%s]%s[-]", escapeTags(r.LeasedTo), escapeTags(visible(a.Card.Remote.URL)), tag, escapeTags(text))
		if dl := rl.delivery; dl != nil && dl.Attempts > 0 {
			fmt.Fprintf(b, " (%d send attempt(s))", dl.Attempts)
		}
		b.WriteString("\n")
		if dl := rl.delivery; dl != nil && dl.LastError != "" && dl.State != mailbox.DeliveryRetrying {
			fmt.Fprintf(b, "[::b]delivery error[::-] %s\n", escapeTags(visible(oneLine(dl.LastError))))
		}
	}
	if rd := r.Remote; rd != nil {
		under := "under the current lease"
		if rd.LeaseID != r.LeaseID {
			under = "under an earlier lease " + mailbox.ShortID(rd.LeaseID)
		}
		fmt.Fprintf(b, "[::b]remote task[::-] %s  [::b]context[::-] %s  [::b]binding[::-] %s\n", escapeTags(visible(rd.TaskID)),
			escapeTags(visible(orDash(rd.ContextID))), escapeTags(visible(rd.Binding)))
		fmt.Fprintf(b, "[::b]accepted[::-] by %s at %s (%s ago), %s\n", escapeTags(rd.Agent), formatClock(rd.AcceptedAtMs),
			formatAge(msAge(nowMs, rd.AcceptedAtMs)), under)
	}
}

// remoteMatches reports whether the filter finds a remote agent's lease
// by its delivery's state or the remote's task id: "/lost" lists the
// leases left for the operator, and the id in a remote's own log finds
// the task it belongs to.
func (r *rows) remoteMatches(leaseID, filter string) bool {
	rl, ok := r.remote[leaseID]
	if !ok {
		return false
	}
	if d := rl.delivery; d != nil && (containsFold(d.State, filter) || containsFold(d.RemoteTaskID, filter)) {
		return true
	}
	return rl.accepted != nil && containsFold(rl.accepted.TaskID, filter)
}
