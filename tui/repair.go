package tui

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gdamore/tcell/v2"
	"github.com/rivo/tview"

	"github.com/mailroom/mailroom/mailbox"
)

// repairTarget is a lease the operator inspected, captured when the dialog
// opens: the request guards on exactly this lease id, whatever the panes show
// by the time the operator submits.
//
// A task waiting on its sender has no lease; its target is the question:
// waitingOn is the sender, and the lease is the one that asked (the
// daemon's guard), held by the worker that asked, leasedAtMs when it
// asked.
//
// A queued task has no lease either: queuedFor is the recipient the
// operator saw it queued for (the daemon's guard, command.queued_for).
type repairTarget struct {
	taskID, intent, kind string
	leasedTo, leaseID    string
	attempt              int
	leasedAtMs           int64
	idempotent           bool
	waitingOn            string
	question             mailbox.Turn
	queuedFor, sender    string
	queuedAtMs           int64
}

func targetOf(e *mailbox.QueueEntry) repairTarget {
	t := repairTarget{taskID: e.Task.ID, intent: e.Task.IntentText, kind: e.Task.Kind(), leasedTo: e.LeasedTo,
		leaseID: e.LeaseID, attempt: e.Attempt, leasedAtMs: e.LeasedAtMs, idempotent: e.Task.Idempotent(), sender: e.Task.Sender}
	switch e.State {
	case mailbox.TaskWaiting:
		t.question = questionOf(&e.Task)
		t.waitingOn, t.leasedTo, t.leaseID, t.leasedAtMs = e.Task.Sender, askedBy(e), t.question.LeaseID, e.WaitingSinceMs
	case mailbox.TaskQueued:
		t.queuedFor, t.queuedAtMs = e.Task.Recipient, e.QueuedAtMs
	}
	return t
}

// queued reports whether the target is a queued task (moved or canceled,
// never requeued or force-errored).
func (t repairTarget) queued() bool { return t.queuedFor != "" }

// repairDialog is an open requeue or force-error dialog, on one lease or on
// the marked ones.
type repairDialog struct {
	action  actionID
	targets []repairTarget
	// agent is set when the dialog covers an agent's backlog (R or E on
	// the Agents pane): every lease it holds, and the tasks queued for it
	// when queuedToo is ticked.
	agent string
	to    string // the recipient a requeue handed the tasks to, once sent
	// newAgent is the unknown recipient the operator was warned of: a
	// second press of the confirm button with it still in "to" hands the
	// tasks to it as a new agent.
	newAgent string
	box      *tview.Flex
	form     *tview.Form
	// queuedToo is the Agents dialog's box "queued tasks too", when the
	// agent has tasks queued: unticked, its queued tasks are left alone.
	queuedToo *tview.Checkbox
	info      *tview.TextView
	message   *tview.TextView
	confirm   string // the confirm button's label
	busy      bool
	// changed holds, by task id, what became of each inspected lease that
	// is no longer current: the dialog says so and offers no confirm.
	changed map[string]string
	// checked is the rows version the targets were last checked against.
	checked uint64
	// repaired and conflicts carry over when a failure keeps the dialog
	// open and the operator sends the rest again.
	repaired       int
	repairedQueued int
	conflicts      []repairConflict
	lastOut        mailbox.RepairOutcome
}

// repairConflict is a lease that had changed when its repair arrived.
type repairConflict struct {
	target repairTarget
	err    *mailbox.Error
}

// Dialog geometry: wide enough for a full lease id beside its label, and
// never wider or taller than the screen.
const (
	dialogWidth = 90
	fieldWidth  = 50
)

