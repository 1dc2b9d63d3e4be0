package tui

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rivo/tview"

	"github.com/mailroom/mailroom/mailbox"
)

// The repair dialog, built from the kinds of what the operator selected
// or marked (k9s's internal/ui/dialog is the model: the selection is
// captured before the dialog opens).

// repairDialog is an open repair dialog: on one lease or on the marked
// ones, on queued tasks, on questions, or on everything an agent owes.
type repairDialog struct {
	action  actionID
	targets []repairTarget
	// agent is set when the dialog covers everything an agent owes (R or
	// E on the Agents pane): every lease it holds, the tasks queued for
	// it, the questions waiting on its answer and the results waiting for
	// it to drain, each kind with its own decision (choice).
	agent  string
	choice [kindCount]*tview.DropDown
	to     string // the recipient a requeue handed the tasks to, once sent
	// newAgent is the unknown recipient the operator confirmed with the
	// dialog's own "Create new agent" button: the confirm button never
	// confirms one.
	newAgent string
	// unknown is the unknown recipient the dialog last refused; the
	// "Create new agent" button is there while it is.
	unknown string
	box     *tview.Flex
	form    *tview.Form
	info    *tview.TextView
	message *tview.TextView
	confirm string // the confirm button's label
	busy    bool
	// changed holds, by task id, what became of each inspected lease that
	// is no longer current: the dialog says so and offers no confirm.
	changed map[string]string
	// checked is the rows version the targets were last checked against.
	checked uint64
	// done counts what was repaired, by kind; endedHanded the errors of
	// ended questions handed over with the results. They, conflicts and
	// skipped carry over when a failure keeps the dialog open and the
	// operator sends the rest again.
	done        [kindCount]int
	endedHanded int
	conflicts   []repairConflict
	lastOut     mailbox.RepairOutcome
	// offered is the reason the dialog was opened with, from the last
	// repair of the same kind (shown as such).
	offered string
}

// repairConflict is a lease that had changed when its repair arrived.
type repairConflict struct {
	target repairTarget
	err    *mailbox.Error
}

// createLabel is the button that confirms an agent the mailbox does not
// know: never the confirm button, never focused by the dialog.
const createLabel = "Create new agent"

// openRepair opens the requeue or force-error dialog for the marked leases,
// or the selected one when none is marked; on the Agents pane, for
// everything the selected agent owes; on the Waiting pane (force error
// only), for the marked questions or the selected one; on the Queue pane,
// the move or cancel dialog for the marked queued tasks, or the selected
// one.
func (c *Console) openRepair(act actionID) {
	if c.rows == nil {
		c.flash(false, "nothing to repair yet: the console has not received the mailbox")
		return
	}
	targets, agent, ok := c.repairTargets()
	if !ok {
		return
	}
	d := &repairDialog{action: act, agent: agent, targets: targets, form: tview.NewForm(), changed: map[string]string{},
		info:    tview.NewTextView().SetDynamicColors(true).SetWrap(true).SetWordWrap(true),
		message: tview.NewTextView().SetDynamicColors(true).SetWrap(true).SetWordWrap(true)}
	d.checked = c.rows.version
	c.dialog = d
	d.form.SetBorderPadding(0, 0, 1, 1)
	focus := c.addRepairFields(d)
	c.addRepairButtons(d)
	// Typing the reason is the deliberate act, so the reason has the
	// focus; Enter moves on, and Enter on the confirm button repairs.
	d.form.SetFocus(d.form.GetFormItemIndex(focus))
	c.renderDialogInfo(d)
	if d.offered != "" {
		d.message.SetText("[yellow]The reason is offered again from your last " + escapeTags(repairKey(d)) + ": edit it if this one has another.[-]")
	}
	c.showRepairDialog(d)
}

// repairTargets captures what the focused pane's repair acts on: on the
// Agents pane everything the selected agent owes (agent is set), else the
// marked rows or the selected one. It flashes why when there is nothing.
func (c *Console) repairTargets() (targets []repairTarget, agent string, ok bool) {
	switch c.focus {
	case paneWaiting:
		targets, ok = c.pickTargets(paneWaiting, c.rows.waiting, "no waiting task selected")
	case paneAgents:
		i, sel := c.panes[paneAgents].selected()
		if !sel {
			c.flash(false, "no agent selected")
			return nil, "", false
		}
		agent = c.rows.agents[i].Agent
		targets = c.rows.debtOf(agent)
		if len(targets) == 0 {
			c.flash(false, agent+" owes nothing: it holds no lease, has no task queued, no question waits on its answer and no result waits for it")
			return nil, "", false
		}
		ok = true
	case paneQueue:
		targets, ok = c.pickTargets(paneQueue, c.rows.queued, "no queued task selected")
	default:
		targets, ok = c.pickTargets(paneLeases, c.rows.leases, "no lease selected")
	}
	return targets, agent, ok
}

