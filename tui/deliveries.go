package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/gdamore/tcell/v2"
	"github.com/rivo/tview"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/mailbox"
)

// The Deliveries pane's repairs: R retries dead-lettered notifications
// now, D drops notifications, pending or dead; on the marked ones, or the
// selected one. Each asks for a reason (the drop's is required), and both
// are in the audit. The notifications are captured when the dialog opens,
// each with what it was (its state, and when it died): one that changed
// since (retried meanwhile, by a colleague or the CLI) is skipped and
// listed, never retried or dropped unseen.

// pushDialog is an open retry or drop dialog on notifications.
type pushDialog struct {
	act  actionID
	verb string // "Retry" or "Drop"
	// ns are the notifications still to send: after a failure, only
	// those the run did not reach.
	ns            []mailbox.NotificationStatus
	form          *tview.Form
	info, message *tview.TextView
	busy          bool
}

// openPushDialog opens the retry or drop dialog for the marked
// notifications, or the selected one.
func (c *Console) openPushDialog(act actionID) {
	pn := c.panes[paneDeliveries]
	idx := pn.marked()
	if len(idx) == 0 {
		i, ok := pn.selected()
		if !ok {
			c.flash(false, "no notification selected")
			return
		}
		idx = []int{i}
	}
	ns, notDead := c.pushTargets(act, idx)
	if len(ns) == 0 {
		n := c.rows.deliveries[idx[0]]
		if len(idx) == 1 {
			c.flash(false, fmt.Sprintf("notification %s is %s: only a dead-lettered one is retried by hand; the daemon tries this one on its own (D drops it)", n.ID, n.State))
		} else {
			c.flash(false, fmt.Sprintf("none of the %d marked notifications is dead-lettered: the daemon tries them on its own (D drops them)", len(idx)))
		}
		return
	}
	d := &pushDialog{act: act, verb: "Retry", ns: ns, form: tview.NewForm(),
		info:    tview.NewTextView().SetDynamicColors(true).SetWrap(true).SetWordWrap(true),
		message: tview.NewTextView().SetDynamicColors(true).SetWrap(true).SetWordWrap(true)}
	if act == actPushDrop {
		d.verb = "Drop"
	}
	d.describe(notDead)
	d.form.SetBorderPadding(0, 0, 1, 1)
	d.form.AddInputField("reason", "", fieldWidth, nil, nil)
	d.form.AddButton(d.confirmLabel(), func() { c.submitPush(d) })
	d.form.AddButton("Cancel", c.closePushDialog)
	d.form.SetCancelFunc(c.closePushDialog)
	d.form.SetFocus(0)
	c.showPushDialog(d)
}

// pushTargets are the notifications at idx of the Deliveries rows the
// dialog acts on; a retry leaves out (and counts in notDead) those not
// dead-lettered, which the daemon tries on its own.
func (c *Console) pushTargets(act actionID, idx []int) (ns []mailbox.NotificationStatus, notDead int) {
	for _, i := range idx {
		n := c.rows.deliveries[i]
		if act == actPushRetry && n.State != mailbox.DeliveryDead {
			notDead++
			continue
		}
		ns = append(ns, n)
	}
	return ns, notDead
}

// confirmLabel is "Retry now", "Drop", "Retry 3 now", "Drop 3".
func (d *pushDialog) confirmLabel() string {
	if len(d.ns) == 1 {
		if d.act == actPushDrop {
			return "Drop"
		}
		return "Retry now"
	}
	confirm := fmt.Sprintf("%s %d", d.verb, len(d.ns))
	if d.act == actPushRetry {
		confirm += " now"
	}
	return confirm
}

// describe says what the dialog acts on: one notification in full, or
// how many to each receiver.
func (d *pushDialog) describe(notDead int) {
	verb, ns := strings.ToLower(d.verb), d.ns
	if len(ns) == 1 {
		n := ns[0]
		d.info.SetText(fmt.Sprintf("%s push notification [::b]%s[::-] (%s) of task %s, %s, to %s.\n%s",
			verb, n.ID, n.State, n.TaskID, n.Event, tview.Escape(orDash(visible(n.URL))), pushDialogNote(d.act, ns)))
	} else {
		hooks := map[string]int{}
		var order []string
		for _, n := range ns {
			u := visible(n.URL)
			if hooks[u] == 0 {
				order = append(order, u)
			}
			hooks[u]++
		}
		var list []string
		for _, u := range order {
			list = append(list, fmt.Sprintf("%s (%d)", tview.Escape(orDash(u)), hooks[u]))
		}
		d.info.SetText(fmt.Sprintf("%s [::b]%d push notifications[::-] to %s.\n%s", verb, len(ns), strings.Join(list, ", "), pushDialogNote(d.act, ns)))
	}
	if notDead > 0 {
		d.info.SetText(d.info.GetText(false) + fmt.Sprintf("\n[yellow]%d of the marked are not dead-lettered: the daemon tries them on its own, so they are left alone.[-]", notDead))
	}
}