// openRepair opens the requeue or force-error dialog for the marked leases,
// or the selected one when none is marked; on the Agents pane, for the
// selected agent's backlog: every lease it holds and every task queued for
// it; on the Waiting pane (force error only), for the selected task's
// question; on the Queue pane, the move or cancel dialog for the marked
// queued tasks, or the selected one.
func (c *Console) openRepair(act actionID) {
	if c.rows == nil {
		c.flash(false, "nothing to repair yet: the console has not received the mailbox")
		return
	}
	var targets []repairTarget
	var agent string
	pick := func(p paneID, es []mailbox.QueueEntry, none string) bool {
		pn := c.panes[p]
		idx := pn.marked()
		if len(idx) == 0 {
			i, ok := pn.selected()
			if !ok {
				c.flash(false, none)
				return false
			}
			idx = []int{i}
		}
		for _, i := range idx {
			targets = append(targets, targetOf(&es[i]))
		}
		return true
	}
	switch {
	case c.focus == paneWaiting:
		i, ok := c.panes[paneWaiting].selected()
		if !ok {
			c.flash(false, "no waiting task selected")
			return
		}
		targets = append(targets, targetOf(&c.rows.waiting[i]))
	case c.focus == paneAgents:
		i, ok := c.panes[paneAgents].selected()
		if !ok {
			c.flash(false, "no agent selected")
			return
		}
		agent = c.rows.agents[i].Agent
		for j := range c.rows.leases {
			if c.rows.leases[j].LeasedTo == agent {
				targets = append(targets, targetOf(&c.rows.leases[j]))
			}
		}
		for j := range c.rows.queued {
			if c.rows.queued[j].Task.Recipient == agent {
				targets = append(targets, targetOf(&c.rows.queued[j]))
			}
		}
		if len(targets) == 0 {
			c.flash(false, agent+" holds no lease and has no task queued")
			return
		}
	case c.focus == paneQueue:
		if !pick(paneQueue, c.rows.queued, "no queued task selected") {
			return
		}
	default:
		if !pick(paneLeases, c.rows.leases, "no lease selected") {
			return
		}
	}
	d := &repairDialog{action: act, agent: agent, targets: targets, form: tview.NewForm(), changed: map[string]string{},
		info:    tview.NewTextView().SetDynamicColors(true).SetWrap(true).SetWordWrap(true),
		message: tview.NewTextView().SetDynamicColors(true).SetWrap(true).SetWordWrap(true)}
	d.checked = c.rows.version
	c.dialog = d
	leases, queued := d.counts()

	d.form.SetBorderPadding(0, 0, 1, 1)
	if agent != "" && queued > 0 && leases > 0 {
		// Moving the queued tasks with the leases is what a dead agent's
		// backlog needs; canceling them is not undone, so E asks for it.
		label := fmt.Sprintf("%d queued too", queued)
		d.form.AddCheckbox(label, act == actRequeue, nil)
		d.queuedToo = d.form.GetFormItemByLabel(label).(*tview.Checkbox)
	}
	switch act {
	case actRequeue, actMoveQueued:
		if leases > 0 {
			// idempotent is offered only when every task declared it;
			// otherwise the operator has to accept that the work may run
			// twice.
			var risks []string
			if !slices.ContainsFunc(d.targets, func(t repairTarget) bool { return !t.queued() && !t.idempotent }) {
				risks = append(risks, mailbox.RiskIdempotent)
			}
			risks = append(risks, mailbox.RiskOperatorAccepted)
			d.form.AddDropDown("duplicate risk", risks, 0, nil)
		}
		// Before the reason, so reason Enter Enter still repairs; Shift-Tab
		// from the reason reaches it.
		placeholder := "(optional) another recipient; empty: the same"
		if leases == 0 {
			placeholder = "the new recipient (required)"
		}
		d.form.AddInputField(toLabel, "", fieldWidth, nil, nil)
		to := d.form.GetFormItemByLabel(toLabel).(*tview.InputField)
		to.SetPlaceholder(placeholder).SetAutocompleteFunc(c.agentCompletions).
			SetAutocompletedFunc(func(text string, _, source int) bool {
				to.SetText(text)
				if source == tview.AutocompletedNavigate {
					return false // the list stays open
				}
				if source == tview.AutocompletedTab {
					// As a shell's Tab: the completion taken, on to the
					// reason, so that the agent's first letters and Tab
					// name it. (Blur, which this calls, takes no lock the
					// field holds here.)
					d.form.SetFocus(d.form.GetFormItemIndex("reason"))
					c.app.SetFocus(d.form)
				}
				return true
			})
		d.form.AddInputField("reason", c.lastReason, fieldWidth, nil, nil)
	default:
		d.form.AddInputField("reason", c.lastReason, fieldWidth, nil, nil)
		msg := c.lastMessage
		if leases == 0 {
			msg = ""
		}
		d.form.AddInputField("message", msg, fieldWidth, nil, nil)
		if leases == 0 {
			d.form.GetFormItemByLabel("message").(*tview.InputField).SetPlaceholder("(optional) the sender's error; empty: one naming the reason")
		}
	}
	d.confirm = d.confirmLabel()
	d.form.AddButton(d.confirm, func() { c.submitRepair(d) })
	if d.queuedToo != nil {
		// Ticked or not, the title and the button say what is repaired.
		d.queuedToo.SetChangedFunc(func(bool) {
			if i := d.form.GetButtonIndex(d.confirm); i >= 0 {
				d.confirm = d.confirmLabel()
				d.form.GetButton(i).SetLabel(d.confirm)
			}
			if d.box != nil {
				d.box.SetTitle(d.title())
			}
		})
	}
	closeLabel := "Cancel"
	if act == actCancelQueued || act == actForceError && leases == 0 {
		closeLabel = "Close" // "Cancel" is what the confirm button does
	}
	d.form.AddButton(closeLabel, c.closeDialog)
	d.form.SetCancelFunc(func() {
		// tview's drop-down reports Esc on its open list as the end of
		// the form, then closes the list: the operator meant only the
		// list, so the dialog and what was typed stay.
		if dd, ok := d.form.GetFormItemByLabel("duplicate risk").(*tview.DropDown); ok && dd.IsOpen() {
			return
		}
		c.closeDialog()
	})
	// Typing the reason is the deliberate act, so the reason has the focus;
	// Enter moves on, and Enter on the confirm button repairs. A move of
	// queued tasks only has no default recipient: "to" comes first.
	focus := "reason"
	if act == actMoveQueued {
		focus = toLabel
	}
	d.form.SetFocus(d.form.GetFormItemIndex(focus))
	c.renderDialogInfo(d)

	formRows := 2*d.form.GetFormItemCount() + 1
	box := tview.NewFlex().SetDirection(tview.FlexRow).
		AddItem(d.info, 0, 0, false).
		AddItem(d.form, formRows, 0, true).
		AddItem(d.message, 0, 1, false)
	box.SetBorder(true).SetTitle(d.title())
	d.box = box
	c.pages.AddPage(pageDialog, &modal{Primitive: box, size: func(sw, sh int) (int, int) {
		w := min(dialogWidth, sw)
		inner := w - 2
		infoRows := wrappedRows(d.info.GetText(false), inner)
		msgRows := max(1, wrappedRows(d.message.GetText(false), inner))
		// The fields and buttons always show; the description gives way
		// first (it scrolls), the message last.
		h := min(2+infoRows+formRows+msgRows, sh)
		box.ResizeItem(d.info, max(1, min(infoRows, h-2-formRows-min(msgRows, 3))), 0)
		return w, h
	}}, true, true)
	c.app.SetFocus(d.form)
}