// pickTargets are pane p's marked rows of es, or its selected one when
// none is marked; none is flashed when there is neither.
func (c *Console) pickTargets(p paneID, es []mailbox.QueueEntry, none string) ([]repairTarget, bool) {
	pn := c.panes[p]
	idx := pn.marked()
	if len(idx) == 0 {
		i, ok := pn.selected()
		if !ok {
			c.flash(false, none)
			return nil, false
		}
		idx = []int{i}
	}
	targets := make([]repairTarget, 0, len(idx))
	for _, i := range idx {
		targets = append(targets, targetOf(&es[i]))
	}
	return targets, true
}

// addRepairFields adds the dialog's fields, as its targets' kinds and the
// key pressed need them, and returns the label of the field to focus.
func (c *Console) addRepairFields(d *repairDialog) (focus string) {
	n := d.countKinds()
	focus = "reason"
	switch {
	case d.agent != "":
		// Everything the agent owes, a decision for each kind: R hands
		// it all to the agent in "to", E ends what can be ended. "to"
		// comes just before the reason, as in the other dialogs.
		d.addDebtChoices(n)
		if n[kindLease] > 0 {
			d.addRisk()
		}
		c.addTo(d)
		d.form.AddInputField("reason", "", fieldWidth, nil, nil)
		if d.anyNeedsTo() {
			focus = toLabel // first, as a shell's command: where it goes
		}
	case d.action == actRequeue || d.action == actMoveQueued:
		if n[kindLease] > 0 {
			d.addRisk()
		}
		// Before the reason, so reason Enter Enter still repairs; Shift-Tab
		// from the reason reaches it.
		c.addTo(d)
		d.form.AddInputField("reason", c.offerReason(d), fieldWidth, nil, nil)
		if d.action == actMoveQueued {
			focus = toLabel // a move has no default recipient
		}
	default:
		c.addErrorFields(d, n)
	}
	return focus
}

// addDebtChoices adds the Agents dialog's choice for each kind the agent
// owes, preset as the key pressed: R hands everything on, E ends what
// can be ended and leaves the results.
func (d *repairDialog) addDebtChoices(n [kindCount]int) {
	for k := range kindCount {
		if n[k] == 0 {
			continue
		}
		choices := debtChoices[k]
		opts := make([]string, len(choices))
		for i, ch := range choices {
			opts[i] = decisionText[ch].option
		}
		initial := 0
		if d.action == actForceError {
			initial = len(choices) - 1 // leave
			if k != kindResult {
				initial = 1
			}
		}
		label := plural(n[k], kindNoun[k])
		d.form.AddDropDown(label, opts, initial, nil)
		d.choice[k] = d.form.GetFormItemByLabel(label).(*tview.DropDown)
	}
}

// addRisk adds the duplicate risk the operator accepts for a requeue.
// idempotent is offered only when every task declared it; otherwise the
// operator has to accept that the work may run twice.
func (d *repairDialog) addRisk() {
	var risks []string
	if !slices.ContainsFunc(d.targets, func(t repairTarget) bool { return t.what() == kindLease && !t.idempotent }) {
		risks = append(risks, mailbox.RiskIdempotent)
	}
	risks = append(risks, mailbox.RiskOperatorAccepted)
	d.form.AddDropDown("duplicate risk", risks, 0, nil)
}

// addTo adds the "to" field, which completes the known agents.
func (c *Console) addTo(d *repairDialog) {
	d.form.AddInputField(toLabel, "", fieldWidth, nil, nil)
	to := d.form.GetFormItemByLabel(toLabel).(*tview.InputField)
	to.SetAutocompleteFunc(c.agentCompletions).
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
}

