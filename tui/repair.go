package tui

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
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
type repairTarget struct {
	taskID, intent, kind string
	leasedTo, leaseID    string
	attempt              int
	leasedAtMs           int64
	idempotent           bool
	waitingOn            string
	question             mailbox.Turn
}

func targetOf(e *mailbox.QueueEntry) repairTarget {
	t := repairTarget{taskID: e.Task.ID, intent: e.Task.IntentText, kind: e.Task.Kind(), leasedTo: e.LeasedTo,
		leaseID: e.LeaseID, attempt: e.Attempt, leasedAtMs: e.LeasedAtMs, idempotent: e.Task.Idempotent()}
	if e.State == mailbox.TaskWaiting {
		t.question = questionOf(&e.Task)
		t.waitingOn, t.leasedTo, t.leaseID, t.leasedAtMs = e.Task.Sender, askedBy(e), t.question.LeaseID, e.WaitingSinceMs
	}
	return t
}

// repairDialog is an open requeue or force-error dialog, on one lease or on
// the marked ones.
type repairDialog struct {
	action  actionID
	targets []repairTarget
	// agent is set when the dialog covers every lease an agent holds (R on
	// the Agents pane).
	agent string
	to    string // the recipient a requeue handed the tasks to, once sent
	// newAgent is the unknown recipient the operator was warned of: a
	// second press of the confirm button with it still in "to" hands the
	// tasks to it as a new agent.
	newAgent string
	box      *tview.Flex
	form     *tview.Form
	info     *tview.TextView
	message  *tview.TextView
	confirm  string // the confirm button's label
	busy     bool
	// changed holds, by task id, what became of each inspected lease that
	// is no longer current: the dialog says so and offers no confirm.
	changed map[string]string
	// checked is the rows version the targets were last checked against.
	checked uint64
	// repaired and conflicts carry over when a failure keeps the dialog
	// open and the operator sends the rest again.
	repaired  int
	conflicts []repairConflict
	lastOut   mailbox.RepairOutcome
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
// or the selected one when none is marked; on the Agents pane, for every
// lease the selected agent holds; on the Waiting pane (force error only),
// for the selected task's question.
func (c *Console) openRepair(act actionID) {
	if c.rows == nil {
		c.flash(false, "nothing to repair yet: the console has not received the mailbox")
		return
	}
	var idx []int
	var agent string
	es := c.rows.leases
	if c.focus == paneWaiting {
		i, ok := c.panes[paneWaiting].selected()
		if !ok {
			c.flash(false, "no waiting task selected")
			return
		}
		es, idx = c.rows.waiting, []int{i}
	} else if c.focus == paneAgents {
		i, ok := c.panes[paneAgents].selected()
		if !ok {
			c.flash(false, "no agent selected")
			return
		}
		agent = c.rows.agents[i].Agent
		for j := range c.rows.leases {
			if c.rows.leases[j].LeasedTo == agent {
				idx = append(idx, j)
			}
		}
		if len(idx) == 0 {
			c.flash(false, agent+" holds no lease")
			return
		}
	} else {
		lp := c.panes[paneLeases]
		idx = lp.marked()
		if len(idx) == 0 {
			i, ok := lp.selected()
			if !ok {
				c.flash(false, "no lease selected")
				return
			}
			idx = []int{i}
		}
	}
	d := &repairDialog{action: act, agent: agent, form: tview.NewForm(), changed: map[string]string{},
		info:    tview.NewTextView().SetDynamicColors(true).SetWrap(true).SetWordWrap(true),
		message: tview.NewTextView().SetDynamicColors(true).SetWrap(true).SetWordWrap(true)}
	for _, i := range idx {
		d.targets = append(d.targets, targetOf(&es[i]))
	}
	d.checked = c.rows.version
	c.dialog = d

	d.form.SetBorderPadding(0, 0, 1, 1)
	if act == actRequeue {
		// idempotent is offered only when every task declared it; otherwise
		// the operator has to accept that the work may run twice.
		var risks []string
		if !slices.ContainsFunc(d.targets, func(t repairTarget) bool { return !t.idempotent }) {
			risks = append(risks, mailbox.RiskIdempotent)
		}
		risks = append(risks, mailbox.RiskOperatorAccepted)
		d.form.AddDropDown("duplicate risk", risks, 0, nil)
		// Before the reason, so reason Enter Enter still repairs; Shift-Tab
		// from the reason reaches it.
		d.form.AddInputField(toLabel, "", fieldWidth, nil, nil)
		d.form.GetFormItemByLabel(toLabel).(*tview.InputField).SetPlaceholder("(optional) another recipient; empty: the same").
			SetAutocompleteFunc(c.agentCompletions)
		d.form.AddInputField("reason", c.lastReason, fieldWidth, nil, nil)
	} else {
		d.form.AddInputField("reason", c.lastReason, fieldWidth, nil, nil)
		d.form.AddInputField("message", c.lastMessage, fieldWidth, nil, nil)
	}
	d.confirm = d.confirmLabel()
	d.form.AddButton(d.confirm, func() { c.submitRepair(d) })
	d.form.AddButton("Cancel", c.closeDialog)
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
	// Enter moves on, and Enter on the confirm button repairs.
	d.form.SetFocus(d.form.GetFormItemIndex("reason"))
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

// title and confirmLabel say what the dialog does to how many leases.
// done says what the dialog's repair did, "requeued" or "forced an error
// on", and " to AGENT" when it moved the tasks ("" otherwise).
func (d *repairDialog) done() (verb, to string) {
	verb = "requeued"
	if d.action == actForceError {
		verb = "forced an error on"
	}
	if d.to != "" {
		to = " to " + d.to
	}
	return verb, to
}

func (d *repairDialog) title() string {
	what := " Requeue "
	if d.action == actForceError {
		what = " Force an error result "
	}
	if len(d.targets) == 1 {
		if d.action == actRequeue {
			return what + "task "
		}
		return what
	}
	return fmt.Sprintf("%son %d leases ", what, len(d.targets))
}

func (d *repairDialog) confirmLabel() string {
	noun := "Requeue"
	if d.action == actForceError {
		noun = "Force error"
	}
	if len(d.targets) == 1 {
		return noun
	}
	return fmt.Sprintf("%s %d", noun, len(d.targets))
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
		case len(d.targets) == 1:
			b.WriteString("[red::b]The lease changed while this dialog was open: nothing to repair.")
		default:
			// The rest are still the operator's to repair: each repair is
			// guarded by its own lease, so the changed ones are refused
			// by the daemon and listed, as the CLI's bulk repair does.
			colour = "yellow"
			fmt.Fprintf(&b, "[yellow::b]%d of these %d leases changed while this dialog was open: they will be left alone and listed; the other %d are repaired.",
				len(d.changed), len(d.targets), len(d.targets)-len(d.changed))
		}
		b.WriteString("[-::-]\n")
		for _, t := range d.targets {
			if what, ok := d.changed[t.taskID]; ok {
				fmt.Fprintf(&b, "[%s]task %s: you inspected lease %s (attempt %d, %s)\n  now: %s[-]\n", colour, mailbox.ShortID(t.taskID),
					mailbox.ShortID(t.leaseID), t.attempt, escapeTags(t.leasedTo), escapeTags(what))
			}
		}
	}
	if d.agent != "" {
		fmt.Fprintf(&b, "[::b]every lease held by %s[::-] (%d)\n", escapeTags(d.agent), len(d.targets))
	}
	if len(d.targets) == 1 && d.targets[0].waitingOn != "" {
		t := d.targets[0]
		fmt.Fprintf(&b, "[::b]task[::-]       %s  %s\n", t.taskID, escapeTags(orDash(t.kind)))
		fmt.Fprintf(&b, "[::b]intent[::-]     %s\n", escapeTags(truncate(oneLine(t.intent), 200)))
		fmt.Fprintf(&b, "[::b]question[::-]   %s: %s\n", escapeTags(t.question.Status), escapeTags(truncate(visible(oneLine(contentText(t.question.Content))), 200)))
		fmt.Fprintf(&b, "[::b]waiting on[::-] %s for %s   [::b]asked by[::-] %s   [::b]attempt[::-] %d\n", escapeTags(t.waitingOn), formatAge(msAge(now, t.leasedAtMs)), escapeTags(t.leasedTo), t.attempt)
		fmt.Fprintf(&b, "[::b]asked under[::-] lease %s\n[gray]The error applies only while the task still waits on this question; its sender receives the error instead of answering.[-]\n", t.leaseID)
	} else if len(d.targets) == 1 {
		t := d.targets[0]
		fmt.Fprintf(&b, "[::b]task[::-]      %s  %s\n", t.taskID, escapeTags(orDash(t.kind)))
		// Three lines of it at most: the fields below must keep their room.
		fmt.Fprintf(&b, "[::b]intent[::-]    %s\n", escapeTags(truncate(oneLine(t.intent), 200)))
		fmt.Fprintf(&b, "[::b]leased to[::-] %s   [::b]attempt[::-] %d   [::b]lease age[::-] %s\n", escapeTags(t.leasedTo), t.attempt, formatAge(msAge(now, t.leasedAtMs)))
		fmt.Fprintf(&b, "[::b]lease[::-]     %s\n[gray]The repair applies only while this lease is still the current one.[-]\n", t.leaseID)
		if !t.idempotent && d.action == actRequeue {
			b.WriteString("[yellow]unsafe task: requeueing it may run the work twice[-]\n")
		}
	} else {
		holders := map[string]int{}
		var names []string
		oldest, unsafe := d.targets[0].leasedAtMs, 0
		for _, t := range d.targets {
			if holders[t.leasedTo] == 0 {
				names = append(names, t.leasedTo)
			}
			holders[t.leasedTo]++
			oldest = min(oldest, t.leasedAtMs)
			if !t.idempotent {
				unsafe++
			}
		}
		slices.SortStableFunc(names, func(a, b string) int { return holders[b] - holders[a] })
		var hs []string
		for _, n := range names {
			hs = append(hs, fmt.Sprintf("%s (%d)", escapeTags(n), holders[n]))
		}
		fmt.Fprintf(&b, "[::b]%d leases[::-], the oldest held %s\n", len(d.targets), formatAge(msAge(now, oldest)))
		fmt.Fprintf(&b, "[::b]holders[::-] %s\n", strings.Join(hs, ", "))
		b.WriteString("[gray]Each repair applies only while its lease is still the one you marked; the others are left as they are and listed.[-]\n")
		if unsafe > 0 && d.action == actRequeue {
			fmt.Fprintf(&b, "[yellow]%d of %d tasks are unsafe: requeueing them may run their work twice[-]\n", unsafe, len(d.targets))
		}
	}
	switch st := c.status; {
	case st.paused:
		fmt.Fprintf(&b, "[yellow]Paused, %s events held: the panes may be out of date, and a lease may have changed unseen.[-]\n", commas(st.held))
	case st.connSeen && (!st.conn.Live || st.gap != nil):
		b.WriteString("[yellow]Not connected to the daemon: the panes may be out of date, and the repair may not get through.[-]\n")
	}
	d.info.SetText(strings.TrimRight(b.String(), "\n"))
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
		for _, es := range [][]mailbox.QueueEntry{c.rows.leases, c.rows.waiting} {
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
			case e != nil && e.LeaseID == t.leaseID:
			case e != nil:
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
// lease off the UI goroutine; the outcome comes back through
// QueueUpdateDraw.
func (c *Console) submitRepair(d *repairDialog) {
	if d.busy || len(d.changed) > 0 && len(d.targets) == 1 {
		return
	}
	field := func(label string) string {
		return strings.TrimSpace(d.form.GetFormItemByLabel(label).(*tview.InputField).GetText())
	}
	refuse := func(label, msg string) {
		d.message.SetText("[red]" + msg + "[-]")
		d.form.SetFocus(d.form.GetFormItemIndex(label))
		c.app.SetFocus(d.form)
	}
	reason := field("reason")
	if reason == "" {
		refuse("reason", "a reason is required: say why, it goes into the audit history")
		return
	}
	var command mailbox.RepairCommand
	if d.action == actRequeue {
		_, risk := d.form.GetFormItemByLabel("duplicate risk").(*tview.DropDown).GetCurrentOption()
		to := field(toLabel)
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
		command = mailbox.RepairCommand{Action: mailbox.ActionRequeue, DuplicateRisk: risk, Recipient: to, NewAgent: to != "" && d.newAgent == to}
		d.to = command.Recipient
	} else {
		msg := field("message")
		if msg == "" {
			refuse("message", "a message is required: it is the error the sender receives")
			return
		}
		command = mailbox.RepairCommand{Action: mailbox.ActionForceError, Message: msg}
		c.lastMessage = msg
	}
	c.lastReason = reason
	d.busy = true
	d.message.SetText("[yellow]sending…[-]")
	targets := slices.Clone(d.targets)
	ctx := c.runCtx
	c.bg.spawn(func() {
		var res repairResults
		for i, t := range targets {
			req := mailbox.RepairRequest{TaskID: t.taskID, Reason: reason, Command: command}
			req.Command.LeaseID = t.leaseID
			rctx, cancel := context.WithTimeout(ctx, repairTimeout)
			out, err := c.backend.Repair(rctx, req)
			cancel()
			var appErr *mailbox.Error
			switch {
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
	repaired  int
	last      mailbox.RepairOutcome
	conflicts []repairConflict
	// err stopped the run at failed; rest are the leases not repaired.
	failed repairTarget
	err    error
	rest   []repairTarget
}

// repairDone reports a repair's outcome; it runs on the UI goroutine. A
// failure keeps the dialog open with everything typed and the error in
// full; otherwise the dialog closes and the outcome is a flash, or a page
// listing every lease that had changed.
func (c *Console) repairDone(d *repairDialog, res repairResults) {
	d.busy = false
	d.repaired += res.repaired
	if res.repaired > 0 {
		d.lastOut = res.last
	}
	d.conflicts = append(d.conflicts, res.conflicts...)
	verb, to := d.done()
	if res.err != nil {
		what := "repair of " + mailbox.ShortID(res.failed.taskID)
		var appErr *mailbox.Error
		if errors.As(res.err, &appErr) {
			what += " refused: " + appErr.Message
		} else {
			what += " failed: " + res.err.Error()
		}
		var progress string
		if d.repaired > 0 || len(d.conflicts) > 0 {
			progress = fmt.Sprintf("%s %d, %d had changed; ", verb, d.repaired, len(d.conflicts))
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
	total := d.repaired + len(d.conflicts)
	switch {
	case len(d.conflicts) > 0:
		c.showOutcome(d, total)
	case total == 1 && d.action == actForceError:
		c.flash(true, "forced error on "+mailbox.ShortID(d.lastOut.TaskID))
	case total == 1:
		c.flash(true, fmt.Sprintf("requeued %s%s (attempt %d)", mailbox.ShortID(d.lastOut.TaskID), to, d.lastOut.Attempt))
	default:
		c.flash(true, fmt.Sprintf("%s %d leases%s", verb, d.repaired, to))
	}
}

// showOutcome lists the leases whose repair was refused because they had
// changed: the lease the operator inspected against the current one.
func (c *Console) showOutcome(d *repairDialog, total int) {
	var b strings.Builder
	if total == 1 {
		b.WriteString("The lease changed since you opened the dialog. Nothing was changed.\n\n")
	} else {
		verb, to := d.done()
		fmt.Fprintf(&b, "%s %d of %d leases%s. %d had changed since you marked them; nothing was done to them:\n\n", strings.ToUpper(verb[:1])+verb[1:], d.repaired, total, to, len(d.conflicts))
	}
	for _, cf := range d.conflicts {
		t := cf.target
		fmt.Fprintf(&b, "task %s: you inspected lease %s (attempt %d, %s).\n", mailbox.ShortID(t.taskID), mailbox.ShortID(t.leaseID), t.attempt, t.leasedTo)
		switch det := cf.err.Details; {
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
	title := " Lease changed: repair refused "
	if total > 1 {
		title = fmt.Sprintf(" %d repaired, %d refused: the lease had changed ", d.repaired, len(d.conflicts))
	}
	box.SetBorder(true).SetTitle(title).SetBorderColor(tcell.ColorRed)
	c.pages.AddPage(pageOutcome, &modal{Primitive: box, size: func(sw, sh int) (int, int) {
		w := min(dialogWidth, sw)
		return w, min(sh, 3+wrappedRows(text.GetText(false), w-2)+1)
	}}, true, true)
	c.app.SetFocus(ok)
	c.flash(false, fmt.Sprintf("%d of %d repairs refused: the lease had changed", len(d.conflicts), total))
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
