package tui

import (
	"cmp"
	"slices"
	"strings"

	"github.com/rivo/tview"

	"github.com/mailroom/mailroom/mailbox"
)

// The "to" field names the agent that takes the work. A typo would send
// the work where nobody reads it, so a name the mailbox does not know is
// refused with the close matches until the operator confirms it as a new
// agent with a button of its own.

// toLabel labels the requeue dialog's optional new recipient.
const toLabel = "to"

// maxCompletions bounds the agents the "to" field offers.
const maxCompletions = 8

// agentCompletions offers the known agents whose id starts with text,
// those heard from most recently first (the live ones before the gone);
// nothing when text is empty or already names a known agent, so Tab moves
// on as usual.
func (c *Console) agentCompletions(text string) []string {
	text = strings.TrimSpace(text)
	if text == "" || c.rows == nil {
		return nil
	}
	var hits []mailbox.AgentInfo
	for _, a := range c.rows.agents {
		if a.Agent == text {
			return nil
		}
		if strings.HasPrefix(a.Agent, text) {
			hits = append(hits, a.AgentInfo)
		}
	}
	slices.SortStableFunc(hits, func(a, b mailbox.AgentInfo) int {
		if a.LastSeenMs != b.LastSeenMs {
			return cmp.Compare(b.LastSeenMs, a.LastSeenMs)
		}
		return strings.Compare(a.Agent, b.Agent)
	})
	out := make([]string, 0, min(len(hits), maxCompletions))
	for _, a := range hits[:min(len(hits), maxCompletions)] {
		out = append(out, a.Agent)
	}
	return out
}

// knowsAgent reports whether the agents listing has agent.
func (c *Console) knowsAgent(agent string) bool {
	return c.rows != nil && slices.ContainsFunc(c.rows.agents, func(a agentRow) bool { return a.Agent == agent })
}

// agentIDs are the ids of the agents listing.
func (c *Console) agentIDs() []string {
	if c.rows == nil {
		return nil
	}
	ids := make([]string, len(c.rows.agents))
	for i, a := range c.rows.agents {
		ids[i] = a.Agent
	}
	return ids
}

// closeAgents are the known agents name is close to, closest first: the
// mailbox's matcher, and for a bare name (no domain) the agents whose
// name before the @ it is a typo of (reveiwer: reviewer@local).
func closeAgents(name string, known []string) []string {
	out := mailbox.CloseMatches(name, known, 3)
	if strings.Contains(name, "@") {
		return out
	}
	type scored struct {
		id   string
		dist int
	}
	var bare []scored
	for _, k := range known {
		local, _, ok := strings.Cut(k, "@")
		if !ok || slices.Contains(out, k) {
			continue
		}
		if d := editDistance(name, local); d <= max(2, len(name)/4) {
			bare = append(bare, scored{k, d})
		}
	}
	slices.SortStableFunc(bare, func(a, b scored) int { return cmp.Or(cmp.Compare(a.dist, b.dist), strings.Compare(a.id, b.id)) })
	merged := make([]string, 0, 3)
	for _, s := range bare {
		merged = append(merged, s.id)
	}
	merged = append(merged, out...)
	return merged[:min(3, len(merged))]
}

// editDistance is the Levenshtein distance of a and b, by rune.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			sub := prev[j-1]
			if ra[i-1] != rb[j-1] {
				sub++
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, sub)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// refuseUnknown refuses a "to" that names no agent the mailbox knows: a
// typo would send the work where nobody reads it. The dialog names the
// close matches, puts the cursor back in "to", and offers a button of its
// own, never focused, to confirm a new agent: no Enter that submitted
// confirms it.
func (c *Console) refuseUnknown(d *repairDialog, to string) {
	msg := to + " is not an agent the mailbox knows (never registered, heard from, or holding tasks): nothing was sent."
	if d.unknown == to {
		msg = "Still: " + msg // refused again: the press confirms nothing
	}
	if close := closeAgents(to, c.agentIDs()); len(close) > 0 {
		msg += " Did you mean " + strings.Join(close, ", ") + "?"
	}
	msg += " Correct \"to\", or press " + createLabel + " to hand the work to " + to + " as a new agent."
	d.message.SetText("[yellow]" + escapeTags(msg) + "[-]")
	d.unknown = to
	if d.form.GetButtonIndex(createLabel) < 0 {
		d.form.AddButton(createLabel, func() {
			cur := ""
			if f, ok := d.form.GetFormItemByLabel(toLabel).(*tview.InputField); ok {
				cur = strings.TrimSpace(f.GetText())
			}
			if cur != d.unknown || cur == "" {
				d.message.SetText("[yellow]" + escapeTags("\"to\" changed since it was refused: press "+d.confirm+" to check it again") + "[-]")
				return
			}
			d.newAgent = cur
			c.submitRepair(d)
		})
	}
	d.form.SetFocus(d.form.GetFormItemIndex(toLabel))
	c.app.SetFocus(d.form)
}

// dropCreate takes the "Create new agent" button away once "to" is known
// (or confirmed).
func (d *repairDialog) dropCreate() {
	if i := d.form.GetButtonIndex(createLabel); i >= 0 {
		d.form.RemoveButton(i)
	}
	d.unknown = ""
}
