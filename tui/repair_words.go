package tui

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// How a repair dialog says what it will do and what it did. Each reads
// the dialog's choices as they stand, so that a changed choice relabels
// the title, the button and the "to" field at once.

// toPlaceholder says what "to" is for, as the dialog's choices stand.
func (d *repairDialog) toPlaceholder() string {
	n := d.countKinds()
	var needs []string
	for k := range kindCount {
		if n[k] > 0 && d.decisionOf(k).needsTo() {
			needs = append(needs, kindNoun[k]+"s")
		}
	}
	switch {
	case len(needs) > 0 && d.agent != "":
		return "required: the agent that takes the work"
	case len(needs) > 0:
		return "the new recipient (required)"
	case n[kindLease] > 0 && d.decisionOf(kindLease) == decRequeue:
		return "(optional) empty: requeued for the same agent"
	}
	return "not used: nothing is handed to another agent"
}

// title says what the dialog does to how many of what.
func (d *repairDialog) title() string {
	n := d.countKinds()
	if d.agent != "" {
		var owes []string
		for k := range kindCount {
			if n[k] > 0 {
				owes = append(owes, plural(n[k], kindNoun[k]))
			}
		}
		return " " + d.agent + " owes " + strings.Join(owes, ", ") + " "
	}
	leases, queued, questions := n[kindLease], n[kindQueued], n[kindQuestion]
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
	if questions > 0 {
		if questions == 1 {
			return " Force an error result "
		}
		return fmt.Sprintf(" End %d questions with an error result ", questions)
	}
	what := " Requeue "
	if d.action == actForceError {
		what = " Force an error result "
	}
	switch {
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

// confirmLabel counts each action the button takes: "Requeue 60, move
// 20", "Force error", "Cancel 3 tasks".
func (d *repairDialog) confirmLabel() string {
	n := d.acted()
	if d.agent == "" {
		total := n[kindLease] + n[kindQueued] + n[kindQuestion]
		switch {
		case d.action == actMoveQueued:
			return counted("Move", total)
		case d.action == actCancelQueued && total > 1:
			return fmt.Sprintf("Cancel %d tasks", total)
		case d.action == actCancelQueued:
			return "Cancel task"
		case n[kindQuestion] > 1:
			return fmt.Sprintf("End %d", total)
		case d.action == actForceError:
			return counted("Force error", total)
		}
		return counted("Requeue", total)
	}
	var parts []string
	var counts []int
	for k := range kindCount {
		if n[k] == 0 {
			continue
		}
		verb := decisionText[d.decisionOf(k)].button
		if i := slices.Index(parts, verb); i >= 0 {
			counts[i] += n[k] // hand over: questions and results alike
			continue
		}
		parts, counts = append(parts, verb), append(counts, n[k])
	}
	if len(parts) == 0 {
		return "Nothing chosen"
	}
	for i := range parts {
		parts[i] += " " + strconv.Itoa(counts[i])
	}
	out := strings.Join(parts, ", ")
	return strings.ToUpper(out[:1]) + out[1:]
}

// counted is "Requeue" for one, "Requeue 3" for three.
func counted(verb string, n int) string {
	if n > 1 {
		return verb + " " + strconv.Itoa(n)
	}
	return verb
}

// total is how many targets the dialog repaired so far.
func (d *repairDialog) total() int {
	n := d.endedHanded
	for _, v := range d.done {
		n += v
	}
	return n
}

// verbs is what the dialog did to targets of kind k ("requeued"), and " to
// AGENT" when it handed them on ("" otherwise).
func (d *repairDialog) verbs(k debtKind) (verb, to string) {
	dec := d.decisionOf(k)
	if d.to != "" && (dec == decRequeue || dec.needsTo()) {
		to = " to " + d.to
	}
	return decisionText[dec].done, to
}

// summary says what the dialog repaired so far: "requeued 2 leases and
// moved 3 queued tasks to worker-c@local".
func (d *repairDialog) summary() string {
	var parts, verbs []string
	to := ""
	for k := range kindCount {
		n := d.done[k]
		if k == kindQuestion {
			n += d.endedHanded
		}
		if n == 0 {
			continue
		}
		verb, t := d.verbs(k)
		if t != "" {
			to = t
		}
		part := plural(n, kindNoun[k])
		if k == kindQuestion && d.endedHanded > 0 {
			part += " (their error results handed over too)"
		}
		if len(parts) > 0 && verbs[len(verbs)-1] == verb {
			// hand over: "handed over 2 questions and 3 results"
			parts[len(parts)-1] += " and " + part
			continue
		}
		parts, verbs = append(parts, verb+" "+part), append(verbs, verb)
	}
	if len(parts) == 0 {
		verb, _ := d.verbs(kindLease)
		parts = append(parts, verb+" none")
	}
	out := strings.Join(parts, ", ")
	if len(parts) == 2 {
		out = parts[0] + " and " + parts[1]
	}
	out += to
	if n := len(d.conflicts); n > 0 {
		out += fmt.Sprintf(", %d had changed", n)
	}
	return out
}
