package tui

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rivo/tview"

	"github.com/mailroom/mailroom/mailbox"
)

// The description at the top of a repair dialog: what the operator
// inspected, what became of what changed since, and whether the console
// is up to date at all.

// renderDialogInfo describes the inspected leases at the top of a dialog:
// what they were, what became of those that changed, and whether the
// console is up to date at all.
func (c *Console) renderDialogInfo(d *repairDialog) {
	now := c.opts.Now().UnixMilli()
	var b strings.Builder
	if len(d.changed) > 0 {
		colour := "red"
		switch {
		case len(d.targets) == 1 && d.targets[0].waitingOn != "":
			b.WriteString("[red::b]The question changed while this dialog was open: nothing to repair.")
		case len(d.targets) == 1 && d.targets[0].queued():
			b.WriteString("[red::b]The task changed while this dialog was open: nothing to repair.")
		case len(d.targets) == 1:
			b.WriteString("[red::b]The lease changed while this dialog was open: nothing to repair.")
		default:
			// The rest are still the operator's to repair: each repair is
			// guarded by its own lease (or recipient), so the changed ones
			// are refused by the daemon and listed, as the CLI's bulk
			// repair does.
			colour = "yellow"
			what := "leases"
			if n := d.countKinds(); n[kindLease] != len(d.targets) {
				what = "tasks"
			}
			fmt.Fprintf(&b, "[yellow::b]%d of these %d %s changed while this dialog was open: they will be left alone and listed; the other %d are repaired.",
				len(d.changed), len(d.targets), what, len(d.targets)-len(d.changed))
		}
		b.WriteString("[-::-]\n")
		for _, t := range d.targets {
			what, ok := d.changed[t.taskID]
			switch {
			case !ok:
			case t.queued():
				fmt.Fprintf(&b, "[%s]task %s: you saw it queued for %s\n  now: %s[-]\n", colour, mailbox.ShortID(t.taskID), escapeTags(t.queuedFor), escapeTags(what))
			case t.what() == kindResult:
				fmt.Fprintf(&b, "[%s]task %s: you saw its result waiting for %s\n  now: %s[-]\n", colour, mailbox.ShortID(t.taskID), escapeTags(t.undrainedBy), escapeTags(what))
			default:
				fmt.Fprintf(&b, "[%s]task %s: you inspected lease %s (attempt %d, %s)\n  now: %s[-]\n", colour, mailbox.ShortID(t.taskID),
					mailbox.ShortID(t.leaseID), t.attempt, escapeTags(t.leasedTo), escapeTags(what))
			}
		}
	}
	var leaseTs, queuedTs []repairTarget
	for _, t := range d.targets {
		switch t.what() {
		case kindQueued:
			queuedTs = append(queuedTs, t)
		case kindLease, kindQuestion:
			leaseTs = append(leaseTs, t)
		}
	}
	if d.agent != "" {
		c.renderDebt(&b, d, now)
	} else {
		c.renderLeaseTargets(&b, d, leaseTs, now)
		c.renderQueuedTargets(&b, d, queuedTs, now)
	}
	switch st := c.status; {
	case st.paused:
		fmt.Fprintf(&b, "[yellow]Paused, %s events held: the panes may be out of date, and a lease may have changed unseen.[-]\n", commas(st.held))
	case st.connSeen && (!st.conn.Live || st.gap != nil):
		b.WriteString("[yellow]Not connected to the daemon: the panes may be out of date, and the repair may not get through.[-]\n")
	}
	d.info.SetText(strings.TrimRight(b.String(), "\n"))
}

