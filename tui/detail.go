package tui

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/gdamore/tcell/v2"
	"github.com/rivo/tview"

	"github.com/mailroom/mailroom/mailbox"
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
	if !c.model.detail(id).known && c.focus == paneAudit {
		// The trail outlives the tasks: the replica forgets drained tasks
		// long before their repairs drop out of the audit.
		c.flash(false, "task "+mailbox.ShortID(id)+" is no longer remembered (drained and forgotten); its repairs stay listed here")
		return
	}
	c.details = []string{id}
	c.drawDetail()
}

// drawDetail shows the newest detail view opened. Its parent and children
// are links: Tab moves between them, Enter opens one, Esc goes back to the
// view before, and from the first to the panes.
func (c *Console) drawDetail() {
	id := c.details[len(c.details)-1]
	d := c.model.detail(id)
	links := d.links()
	tv := tview.NewTextView().SetDynamicColors(true).SetRegions(true).SetText(renderDetail(id, d, c.opts.Now().UnixMilli()))
	keys := "[aqua]<Esc>[-] back"
	if len(links) > 0 {
		keys += "  [aqua]<Tab>[-] next link  [aqua]<Enter>[-] open the parent or child highlighted"
		tv.Highlight(linkRegion(0))
	}
	keys += "  [aqua]<y>[-] copy the id"
	// The title is the id alone, so that it fits 80 columns; the keys are
	// on the page's own bottom line, where an outcome replaces them.
	tv.SetBorder(true).SetTitle(" Task " + id + " ")
	c.pageFlash = tview.NewTextView().SetDynamicColors(true).SetWrap(false).SetText(keys)
	page := tview.NewFlex().SetDirection(tview.FlexRow).AddItem(tv, 0, 1, true).AddItem(c.pageFlash, 1, 0, false)
	link := 0
	tv.SetInputCapture(func(ev *tcell.EventKey) *tcell.EventKey {
		switch {
		case ev.Key() == tcell.KeyEscape:
			c.details = c.details[:len(c.details)-1]
			c.pages.RemovePage(pageDetail)
			c.pageFlash = nil
			if len(c.details) > 0 {
				c.drawDetail()
			} else {
				c.focusPane(c.focus)
			}
		case (ev.Key() == tcell.KeyTab || ev.Key() == tcell.KeyBacktab) && len(links) > 0:
			step := 1
			if ev.Key() == tcell.KeyBacktab {
				step = len(links) - 1
			}
			link = (link + step) % len(links)
			tv.Highlight(linkRegion(link)).ScrollToHighlight()
		case ev.Key() == tcell.KeyEnter && len(links) > 0:
			c.details = append(c.details, links[link])
			c.pages.RemovePage(pageDetail)
			c.drawDetail()
		case ev.Key() == tcell.KeyRune && ev.Rune() == 'y':
			c.copyID(id)
		default:
			return ev
		}
		return nil
	})
	c.pages.AddPage(pageDetail, page, true, true)
	c.app.SetFocus(tv)
}

// links are the task ids a detail view links to: the parent, then the
// children, in the order renderDetail writes them.
func (d detail) links() []string {
	if !d.known {
		return nil
	}
	var out []string
	if d.record.Task.Parent != "" {
		out = append(out, d.record.Task.Parent)
	}
	return append(out, d.children...)
}

func linkRegion(i int) string { return "link" + strconv.Itoa(i) }

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
	renderTaskHead(&b, d, nowMs)
	renderFamily(&b, d)

	// Repairs first: they are few, and they are why an operator opens a
	// task from the Audit pane; a long lease history would push them below
	// the fold.
	renderRepairs(&b, d, nowMs)
	renderTurns(&b, r.Task.Turns)
	renderLeaseHistory(&b, r.History)

	if d.result != nil {
		b.WriteString("\n[::b]Pending result[::-]\n")
		b.WriteString(escapeTags(indentJSON(d.result)) + "\n")
	}
	b.WriteString("\n[::b]Record[::-]\n")
	b.WriteString(escapeTags(indentJSON(r)) + "\n")
	return b.String()
}

