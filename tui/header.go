package tui

import (
	"fmt"
	"strings"

	"github.com/gdamore/tcell/v2"
	"github.com/rivo/tview"

	"github.com/mailroom/mailroom/mailbox"
)

// segment is one part of a line that may not fit: its variants, widest
// first, and how much it matters. An empty variant drops the segment.
type segment struct {
	prio     int
	variants []string
}

// fitSegments joins segs into at most width cells: with the wide
// separator when everything fits, else with the narrow one, moving the
// least important segment to its next narrower variant until the line
// fits. No variant is ever cut, so a number is shown whole or not at all.
func fitSegments(segs []segment, width int, wide, narrow string) string {
	choice := make([]int, len(segs))
	join := func(sep string) (string, int) {
		var parts []string
		for i, s := range segs {
			if v := s.variants[choice[i]]; v != "" {
				parts = append(parts, v)
			}
		}
		line := strings.Join(parts, sep)
		return line, tview.TaggedStringWidth(line)
	}
	if line, w := join(wide); w <= width {
		return line
	}
	for {
		line, w := join(narrow)
		if w <= width {
			return line
		}
		least := -1
		for i, s := range segs {
			if choice[i] < len(s.variants)-1 && (least < 0 || s.prio < segs[least].prio) {
				least = i
			}
		}
		if least < 0 {
			return line
		}
		choice[least]++
	}
}

// fitView is a one-line-per-row text view whose text is rendered for the
// width it is drawn at: the header and the hint bar.
type fitView struct {
	*tview.TextView
	render func(width int) string
}

func newFitView(render func(width int) string) *fitView {
	return &fitView{TextView: tview.NewTextView().SetDynamicColors(true).SetWrap(false), render: render}
}

func (v *fitView) Draw(screen tcell.Screen) {
	_, _, w, _ := v.GetInnerRect()
	v.SetText(v.render(w))
	v.TextView.Draw(screen)
}

// headerText writes the two header lines for width cells: where and how
// the console is connected, then the counts.
func (c *Console) headerText(width int) string {
	return fitSegments(c.headerTop(width), width, "   ", "  ") + "\n" + fitSegments(c.headerCounts(), width, "   ", "  ")
}

// headerTop is the first header line: the daemon and whom the token
// speaks for, the instance's part, the connection, and the modes.
func (c *Console) headerTop(width int) []segment {
	st := c.status
	top := []segment{c.whereSegment(width)}
	if r := c.role; r != nil {
		top = append(top, roleSegment(r))
	}
	switch {
	case !st.connSeen:
		top = append(top, segment{prio: 90, variants: []string{"[yellow]connecting[-]"}})
	case st.conn.Live:
		top = append(top, segment{prio: 90, variants: []string{"[green]● live[-]"}})
	default:
		state := fmt.Sprintf("[yellow]reconnecting (attempt %d)[-]", st.conn.Attempt)
		variants := []string{state}
		if st.conn.Err != nil {
			variants = []string{state + " [gray]" + escapeTags(oneLine(st.conn.Err.Error())) + "[-]", state}
		}
		top = append(top, segment{prio: 90, variants: variants})
	}
	if st.paused {
		top = append(top, segment{prio: 95, variants: []string{
			fmt.Sprintf("[aqua::b]paused[-::-] (%s events held)", commas(st.held)),
			fmt.Sprintf("[aqua::b]paused[-::-] (%s held)", commas(st.held)),
		}})
	}
	if c.opts.ReadOnly {
		top = append(top, segment{prio: 80, variants: []string{"[aqua]read-only[-]"}})
	} else if c.who != nil && !c.keys.has(actRequeue) && !c.keys.has(actForceError) {
		top = append(top, segment{prio: 70, variants: []string{"[aqua]no repair rights[-]", ""}})
	}
	return top
}

// whereSegment says where the console is connected and whom repairs are
// recorded under, next to where they go: an operator holding two tokens
// must see which one this console uses.
func (c *Console) whereSegment(width int) segment {
	addr := escapeTags(c.opts.Addr)
	who, short := "", ""
	switch {
	case c.whoErr != nil:
		who = " [red]token refused: " + escapeTags(oneLine(c.whoErr.Error())) + "[-]"
		short = " [red]token refused[-]"
	case c.who != nil && !c.who.Auth:
		who = " [gray]no auth[-]"
	case c.who != nil:
		who = " as [::b]" + escapeTags(c.who.Principal) + "[::-]"
		short = " as [::b]" + escapeTags(truncate(c.who.Principal, agentCap(width))) + "[::-]"
	case c.opts.Principal != "":
		who = " as [::b]" + escapeTags(c.opts.Principal) + "[::-]"
		short = " as [::b]" + escapeTags(truncate(c.opts.Principal, agentCap(width))) + "[::-]"
	default:
		// Until the daemon answers, nobody knows whether it has tokens.
		who = " [gray]whoami…[-]"
	}
	if short == "" {
		short = who
	}
	return segment{prio: 100, variants: []string{"[::b]mailroom[::-] " + addr + who, addr + who, addr + short}}
}

// roleSegment says the instance's part in a shared mailbox.
func roleSegment(r *mailbox.StoreRole) segment {
	switch {
	case r.Role == "leader":
		return segment{prio: 85, variants: []string{fmt.Sprintf("[green]leader[-] (epoch %d)", r.Epoch), "[green]leader[-]"}}
	case r.LeaderURL == "":
		return segment{prio: 85, variants: []string{"[yellow]follower, no leader (election)[-]", "[yellow]no leader[-]"}}
	}
	behind := ""
	if r.Behind > 0 {
		behind = fmt.Sprintf(", %s behind", commas(int(r.Behind)))
	}
	return segment{prio: 85, variants: []string{"follower of " + escapeTags(r.LeaderURL) + behind, "follower"}}
}