// renderDebt describes everything an agent owes, a line for each kind
// with its count and what the dialog's choice does to it.
func (c *Console) renderDebt(b *strings.Builder, d *repairDialog, now int64) {
	n := d.countKinds()
	oldest := [kindCount]int64{}
	for _, t := range d.targets {
		at := t.leasedAtMs
		if t.queued() {
			at = t.queuedAtMs
		}
		if k := t.what(); oldest[k] == 0 || at < oldest[k] {
			oldest[k] = at
		}
	}
	to := "the agent in \"to\""
	if f, ok := d.form.GetFormItemByLabel(toLabel).(*tview.InputField); ok && strings.TrimSpace(f.GetText()) != "" {
		to = strings.TrimSpace(f.GetText())
	}
	fmt.Fprintf(b, "[::b]Everything %s owes[::-], each kind with its own choice below:\n", escapeTags(d.agent))
	for k := range kindCount {
		if n[k] == 0 {
			continue
		}
		var what, does string
		age := formatAge(msAge(now, oldest[k]))
		switch k {
		case kindLease:
			what = fmt.Sprintf("%s it holds, the oldest held %s", plural(n[k], "lease"), age)
		case kindQueued:
			what = fmt.Sprintf("%s for it, the oldest queued %s", plural(n[k], "task"), age)
		case kindQuestion:
			what = fmt.Sprintf("%s waiting on its answer (their workers wait), the longest for %s", plural(n[k], "question"), age)
		case kindResult:
			what = fmt.Sprintf("%s waiting for it to drain, the oldest posted %s ago", plural(n[k], "result"), age)
		}
		switch d.decisionOf(k) {
		case decRequeue:
			does = "requeued, for " + to
			if to == "the agent in \"to\"" {
				does = "requeued, for the agent in \"to\" (empty: for " + d.agent + " again)"
			}
		case decForceError:
			does = "each ended with an error result naming the reason, for its sender"
		case decMove:
			does = "moved to " + to + ", keeping their places"
		case decCancel:
			does = "canceled: each sender gets an error result naming the reason"
		case decHandOver:
			does = "handed over to " + to + ": it " + map[debtKind]string{kindQuestion: "answers them", kindResult: "drains them"}[k] + " from now on"
		case decEnd:
			does = "ended with an error result naming the reason"
			if d.endsAndHands() {
				does += ", which is handed over with the results"
			} else {
				does += ", which waits for " + d.agent + " to drain it"
			}
		case decLeave:
			does = "left as they are: " + d.agent + " stays flagged while they wait on it"
		}
		fmt.Fprintf(b, "  [::b]%s[::-]: %s\n", escapeTags(what), escapeTags(does))
	}
	if n[kindLease] > 0 && d.decisionOf(kindLease) == decRequeue {
		unsafe := 0
		for _, t := range d.targets {
			if t.what() == kindLease && !t.idempotent {
				unsafe++
			}
		}
		if unsafe > 0 {
			fmt.Fprintf(b, "[yellow]%d of %d leased tasks are unsafe: requeueing them may run their work twice[-]\n", unsafe, n[kindLease])
		}
	}
	b.WriteString("[gray]Each applies only while its task is as you see it now (the same lease, queued for the same agent, still waiting on it); the others are left as they are and listed.[-]\n")
}

// renderQueuedTargets describes the queued tasks of a dialog.
func (c *Console) renderQueuedTargets(b *strings.Builder, d *repairDialog, ts []repairTarget, now int64) {
	switch len(ts) {
	case 0:
		return
	case 1:
		t := ts[0]
		fmt.Fprintf(b, "[::b]task[::-]       %s  %s\n", t.taskID, escapeTags(orDash(t.kind)))
		fmt.Fprintf(b, "[::b]intent[::-]     %s\n", escapeTags(truncate(oneLine(t.intent), 200)))
		fmt.Fprintf(b, "[::b]queued for[::-] %s for %s   [::b]sender[::-] %s   [::b]attempt[::-] %d\n", escapeTags(t.queuedFor), formatAge(msAge(now, t.queuedAtMs)), escapeTags(t.sender), t.attempt)
	default:
		oldest := ts[0].queuedAtMs
		for _, t := range ts {
			oldest = min(oldest, t.queuedAtMs)
		}
		fmt.Fprintf(b, "[::b]%d queued tasks[::-], the oldest queued %s\n", len(ts), formatAge(msAge(now, oldest)))
		fmt.Fprintf(b, "[::b]queued for[::-] %s\n", countedAgents(ts, func(t repairTarget) string { return t.queuedFor }))
	}
	if d.decisionOf(kindQueued) == decCancel {
		b.WriteString("[gray]Canceled, a task leaves its queue and its sender gets an error result naming the reason.[-]\n")
	}
	b.WriteString("[gray]Each applies only while its task is still queued for the agent you saw; the others are left as they are and listed.[-]\n")
}