// renderTaskHead writes what the task is and where it stands: its fields,
// where it came from (A2A, Covenant), who canceled it, its lease, its
// remote delivery and the question it waits on.
func renderTaskHead(b *strings.Builder, d detail, nowMs int64) {
	r := d.record
	fmt.Fprintf(b, "[::b]task[::-] %s\n", escapeTags(r.Task.ID))
	fmt.Fprintf(b, "[::b]state[::-] %s   [::b]attempt[::-] %d   [::b]duplicate safety[::-] %s\n", r.State, r.Attempt, escapeTags(r.Task.DuplicateSafety()))
	fmt.Fprintf(b, "[::b]sender[::-] %s -> [::b]recipient[::-] %s   [::b]kind[::-] %s\n", escapeTags(r.Task.Sender), escapeTags(r.Task.Recipient), escapeTags(orDash(r.Task.Kind())))
	fmt.Fprintf(b, "[::b]intent[::-] %s\n", escapeTags(r.Task.IntentText))
	if c := r.Task.Context; c != nil {
		// One line; the whole value is in the record below.
		var buf bytes.Buffer
		line := string(c)
		if json.Compact(&buf, c) == nil {
			line = buf.String()
		}
		fmt.Fprintf(b, "[::b]task context[::-] %s\n", escapeTags(truncate(line, 400)))
	}
	if o := r.Task.A2A; o != nil {
		renderA2A(b, o)
	}
	if o := r.Task.Covenant; o != nil {
		// Sent through Covenant's dialect: the keys its AgentIds carried.
		fmt.Fprintf(b, "[::b]covenant[::-] sender key %s\n[::b]covenant[::-] recipient key %s\n", escapeTags(o.SenderPubkey), escapeTags(o.RecipientPubkey))
	}
	if r.State == mailbox.TaskCanceled {
		renderCanceled(b, r.History)
	}
	if r.LeaseID != "" {
		fmt.Fprintf(b, "[::b]lease[::-] %s held by %s since %s\n", r.LeaseID, escapeTags(r.LeasedTo), formatClock(r.LeasedAtMs))
	}
	renderRemote(b, d, nowMs)
	if since := r.WaitingSince(); since != 0 {
		q, _ := r.Task.Question()
		fmt.Fprintf(b, "[aqua::b]waiting on[-::-] %s since %s (%s): %s\n", escapeTags(r.Task.Sender), formatClock(since),
			formatAge(msAge(nowMs, since)), escapeTags(q.Status))
	}
}

// renderCanceled says who canceled the task, when, and why: the last
// cancel in its history.
func renderCanceled(b *strings.Builder, history []mailbox.HistoryEntry) {
	for i := len(history) - 1; i >= 0; i-- {
		if h := history[i]; h.Type == mailbox.EventTaskCanceled {
			fmt.Fprintf(b, "[yellow]canceled[-] by %s at %s", escapeTags(orDash(h.Principal)), formatClock(h.AtMs))
			if h.Reason != "" {
				fmt.Fprintf(b, ": %s", escapeTags(h.Reason))
			}
			b.WriteString("\n")
			break
		}
	}
}

// renderFamily writes the task's parent and children as links (regions),
// in the order links() lists them.
func renderFamily(b *strings.Builder, d detail) {
	r := d.record
	link := 0
	linkTo := func(id string) string {
		s := `["` + linkRegion(link) + `"]` + escapeTags(id) + `[""]`
		link++
		return s
	}
	if r.Task.Parent == "" {
		b.WriteString("[::b]parent[::-] -\n")
	} else {
		fmt.Fprintf(b, "[::b]parent[::-] %s\n", linkTo(r.Task.Parent))
	}
	if len(d.children) == 0 {
		b.WriteString("[::b]children[::-] -\n")
		return
	}
	// One a line: a full id must not wrap at its dashes.
	for i, id := range d.children {
		label := "         "
		if i == 0 {
			label = "[::b]children[::-] "
		}
		b.WriteString(label + linkTo(id) + "\n")
	}
}

// renderLeaseHistory writes the task's history, two lines an event: the
// second carries the full lease id and holder, which do not fit beside
// the rest on an 80-column terminal.
func renderLeaseHistory(b *strings.Builder, history []mailbox.HistoryEntry) {
	b.WriteString("\n[::b]Lease history[::-]\n")
	fmt.Fprintf(b, "[gray]%-8s %-8s %-19s %-4s %s[-]\n", "SEQ", "TIME", "EVENT", "ATT", "DETAIL")
	for _, h := range history {
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
		if h.Recipient != "" {
			more = append(more, "moved -> "+h.Recipient)
		}
		if h.RemoteTaskID != "" {
			more = append(more, "remote task "+visible(h.RemoteTaskID))
		}
		fmt.Fprintf(b, "%-8d %-8s %-19s %-4d %s\n", h.Seq, formatClock(h.AtMs), h.Type, h.Attempt, escapeTags(strings.Join(more, ", ")))
		if h.LeaseID != "" || h.LeasedTo != "" {
			fmt.Fprintf(b, "%-8s lease %s  leased to %s\n", "", orDash(h.LeaseID), escapeTags(orDash(h.LeasedTo)))
		}
	}
}

