package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/rivo/tview"

	"github.com/mailroom/mailroom/mailbox"
)

// Submitting a repair dialog: the fields are checked on the UI goroutine,
// then one guarded request per target is sent off it.

// submitRepair checks the dialog's fields and sends one guarded request per
// lease or queued task off the UI goroutine; the outcome comes back
// through QueueUpdateDraw.
func (c *Console) submitRepair(d *repairDialog) {
	if d.busy || len(d.changed) > 0 && len(d.targets) == 1 {
		return
	}
	p, ok := c.readRepair(d)
	if !ok {
		return
	}
	acted := d.acted()
	if p.to != "" && d.anyNeedsTo() || acted[kindLease] > 0 && d.decisionOf(kindLease) == decRequeue {
		d.to = p.to
	}
	c.lastRepair = repairMemory{key: repairKey(d), reason: p.reason}
	if acted[kindLease]+acted[kindQuestion] > 0 && d.agent == "" {
		c.lastRepair.message = p.msg
	}
	d.busy = true
	d.message.SetText("[yellow]sending…[-]")
	ctx := c.runCtx
	c.bg.spawn(func() {
		res := c.sendRepairs(ctx, p)
		c.app.QueueUpdateDraw(func() { c.repairDone(d, res) })
	})
}

// repairPlan is what one press of the confirm button sends: the dialog's
// fields and choices as pressed, read on the UI goroutine, so that the
// goroutine that sends reads no widget.
type repairPlan struct {
	targets           []repairTarget // those not left
	decided           [kindCount]decision
	reason, msg, risk string
	to                string
	newAgent          bool
	agent             string
	handEnded         bool // the errors of ended questions go with the results (endsAndHands)
}

// readRepair reads and checks the dialog's fields; a field refused says
// why in the dialog and has the focus.
func (c *Console) readRepair(d *repairDialog) (p repairPlan, ok bool) {
	acted := d.acted()
	if acted == ([kindCount]int{}) {
		c.refuseField(d, "reason", "every choice is \"leave them\": nothing to do; choose what to do with at least one kind, or Cancel")
		return p, false
	}
	p.reason = d.field("reason")
	if p.reason == "" {
		c.refuseField(d, "reason", "a reason is required: say why, it goes into the audit history")
		return p, false
	}
	p.to = d.field(toLabel)
	if !c.checkTo(d, p.to, acted) {
		return p, false
	}
	d.dropCreate()
	p.msg = d.field("message")
	switch {
	case d.agent != "":
		p.msg = p.reason // the agent's dialog ends what it ends with the reason
	case p.msg == "" && (acted[kindLease] > 0 && d.decisionOf(kindLease) == decForceError):
		c.refuseField(d, "message", "a message is required: it is the error the sender receives")
		return p, false
	case p.msg == "" && acted[kindQuestion] > 0:
		p.msg = p.reason // the placeholder says so
	}
	if dd, ok := d.form.GetFormItemByLabel("duplicate risk").(*tview.DropDown); ok {
		_, p.risk = dd.GetCurrentOption()
	}
	p.newAgent = p.to != "" && d.newAgent == p.to
	for _, t := range d.targets {
		if d.decisionOf(t.what()) != decLeave {
			p.targets = append(p.targets, t)
		}
	}
	p.handEnded = d.endsAndHands()
	for k := range kindCount {
		p.decided[k] = d.decisionOf(k)
	}
	p.agent = d.agent
	return p, true
}

// checkTo checks "to" against what the choices hand on: required when
// work goes to another agent, never the agent itself, and an agent the
// mailbox knows or one the operator confirmed as new.
func (c *Console) checkTo(d *repairDialog, to string, acted [kindCount]int) bool {
	if d.anyNeedsTo() && to == "" {
		var needs []string
		for k := range kindCount {
			if acted[k] > 0 && d.decisionOf(k).needsTo() {
				needs = append(needs, plural(acted[k], kindNoun[k]))
			}
		}
		msg := "\"to\" is required: name the agent the " + strings.Join(needs, " and ") + " go to"
		if d.agent != "" {
			msg += ", or choose \"leave them\" (or an error) for them"
		}
		c.refuseField(d, toLabel, msg)
		return false
	}
	if to != "" && to == d.agent {
		c.refuseField(d, toLabel, "\"to\" names "+to+" itself: name the agent that takes its work")
		return false
	}
	if to != "" && !c.knowsAgent(to) && d.newAgent != to {
		c.refuseUnknown(d, to)
		return false
	}
	return true
}

