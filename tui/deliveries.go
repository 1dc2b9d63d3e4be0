package tui

import (
	"context"
	"fmt"
	"strings"

	"github.com/gdamore/tcell/v2"
	"github.com/rivo/tview"

	"github.com/mailroom/mailroom/mailbox"
)

// The Deliveries pane's repairs: R retries a dead-lettered notification
// now, D drops one, pending or dead; each asks for a reason (the drop's is
// required), and both are in the audit. The notification is captured when
// the dialog opens, so a pane that moves under it changes nothing.

// openPushDialog opens the retry or drop dialog for the selected
// notification.
func (c *Console) openPushDialog(act actionID) {
	i, ok := c.panes[paneDeliveries].selected()
	if !ok {
		c.flash(false, "no notification selected")
		return
	}
	n := c.rows.deliveries[i]
	if act == actPushRetry && n.State != mailbox.DeliveryDead {
		c.flash(false, fmt.Sprintf("notification %s is %s: only a dead-lettered one is retried by hand; the daemon tries this one on its own (D drops it)", n.ID, n.State))
		return
	}
	verb, confirm := "Retry", "Retry now"
	if act == actPushDrop {
		verb, confirm = "Drop", "Drop"
	}
	info := tview.NewTextView().SetDynamicColors(true).SetWrap(true).SetWordWrap(true)
	info.SetText(fmt.Sprintf("%s push notification [::b]%s[::-] (%s) of task %s, %s, to %s.\n%s",
		strings.ToLower(verb), n.ID, n.State, n.TaskID, n.Event, tview.Escape(orDash(visible(n.URL))), pushDialogNote(act, n)))
	message := tview.NewTextView().SetDynamicColors(true).SetWrap(true).SetWordWrap(true)
	form := tview.NewForm()
	form.SetBorderPadding(0, 0, 1, 1)
	form.AddInputField("reason", "", fieldWidth, nil, nil)
	closeDialog := func() {
		c.pages.RemovePage(pageDialog)
		c.focusPane(c.focus)
	}
	busy := false
	form.AddButton(confirm, func() {
		if busy {
			return
		}
		reason := strings.TrimSpace(form.GetFormItemByLabel("reason").(*tview.InputField).GetText())
		if act == actPushDrop && reason == "" {
			message.SetText("[red]a reason is required: say why, it goes into the audit history[-]")
			form.SetFocus(0)
			c.app.SetFocus(form)
			return
		}
		busy = true
		message.SetText("[yellow]sending…[-]")
		ctx := c.runCtx
		c.bg.spawn(func() {
			rctx, cancel := context.WithTimeout(ctx, repairTimeout)
			var err error
			if act == actPushRetry {
				_, err = c.backend.RetryNotification(rctx, n.ID, reason)
			} else {
				err = c.backend.DropNotification(rctx, n.ID, reason)
			}
			cancel()
			c.app.QueueUpdateDraw(func() {
				busy = false
				if err != nil {
					// The dialog stays, with the daemon's words.
					message.SetText("[red]" + tview.Escape(mailbox.ErrorMessage(err)) + "[-]")
					return
				}
				closeDialog()
				if act == actPushRetry {
					c.flash(true, "notification "+n.ID+" is back in line")
				} else {
					c.flash(true, "notification "+n.ID+" dropped")
				}
			})
		})
	})
	form.AddButton("Cancel", closeDialog)
	form.SetCancelFunc(closeDialog)
	form.SetFocus(0)
	box := tview.NewFlex().SetDirection(tview.FlexRow).
		AddItem(info, 0, 0, false).
		AddItem(form, 3, 0, true).
		AddItem(message, 0, 1, false)
	box.SetBorder(true).SetTitle(" " + verb + " push notification ").SetBorderColor(tcell.ColorYellow)
	c.pages.AddPage(pageDialog, &modal{Primitive: box, size: func(sw, sh int) (int, int) {
		w := min(dialogWidth, sw)
		infoRows := wrappedRows(info.GetText(false), w-2)
		msgRows := max(1, wrappedRows(message.GetText(false), w-2))
		h := min(2+infoRows+3+msgRows, sh)
		box.ResizeItem(info, max(1, min(infoRows, h-2-3-1)), 0)
		return w, h
	}}, true, true)
	c.app.SetFocus(form)
}

// pushDialogNote says what the repair does.
func pushDialogNote(act actionID, n mailbox.NotificationStatus) string {
	if act == actPushRetry {
		last := ""
		if n.LastError != "" {
			last = " Its last error: " + tview.Escape(visible(oneLine(n.LastError))) + "."
		}
		return fmt.Sprintf("It failed %d times and was dead-lettered; retried, it goes back in line and is tried again from its first attempt.%s", n.Attempts, last)
	}
	return "Dropped, it is never delivered: its receiver will not hear of this change. Say why (the audit keeps it)."
}
