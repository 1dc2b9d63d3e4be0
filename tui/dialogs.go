package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/gdamore/tcell/v2"
	"github.com/mailroom/mailroom/mailbox"
	"github.com/rivo/tview"
)

// repairTarget is the lease the operator inspected, captured when the dialog
// opens: the request guards on exactly this lease id, whatever the panes show
// by the time the operator submits.
type repairTarget struct {
	taskID, intent, kind string
	leasedTo, leaseID    string
	attempt              int
	leasedAtMs           int64
	idempotent           bool
}

// repairDialog is an open requeue or force-error dialog.
type repairDialog struct {
	action  actionID
	target  repairTarget
	form    *tview.Form
	message *tview.TextView
	busy    bool
}

// openRepair opens the requeue or force-error dialog for the selected lease.
func (c *Console) openRepair(act actionID) {
	lp := c.panes[paneLeases]
	i, ok := lp.selected()
	if !ok {
		c.flash(false, "no lease selected")
		return
	}
	e := c.rows.leases[i]
	t := repairTarget{taskID: e.Task.ID, intent: e.Task.IntentText, kind: e.Task.Kind(), leasedTo: e.LeasedTo,
		leaseID: e.LeaseID, attempt: e.Attempt, leasedAtMs: e.LeasedAtMs, idempotent: e.Task.Idempotent()}
	d := &repairDialog{action: act, target: t, form: tview.NewForm(), message: tview.NewTextView().SetDynamicColors(true)}
	c.dialog = d

	title := " Requeue task "
	submit := "Requeue"
	var risks []string
	if act == actRequeue {
		// idempotent is offered only when the task declared it; otherwise the
		// operator has to accept that the work may run twice.
		if t.idempotent {
			risks = append(risks, mailbox.RiskIdempotent)
		}
		risks = append(risks, mailbox.RiskOperatorAccepted)
		d.form.AddDropDown("duplicate risk", risks, 0, nil)
		d.form.AddInputField("reason", "", 50, nil, nil)
	} else {
		title, submit = " Force an error result ", "Force error"
		d.form.AddInputField("reason", "", 50, nil, nil)
		d.form.AddInputField("message", "", 50, nil, nil)
	}
	d.form.AddButton("Cancel", c.closeDialog)
	d.form.AddButton(submit, func() { c.submitRepair(d) })
	d.form.SetCancelFunc(func() {
		// tview's drop-down reports Esc on its open list as the end of
		// the form, then closes the list: the operator meant only the
		// list, so the dialog and what was typed stay.
		if dd, ok := d.form.GetFormItemByLabel("duplicate risk").(*tview.DropDown); ok && dd.IsOpen() {
			return
		}
		c.closeDialog()
	})
	// Cancel has the focus first: Enter right after R must not repair.
	d.form.SetFocus(d.form.GetFormItemCount())

	info := tview.NewTextView().SetDynamicColors(true).SetText(c.targetText(t))
	box := tview.NewFlex().SetDirection(tview.FlexRow).
		AddItem(info, 7, 0, false).
		AddItem(d.form, 0, 1, true).
		AddItem(d.message, 1, 0, false)
	box.SetBorder(true).SetTitle(title)
	c.pages.AddPage(pageDialog, centered(box, 90, 18), true, true)
	c.app.SetFocus(d.form)
}

// targetText describes the inspected lease at the top of a dialog.
func (c *Console) targetText(t repairTarget) string {
	now := c.opts.Now().UnixMilli()
	var b strings.Builder
	fmt.Fprintf(&b, "[::b]task[::-]      %s  %s\n", t.taskID, escapeTags(orDash(t.kind)))
	fmt.Fprintf(&b, "[::b]intent[::-]    %s\n", escapeTags(oneLine(t.intent)))
	fmt.Fprintf(&b, "[::b]leased to[::-] %s   [::b]attempt[::-] %d   [::b]lease age[::-] %s\n", escapeTags(t.leasedTo), t.attempt, formatAge(msAge(now, t.leasedAtMs)))
	fmt.Fprintf(&b, "[::b]lease[::-]     %s\n[gray]The repair applies only while this lease is still the current one.[-]\n", t.leaseID)
	if !t.idempotent && c.dialog != nil && c.dialog.action == actRequeue {
		b.WriteString("[yellow]unsafe task: requeueing it may run the work twice[-]\n")
	}
	return b.String()
}

func (c *Console) closeDialog() {
	c.dialog = nil
	c.pages.RemovePage(pageDialog)
	c.focusPane(c.focus)
}