// closePushDialog closes the retry or drop dialog.
func (c *Console) closePushDialog() {
	c.pages.RemovePage(pageDialog)
	c.focusPane(c.focus)
}

// submitPush checks the reason (a drop's is required) and sends the
// repairs off the UI goroutine; the outcome comes back through
// QueueUpdateDraw.
func (c *Console) submitPush(d *pushDialog) {
	if d.busy {
		return
	}
	reason := strings.TrimSpace(d.form.GetFormItemByLabel("reason").(*tview.InputField).GetText())
	if d.act == actPushDrop && reason == "" {
		d.message.SetText("[red]a reason is required: say why, it goes into the audit history[-]")
		d.form.SetFocus(0)
		c.app.SetFocus(d.form)
		return
	}
	d.busy = true
	d.message.SetText("[yellow]sending…[-]")
	ctx, ns := c.runCtx, d.ns
	c.bg.spawn(func() {
		out := c.pushRepairs(ctx, d.act, ns, reason)
		c.app.QueueUpdateDraw(func() { c.pushDone(d, out) })
	})
}

// pushDone shows what a retry or drop did; it runs on the UI goroutine.
// A failure keeps the dialog open with the daemon's words, and only what
// is left to do.
func (c *Console) pushDone(d *pushDialog, out pushOutcome) {
	d.busy = false
	if out.err != nil {
		d.ns = out.rest
		prefix := ""
		if out.done > 0 || len(out.skipped) > 0 {
			prefix = out.summary(d.act) + "; "
		}
		d.message.SetText("[red]" + tview.Escape(prefix+mailbox.ErrorMessage(out.err)) + "[-]")
		return
	}
	c.closePushDialog()
	switch {
	case len(out.skipped) > 0:
		c.showPushOutcome(d.act, out)
	case out.done == 1 && d.act == actPushRetry:
		c.flash(true, "notification "+d.ns[0].ID+" is back in line")
	case out.done == 1:
		c.flash(true, "notification "+d.ns[0].ID+" dropped")
	default:
		c.flash(true, out.summary(d.act))
	}
}

// showPushDialog puts the dialog in front: the description, the reason
// and the buttons, and the message, sized to the screen.
func (c *Console) showPushDialog(d *pushDialog) {
	box := tview.NewFlex().SetDirection(tview.FlexRow).
		AddItem(d.info, 0, 0, false).
		AddItem(d.form, 3, 0, true).
		AddItem(d.message, 0, 1, false)
	title := " " + d.verb + " push notification "
	if len(d.ns) > 1 {
		title = fmt.Sprintf(" %s %d push notifications ", d.verb, len(d.ns))
	}
	box.SetBorder(true).SetTitle(title).SetBorderColor(tcell.ColorYellow)
	c.pages.AddPage(pageDialog, &modal{Primitive: box, size: func(sw, sh int) (int, int) {
		w := min(dialogWidth, sw)
		infoRows := wrappedRows(d.info.GetText(false), w-2)
		msgRows := max(1, wrappedRows(d.message.GetText(false), w-2))
		h := min(2+infoRows+3+msgRows, sh)
		box.ResizeItem(d.info, max(1, min(infoRows, h-2-3-1)), 0)
		return w, h
	}}, true, true)
	c.app.SetFocus(d.form)
}

// pushOutcome is what a retry or drop of notifications did.
type pushOutcome struct {
	done int
	// skipped are the notifications that had changed since the dialog
	// opened, with what they are now.
	skipped []skippedPush
	// err stopped the run; rest are the notifications not sent.
	err  error
	rest []mailbox.NotificationStatus
}

type skippedPush struct {
	n   mailbox.NotificationStatus
	now string
}

func (o pushOutcome) summary(act actionID) string {
	verb := "retried"
	if act == actPushDrop {
		verb = "dropped"
	}
	out := fmt.Sprintf("%s %s", verb, plural(o.done, "notification"))
	if n := len(o.skipped); n > 0 {
		out += fmt.Sprintf(", %d had changed and were left alone", n)
	}
	return out
}

