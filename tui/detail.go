package tui

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/gdamore/tcell/v2"
	"github.com/mailroom/mailroom/mailbox"
	"github.com/rivo/tview"
)

// showDetail opens the detail view of the selected task or result, or of
// the task the selected repair was made on.
func (c *Console) showDetail() {
	p := c.panes[c.focus]
	i, ok := p.selected()
	if !ok {
		c.flash(false, "nothing selected")
		return
	}
	id := c.rows.id(c.focus, i)
	d := c.model.detail(id)
	if !d.known && c.focus == paneAudit {
		// The trail outlives the tasks: the replica forgets drained tasks
		// long before their repairs drop out of the audit.
		c.flash(false, "task "+mailbox.ShortID(id)+" is no longer remembered (drained and forgotten); its repairs stay listed here")
		return
	}
	tv := tview.NewTextView().SetDynamicColors(true).SetText(renderDetail(id, d, c.opts.Now().UnixMilli()))
	tv.SetBorder(true).SetTitle(" Task " + id + " (Esc to go back) ")
	c.showPage(pageDetail, tv, func(ev *tcell.EventKey) bool { return ev.Key() == tcell.KeyEscape })
}

// renderDetail writes what the console knows about one task: its state,
// family, repair and lease history, pending result and the full record as
// JSON. Ages are as of nowMs.
func renderDetail(id string, d detail, nowMs int64) string {
	var b strings.Builder
	if !d.known {
		fmt.Fprintf(&b, "[yellow]task %s is no longer in the console's replica (drained and forgotten)[-]\n", id)
		return b.String()
	}
	r := d.record
	fmt.Fprintf(&b, "[::b]state[::-] %s   [::b]attempt[::-] %d   [::b]duplicate safety[::-] %s\n", r.State, r.Attempt, escapeTags(r.Task.DuplicateSafety()))
	fmt.Fprintf(&b, "[::b]sender[::-] %s -> [::b]recipient[::-] %s   [::b]kind[::-] %s\n", escapeTags(r.Task.Sender), escapeTags(r.Task.Recipient), escapeTags(orDash(r.Task.Kind())))
	fmt.Fprintf(&b, "[::b]intent[::-] %s\n", escapeTags(r.Task.IntentText))
	if r.LeaseID != "" {
		fmt.Fprintf(&b, "[::b]lease[::-] %s held by %s since %s\n", r.LeaseID, escapeTags(r.LeasedTo), formatClock(r.LeasedAtMs))
	}
	fmt.Fprintf(&b, "[::b]parent[::-] %s\n", orDash(r.Task.Parent))
	if len(d.children) == 0 {
		b.WriteString("[::b]children[::-] -\n")
	} else {
		fmt.Fprintf(&b, "[::b]children[::-] %s\n", strings.Join(d.children, ", "))
	}

	// Repairs first: they are few, and they are why an operator opens a
	// task from the Audit pane; a long lease history would push them below
	// the fold.
	renderRepairs(&b, d, nowMs)

	b.WriteString("\n[::b]Lease history[::-]\n")
	fmt.Fprintf(&b, "[gray]%-8s %-8s %-19s %-4s %-8s %-18s %s[-]\n", "SEQ", "TIME", "EVENT", "ATT", "LEASE", "LEASED TO", "DETAIL")
	for _, h := range r.History {
		var more []string
		if h.Status != "" {
			more = append(more, "status "+h.Status)
		}
		if h.Principal != "" {
			more = append(more, "by "+h.Principal)
		}
		if h.DuplicateRisk != "" {
			more = append(more, "risk "+h.DuplicateRisk)
		}
		if h.Reason != "" {
			more = append(more, "reason "+strconv.Quote(h.Reason))
		}
		fmt.Fprintf(&b, "%-8d %-8s %-19s %-4d %-8s %-18s %s\n", h.Seq, formatClock(h.AtMs), h.Type, h.Attempt,
			orDash(mailbox.ShortID(h.LeaseID)), escapeTags(orDash(h.LeasedTo)), escapeTags(strings.Join(more, ", ")))
	}

	if d.result != nil {
		b.WriteString("\n[::b]Pending result[::-]\n")
		b.WriteString(escapeTags(indentJSON(d.result)) + "\n")
	}
	b.WriteString("\n[::b]Record[::-]\n")
	b.WriteString(escapeTags(indentJSON(r)) + "\n")
	return b.String()
}

func indentJSON(v any) string {
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return "(cannot render: " + err.Error() + ")"
	}
	return string(out)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