// field is the text of the dialog's input field label, trimmed; "" when
// the dialog has no such field.
func (d *repairDialog) field(label string) string {
	if f, ok := d.form.GetFormItemByLabel(label).(*tview.InputField); ok {
		return strings.TrimSpace(f.GetText())
	}
	return ""
}

// refuseField says in the dialog why nothing was sent, and puts the
// cursor in the field to correct.
func (c *Console) refuseField(d *repairDialog, label, msg string) {
	d.message.SetText("[red]" + escapeTags(msg) + "[-]")
	d.form.SetFocus(d.form.GetFormItemIndex(label))
	c.app.SetFocus(d.form)
}

// sendRepairs sends the plan's requests in order. A failure that is not a
// conflict stops the run: the rest stay in the dialog, to be sent again.
func (c *Console) sendRepairs(ctx context.Context, p repairPlan) repairResults {
	var res repairResults
	for i, t := range p.targets {
		rctx, cancel := context.WithTimeout(ctx, repairTimeout)
		out, err := c.backend.Repair(rctx, p.request(t))
		cancel()
		if err == nil && t.what() == kindQuestion && p.handEnded {
			// Its error is a result for the agent now: it goes with
			// the results, to the agent that drains them.
			rctx, cancel := context.WithTimeout(ctx, repairTimeout)
			_, herr := c.backend.Repair(rctx, mailbox.RepairRequest{TaskID: t.taskID, Reason: p.reason, Command: handOver(p.agent, p.to, p.newAgent)})
			cancel()
			res.last = out
			if herr == nil {
				res.endedHanded++
				continue
			}
			// Ended all the same; the rest stay in the dialog.
			res.done[kindQuestion]++
			res.failed, res.err, res.rest = t, fmt.Errorf("ended, but its error result was not handed over: %w", herr), p.targets[i+1:]
			break
		}
		var appErr *mailbox.Error
		switch {
		case err == nil:
			res.done[t.what()]++
			res.last = out
		case errors.Is(err, mailbox.ErrConflict) && errors.As(err, &appErr):
			res.conflicts = append(res.conflicts, repairConflict{target: t, err: appErr})
		default:
			// The rest stay in the dialog, to be sent again.
			res.failed, res.err, res.rest = t, err, p.targets[i:]
		}
		if res.err != nil {
			break
		}
	}
	return res
}

// request is the guarded request that carries out the plan's decision
// for t.
func (p repairPlan) request(t repairTarget) mailbox.RepairRequest {
	req := mailbox.RepairRequest{TaskID: t.taskID, Reason: p.reason}
	switch p.decided[t.what()] {
	case decRequeue:
		req.Command = mailbox.RepairCommand{Action: mailbox.ActionRequeue, DuplicateRisk: p.risk, Recipient: p.to, NewAgent: p.newAgent, LeaseID: t.leaseID}
	case decForceError, decEnd:
		req.Command = mailbox.RepairCommand{Action: mailbox.ActionForceError, Message: p.msg, LeaseID: t.leaseID}
	case decMove:
		req.Command = mailbox.RepairCommand{Action: mailbox.ActionMove, Recipient: p.to, NewAgent: p.newAgent, QueuedFor: t.queuedFor}
	case decCancel:
		req.Command = mailbox.RepairCommand{Action: mailbox.ActionCancel, Message: p.msg, QueuedFor: t.queuedFor}
	case decHandOver:
		req.Command = handOver(t.sender, p.to, p.newAgent)
	}
	return req
}

// handOver is the hand-over of a task from sentBy, its sender (the guard),
// to to: to answers its question, or drains its result, from then on.
func handOver(sentBy, to string, newAgent bool) mailbox.RepairCommand {
	return mailbox.RepairCommand{Action: mailbox.ActionHandOver, Sender: to, SentBy: sentBy, NewAgent: newAgent}
}

// repairResults is what one press of the confirm button achieved.
type repairResults struct {
	done        [kindCount]int
	endedHanded int
	last        mailbox.RepairOutcome
	conflicts   []repairConflict
	// err stopped the run at failed; rest are the targets not repaired.
	failed repairTarget
	err    error
	rest   []repairTarget
}