// counts is how many of the dialog's targets are leases (or questions)
// and how many queued tasks.
func (d *repairDialog) counts() (leases, queued int) {
	for _, t := range d.targets {
		if t.queued() {
			queued++
		} else {
			leases++
		}
	}
	return leases, queued
}

// includesQueued reports whether the dialog repairs its queued targets:
// always, but on an Agents dialog whose "queued too" box is unticked.
func (d *repairDialog) includesQueued() bool {
	return d.queuedToo == nil || d.queuedToo.IsChecked()
}

// toLabel labels the requeue dialog's optional new recipient.
const toLabel = "to"

// maxCompletions bounds the agents the "to" field offers.
const maxCompletions = 8

// agentCompletions offers the known agents whose id starts with text,
// those heard from most recently first (the live ones before the gone);
// nothing when text is empty or already names a known agent, so Tab moves
// on as usual.
func (c *Console) agentCompletions(text string) []string {
	text = strings.TrimSpace(text)
	if text == "" || c.rows == nil {
		return nil
	}
	var hits []mailbox.AgentInfo
	for _, a := range c.rows.agents {
		if a.Agent == text {
			return nil
		}
		if strings.HasPrefix(a.Agent, text) {
			hits = append(hits, a.AgentInfo)
		}
	}
	slices.SortStableFunc(hits, func(a, b mailbox.AgentInfo) int {
		if a.LastSeenMs != b.LastSeenMs {
			return cmp.Compare(b.LastSeenMs, a.LastSeenMs)
		}
		return strings.Compare(a.Agent, b.Agent)
	})
	out := make([]string, 0, min(len(hits), maxCompletions))
	for _, a := range hits[:min(len(hits), maxCompletions)] {
		out = append(out, a.Agent)
	}
	return out
}

// knowsAgent reports whether the agents listing has agent.
func (c *Console) knowsAgent(agent string) bool {
	return c.rows != nil && slices.ContainsFunc(c.rows.agents, func(a agentRow) bool { return a.Agent == agent })
}

// agentIDs are the ids of the agents listing.
func (c *Console) agentIDs() []string {
	if c.rows == nil {
		return nil
	}
	ids := make([]string, len(c.rows.agents))
	for i, a := range c.rows.agents {
		ids[i] = a.Agent
	}
	return ids
}

// done says what the dialog's repair did to leases, "requeued" or "forced
// an error on", and to queued tasks, "moved" or "canceled", and " to
// AGENT" when it handed the tasks on ("" otherwise).
func (d *repairDialog) done() (leaseVerb, queuedVerb, to string) {
	leaseVerb, queuedVerb = "requeued", "moved"
	if d.action == actForceError || d.action == actCancelQueued {
		leaseVerb, queuedVerb = "forced an error on", "canceled"
	}
	if d.to != "" {
		to = " to " + d.to
	}
	return leaseVerb, queuedVerb, to
}