// countedAgents lists the agents of ts (agent says which of a target's)
// with how many targets each has, most first, as "a@x (3), b@x (1)".
func countedAgents(ts []repairTarget, agent func(repairTarget) string) string {
	counts := map[string]int{}
	var names []string
	for _, t := range ts {
		a := agent(t)
		if counts[a] == 0 {
			names = append(names, a)
		}
		counts[a]++
	}
	slices.SortStableFunc(names, func(a, b string) int { return counts[b] - counts[a] })
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = fmt.Sprintf("%s (%d)", escapeTags(n), counts[n])
	}
	return strings.Join(out, ", ")
}

// renderLeaseTargets describes the leases (or the questions) of a dialog.
func (c *Console) renderLeaseTargets(b *strings.Builder, d *repairDialog, ts []repairTarget, now int64) {
	if len(ts) == 0 {
		return
	}
	switch {
	case len(ts) == 1 && ts[0].waitingOn != "":
		t := ts[0]
		fmt.Fprintf(b, "[::b]task[::-]       %s  %s\n", t.taskID, escapeTags(orDash(t.kind)))
		fmt.Fprintf(b, "[::b]intent[::-]     %s\n", escapeTags(truncate(oneLine(t.intent), 200)))
		fmt.Fprintf(b, "[::b]question[::-]   %s: %s\n", escapeTags(t.question.Status), escapeTags(truncate(visible(oneLine(contentText(t.question.Content))), 200)))
		fmt.Fprintf(b, "[::b]waiting on[::-] %s for %s   [::b]asked by[::-] %s   [::b]attempt[::-] %d\n", escapeTags(t.waitingOn), formatAge(msAge(now, t.leasedAtMs)), escapeTags(t.leasedTo), t.attempt)
		fmt.Fprintf(b, "[::b]asked under[::-] lease %s\n[gray]The error applies only while the task still waits on this question; its sender receives the error instead of answering.[-]\n", t.leaseID)
	case ts[0].waitingOn != "":
		oldest := ts[0].leasedAtMs
		for _, t := range ts {
			oldest = min(oldest, t.leasedAtMs)
		}
		fmt.Fprintf(b, "[::b]%d questions[::-], the longest waiting %s\n", len(ts), formatAge(msAge(now, oldest)))
		fmt.Fprintf(b, "[::b]waiting on[::-] %s\n", countedAgents(ts, func(t repairTarget) string { return t.waitingOn }))
		b.WriteString("[gray]Each ends with an error result for its sender instead of an answer, only while its task still waits on the question you marked; the others are left as they are and listed.[-]\n")
	case len(ts) == 1:
		t := ts[0]
		fmt.Fprintf(b, "[::b]task[::-]      %s  %s\n", t.taskID, escapeTags(orDash(t.kind)))
		// Three lines of it at most: the fields below must keep their room.
		fmt.Fprintf(b, "[::b]intent[::-]    %s\n", escapeTags(truncate(oneLine(t.intent), 200)))
		fmt.Fprintf(b, "[::b]leased to[::-] %s   [::b]attempt[::-] %d   [::b]lease age[::-] %s\n", escapeTags(t.leasedTo), t.attempt, formatAge(msAge(now, t.leasedAtMs)))
		fmt.Fprintf(b, "[::b]lease[::-]     %s\n[gray]The repair applies only while this lease is still the current one.[-]\n", t.leaseID)
		if !t.idempotent && d.action == actRequeue {
			b.WriteString("[yellow]unsafe task: requeueing it may run the work twice[-]\n")
		}
	default:
		oldest, unsafe := ts[0].leasedAtMs, 0
		for _, t := range ts {
			oldest = min(oldest, t.leasedAtMs)
			if !t.idempotent {
				unsafe++
			}
		}
		fmt.Fprintf(b, "[::b]%d leases[::-], the oldest held %s\n", len(ts), formatAge(msAge(now, oldest)))
		fmt.Fprintf(b, "[::b]holders[::-] %s\n", countedAgents(ts, func(t repairTarget) string { return t.leasedTo }))
		b.WriteString("[gray]Each repair applies only while its lease is still the one you marked; the others are left as they are and listed.[-]\n")
		if unsafe > 0 && d.action == actRequeue {
			fmt.Fprintf(b, "[yellow]%d of %d tasks are unsafe: requeueing them may run their work twice[-]\n", unsafe, len(ts))
		}
	}
}