// pushRepairs retries or drops each notification that is still as the
// operator saw it: the daemon's outbox is read first, and one that changed
// (retried meanwhile, delivered, dropped, dead again) is skipped and
// listed. A retry is guarded by the daemon too (a notification that is
// not dead is refused); a drop is not, hence the read.
func (c *Console) pushRepairs(ctx context.Context, act actionID, ns []mailbox.NotificationStatus, reason string) pushOutcome {
	var out pushOutcome
	rctx, cancel := context.WithTimeout(ctx, repairTimeout)
	list, err := c.backend.Deliveries(rctx, false)
	cancel()
	if err != nil {
		out.err, out.rest = err, ns
		return out
	}
	now := make(map[string]mailbox.NotificationStatus, len(list.Notifications))
	for _, n := range list.Notifications {
		now[n.ID] = n
	}
	for i, n := range ns {
		cur, ok := now[n.ID]
		switch {
		case !ok:
			out.skipped = append(out.skipped, skippedPush{n, "no longer in the outbox: delivered, or dropped"})
			continue
		case deliveryGuard(&cur) != deliveryGuard(&n):
			what := fmt.Sprintf("%s now, after %d tries", cur.State, cur.Attempts)
			if n.State == mailbox.DeliveryDead && cur.State != mailbox.DeliveryDead {
				what = "retried since you saw it: " + what
			} else if cur.State == mailbox.DeliveryDead {
				what = "retried and dead-lettered again since you saw it, at " + formatClock(cur.DeadAtMs)
			}
			out.skipped = append(out.skipped, skippedPush{n, what})
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, repairTimeout)
		dd, deadOnly := c.backend.(deadDropper)
		switch {
		case act == actPushRetry:
			_, err = c.backend.RetryNotification(rctx, n.ID, reason)
		case n.State == mailbox.DeliveryDead && deadOnly:
			// Guarded by the daemon too: refused once it was retried,
			// between the read above and this drop.
			err = dd.DropDeadNotification(rctx, n.ID, reason)
		default:
			err = c.backend.DropNotification(rctx, n.ID, reason)
		}
		cancel()
		var appErr *mailbox.Error
		switch {
		case err == nil:
			out.done++
		case errors.Is(err, mailbox.ErrConflict) && errors.As(err, &appErr):
			out.skipped = append(out.skipped, skippedPush{n, appErr.Message})
		default:
			out.err, out.rest = err, ns[i:]
			return out
		}
	}
	return out
}

// deadDropper is a backend that drops a notification only while it is
// dead-lettered (*client.Client is one).
type deadDropper interface {
	DropDeadNotification(ctx context.Context, id, reason string) error
}

var _ deadDropper = (*client.Client)(nil)

// showPushOutcome lists the notifications a retry or drop of several
// skipped because they had changed.
func (c *Console) showPushOutcome(act actionID, out pushOutcome) {
	var b strings.Builder
	s := out.summary(act)
	fmt.Fprintf(&b, "%s. These had changed since you saw them; nothing was done to them:\n\n", strings.ToUpper(s[:1])+s[1:])
	for _, sk := range out.skipped {
		fmt.Fprintf(&b, "notification %s (task %s, %s): you saw it %s.\n  It is %s.\n", sk.n.ID, mailbox.ShortID(sk.n.TaskID), sk.n.Event, sk.n.State, sk.now)
	}
	b.WriteString("\nThe Deliveries pane shows the current state.")
	c.showRefusals(b.String(), fmt.Sprintf(" %d done, %d skipped: they had changed ", out.done, len(out.skipped)))
	c.flash(false, out.summary(act))
}

// pushDialogNote says what the repair does.
func pushDialogNote(act actionID, ns []mailbox.NotificationStatus) string {
	if act == actPushRetry && len(ns) == 1 {
		n := ns[0]
		last := ""
		if n.LastError != "" {
			last = " Its last error: " + tview.Escape(visible(oneLine(n.LastError))) + "."
		}
		return fmt.Sprintf("It failed %d times and was dead-lettered; retried, it goes back in line and is tried again from its first attempt.%s", n.Attempts, last)
	}
	if act == actPushRetry {
		return "Each was dead-lettered; retried, it goes back in line and is tried again from its first attempt. One retried (or dropped) since you saw it is left alone and listed."
	}
	if len(ns) == 1 {
		return "Dropped, it is never delivered: its receiver will not hear of this change. Say why (the audit keeps it)."
	}
	return "Dropped, they are never delivered: their receivers will not hear of these changes. One that changed since you saw it (retried meanwhile) is left alone and listed. Say why (the audit keeps it)."
}