// title and confirmLabel say what the dialog does to how many leases and
// queued tasks.
func (d *repairDialog) title() string {
	leases, queued := d.counts()
	if !d.includesQueued() {
		queued = 0
	}
	switch d.action {
	case actMoveQueued, actCancelQueued:
		what := " Move "
		if d.action == actCancelQueued {
			what = " Cancel "
		}
		if queued == 1 {
			return what + "queued task "
		}
		return fmt.Sprintf("%s%d queued tasks ", what, queued)
	}
	what := " Requeue "
	if d.action == actForceError {
		what = " Force an error result "
	}
	switch {
	case leases == 0 && d.action == actForceError:
		return fmt.Sprintf(" Cancel %s ", plural(queued, "queued task"))
	case leases == 0:
		return fmt.Sprintf(" Move %s ", plural(queued, "queued task"))
	case queued > 0 && d.action == actForceError:
		return fmt.Sprintf("%son %s, cancel %s ", what, plural(leases, "lease"), plural(queued, "queued task"))
	case queued > 0:
		return fmt.Sprintf("%s%s, move %s ", what, plural(leases, "lease"), plural(queued, "queued task"))
	case leases == 1 && d.action == actRequeue:
		return what + "task "
	case leases == 1:
		return what
	}
	return fmt.Sprintf("%son %d leases ", what, leases)
}

// plural is "1 lease", "2 leases".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

