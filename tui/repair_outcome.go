package tui

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gdamore/tcell/v2"
	"github.com/rivo/tview"

	"github.com/mailroom/mailroom/mailbox"
)

// What a repair achieved, shown when it comes back: a flash, the dialog
// kept open with the daemon's words, or a page listing what had changed.

// repairDone reports a repair's outcome; it runs on the UI goroutine. A
// failure keeps the dialog open with everything typed and the error in
// full; otherwise the dialog closes and the outcome is a flash, or a page
// listing every lease or task that had changed.
func (c *Console) repairDone(d *repairDialog, res repairResults) {
	d.busy = false
	any := false
	for k := range kindCount {
		d.done[k] += res.done[k]
		any = any || res.done[k] > 0
	}
	d.endedHanded += res.endedHanded
	if any {
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
		if d.total() > 0 || len(d.conflicts) > 0 {
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
	total := d.total() + len(d.conflicts)
	_, to := d.verbs(kindLease)
	switch {
	case len(d.conflicts) > 0:
		c.showOutcome(d, total)
	case d.agent != "":
		c.flash(true, d.summary())
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

// showOutcome lists the leases and queued tasks whose repair was refused
// because they had changed: what the operator saw against what is now.
func (c *Console) showOutcome(d *repairDialog, total int) {
	var b strings.Builder
	if total == 1 && d.conflicts[0].target.queued() {
		b.WriteString("The task changed since you opened the dialog. Nothing was changed.\n\n")
	} else if total == 1 {
		b.WriteString("The lease changed since you opened the dialog. Nothing was changed.\n\n")
	} else {
		n := d.countKinds()
		var what string
		switch {
		case n[kindQueued] == 0 && n[kindQuestion] == 0 && n[kindResult] == 0:
			verb, to := d.verbs(kindLease)
			what = fmt.Sprintf("%s %d of %d leases%s", verb, d.done[kindLease], total, to)
		case n[kindLease] == 0 && n[kindQuestion] == 0 && n[kindResult] == 0:
			verb, to := d.verbs(kindQueued)
			what = fmt.Sprintf("%s %d of %d queued tasks%s", verb, d.done[kindQueued], total, to)
		default:
			what = fmt.Sprintf("%s, of %d", strings.TrimSuffix(d.summary(), fmt.Sprintf(", %d had changed", len(d.conflicts))), total)
		}
		seen := "since you marked them"
		if d.agent != "" {
			seen = "since you opened the dialog"
		}
		fmt.Fprintf(&b, "%s. %d had changed %s; nothing was done to them:\n\n", strings.ToUpper(what[:1])+what[1:], len(d.conflicts), seen)
	}
	for _, cf := range d.conflicts {
		t := cf.target
		det := cf.err.Details
		switch t.what() {
		case kindQueued:
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
		case kindResult:
			fmt.Fprintf(&b, "task %s: you saw its result waiting for %s.\n  %s\n", mailbox.ShortID(t.taskID), t.undrainedBy, cf.err.Message)
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
	what := "the lease"
	if k := d.conflicts[0].target.what(); k == kindQueued || k == kindResult {
		what = "the task"
	}
	title := " Lease changed: repair refused "
	if total == 1 && what == "the task" {
		title = " Task changed: repair refused "
	}
	if total > 1 {
		title = fmt.Sprintf(" %d repaired, %d refused: %s had changed ", d.total(), len(d.conflicts), what)
	}
	c.showRefusals(b.String(), title)
	c.flash(false, fmt.Sprintf("%d of %d repairs refused: %s had changed", len(d.conflicts), total, what))
}

// showRefusals shows what a repair left alone because it had changed: the
// text, an OK that closes it, under a red title; the panes show the rest.
func (c *Console) showRefusals(body, title string) {
	text := tview.NewTextView().SetDynamicColors(true).SetWrap(true).SetWordWrap(true).SetText(escapeTags(body))
	closePage := func() {
		c.pages.RemovePage(pageOutcome)
		c.focusPane(c.focus)
	}
	ok := tview.NewForm().AddButton("OK", closePage)
	ok.SetCancelFunc(closePage)
	ok.SetBorderPadding(0, 0, 1, 1)
	box := tview.NewFlex().SetDirection(tview.FlexRow).AddItem(text, 0, 1, false).AddItem(ok, 1, 0, true)
	box.SetBorder(true).SetTitle(title).SetBorderColor(tcell.ColorRed)
	c.pages.AddPage(pageOutcome, &modal{Primitive: box, size: func(sw, sh int) (int, int) {
		w := min(dialogWidth, sw)
		return w, min(sh, 3+wrappedRows(text.GetText(false), w-2)+1)
	}}, true, true)
	c.app.SetFocus(ok)
}
