package tui

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/mailroom/mailroom/mailbox"
)

// The Audit pane and the detail view's repair history show the same
// records the same way: these helpers are the one place that decides the
// words.

// auditPrincipal names who repaired; an empty principal (the daemon ran
// without tokens, so nobody could be named) reads mailbox.NoAuth, as in
// the CLI: saying so beats an empty cell that reads as missing data.
func auditPrincipal(a *mailbox.AuditRecord) string { return a.PrincipalOrNoAuth() }

// auditAction is requeued or forced_error; a requeue made by the
// retry-stale scan is marked auto, so an operator can tell policy from
// people at a glance, and one that handed the task to another agent says
// where it went (from -> to).
func auditAction(a *mailbox.AuditRecord) string {
	s := a.Action
	if a.Auto {
		s += " (auto)"
	}
	if m := a.Move(); m != "" {
		s += " " + m
	}
	return s
}

// auditPosture is the duplicate-work risk the repair accepted; a forced
// error runs nothing again, so it has none.
func auditPosture(a *mailbox.AuditRecord) string { return orDash(a.DuplicateRisk) }

// auditMatches is the Audit pane's filter: the repaired task, who repaired
// it, what they did and why, as the pane shows them (so "no auth" and
// "auto" find what the operator sees).
func auditMatches(a *mailbox.AuditRecord, filter string) bool {
	return containsFold(a.TaskID, filter) || containsFold(auditPrincipal(a), filter) ||
		containsFold(auditAction(a), filter) || containsFold(a.Reason, filter)
}

// renderRepairs writes the detail view's repair history: the task's repairs
// newest first, with everything the Audit pane shows. Each repair takes two
// short lines rather than one wide row, so a free-text reason neither
// pushes the other facts off an 80-column screen nor wraps into them.
func renderRepairs(b *strings.Builder, d detail, nowMs int64) {
	b.WriteString("\n[::b]Repair history[::-] [gray](newest first)[-]\n")
	if len(d.repairs) == 0 {
		b.WriteString("no repairs\n")
		return
	}
	for i := range d.repairs {
		a := &d.repairs[i]
		fmt.Fprintf(b, "%s  %s ago  [::b]%s[::-] by %s  lease %s  attempt %d\n", formatClock(a.AtMs), formatAge(msAge(nowMs, a.AtMs)),
			auditAction(a), escapeTags(auditPrincipal(a)), escapeTags(orDash(a.LeaseID)), a.Attempt)
		fmt.Fprintf(b, "          posture %s  reason %s\n", escapeTags(auditPosture(a)), escapeTags(strconv.Quote(a.Reason)))
	}
	if d.moreRepairs {
		fmt.Fprintf(b, "[gray](only the newest %d; the Audit pane lists them all)[-]\n", detailRepairs)
	}
}