func (d *repairDialog) confirmLabel() string {
	leases, queued := d.counts()
	if !d.includesQueued() {
		queued = 0
	}
	var noun string
	switch {
	case d.action == actMoveQueued || d.action == actRequeue && leases == 0:
		noun = "Move"
	case d.action == actCancelQueued || d.action == actForceError && leases == 0:
		noun = "Cancel task"
		if leases+queued > 1 {
			noun = "Cancel tasks"
		}
	case d.action == actForceError:
		noun = "Force error"
	default:
		noun = "Requeue"
	}
	if n := leases + queued; n > 1 {
		if noun == "Cancel tasks" {
			return fmt.Sprintf("Cancel %d tasks", n)
		}
		return fmt.Sprintf("%s %d", noun, n)
	}
	return noun
}

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
			if _, queued := d.counts(); queued > 0 {
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
			default:
				fmt.Fprintf(&b, "[%s]task %s: you inspected lease %s (attempt %d, %s)\n  now: %s[-]\n", colour, mailbox.ShortID(t.taskID),
					mailbox.ShortID(t.leaseID), t.attempt, escapeTags(t.leasedTo), escapeTags(what))
			}
		}
	}
	var leaseTs, queuedTs []repairTarget
	for _, t := range d.targets {
		if t.queued() {
			queuedTs = append(queuedTs, t)
		} else {
			leaseTs = append(leaseTs, t)
		}
	}
	if d.agent != "" {
		queuedWhat := "moved with the leases, to the agent named in \"to\""
		if d.action == actForceError {
			queuedWhat = "canceled, each sender getting an error result naming the reason"
		}
		switch {
		case len(leaseTs) > 0 && len(queuedTs) > 0:
			fmt.Fprintf(&b, "[::b]every lease held by %s[::-] (%d) [::b]and the tasks queued for it[::-] (%d): ticked, they are %s\n",
				escapeTags(d.agent), len(leaseTs), len(queuedTs), queuedWhat)
		case len(leaseTs) > 0:
			fmt.Fprintf(&b, "[::b]every lease held by %s[::-] (%d)\n", escapeTags(d.agent), len(leaseTs))
		default:
			fmt.Fprintf(&b, "[::b]every task queued for %s[::-] (%d); it holds no lease\n", escapeTags(d.agent), len(queuedTs))
		}
	}
	c.renderLeaseTargets(&b, d, leaseTs, now)
	c.renderQueuedTargets(&b, d, queuedTs, now)
	switch st := c.status; {
	case st.paused:
		fmt.Fprintf(&b, "[yellow]Paused, %s events held: the panes may be out of date, and a lease may have changed unseen.[-]\n", commas(st.held))
	case st.connSeen && (!st.conn.Live || st.gap != nil):
		b.WriteString("[yellow]Not connected to the daemon: the panes may be out of date, and the repair may not get through.[-]\n")
	}
	d.info.SetText(strings.TrimRight(b.String(), "\n"))
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
	if d.action == actCancelQueued || d.action == actForceError {
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

// renderLeaseTargets describes the leases (or the question) of a dialog.
func (c *Console) renderLeaseTargets(b *strings.Builder, d *repairDialog, ts []repairTarget, now int64) {
	if len(ts) == 0 {
		return
	}
	if len(ts) == 1 && ts[0].waitingOn != "" {
		t := ts[0]
		fmt.Fprintf(b, "[::b]task[::-]       %s  %s\n", t.taskID, escapeTags(orDash(t.kind)))
		fmt.Fprintf(b, "[::b]intent[::-]     %s\n", escapeTags(truncate(oneLine(t.intent), 200)))
		fmt.Fprintf(b, "[::b]question[::-]   %s: %s\n", escapeTags(t.question.Status), escapeTags(truncate(visible(oneLine(contentText(t.question.Content))), 200)))
		fmt.Fprintf(b, "[::b]waiting on[::-] %s for %s   [::b]asked by[::-] %s   [::b]attempt[::-] %d\n", escapeTags(t.waitingOn), formatAge(msAge(now, t.leasedAtMs)), escapeTags(t.leasedTo), t.attempt)
		fmt.Fprintf(b, "[::b]asked under[::-] lease %s\n[gray]The error applies only while the task still waits on this question; its sender receives the error instead of answering.[-]\n", t.leaseID)
	} else if len(ts) == 1 {
		t := ts[0]
		fmt.Fprintf(b, "[::b]task[::-]      %s  %s\n", t.taskID, escapeTags(orDash(t.kind)))
		// Three lines of it at most: the fields below must keep their room.
		fmt.Fprintf(b, "[::b]intent[::-]    %s\n", escapeTags(truncate(oneLine(t.intent), 200)))
		fmt.Fprintf(b, "[::b]leased to[::-] %s   [::b]attempt[::-] %d   [::b]lease age[::-] %s\n", escapeTags(t.leasedTo), t.attempt, formatAge(msAge(now, t.leasedAtMs)))
		fmt.Fprintf(b, "[::b]lease[::-]     %s\n[gray]The repair applies only while this lease is still the current one.[-]\n", t.leaseID)
		if !t.idempotent && d.action == actRequeue {
			b.WriteString("[yellow]unsafe task: requeueing it may run the work twice[-]\n")
		}
	} else {
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

// refreshDialog checks the open dialog's leases against rows that just
// arrived: a lease that changed takes the confirm button of a dialog on
// that one lease away at once; on several, the dialog lists it and its
// repair is left to the guard (refused, and listed in the outcome).
func (c *Console) refreshDialog() {
	d := c.dialog
	if d == nil || d.busy {
		return
	}
	if c.rows != nil && c.rows.version != d.checked {
		d.checked = c.rows.version
		current := make(map[string]*mailbox.QueueEntry, len(d.targets))
		for _, t := range d.targets {
			current[t.taskID] = nil
		}
		for _, es := range [][]mailbox.QueueEntry{c.rows.leases, c.rows.waiting, c.rows.queued} {
			for i := range es {
				if e := &es[i]; current[e.Task.ID] == nil {
					if _, ok := current[e.Task.ID]; ok {
						current[e.Task.ID] = e
					}
				}
			}
		}
		for _, t := range d.targets {
			e := current[t.taskID]
			if t.queued() {
				switch {
				case e != nil && e.State == mailbox.TaskQueued && e.Task.Recipient == t.queuedFor:
				case e != nil && e.State == mailbox.TaskQueued:
					d.changed[t.taskID] = "queued for " + e.Task.Recipient
				case e != nil && e.State == mailbox.TaskInFlight:
					d.changed[t.taskID] = fmt.Sprintf("leased by %s since %s (lease %s, attempt %d)", e.LeasedTo, formatClock(e.LeasedAtMs), mailbox.ShortID(e.LeaseID), e.Attempt)
				case e != nil:
					d.changed[t.taskID] = "waiting on its sender's answer"
				default:
					d.changed[t.taskID] = "no longer queued (finished or canceled)"
				}
				continue
			}
			switch {
			case e != nil && e.State == mailbox.TaskWaiting:
				q := questionOf(&e.Task)
				switch {
				case t.waitingOn != "" && q.LeaseID == t.leaseID:
				case t.waitingOn != "":
					d.changed[t.taskID] = fmt.Sprintf("answered, then asked again under lease %s (attempt %d)", mailbox.ShortID(q.LeaseID), e.Attempt)
				default:
					d.changed[t.taskID] = fmt.Sprintf("no lease: its worker asked %s a question (%s), and it waits on the answer", e.Task.Sender, q.Status)
				}
			case e != nil && e.State == mailbox.TaskInFlight && e.LeaseID == t.leaseID:
			case e != nil && e.State == mailbox.TaskQueued && t.waitingOn == "":
				d.changed[t.taskID] = "no lease: queued for " + e.Task.Recipient + " (requeued)"
			case e != nil && e.State == mailbox.TaskInFlight:
				d.changed[t.taskID] = fmt.Sprintf("lease %s, held by %s since %s (attempt %d)", mailbox.ShortID(e.LeaseID), e.LeasedTo, formatClock(e.LeasedAtMs), e.Attempt)
			case t.waitingOn != "":
				d.changed[t.taskID] = "no longer waiting (answered and queued, finished or canceled)"
			default:
				d.changed[t.taskID] = "no lease (requeued or finished)"
			}
		}
		if len(d.changed) > 0 && len(d.targets) == 1 {
			if i := d.form.GetButtonIndex(d.confirm); i >= 0 {
				d.form.RemoveButton(i)
				if d.form.HasFocus() {
					c.app.SetFocus(d.form) // the focus may have been on it
				}
			}
		}
	}
	c.renderDialogInfo(d)
}

func (c *Console) closeDialog() {
	c.dialog = nil
	c.pages.RemovePage(pageDialog)
	c.focusPane(c.focus)
}

// submitRepair checks the dialog's fields and sends one guarded request per
// lease or queued task off the UI goroutine; the outcome comes back
// through QueueUpdateDraw.
func (c *Console) submitRepair(d *repairDialog) {
	if d.busy || len(d.changed) > 0 && len(d.targets) == 1 {
		return
	}
	field := func(label string) string {
		return strings.TrimSpace(d.form.GetFormItemByLabel(label).(*tview.InputField).GetText())
	}
	refuse := func(label, msg string) {
		d.message.SetText("[red]" + escapeTags(msg) + "[-]")
		d.form.SetFocus(d.form.GetFormItemIndex(label))
		c.app.SetFocus(d.form)
	}
	leases, queued := d.counts()
	if !d.includesQueued() {
		queued = 0
	}
	reason := field("reason")
	if reason == "" {
		refuse("reason", "a reason is required: say why, it goes into the audit history")
		return
	}
	var leaseCmd, queuedCmd mailbox.RepairCommand
	if d.action == actRequeue || d.action == actMoveQueued {
		to := field(toLabel)
		if to == "" && queued > 0 {
			msg := "\"to\" is required: name the agent the queued tasks go to"
			if d.queuedToo != nil {
				msg += fmt.Sprintf(", or untick \"%s\" to requeue only the leases", d.queuedToo.GetLabel())
			}
			refuse(toLabel, msg)
			return
		}
		if to != "" && !c.knowsAgent(to) && d.newAgent != to {
			// A move to an agent nobody has heard of: a typo would send
			// the work where nobody reads it. Say so, offer the close
			// matches, and take a second press as the confirmation.
			d.newAgent = to
			msg := to + " is not an agent the mailbox knows (never registered, heard from, or holding tasks)."
			if close := mailbox.CloseMatches(to, c.agentIDs(), 3); len(close) > 0 {
				msg += " Did you mean " + strings.Join(close, ", ") + "?"
			}
			msg += " Press " + d.confirm + " again to hand the work to this new agent, or change \"to\"."
			d.message.SetText("[yellow]" + escapeTags(msg) + "[-]")
			return
		}
		newAgent := to != "" && d.newAgent == to
		if leases > 0 {
			_, risk := d.form.GetFormItemByLabel("duplicate risk").(*tview.DropDown).GetCurrentOption()
			leaseCmd = mailbox.RepairCommand{Action: mailbox.ActionRequeue, DuplicateRisk: risk, Recipient: to, NewAgent: newAgent}
		}
		queuedCmd = mailbox.RepairCommand{Action: mailbox.ActionMove, Recipient: to, NewAgent: newAgent}
		d.to = to
	} else {
		msg := field("message")
		if msg == "" && leases > 0 {
			refuse("message", "a message is required: it is the error the sender receives")
			return
		}
		leaseCmd = mailbox.RepairCommand{Action: mailbox.ActionForceError, Message: msg}
		queuedCmd = mailbox.RepairCommand{Action: mailbox.ActionCancel, Message: msg}
		if leases > 0 {
			c.lastMessage = msg
		}
	}
	c.lastReason = reason
	d.busy = true
	d.message.SetText("[yellow]sending…[-]")
	var targets []repairTarget
	for _, t := range d.targets {
		if !t.queued() || queued > 0 {
			targets = append(targets, t)
		}
	}
	ctx := c.runCtx
	c.bg.spawn(func() {
		var res repairResults
		for i, t := range targets {
			req := mailbox.RepairRequest{TaskID: t.taskID, Reason: reason, Command: leaseCmd}
			if t.queued() {
				req.Command = queuedCmd
				req.Command.QueuedFor = t.queuedFor
			} else {
				req.Command.LeaseID = t.leaseID
			}
			rctx, cancel := context.WithTimeout(ctx, repairTimeout)
			out, err := c.backend.Repair(rctx, req)
			cancel()
			var appErr *mailbox.Error
			switch {
			case err == nil && t.queued():
				res.repairedQueued++
				res.last = out
			case err == nil:
				res.repaired++
				res.last = out
			case errors.Is(err, mailbox.ErrConflict) && errors.As(err, &appErr):
				res.conflicts = append(res.conflicts, repairConflict{target: t, err: appErr})
			default:
				// The rest stay in the dialog, to be sent again.
				res.failed, res.err, res.rest = t, err, targets[i:]
			}
			if res.err != nil {
				break
			}
		}
		c.app.QueueUpdateDraw(func() { c.repairDone(d, res) })
	})
}

// repairResults is what one press of the confirm button achieved.
type repairResults struct {
	repaired, repairedQueued int
	last                     mailbox.RepairOutcome
	conflicts                []repairConflict
	// err stopped the run at failed; rest are the targets not repaired.
	failed repairTarget
	err    error
	rest   []repairTarget
}

// repairDone reports a repair's outcome; it runs on the UI goroutine. A
// failure keeps the dialog open with everything typed and the error in
// full; otherwise the dialog closes and the outcome is a flash, or a page
// listing every lease or task that had changed.
func (c *Console) repairDone(d *repairDialog, res repairResults) {
	d.busy = false
	d.repaired += res.repaired
	d.repairedQueued += res.repairedQueued
	if res.repaired+res.repairedQueued > 0 {
		d.lastOut = res.last
	}
	d.conflicts = append(d.conflicts, res.conflicts...)
	if res.err != nil {
		what := "repair of " + mailbox.ShortID(res.failed.taskID)
		var appErr *mailbox.Error
		if errors.As(res.err, &appErr) {
			what += " refused: " + appErr.Message
		} else {
			what += " failed: " + res.err.Error()
		}
		var progress string
		if d.repaired+d.repairedQueued > 0 || len(d.conflicts) > 0 {
			progress = d.summary() + "; "
		}
		// What is left to send: the title and the button count only those.
		d.targets = res.rest
		if i := d.form.GetButtonIndex(d.confirm); i >= 0 {
			d.confirm = d.confirmLabel()
			d.form.GetButton(i).SetLabel(d.confirm)
		}
		d.box.SetTitle(d.title())
		c.renderDialogInfo(d)
		if c.dialog == d {
			d.message.SetText("[red]" + escapeTags(progress+what) + "[-]")
			c.app.SetFocus(d.form)
		}
		c.flash(false, what)
		return
	}
	if c.dialog == d {
		c.closeDialog()
	}
	total := d.repaired + d.repairedQueued + len(d.conflicts)
	_, _, to := d.done()
	switch {
	case len(d.conflicts) > 0:
		c.showOutcome(d, total)
	case total == 1 && d.lastOut.Action == mailbox.OutcomeForcedError:
		c.flash(true, "forced error on "+mailbox.ShortID(d.lastOut.TaskID))
	case total == 1 && d.lastOut.Action == mailbox.OutcomeCanceled:
		c.flash(true, "canceled "+mailbox.ShortID(d.lastOut.TaskID)+": its sender gets an error")
	case total == 1 && d.lastOut.Action == mailbox.OutcomeMoved:
		c.flash(true, "moved "+mailbox.ShortID(d.lastOut.TaskID)+to)
	case total == 1:
		c.flash(true, fmt.Sprintf("requeued %s%s (attempt %d)", mailbox.ShortID(d.lastOut.TaskID), to, d.lastOut.Attempt))
	default:
		c.flash(true, d.summary())
	}
}

// summary says what the dialog repaired so far: "requeued 2 leases and
// moved 3 queued tasks to worker-c@local".
func (d *repairDialog) summary() string {
	leaseVerb, queuedVerb, to := d.done()
	var parts []string
	if d.repaired > 0 {
		parts = append(parts, leaseVerb+" "+plural(d.repaired, "lease"))
	}
	if d.repairedQueued > 0 {
		parts = append(parts, queuedVerb+" "+plural(d.repairedQueued, "queued task"))
	}
	if len(parts) == 0 {
		parts = append(parts, leaseVerb+" none")
	}
	out := strings.Join(parts, " and ") + to
	if n := len(d.conflicts); n > 0 {
		out += fmt.Sprintf(", %d had changed", n)
	}
	return out
}

// showOutcome lists the leases and queued tasks whose repair was refused
// because they had changed: what the operator saw against what is now.
func (c *Console) showOutcome(d *repairDialog, total int) {
	var b strings.Builder
	if total == 1 && d.conflicts[0].target.queued() {
		b.WriteString("The task changed since you opened the dialog. Nothing was changed.\n\n")
	} else if total == 1 {
		b.WriteString("The lease changed since you opened the dialog. Nothing was changed.\n\n")
	} else {
		leaseVerb, queuedVerb, to := d.done()
		var what string
		switch leases, queued := d.counts(); {
		case queued == 0 || !d.includesQueued():
			what = fmt.Sprintf("%s %d of %d leases%s", leaseVerb, d.repaired, total, to)
		case leases == 0:
			what = fmt.Sprintf("%s %d of %d queued tasks%s", queuedVerb, d.repairedQueued, total, to)
		default:
			what = fmt.Sprintf("%s %s and %s %s%s, of %d", leaseVerb, plural(d.repaired, "lease"), queuedVerb, plural(d.repairedQueued, "queued task"), to, total)
		}
		fmt.Fprintf(&b, "%s. %d had changed since you marked them; nothing was done to them:\n\n", strings.ToUpper(what[:1])+what[1:], len(d.conflicts))
	}
	for _, cf := range d.conflicts {
		t := cf.target
		det := cf.err.Details
		if t.queued() {
			fmt.Fprintf(&b, "task %s: you saw it queued for %s.\n", mailbox.ShortID(t.taskID), t.queuedFor)
			switch {
			case det != nil && det.ActualRecipient != "":
				fmt.Fprintf(&b, "  It is queued for %s now.\n", det.ActualRecipient)
			case det != nil && det.ActualLeaseID != "":
				fmt.Fprintf(&b, "  It was leased by %s since %s (lease %s, attempt %d).\n", det.LeasedTo, formatClock(det.LeasedAtMs), mailbox.ShortID(det.ActualLeaseID), det.Attempt)
			case det != nil && det.TaskState != "":
				fmt.Fprintf(&b, "  The task is now %s (attempt %d).\n", strings.ReplaceAll(det.TaskState, "_", " "), det.Attempt)
			default:
				b.WriteString("  " + cf.err.Message + "\n")
			}
			continue
		}
		fmt.Fprintf(&b, "task %s: you inspected lease %s (attempt %d, %s).\n", mailbox.ShortID(t.taskID), mailbox.ShortID(t.leaseID), t.attempt, t.leasedTo)
		switch {
		case det != nil && det.ActualLeaseID != "":
			fmt.Fprintf(&b, "  The current lease is %s, held by %s since %s (attempt %d).\n", mailbox.ShortID(det.ActualLeaseID), det.LeasedTo, formatClock(det.LeasedAtMs), det.Attempt)
		case det != nil && det.TaskState != "":
			fmt.Fprintf(&b, "  The task is now %s (attempt %d): it has no lease to repair.\n", strings.ReplaceAll(det.TaskState, "_", " "), det.Attempt)
		default:
			b.WriteString("  " + cf.err.Message + "\n")
		}
	}
	b.WriteString("\nThe panes show the current state.")
	text := tview.NewTextView().SetDynamicColors(true).SetWrap(true).SetWordWrap(true).SetText(escapeTags(b.String()))
	closePage := func() {
		c.pages.RemovePage(pageOutcome)
		c.focusPane(c.focus)
	}
	ok := tview.NewForm().AddButton("OK", closePage)
	ok.SetCancelFunc(closePage)
	ok.SetBorderPadding(0, 0, 1, 1)
	box := tview.NewFlex().SetDirection(tview.FlexRow).AddItem(text, 0, 1, false).AddItem(ok, 1, 0, true)
	what := "the lease"
	if d.conflicts[0].target.queued() {
		what = "the task"
	}
	title := " Lease changed: repair refused "
	if total == 1 && what == "the task" {
		title = " Task changed: repair refused "
	}
	if total > 1 {
		title = fmt.Sprintf(" %d repaired, %d refused: %s had changed ", d.repaired+d.repairedQueued, len(d.conflicts), what)
	}
	box.SetBorder(true).SetTitle(title).SetBorderColor(tcell.ColorRed)
	c.pages.AddPage(pageOutcome, &modal{Primitive: box, size: func(sw, sh int) (int, int) {
		w := min(dialogWidth, sw)
		return w, min(sh, 3+wrappedRows(text.GetText(false), w-2)+1)
	}}, true, true)
	c.app.SetFocus(ok)
	c.flash(false, fmt.Sprintf("%d of %d repairs refused: %s had changed", len(d.conflicts), total, what))
}

// modal centers a primitive on the screen at the size it asks for, never
// larger than the screen, so that an 80x24 terminal shows every field.
type modal struct {
	tview.Primitive
	size func(screenW, screenH int) (w, h int)
}

func (m *modal) Draw(screen tcell.Screen) {
	sw, sh := screen.Size()
	w, h := m.size(sw, sh)
	w, h = min(w, sw), min(h, sh)
	m.SetRect((sw-w)/2, (sh-h)/2, w, h)
	m.Primitive.Draw(screen)
}

// wrappedRows is how many rows text takes wrapped at width.
func wrappedRows(text string, width int) int {
	if text == "" || width <= 0 {
		return 0
	}
	n := 0
	for _, line := range strings.Split(text, "\n") {
		n += max(1, len(tview.WordWrap(line, width)))
	}
	return n
}

// refuseRequeueWaiting is R on the Waiting pane: a task waiting on its
// sender is not requeued (the daemon refuses it: the worker's turn is
// over), so nothing is sent, and the operator is told what does end the
// wait.
func (c *Console) refuseRequeueWaiting() {
	orE := ""
	if c.keys.has(actForceError) {
		orE = ", or E forces an error on it"
	}
	i, ok := c.panes[paneWaiting].selected()
	if !ok {
		c.flash(false, "a task waiting on its sender is not requeued: the sender's reply queues it again"+orE)
		return
	}
	e := &c.rows.waiting[i]
	c.flash(false, fmt.Sprintf("cannot requeue task %s: it waits on %s to answer its worker's question (%s); the reply queues it again%s",
		mailbox.ShortID(e.Task.ID), e.Task.Sender, questionOf(&e.Task).Status, orE))
}
