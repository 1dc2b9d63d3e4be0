package tui

// What a repair dialog does to each kind of its targets: on the Agents
// pane, what the operator chose for the kind; elsewhere, what the key
// pressed implies.

// decision is what a dialog does to one kind of its targets.
type decision int

const (
	decLeave decision = iota
	decRequeue
	decForceError
	decMove
	decCancel
	decHandOver
	decEnd // a question ended with an error result (force_error)
)

// decisionText is how a decision reads in the Agents dialog's lists, its
// button ("Requeue 2") and its outcome ("requeued 2 leases").
var decisionText = map[decision]struct{ option, button, done string }{
	decLeave:      {"leave them", "", "left"},
	decRequeue:    {"requeue", "requeue", "requeued"},
	decForceError: {"force an error", "force error", "forced an error on"},
	decMove:       {"move", "move", "moved"},
	decCancel:     {"cancel", "cancel", "canceled"},
	decHandOver:   {"hand over", "hand over", "handed over"},
	decEnd:        {"end with an error", "end", "ended"},
}

// debtChoices are the decisions the Agents dialog offers for each kind,
// the R default first.
var debtChoices = [kindCount][]decision{
	kindLease:    {decRequeue, decForceError, decLeave},
	kindQueued:   {decMove, decCancel, decLeave},
	kindQuestion: {decHandOver, decEnd, decLeave},
	kindResult:   {decHandOver, decLeave},
}

// needsTo reports whether a decision hands work to the agent in "to".
func (d decision) needsTo() bool { return d == decMove || d == decHandOver }

// countKinds counts the dialog's targets of each kind.
func (d *repairDialog) countKinds() (n [kindCount]int) {
	for _, t := range d.targets {
		n[t.what()]++
	}
	return n
}

// decisionOf is what the dialog does to its targets of kind k.
func (d *repairDialog) decisionOf(k debtKind) decision {
	if dd := d.choice[k]; dd != nil {
		i, _ := dd.GetCurrentOption()
		if i >= 0 && i < len(debtChoices[k]) {
			return debtChoices[k][i]
		}
		return decLeave
	}
	if d.agent != "" {
		return decLeave // the agent owes none of these
	}
	switch {
	case k == kindQuestion:
		return decEnd
	case k == kindQueued && (d.action == actCancelQueued || d.action == actForceError):
		return decCancel
	case k == kindQueued:
		return decMove
	case k == kindLease && d.action == actForceError:
		return decForceError
	case k == kindLease:
		return decRequeue
	}
	return decLeave
}

// acted counts the targets the dialog acts on (those not left), by kind.
func (d *repairDialog) acted() (n [kindCount]int) {
	for k, c := range d.countKinds() {
		if d.decisionOf(debtKind(k)) != decLeave {
			n[k] = c
		}
	}
	return n
}

// anyNeedsTo reports whether a decision of the dialog hands work to the
// agent in "to".
func (d *repairDialog) anyNeedsTo() bool {
	n := d.countKinds()
	for k := range kindCount {
		if n[k] > 0 && d.decisionOf(k).needsTo() {
			return true
		}
	}
	return false
}

// endsAndHands reports whether the Agents dialog ends questions and hands
// results over: the errors of the ended questions are results for the
// agent too, and go with them.
func (d *repairDialog) endsAndHands() bool {
	return d.agent != "" && d.decisionOf(kindQuestion) == decEnd && d.decisionOf(kindResult) == decHandOver
}