// addErrorFields adds the reason and the message of a forced error or a
// cancel: the error the sender receives.
func (c *Console) addErrorFields(d *repairDialog, n [kindCount]int) {
	d.form.AddInputField("reason", c.offerReason(d), fieldWidth, nil, nil)
	msg := ""
	if n[kindLease] > 0 && c.lastRepair.key == repairKey(d) {
		msg = c.lastRepair.message
	}
	d.form.AddInputField("message", msg, fieldWidth, nil, nil)
	switch {
	case n[kindLease] > 0:
	case n[kindQuestion] > 0:
		d.form.GetFormItemByLabel("message").(*tview.InputField).SetPlaceholder("(optional) the sender's error; empty: the reason")
	default:
		d.form.GetFormItemByLabel("message").(*tview.InputField).SetPlaceholder("(optional) the sender's error; empty: one naming the reason")
	}
}

// addRepairButtons adds the confirm and close buttons, and keeps the
// labels and the description in step with "to" and the choices.
func (c *Console) addRepairButtons(d *repairDialog) {
	if to, ok := d.form.GetFormItemByLabel(toLabel).(*tview.InputField); ok {
		to.SetPlaceholder(d.toPlaceholder())
		if d.agent != "" {
			// The description names the agent that takes the work.
			to.SetChangedFunc(func(string) {
				if d.info != nil && d.form.GetButtonCount() > 0 {
					c.renderDialogInfo(d)
				}
			})
		}
	}
	d.confirm = d.confirmLabel()
	d.form.AddButton(d.confirm, func() { c.submitRepair(d) })
	for k := range kindCount {
		if dd := d.choice[k]; dd != nil {
			// Whatever is chosen, the title, the button and "to" say it.
			dd.SetSelectedFunc(func(string, int) { c.relabel(d) })
		}
	}
	closeLabel := "Cancel"
	if d.action == actCancelQueued {
		closeLabel = "Close" // "Cancel" is what the confirm button does
	}
	d.form.AddButton(closeLabel, c.closeDialog)
	d.form.SetCancelFunc(func() {
		// tview's drop-down reports Esc on its open list as the end of
		// the form, then closes the list: the operator meant only the
		// list, so the dialog and what was typed stay.
		for i := range d.form.GetFormItemCount() {
			if dd, ok := d.form.GetFormItem(i).(*tview.DropDown); ok && dd.IsOpen() {
				return
			}
		}
		c.closeDialog()
	})
}

// showRepairDialog puts the dialog in front: the description, the form
// and the message, sized to the screen.
func (c *Console) showRepairDialog(d *repairDialog) {
	formRows := 2*d.form.GetFormItemCount() + 1
	if d.agent != "" {
		// A field a row, so that everything the agent owes shows at
		// 80x24 beside its description: the items, a blank, the buttons.
		d.form.SetItemPadding(0)
		formRows = d.form.GetFormItemCount() + 2
	}
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

// repairMemory is the last repair's reason and message, and which kind of
// repair it was: the next dialog of the same kind offers them again, and
// says so; another kind of repair starts empty.
type repairMemory struct {
	key, reason, message string
}

// repairKey names a dialog's kind of repair: "requeue of leases".
func repairKey(d *repairDialog) string {
	if d.agent != "" {
		return "settlement of an agent"
	}
	var kinds []string
	for k, n := range d.countKinds() {
		if n > 0 {
			kinds = append(kinds, decisionText[d.decisionOf(debtKind(k))].button+" of "+kindNoun[k]+"s")
		}
	}
	return strings.Join(kinds, ", ")
}

// offerReason is the reason a dialog opens with: the last repair's, when
// it was of the same kind (the dialog says so), else none.
func (c *Console) offerReason(d *repairDialog) string {
	if c.lastRepair.reason != "" && c.lastRepair.key == repairKey(d) {
		d.offered = c.lastRepair.reason
	}
	return d.offered
}

// relabel says a changed choice in the title, on the button and in the
// "to" field's placeholder.
func (c *Console) relabel(d *repairDialog) {
	if i := d.form.GetButtonIndex(d.confirm); i >= 0 {
		d.confirm = d.confirmLabel()
		d.form.GetButton(i).SetLabel(d.confirm)
	}
	if to, ok := d.form.GetFormItemByLabel(toLabel).(*tview.InputField); ok {
		to.SetPlaceholder(d.toPlaceholder())
	}
	if d.box != nil {
		d.box.SetTitle(d.title())
	}
	c.renderDialogInfo(d)
}

func (c *Console) closeDialog() {
	c.dialog = nil
	c.pages.RemovePage(pageDialog)
	c.focusPane(c.focus)
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