// headerCounts is the second header line: the counts an incident starts
// from, the event rate and the seq.
func (c *Console) headerCounts() []segment {
	st := c.status
	now := staleness{nowMs: c.opts.Now().UnixMilli(), afterMs: c.opts.StaleAfter.Milliseconds()}
	staleN := c.rows.countStale(now)
	stale := "stale 0"
	if staleN > 0 {
		stale = "[red::b]stale " + commas(staleN) + "[-::-]"
	}
	bottom := []segment{
		{prio: 90, variants: []string{"queued " + commas(c.rows.len(paneQueue))}},
		{prio: 90, variants: []string{"in flight " + commas(c.rows.len(paneLeases)), "leased " + commas(c.rows.len(paneLeases))}},
		{prio: 100, variants: []string{stale}},
	}
	// What an incident starts from, said where it is seen on any terminal:
	// agents probably gone (5 finds them) and dead letters (7).
	if n := c.rows.countGone(now); n > 0 {
		bottom = append(bottom, segment{prio: 98, variants: []string{"[red::b]gone " + commas(n) + "[-::-]"}})
	}
	if n := c.rows.countDead(); n > 0 {
		bottom = append(bottom, segment{prio: 96, variants: []string{"[red::b]dead letters " + commas(n) + "[-::-]", "[red::b]dead " + commas(n) + "[-::-]"}})
	}
	bottom = append(bottom, c.waitingSegment(now),
		segment{prio: 80, variants: []string{"results pending " + commas(c.rows.len(paneResults)), "results " + commas(c.rows.len(paneResults))}})
	bottom = append(bottom, c.rateSegments()...)
	if st.connSeen && (!st.conn.Live || st.gap != nil) {
		bottom = append(bottom, segment{prio: 95, variants: []string{"[yellow]showing the last state received (stale)[-]", "[yellow](stale)[-]"}})
	}
	return bottom
}

// waitingSegment counts the tasks waiting on their senders. Questions
// unanswered past the stale limit make the count red and as important as
// the stale leases: both are incidents. With nothing waiting, the count
// is what a narrow header drops first.
func (c *Console) waitingSegment(now staleness) segment {
	waitingN := c.rows.len(paneWaiting)
	switch staleW := c.rows.countStaleWaiting(now); {
	case staleW > 0:
		return segment{prio: 95, variants: []string{
			"[red::b]waiting " + commas(waitingN) + " (" + commas(staleW) + " stale)[-::-]",
			"[red::b]" + staleMarker + "waiting " + commas(waitingN) + "[-::-]",
		}}
	case waitingN == 0:
		return segment{prio: 40, variants: []string{"waiting 0", ""}}
	}
	return segment{prio: 75, variants: []string{"waiting " + commas(waitingN)}}
}

// rateSegments are the events per second with their sparkline, and the
// seq.
func (c *Console) rateSegments() []segment {
	perS := float64(sum(c.spark[len(c.spark)-rateSeconds:])) / rateSeconds
	rate := fmt.Sprintf("events/s %.1f", perS)
	spark, seq := c.spark, "seq "+commas(int(c.status.seq))
	if c.sigMode {
		// The digest of what a frame would show leaves out what every
		// event changes (redraw.go): the same widths, no figures.
		rate, spark, seq = zeroDigits(rate), [sparkSeconds]int{}, zeroDigits(seq)
	}
	return []segment{
		{prio: 60, variants: []string{
			rate + " [aqua]" + sparkline(spark[:]) + "[-]",
			rate + " [aqua]" + sparkline(spark[len(spark)-30:]) + "[-]",
			rate + " [aqua]" + sparkline(spark[len(spark)-15:]) + "[-]",
			rate, "",
		}},
		{prio: 50, variants: []string{seq, ""}},
	}
}

// rateSeconds is the window the header's events/s averages over.
const rateSeconds = 10

// sparkline draws counts as bars, the tallest the largest count; a second
// without events is the baseline, one with any is at least a step above.
func sparkline(counts []int) string {
	levels := []rune("▁▂▃▄▅▆▇█")
	top := 0
	for _, n := range counts {
		top = max(top, n)
	}
	var b strings.Builder
	for _, n := range counts {
		level := 0
		if n > 0 {
			level = 1 + (n*(len(levels)-1)-1)/top
		}
		b.WriteRune(levels[level])
	}
	return b.String()
}

func sum(ns []int) int {
	t := 0
	for _, n := range ns {
		t += n
	}
	return t
}

// zeroDigits writes every digit of s as 0: the same width, no figure.
func zeroDigits(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return '0'
		}
		return r
	}, s)
}

// countGone counts the agents the Agents pane marks probably gone.
func (r *rows) countGone(st staleness) int {
	if r == nil {
		return 0
	}
	n := 0
	for i := range r.agents {
		if st.gone(&r.agents[i]) {
			n++
		}
	}
	return n
}

// countDead counts the dead-lettered push notifications.
func (r *rows) countDead() int {
	if r == nil {
		return 0
	}
	n := 0
	for i := range r.deliveries {
		if r.deliveries[i].State == mailbox.DeliveryDead {
			n++
		}
	}
	return n
}