// submitRepair checks the dialog's fields and sends the guarded request off
// the UI goroutine; the outcome comes back through QueueUpdateDraw.
func (c *Console) submitRepair(d *repairDialog) {
	if d.busy {
		return
	}
	field := func(label string) string {
		return strings.TrimSpace(d.form.GetFormItemByLabel(label).(*tview.InputField).GetText())
	}
	req := mailbox.RepairRequest{TaskID: d.target.taskID, Reason: field("reason")}
	if req.Reason == "" {
		d.message.SetText("[red]a reason is required: say why, it goes into the audit history[-]")
		d.form.SetFocus(d.form.GetFormItemIndex("reason"))
		c.app.SetFocus(d.form)
		return
	}
	if d.action == actRequeue {
		_, risk := d.form.GetFormItemByLabel("duplicate risk").(*tview.DropDown).GetCurrentOption()
		req.Command = mailbox.RepairCommand{Action: mailbox.ActionRequeue, LeaseID: d.target.leaseID, DuplicateRisk: risk}
	} else {
		msg := field("message")
		if msg == "" {
			d.message.SetText("[red]a message is required: it is the error the sender receives[-]")
			d.form.SetFocus(d.form.GetFormItemIndex("message"))
			c.app.SetFocus(d.form)
			return
		}
		req.Command = mailbox.RepairCommand{Action: mailbox.ActionForceError, LeaseID: d.target.leaseID, Message: msg}
	}
	d.busy = true
	d.message.SetText("[yellow]sending…[-]")
	ctx := c.runCtx
	c.bg.spawn(func() {
		rctx, cancel := context.WithTimeout(ctx, repairTimeout)
		out, err := c.backend.Repair(rctx, req)
		cancel()
		c.app.QueueUpdateDraw(func() { c.repairDone(d, out, err) })
	})
}

// repairDone reports a repair's outcome; it runs on the UI goroutine.
func (c *Console) repairDone(d *repairDialog, out mailbox.RepairOutcome, err error) {
	if c.dialog == d {
		c.closeDialog()
	}
	short := mailbox.ShortID(d.target.taskID)
	var conflict *mailbox.Error
	switch {
	case err == nil && out.Action == mailbox.OutcomeForcedError:
		c.flash(true, "forced error on "+short)
	case err == nil:
		c.flash(true, fmt.Sprintf("requeued %s (attempt %d)", short, out.Attempt))
	case errors.Is(err, mailbox.ErrConflict) && errors.As(err, &conflict):
		c.showConflict(d.target, conflict)
	default:
		var appErr *mailbox.Error
		if errors.As(err, &appErr) {
			c.flash(false, "repair of "+short+" refused: "+appErr.Message)
		} else {
			c.flash(false, "repair of "+short+" failed: "+err.Error())
		}
	}
	c.renderHeader()
}

// showConflict explains a refused repair: the lease the operator inspected
// is no longer the current one, and nothing was changed.
func (c *Console) showConflict(t repairTarget, e *mailbox.Error) {
	var b strings.Builder
	b.WriteString("The lease changed since you opened the dialog. Nothing was changed.\n\n")
	fmt.Fprintf(&b, "You inspected lease %s (attempt %d, leased to %s).\n", mailbox.ShortID(t.leaseID), t.attempt, t.leasedTo)
	switch d := e.Details; {
	case d != nil && d.ActualLeaseID != "":
		fmt.Fprintf(&b, "The current lease is %s, held by %s since %s (attempt %d).", mailbox.ShortID(d.ActualLeaseID), d.LeasedTo, formatClock(d.LeasedAtMs), d.Attempt)
	case d != nil && d.TaskState != "":
		fmt.Fprintf(&b, "The task is now %s (attempt %d): it has no lease to repair.", strings.ReplaceAll(d.TaskState, "_", " "), d.Attempt)
	default:
		b.WriteString(e.Message)
	}
	b.WriteString("\n\nThe panes show the current state.")
	text := tview.NewTextView().SetDynamicColors(true).SetText(escapeTags(b.String()))
	ok := tview.NewForm().AddButton("OK", func() {
		c.pages.RemovePage(pageConflict)
		c.focusPane(c.focus)
	})
	ok.SetCancelFunc(func() {
		c.pages.RemovePage(pageConflict)
		c.focusPane(c.focus)
	})
	box := tview.NewFlex().SetDirection(tview.FlexRow).AddItem(text, 0, 1, false).AddItem(ok, 3, 0, true)
	box.SetBorder(true).SetTitle(" Lease changed: repair refused ").SetBorderColor(tcell.ColorRed)
	c.pages.AddPage(pageConflict, centered(box, 90, 13), true, true)
	c.app.SetFocus(ok)
	c.flash(false, "repair of "+mailbox.ShortID(t.taskID)+" refused: the lease changed")
}

// centered places p in the middle of the screen at the given size.
func centered(p tview.Primitive, width, height int) tview.Primitive {
	return tview.NewFlex().
		AddItem(nil, 0, 1, false).
		AddItem(tview.NewFlex().SetDirection(tview.FlexRow).
			AddItem(nil, 0, 1, false).
			AddItem(p, height, 0, true).
			AddItem(nil, 0, 1, false), width, 0, true).
		AddItem(nil, 0, 1, false)
}