// turnRunes bounds one turn's text in the conversation; the record below
// holds it whole.
const turnRunes = 1000

// renderTurns writes a task's conversation, oldest turn first: each
// question its worker asked and each answer its sender gave, its text
// line by line as the agent wrote it, made safe for the terminal.
func renderTurns(b *strings.Builder, turns []mailbox.Turn) {
	if len(turns) == 0 {
		return
	}
	fmt.Fprintf(b, "\n[::b]Conversation[::-] (%d turns, oldest first)\n", len(turns))
	for i, t := range turns {
		what := "answered"
		if t.Role == mailbox.RoleWorker {
			// The short lease id keeps the line on 80 columns; the record
			// below has it in full.
			what = fmt.Sprintf("asked (%s, lease %s, attempt %d)", t.Status, orDash(mailbox.ShortID(t.LeaseID)), t.Attempt)
		}
		color := "green"
		if t.Role == mailbox.RoleWorker {
			color = "aqua"
		}
		if t.A2A != nil {
			what += " through A2A"
		}
		fmt.Fprintf(b, "[%s]#%d %s %s %s[-]\n", color, i+1, formatClock(t.AtMs), escapeTags(t.Agent), escapeTags(what))
		text := contentText(t.Content)
		if text == "" && t.A2A != nil {
			// An answer sent through the A2A edge may carry its parts only
			// in the message, as its client sent it.
			text = strings.Join(a2aPartLines(t.A2A), "\n")
		}
		text = truncate(text, turnRunes)
		if text == "" {
			text = "(no text)"
		}
		for _, line := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
			b.WriteString("    " + escapeTags(visible(strings.ReplaceAll(line, "\t", "    "))) + "\n")
		}
	}
}

// renderA2A writes what came through the A2A edge with a task: the
// protocol generation, the message and context ids, and the message's
// parts one a line (v0.3 parts carry a kind; v1.0 parts are text, data,
// raw or url).
func renderA2A(b *strings.Builder, o *mailbox.A2AOrigin) {
	fmt.Fprintf(b, "[::b]a2a[::-] v%s message %s  [::b]context[::-] %s\n", escapeTags(o.Version), escapeTags(o.MessageID), escapeTags(o.ContextID))
	for i, l := range a2aPartLines(o) {
		label := "      "
		if i == 0 {
			label = "[::b]parts[::-] "
		}
		b.WriteString(label + escapeTags(l) + "\n")
	}
}

// a2aPartLines are an A2A message's parts, one a line.
func a2aPartLines(o *mailbox.A2AOrigin) []string {
	var m struct {
		Parts []map[string]json.RawMessage `json:"parts"`
	}
	if json.Unmarshal(o.Message, &m) != nil {
		return nil
	}
	lines := make([]string, len(m.Parts))
	for i, p := range m.Parts {
		lines[i] = partLine(p)
	}
	return lines
}

// partLine is one part of an A2A message on one line.
func partLine(p map[string]json.RawMessage) string {
	str := func(k string) string {
		var s string
		_ = json.Unmarshal(p[k], &s)
		return s
	}
	compact := func(raw json.RawMessage) string {
		var buf bytes.Buffer
		if json.Compact(&buf, raw) != nil {
			return string(raw)
		}
		return truncate(buf.String(), 120)
	}
	kind := str("kind")
	switch {
	case kind == "text" || (kind == "" && p["text"] != nil):
		return "text: " + truncate(oneLine(str("text")), 200)
	case kind == "data" || (kind == "" && p["data"] != nil):
		return "data: " + compact(p["data"])
	case kind == "file":
		var f struct {
			Name     string `json:"name"`
			MimeType string `json:"mimeType"`
			Bytes    string `json:"bytes"`
			URI      string `json:"uri"`
		}
		_ = json.Unmarshal(p["file"], &f)
		where := f.URI
		if where == "" {
			where = fmt.Sprintf("%d bytes inline", base64.StdEncoding.DecodedLen(len(f.Bytes)))
		}
		return fmt.Sprintf("file: %s (%s) %s", orDash(f.Name), orDash(f.MimeType), where)
	case p["url"] != nil:
		return fmt.Sprintf("file: %s (%s) %s", orDash(str("filename")), orDash(str("mediaType")), str("url"))
	case p["raw"] != nil:
		return fmt.Sprintf("file: %s (%s) %d bytes inline", orDash(str("filename")), orDash(str("mediaType")), base64.StdEncoding.DecodedLen(len(str("raw"))))
	}
	return "part: " + compact(mustJSON(p))
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
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
