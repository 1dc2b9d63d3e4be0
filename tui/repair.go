package tui

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gdamore/tcell/v2"
	"github.com/rivo/tview"

	"github.com/mailroom/mailroom/mailbox"
)

// repairTarget is a lease the operator inspected, captured when the dialog
// opens: the request guards on exactly this lease id, whatever the panes show
// by the time the operator submits.
//
// A task waiting on its sender has no lease; its target is the question:
// waitingOn is the sender, and the lease is the one that asked (the
// daemon's guard), held by the worker that asked, leasedAtMs when it
// asked.
//
// A queued task has no lease either: queuedFor is the recipient the
// operator saw it queued for (the daemon's guard, command.queued_for).
//
// An undrained result (the Agents pane's dialog) is the task whose result
// waits for undrainedBy, its sender, to drain it (the hand-over's guard,
// command.sent_by).
type repairTarget struct {
	taskID, intent, kind string
	leasedTo, leaseID    string
	attempt              int
	leasedAtMs           int64
	idempotent           bool
	waitingOn            string
	question             mailbox.Turn
	queuedFor, sender    string
	queuedAtMs           int64
	undrainedBy          string
	status               string // an undrained result's status
}

func targetOf(e *mailbox.QueueEntry) repairTarget {
	t := repairTarget{taskID: e.Task.ID, intent: e.Task.IntentText, kind: e.Task.Kind(), leasedTo: e.LeasedTo,
		leaseID: e.LeaseID, attempt: e.Attempt, leasedAtMs: e.LeasedAtMs, idempotent: e.Task.Idempotent(), sender: e.Task.Sender}
	switch e.State {
	case mailbox.TaskWaiting:
		t.question = questionOf(&e.Task)
		t.waitingOn, t.leasedTo, t.leaseID, t.leasedAtMs = e.Task.Sender, askedBy(e), t.question.LeaseID, e.WaitingSinceMs
	case mailbox.TaskQueued:
		t.queuedFor, t.queuedAtMs = e.Task.Recipient, e.QueuedAtMs
	}
	return t
}

func resultTarget(r *resultRow) repairTarget {
	return repairTarget{taskID: r.TaskID, intent: r.intent, kind: r.kind, sender: r.Sender, undrainedBy: r.Sender,
		leasedTo: r.Recipient, leasedAtMs: r.PostedAtMs, status: r.Status}
}

// debtKind is what a target is: a lease, a queued task, a question
// waiting on its sender's answer, or a result waiting for its sender to
// drain it.
type debtKind int

const (
	kindLease debtKind = iota
	kindQueued
	kindQuestion
	kindResult
	kindCount
)

func (t repairTarget) what() debtKind {
	switch {
	case t.queuedFor != "":
		return kindQueued
	case t.waitingOn != "":
		return kindQuestion
	case t.undrainedBy != "":
		return kindResult
	}
	return kindLease
}

// queued reports whether the target is a queued task (moved or canceled,
// never requeued or force-errored).
func (t repairTarget) queued() bool { return t.what() == kindQueued }

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

// kindNoun names one target of a kind: "2 leases", "3 queued tasks".
var kindNoun = [kindCount]string{"lease", "queued task", "question", "result"}

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

// repairDialog is an open repair dialog: on one lease or on the marked
// ones, on queued tasks, on questions, or on everything an agent owes.
type repairDialog struct {
	action  actionID
	targets []repairTarget
	// agent is set when the dialog covers everything an agent owes (R or
	// E on the Agents pane): every lease it holds, the tasks queued for
	// it, the questions waiting on its answer and the results waiting for
	// it to drain, each kind with its own decision (choice).
	agent  string
	choice [kindCount]*tview.DropDown
	to     string // the recipient a requeue handed the tasks to, once sent
	// newAgent is the unknown recipient the operator confirmed with the
	// dialog's own "Create new agent" button: the confirm button never
	// confirms one.
	newAgent string
	// unknown is the unknown recipient the dialog last refused; the
	// "Create new agent" button is there while it is.
	unknown string
	box     *tview.Flex
	form    *tview.Form
	info    *tview.TextView
	message *tview.TextView
	confirm string // the confirm button's label
	busy    bool
	// changed holds, by task id, what became of each inspected lease that
	// is no longer current: the dialog says so and offers no confirm.
	changed map[string]string
	// checked is the rows version the targets were last checked against.
	checked uint64
	// done counts what was repaired, by kind; endedHanded the errors of
	// ended questions handed over with the results. They, conflicts and
	// skipped carry over when a failure keeps the dialog open and the
	// operator sends the rest again.
	done        [kindCount]int
	endedHanded int
	conflicts   []repairConflict
	lastOut     mailbox.RepairOutcome
	// offered is the reason the dialog was opened with, from the last
	// repair of the same kind (shown as such).
	offered string
}

// repairConflict is a lease that had changed when its repair arrived.
type repairConflict struct {
	target repairTarget
	err    *mailbox.Error
}

// Dialog geometry: wide enough for a full lease id beside its label, and
// never wider or taller than the screen.
const (
	dialogWidth = 90
	fieldWidth  = 50
)

// createLabel is the button that confirms an agent the mailbox does not
// know: never the confirm button, never focused by the dialog.
const createLabel = "Create new agent"

// openRepair opens the requeue or force-error dialog for the marked leases,
// or the selected one when none is marked; on the Agents pane, for
// everything the selected agent owes; on the Waiting pane (force error
// only), for the marked questions or the selected one; on the Queue pane,
// the move or cancel dialog for the marked queued tasks, or the selected
// one.
func (c *Console) openRepair(act actionID) {
	if c.rows == nil {
		c.flash(false, "nothing to repair yet: the console has not received the mailbox")
		return
	}
	var targets []repairTarget
	var agent string
	pick := func(p paneID, es []mailbox.QueueEntry, none string) bool {
		pn := c.panes[p]
		idx := pn.marked()
		if len(idx) == 0 {
			i, ok := pn.selected()
			if !ok {
				c.flash(false, none)
				return false
			}
			idx = []int{i}
		}
		for _, i := range idx {
			targets = append(targets, targetOf(&es[i]))
		}
		return true
	}
	switch {
	case c.focus == paneWaiting:
		if !pick(paneWaiting, c.rows.waiting, "no waiting task selected") {
			return
		}
	case c.focus == paneAgents:
		i, ok := c.panes[paneAgents].selected()
		if !ok {
			c.flash(false, "no agent selected")
			return
		}
		agent = c.rows.agents[i].Agent
		targets = c.rows.debtOf(agent)
		if len(targets) == 0 {
			c.flash(false, agent+" owes nothing: it holds no lease, has no task queued, no question waits on its answer and no result waits for it")
			return
		}
	case c.focus == paneQueue:
		if !pick(paneQueue, c.rows.queued, "no queued task selected") {
			return
		}
	default:
		if !pick(paneLeases, c.rows.leases, "no lease selected") {
			return
		}
	}
	d := &repairDialog{action: act, agent: agent, targets: targets, form: tview.NewForm(), changed: map[string]string{},
		info:    tview.NewTextView().SetDynamicColors(true).SetWrap(true).SetWordWrap(true),
		message: tview.NewTextView().SetDynamicColors(true).SetWrap(true).SetWordWrap(true)}
	d.checked = c.rows.version
	c.dialog = d
	n := d.countKinds()

	d.form.SetBorderPadding(0, 0, 1, 1)
	var to *tview.InputField
	addTo := func() {
		d.form.AddInputField(toLabel, "", fieldWidth, nil, nil)
		to = d.form.GetFormItemByLabel(toLabel).(*tview.InputField)
		to.SetAutocompleteFunc(c.agentCompletions).
			SetAutocompletedFunc(func(text string, _, source int) bool {
				to.SetText(text)
				if source == tview.AutocompletedNavigate {
					return false // the list stays open
				}
				if source == tview.AutocompletedTab {
					// As a shell's Tab: the completion taken, on to the
					// reason, so that the agent's first letters and Tab
					// name it. (Blur, which this calls, takes no lock the
					// field holds here.)
					d.form.SetFocus(d.form.GetFormItemIndex("reason"))
					c.app.SetFocus(d.form)
				}
				return true
			})
	}
	addRisk := func() {
		// idempotent is offered only when every task declared it;
		// otherwise the operator has to accept that the work may run
		// twice.
		var risks []string
		if !slices.ContainsFunc(d.targets, func(t repairTarget) bool { return t.what() == kindLease && !t.idempotent }) {
			risks = append(risks, mailbox.RiskIdempotent)
		}
		risks = append(risks, mailbox.RiskOperatorAccepted)
		d.form.AddDropDown("duplicate risk", risks, 0, nil)
	}
	focus := "reason"
	switch {
	case agent != "":
		// Everything the agent owes, a decision for each kind: R hands
		// it all to the agent in "to", E ends what can be ended. "to"
		// comes just before the reason, as in the other dialogs.
		for k := range kindCount {
			if n[k] == 0 {
				continue
			}
			choices := debtChoices[k]
			opts := make([]string, len(choices))
			for i, ch := range choices {
				opts[i] = decisionText[ch].option
			}
			initial := 0
			if act == actForceError {
				initial = len(choices) - 1 // leave
				if k != kindResult {
					initial = 1
				}
			}
			label := plural(n[k], kindNoun[k])
			d.form.AddDropDown(label, opts, initial, nil)
			d.choice[k] = d.form.GetFormItemByLabel(label).(*tview.DropDown)
		}
		if n[kindLease] > 0 {
			addRisk()
		}
		addTo()
		d.form.AddInputField("reason", "", fieldWidth, nil, nil)
		if d.anyNeedsTo() {
			focus = toLabel // first, as a shell's command: where it goes
		}
	case act == actRequeue || act == actMoveQueued:
		if n[kindLease] > 0 {
			addRisk()
		}
		// Before the reason, so reason Enter Enter still repairs; Shift-Tab
		// from the reason reaches it.
		addTo()
		d.form.AddInputField("reason", c.offerReason(d), fieldWidth, nil, nil)
		if act == actMoveQueued {
			focus = toLabel // a move has no default recipient
		}
	default:
		d.form.AddInputField("reason", c.offerReason(d), fieldWidth, nil, nil)
		msg := ""
		if n[kindLease] > 0 && c.lastRepair.key == repairKey(d) {
			msg = c.lastRepair.message
		}
		d.form.AddInputField("message", msg, fieldWidth, nil, nil)
		switch {
		case n[kindLease] > 0:
		case n[kindQuestion] > 0:
			d.form.GetFormItemByLabel("message").(*tview.InputField).SetPlaceholder("(optional) the sender's error; empty: the reason")
		default:
			d.form.GetFormItemByLabel("message").(*tview.InputField).SetPlaceholder("(optional) the sender's error; empty: one naming the reason")
		}
	}
	if to != nil {
		to.SetPlaceholder(d.toPlaceholder())
		if agent != "" {
			// The description names the agent that takes the work.
			to.SetChangedFunc(func(string) {
				if d.info != nil && d.form.GetButtonCount() > 0 {
					c.renderDialogInfo(d)
				}
			})
		}
	}
	d.confirm = d.confirmLabel()
	d.form.AddButton(d.confirm, func() { c.submitRepair(d) })
	for k := range kindCount {
		if dd := d.choice[k]; dd != nil {
			// Whatever is chosen, the title, the button and "to" say it.
			dd.SetSelectedFunc(func(string, int) { c.relabel(d) })
		}
	}
	closeLabel := "Cancel"
	if d.action == actCancelQueued {
		closeLabel = "Close" // "Cancel" is what the confirm button does
	}
	d.form.AddButton(closeLabel, c.closeDialog)
	d.form.SetCancelFunc(func() {
		// tview's drop-down reports Esc on its open list as the end of
		// the form, then closes the list: the operator meant only the
		// list, so the dialog and what was typed stay.
		for i := range d.form.GetFormItemCount() {
			if dd, ok := d.form.GetFormItem(i).(*tview.DropDown); ok && dd.IsOpen() {
				return
			}
		}
		c.closeDialog()
	})
	// Typing the reason is the deliberate act, so the reason has the
	// focus; Enter moves on, and Enter on the confirm button repairs.
	d.form.SetFocus(d.form.GetFormItemIndex(focus))
	c.renderDialogInfo(d)
	if d.offered != "" {
		d.message.SetText("[yellow]The reason is offered again from your last " + escapeTags(repairKey(d)) + ": edit it if this one has another.[-]")
	}

	formRows := 2*d.form.GetFormItemCount() + 1
	if agent != "" {
		// A field a row, so that everything the agent owes shows at
		// 80x24 beside its description: the items, a blank, the buttons.
		d.form.SetItemPadding(0)
		formRows = d.form.GetFormItemCount() + 2
	}
	box := tview.NewFlex().SetDirection(tview.FlexRow).
		AddItem(d.info, 0, 0, false).
		AddItem(d.form, formRows, 0, true).
		AddItem(d.message, 0, 1, false)
	box.SetBorder(true).SetTitle(d.title())
	d.box = box
	c.pages.AddPage(pageDialog, &modal{Primitive: box, size: func(sw, sh int) (int, int) {
		w := min(dialogWidth, sw)
		inner := w - 2
		infoRows := wrappedRows(d.info.GetText(false), inner)
		msgRows := max(1, wrappedRows(d.message.GetText(false), inner))
		// The fields and buttons always show; the description gives way
		// first (it scrolls), the message last.
		h := min(2+infoRows+formRows+msgRows, sh)
		box.ResizeItem(d.info, max(1, min(infoRows, h-2-formRows-min(msgRows, 3))), 0)
		return w, h
	}}, true, true)
	c.app.SetFocus(d.form)
}

// repairMemory is the last repair's reason and message, and which kind of
// repair it was: the next dialog of the same kind offers them again, and
// says so; another kind of repair starts empty.
type repairMemory struct {
	key, reason, message string
}

// repairKey names a dialog's kind of repair: "requeue of leases".
func repairKey(d *repairDialog) string {
	if d.agent != "" {
		return "settlement of an agent"
	}
	var kinds []string
	for k, n := range d.countKinds() {
		if n > 0 {
			kinds = append(kinds, decisionText[d.decisionOf(debtKind(k))].button+" of "+kindNoun[k]+"s")
		}
	}
	return strings.Join(kinds, ", ")
}

// offerReason is the reason a dialog opens with: the last repair's, when
// it was of the same kind (the dialog says so), else none.
func (c *Console) offerReason(d *repairDialog) string {
	if c.lastRepair.reason != "" && c.lastRepair.key == repairKey(d) {
		d.offered = c.lastRepair.reason
	}
	return d.offered
}

// relabel says a changed choice in the title, on the button and in the
// "to" field's placeholder.
func (c *Console) relabel(d *repairDialog) {
	if i := d.form.GetButtonIndex(d.confirm); i >= 0 {
		d.confirm = d.confirmLabel()
		d.form.GetButton(i).SetLabel(d.confirm)
	}
	if to, ok := d.form.GetFormItemByLabel(toLabel).(*tview.InputField); ok {
		to.SetPlaceholder(d.toPlaceholder())
	}
	if d.box != nil {
		d.box.SetTitle(d.title())
	}
	c.renderDialogInfo(d)
}

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

// renderDialogInfo describes the inspected leases at the top of a dialog:
// what they were, what became of those that changed, and whether the
// console is up to date at all.
func (c *Console) renderDialogInfo(d *repairDialog) {
	now := c.opts.Now().UnixMilli()
	var b strings.Builder
	if len(d.changed) > 0 {
		colour := "red"
		switch {
		case len(d.targets) == 1 && d.targets[0].waitingOn != "":
			b.WriteString("[red::b]The question changed while this dialog was open: nothing to repair.")
		case len(d.targets) == 1 && d.targets[0].queued():
			b.WriteString("[red::b]The task changed while this dialog was open: nothing to repair.")
		case len(d.targets) == 1:
			b.WriteString("[red::b]The lease changed while this dialog was open: nothing to repair.")
		default:
			// The rest are still the operator's to repair: each repair is
			// guarded by its own lease (or recipient), so the changed ones
			// are refused by the daemon and listed, as the CLI's bulk
			// repair does.
			colour = "yellow"
			what := "leases"
			if n := d.countKinds(); n[kindLease] != len(d.targets) {
				what = "tasks"
			}
			fmt.Fprintf(&b, "[yellow::b]%d of these %d %s changed while this dialog was open: they will be left alone and listed; the other %d are repaired.",
				len(d.changed), len(d.targets), what, len(d.targets)-len(d.changed))
		}
		b.WriteString("[-::-]\n")
		for _, t := range d.targets {
			what, ok := d.changed[t.taskID]
			switch {
			case !ok:
			case t.queued():
				fmt.Fprintf(&b, "[%s]task %s: you saw it queued for %s\n  now: %s[-]\n", colour, mailbox.ShortID(t.taskID), escapeTags(t.queuedFor), escapeTags(what))
			case t.what() == kindResult:
				fmt.Fprintf(&b, "[%s]task %s: you saw its result waiting for %s\n  now: %s[-]\n", colour, mailbox.ShortID(t.taskID), escapeTags(t.undrainedBy), escapeTags(what))
			default:
				fmt.Fprintf(&b, "[%s]task %s: you inspected lease %s (attempt %d, %s)\n  now: %s[-]\n", colour, mailbox.ShortID(t.taskID),
					mailbox.ShortID(t.leaseID), t.attempt, escapeTags(t.leasedTo), escapeTags(what))
			}
		}
	}
	var leaseTs, queuedTs []repairTarget
	for _, t := range d.targets {
		switch t.what() {
		case kindQueued:
			queuedTs = append(queuedTs, t)
		case kindLease, kindQuestion:
			leaseTs = append(leaseTs, t)
		}
	}
	if d.agent != "" {
		c.renderDebt(&b, d, now)
	} else {
		c.renderLeaseTargets(&b, d, leaseTs, now)
		c.renderQueuedTargets(&b, d, queuedTs, now)
	}
	switch st := c.status; {
	case st.paused:
		fmt.Fprintf(&b, "[yellow]Paused, %s events held: the panes may be out of date, and a lease may have changed unseen.[-]\n", commas(st.held))
	case st.connSeen && (!st.conn.Live || st.gap != nil):
		b.WriteString("[yellow]Not connected to the daemon: the panes may be out of date, and the repair may not get through.[-]\n")
	}
	d.info.SetText(strings.TrimRight(b.String(), "\n"))
}

// renderDebt describes everything an agent owes, a line for each kind
// with its count and what the dialog's choice does to it.
func (c *Console) renderDebt(b *strings.Builder, d *repairDialog, now int64) {
	n := d.countKinds()
	oldest := [kindCount]int64{}
	for _, t := range d.targets {
		at := t.leasedAtMs
		if t.queued() {
			at = t.queuedAtMs
		}
		if k := t.what(); oldest[k] == 0 || at < oldest[k] {
			oldest[k] = at
		}
	}
	to := "the agent in \"to\""
	if f, ok := d.form.GetFormItemByLabel(toLabel).(*tview.InputField); ok && strings.TrimSpace(f.GetText()) != "" {
		to = strings.TrimSpace(f.GetText())
	}
	fmt.Fprintf(b, "[::b]Everything %s owes[::-], each kind with its own choice below:\n", escapeTags(d.agent))
	for k := range kindCount {
		if n[k] == 0 {
			continue
		}
		var what, does string
		age := formatAge(msAge(now, oldest[k]))
		switch k {
		case kindLease:
			what = fmt.Sprintf("%s it holds, the oldest held %s", plural(n[k], "lease"), age)
		case kindQueued:
			what = fmt.Sprintf("%s for it, the oldest queued %s", plural(n[k], "task"), age)
		case kindQuestion:
			what = fmt.Sprintf("%s waiting on its answer (their workers wait), the longest for %s", plural(n[k], "question"), age)
		case kindResult:
			what = fmt.Sprintf("%s waiting for it to drain, the oldest posted %s ago", plural(n[k], "result"), age)
		}
		switch d.decisionOf(k) {
		case decRequeue:
			does = "requeued, for " + to
			if to == "the agent in \"to\"" {
				does = "requeued, for the agent in \"to\" (empty: for " + d.agent + " again)"
			}
		case decForceError:
			does = "each ended with an error result naming the reason, for its sender"
		case decMove:
			does = "moved to " + to + ", keeping their places"
		case decCancel:
			does = "canceled: each sender gets an error result naming the reason"
		case decHandOver:
			does = "handed over to " + to + ": it " + map[debtKind]string{kindQuestion: "answers them", kindResult: "drains them"}[k] + " from now on"
		case decEnd:
			does = "ended with an error result naming the reason"
			if d.endsAndHands() {
				does += ", which is handed over with the results"
			} else {
				does += ", which waits for " + d.agent + " to drain it"
			}
		case decLeave:
			does = "left as they are: " + d.agent + " stays flagged while they wait on it"
		}
		fmt.Fprintf(b, "  [::b]%s[::-]: %s\n", escapeTags(what), escapeTags(does))
	}
	if n[kindLease] > 0 && d.decisionOf(kindLease) == decRequeue {
		unsafe := 0
		for _, t := range d.targets {
			if t.what() == kindLease && !t.idempotent {
				unsafe++
			}
		}
		if unsafe > 0 {
			fmt.Fprintf(b, "[yellow]%d of %d leased tasks are unsafe: requeueing them may run their work twice[-]\n", unsafe, n[kindLease])
		}
	}
	b.WriteString("[gray]Each applies only while its task is as you see it now (the same lease, queued for the same agent, still waiting on it); the others are left as they are and listed.[-]\n")
}

// renderQueuedTargets describes the queued tasks of a dialog.
func (c *Console) renderQueuedTargets(b *strings.Builder, d *repairDialog, ts []repairTarget, now int64) {
	switch len(ts) {
	case 0:
		return
	case 1:
		t := ts[0]
		fmt.Fprintf(b, "[::b]task[::-]       %s  %s\n", t.taskID, escapeTags(orDash(t.kind)))
		fmt.Fprintf(b, "[::b]intent[::-]     %s\n", escapeTags(truncate(oneLine(t.intent), 200)))
		fmt.Fprintf(b, "[::b]queued for[::-] %s for %s   [::b]sender[::-] %s   [::b]attempt[::-] %d\n", escapeTags(t.queuedFor), formatAge(msAge(now, t.queuedAtMs)), escapeTags(t.sender), t.attempt)
	default:
		oldest := ts[0].queuedAtMs
		for _, t := range ts {
			oldest = min(oldest, t.queuedAtMs)
		}
		fmt.Fprintf(b, "[::b]%d queued tasks[::-], the oldest queued %s\n", len(ts), formatAge(msAge(now, oldest)))
		fmt.Fprintf(b, "[::b]queued for[::-] %s\n", countedAgents(ts, func(t repairTarget) string { return t.queuedFor }))
	}
	if d.decisionOf(kindQueued) == decCancel {
		b.WriteString("[gray]Canceled, a task leaves its queue and its sender gets an error result naming the reason.[-]\n")
	}
	b.WriteString("[gray]Each applies only while its task is still queued for the agent you saw; the others are left as they are and listed.[-]\n")
}

// countedAgents lists the agents of ts (agent says which of a target's)
// with how many targets each has, most first, as "a@x (3), b@x (1)".
func countedAgents(ts []repairTarget, agent func(repairTarget) string) string {
	counts := map[string]int{}
	var names []string
	for _, t := range ts {
		a := agent(t)
		if counts[a] == 0 {
			names = append(names, a)
		}
		counts[a]++
	}
	slices.SortStableFunc(names, func(a, b string) int { return counts[b] - counts[a] })
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = fmt.Sprintf("%s (%d)", escapeTags(n), counts[n])
	}
	return strings.Join(out, ", ")
}

// renderLeaseTargets describes the leases (or the questions) of a dialog.
func (c *Console) renderLeaseTargets(b *strings.Builder, d *repairDialog, ts []repairTarget, now int64) {
	if len(ts) == 0 {
		return
	}
	switch {
	case len(ts) == 1 && ts[0].waitingOn != "":
		t := ts[0]
		fmt.Fprintf(b, "[::b]task[::-]       %s  %s\n", t.taskID, escapeTags(orDash(t.kind)))
		fmt.Fprintf(b, "[::b]intent[::-]     %s\n", escapeTags(truncate(oneLine(t.intent), 200)))
		fmt.Fprintf(b, "[::b]question[::-]   %s: %s\n", escapeTags(t.question.Status), escapeTags(truncate(visible(oneLine(contentText(t.question.Content))), 200)))
		fmt.Fprintf(b, "[::b]waiting on[::-] %s for %s   [::b]asked by[::-] %s   [::b]attempt[::-] %d\n", escapeTags(t.waitingOn), formatAge(msAge(now, t.leasedAtMs)), escapeTags(t.leasedTo), t.attempt)
		fmt.Fprintf(b, "[::b]asked under[::-] lease %s\n[gray]The error applies only while the task still waits on this question; its sender receives the error instead of answering.[-]\n", t.leaseID)
	case ts[0].waitingOn != "":
		oldest := ts[0].leasedAtMs
		for _, t := range ts {
			oldest = min(oldest, t.leasedAtMs)
		}
		fmt.Fprintf(b, "[::b]%d questions[::-], the longest waiting %s\n", len(ts), formatAge(msAge(now, oldest)))
		fmt.Fprintf(b, "[::b]waiting on[::-] %s\n", countedAgents(ts, func(t repairTarget) string { return t.waitingOn }))
		b.WriteString("[gray]Each ends with an error result for its sender instead of an answer, only while its task still waits on the question you marked; the others are left as they are and listed.[-]\n")
	case len(ts) == 1:
		t := ts[0]
		fmt.Fprintf(b, "[::b]task[::-]      %s  %s\n", t.taskID, escapeTags(orDash(t.kind)))
		// Three lines of it at most: the fields below must keep their room.
		fmt.Fprintf(b, "[::b]intent[::-]    %s\n", escapeTags(truncate(oneLine(t.intent), 200)))
		fmt.Fprintf(b, "[::b]leased to[::-] %s   [::b]attempt[::-] %d   [::b]lease age[::-] %s\n", escapeTags(t.leasedTo), t.attempt, formatAge(msAge(now, t.leasedAtMs)))
		fmt.Fprintf(b, "[::b]lease[::-]     %s\n[gray]The repair applies only while this lease is still the current one.[-]\n", t.leaseID)
		if !t.idempotent && d.action == actRequeue {
			b.WriteString("[yellow]unsafe task: requeueing it may run the work twice[-]\n")
		}
	default:
		oldest, unsafe := ts[0].leasedAtMs, 0
		for _, t := range ts {
			oldest = min(oldest, t.leasedAtMs)
			if !t.idempotent {
				unsafe++
			}
		}
		fmt.Fprintf(b, "[::b]%d leases[::-], the oldest held %s\n", len(ts), formatAge(msAge(now, oldest)))
		fmt.Fprintf(b, "[::b]holders[::-] %s\n", countedAgents(ts, func(t repairTarget) string { return t.leasedTo }))
		b.WriteString("[gray]Each repair applies only while its lease is still the one you marked; the others are left as they are and listed.[-]\n")
		if unsafe > 0 && d.action == actRequeue {
			fmt.Fprintf(b, "[yellow]%d of %d tasks are unsafe: requeueing them may run their work twice[-]\n", unsafe, len(ts))
		}
	}
}

// refreshDialog checks the open dialog's leases against rows that just
// arrived: a lease that changed takes the confirm button of a dialog on
// that one lease away at once; on several, the dialog lists it and its
// repair is left to the guard (refused, and listed in the outcome).
func (c *Console) refreshDialog() {
	d := c.dialog
	if d == nil || d.busy {
		return
	}
	if c.rows != nil && c.rows.version != d.checked {
		d.checked = c.rows.version
		current := make(map[string]*mailbox.QueueEntry, len(d.targets))
		pending := map[string]*resultRow{}
		for _, t := range d.targets {
			current[t.taskID] = nil
			if t.what() == kindResult {
				pending[t.taskID] = nil
			}
		}
		for _, es := range [][]mailbox.QueueEntry{c.rows.leases, c.rows.waiting, c.rows.queued} {
			for i := range es {
				if e := &es[i]; current[e.Task.ID] == nil {
					if _, ok := current[e.Task.ID]; ok {
						current[e.Task.ID] = e
					}
				}
			}
		}
		if len(pending) > 0 {
			for i := range c.rows.results {
				if r := &c.rows.results[i]; pending[r.TaskID] == nil {
					if _, ok := pending[r.TaskID]; ok {
						pending[r.TaskID] = r
					}
				}
			}
		}
		for _, t := range d.targets {
			e := current[t.taskID]
			switch t.what() {
			case kindResult:
				switch r := pending[t.taskID]; {
				case r != nil && r.Sender == t.undrainedBy:
				case r != nil:
					d.changed[t.taskID] = "waiting for " + r.Sender + " to drain it (handed over)"
				default:
					d.changed[t.taskID] = "drained by " + t.undrainedBy + ", or handed over and drained"
				}
				continue
			case kindQueued:
				switch {
				case e != nil && e.State == mailbox.TaskQueued && e.Task.Recipient == t.queuedFor:
				case e != nil && e.State == mailbox.TaskQueued:
					d.changed[t.taskID] = "queued for " + e.Task.Recipient
				case e != nil && e.State == mailbox.TaskInFlight:
					d.changed[t.taskID] = fmt.Sprintf("leased by %s since %s (lease %s, attempt %d)", e.LeasedTo, formatClock(e.LeasedAtMs), mailbox.ShortID(e.LeaseID), e.Attempt)
				case e != nil:
					d.changed[t.taskID] = fmt.Sprintf("leased by %s, whose worker asked %s a question (%s); it waits on the answer", askedBy(e), e.Task.Sender, questionOf(&e.Task).Status)
				default:
					d.changed[t.taskID] = c.whatBecameOf(t.taskID)
				}
				continue
			}
			switch {
			case e != nil && e.State == mailbox.TaskWaiting:
				q := questionOf(&e.Task)
				switch {
				case t.waitingOn != "" && q.LeaseID == t.leaseID && e.Task.Sender == t.waitingOn:
				case t.waitingOn != "" && q.LeaseID == t.leaseID:
					d.changed[t.taskID] = "handed over: it waits on " + e.Task.Sender + "'s answer now"
				case t.waitingOn != "":
					d.changed[t.taskID] = fmt.Sprintf("answered, then asked again under lease %s (attempt %d)", mailbox.ShortID(q.LeaseID), e.Attempt)
				default:
					d.changed[t.taskID] = fmt.Sprintf("no lease: its worker asked %s a question (%s), and it waits on the answer", e.Task.Sender, q.Status)
				}
			case e != nil && e.State == mailbox.TaskInFlight && e.LeaseID == t.leaseID:
			case e != nil && e.State == mailbox.TaskQueued && t.waitingOn == "":
				d.changed[t.taskID] = "no lease: queued for " + e.Task.Recipient + " (requeued)"
			case e != nil && e.State == mailbox.TaskQueued:
				d.changed[t.taskID] = "no longer waiting: answered, and queued for " + e.Task.Recipient + " again"
			case e != nil && e.State == mailbox.TaskInFlight:
				d.changed[t.taskID] = fmt.Sprintf("lease %s, held by %s since %s (attempt %d)", mailbox.ShortID(e.LeaseID), e.LeasedTo, formatClock(e.LeasedAtMs), e.Attempt)
			case t.waitingOn != "":
				d.changed[t.taskID] = "no longer waiting: " + c.whatBecameOf(t.taskID)
			default:
				d.changed[t.taskID] = "no lease: " + c.whatBecameOf(t.taskID)
			}
		}
		if len(d.changed) > 0 && len(d.targets) == 1 {
			if i := d.form.GetButtonIndex(d.confirm); i >= 0 {
				d.form.RemoveButton(i)
				if d.form.HasFocus() {
					c.app.SetFocus(d.form) // the focus may have been on it
				}
			}
		}
	}
	c.renderDialogInfo(d)
}

// whatBecameOf says, from the replica, what became of a task that is no
// longer queued, leased or waiting: what its result says, or that it was
// forgotten.
func (c *Console) whatBecameOf(taskID string) string {
	det := c.model.detail(taskID)
	switch {
	case det.result != nil && det.result.Forced:
		return fmt.Sprintf("ended by an operator's forced error; its result waits for %s", det.result.Sender)
	case det.result != nil:
		return fmt.Sprintf("leased and finished by its worker: %s posted %s at %s; the result waits for %s", orDash(det.result.Recipient), det.result.Status, formatClock(det.result.PostedAtMs), det.result.Sender)
	case det.known && det.record.State != "":
		return "now " + strings.ReplaceAll(det.record.State, "_", " ")
	}
	return "finished and drained, or canceled"
}

func (c *Console) closeDialog() {
	c.dialog = nil
	c.pages.RemovePage(pageDialog)
	c.focusPane(c.focus)
}

// submitRepair checks the dialog's fields and sends one guarded request per
// lease or queued task off the UI goroutine; the outcome comes back
// through QueueUpdateDraw.
func (c *Console) submitRepair(d *repairDialog) {
	if d.busy || len(d.changed) > 0 && len(d.targets) == 1 {
		return
	}
	field := func(label string) string {
		if f, ok := d.form.GetFormItemByLabel(label).(*tview.InputField); ok {
			return strings.TrimSpace(f.GetText())
		}
		return ""
	}
	refuse := func(label, msg string) {
		d.message.SetText("[red]" + escapeTags(msg) + "[-]")
		d.form.SetFocus(d.form.GetFormItemIndex(label))
		c.app.SetFocus(d.form)
	}
	acted := d.acted()
	if acted == ([kindCount]int{}) {
		refuse("reason", "every choice is \"leave them\": nothing to do; choose what to do with at least one kind, or Cancel")
		return
	}
	reason := field("reason")
	if reason == "" {
		refuse("reason", "a reason is required: say why, it goes into the audit history")
		return
	}
	to := field(toLabel)
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
		refuse(toLabel, msg)
		return
	}
	if to != "" && to == d.agent {
		refuse(toLabel, "\"to\" names "+to+" itself: name the agent that takes its work")
		return
	}
	if to != "" && !c.knowsAgent(to) && d.newAgent != to {
		c.refuseUnknown(d, to)
		return
	}
	d.dropCreate()
	msg := field("message")
	if d.agent != "" {
		msg = reason // the agent's dialog ends what it ends with the reason
	} else if msg == "" && (acted[kindLease] > 0 && d.decisionOf(kindLease) == decForceError) {
		refuse("message", "a message is required: it is the error the sender receives")
		return
	} else if msg == "" && acted[kindQuestion] > 0 {
		msg = reason // the placeholder says so
	}
	risk := ""
	if dd, ok := d.form.GetFormItemByLabel("duplicate risk").(*tview.DropDown); ok {
		_, risk = dd.GetCurrentOption()
	}
	newAgent := to != "" && d.newAgent == to
	if to != "" && d.anyNeedsTo() || acted[kindLease] > 0 && d.decisionOf(kindLease) == decRequeue {
		d.to = to
	}
	c.lastRepair = repairMemory{key: repairKey(d), reason: reason}
	if acted[kindLease]+acted[kindQuestion] > 0 && d.agent == "" {
		c.lastRepair.message = msg
	}
	d.busy = true
	d.message.SetText("[yellow]sending…[-]")
	var targets []repairTarget
	for _, t := range d.targets {
		if d.decisionOf(t.what()) != decLeave {
			targets = append(targets, t)
		}
	}
	handEnded := d.endsAndHands()
	// The choices as pressed: the goroutine below reads no widget.
	var decided [kindCount]decision
	for k := range kindCount {
		decided[k] = d.decisionOf(k)
	}
	decide := func(k debtKind) decision { return decided[k] }
	agent := d.agent
	ctx := c.runCtx
	c.bg.spawn(func() {
		var res repairResults
		for i, t := range targets {
			req := mailbox.RepairRequest{TaskID: t.taskID, Reason: reason}
			switch decide(t.what()) {
			case decRequeue:
				req.Command = mailbox.RepairCommand{Action: mailbox.ActionRequeue, DuplicateRisk: risk, Recipient: to, NewAgent: newAgent, LeaseID: t.leaseID}
			case decForceError, decEnd:
				req.Command = mailbox.RepairCommand{Action: mailbox.ActionForceError, Message: msg, LeaseID: t.leaseID}
			case decMove:
				req.Command = mailbox.RepairCommand{Action: mailbox.ActionMove, Recipient: to, NewAgent: newAgent, QueuedFor: t.queuedFor}
			case decCancel:
				req.Command = mailbox.RepairCommand{Action: mailbox.ActionCancel, Message: msg, QueuedFor: t.queuedFor}
			case decHandOver:
				req.Command = handOver(t.sender, to, newAgent)
			}
			rctx, cancel := context.WithTimeout(ctx, repairTimeout)
			out, err := c.backend.Repair(rctx, req)
			cancel()
			if err == nil && t.what() == kindQuestion && handEnded {
				// Its error is a result for the agent now: it goes with
				// the results, to the agent that drains them.
				rctx, cancel := context.WithTimeout(ctx, repairTimeout)
				_, herr := c.backend.Repair(rctx, mailbox.RepairRequest{TaskID: t.taskID, Reason: reason, Command: handOver(agent, to, newAgent)})
				cancel()
				res.last = out
				if herr == nil {
					res.endedHanded++
					continue
				}
				// Ended all the same; the rest stay in the dialog.
				res.done[kindQuestion]++
				res.failed, res.err, res.rest = t, fmt.Errorf("ended, but its error result was not handed over: %w", herr), targets[i+1:]
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
				res.failed, res.err, res.rest = t, err, targets[i:]
			}
			if res.err != nil {
				break
			}
		}
		c.app.QueueUpdateDraw(func() { c.repairDone(d, res) })
	})
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

// repairDone reports a repair's outcome; it runs on the UI goroutine. A
// failure keeps the dialog open with everything typed and the error in
// full; otherwise the dialog closes and the outcome is a flash, or a page
// listing every lease or task that had changed.
func (c *Console) repairDone(d *repairDialog, res repairResults) {
	d.busy = false
	any := false
	for k := range kindCount {
		d.done[k] += res.done[k]
		any = any || res.done[k] > 0
	}
	d.endedHanded += res.endedHanded
	if any {
		d.lastOut = res.last
	}
	d.conflicts = append(d.conflicts, res.conflicts...)
	if res.err != nil {
		what := "repair of " + mailbox.ShortID(res.failed.taskID)
		var appErr *mailbox.Error
		if errors.As(res.err, &appErr) {
			what += " refused: " + appErr.Message
		} else {
			what += " failed: " + res.err.Error()
		}
		var progress string
		if d.total() > 0 || len(d.conflicts) > 0 {
			progress = d.summary() + "; "
		}
		// What is left to send: the title and the button count only those.
		d.targets = res.rest
		if i := d.form.GetButtonIndex(d.confirm); i >= 0 {
			d.confirm = d.confirmLabel()
			d.form.GetButton(i).SetLabel(d.confirm)
		}
		d.box.SetTitle(d.title())
		c.renderDialogInfo(d)
		if c.dialog == d {
			d.message.SetText("[red]" + escapeTags(progress+what) + "[-]")
			c.app.SetFocus(d.form)
		}
		c.flash(false, what)
		return
	}
	if c.dialog == d {
		c.closeDialog()
	}
	total := d.total() + len(d.conflicts)
	_, to := d.verbs(kindLease)
	switch {
	case len(d.conflicts) > 0:
		c.showOutcome(d, total)
	case d.agent != "":
		c.flash(true, d.summary())
	case total == 1 && d.lastOut.Action == mailbox.OutcomeForcedError:
		c.flash(true, "forced error on "+mailbox.ShortID(d.lastOut.TaskID))
	case total == 1 && d.lastOut.Action == mailbox.OutcomeCanceled:
		c.flash(true, "canceled "+mailbox.ShortID(d.lastOut.TaskID)+": its sender gets an error")
	case total == 1 && d.lastOut.Action == mailbox.OutcomeMoved:
		c.flash(true, "moved "+mailbox.ShortID(d.lastOut.TaskID)+to)
	case total == 1:
		c.flash(true, fmt.Sprintf("requeued %s%s (attempt %d)", mailbox.ShortID(d.lastOut.TaskID), to, d.lastOut.Attempt))
	default:
		c.flash(true, d.summary())
	}
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

// showOutcome lists the leases and queued tasks whose repair was refused
// because they had changed: what the operator saw against what is now.
func (c *Console) showOutcome(d *repairDialog, total int) {
	var b strings.Builder
	if total == 1 && d.conflicts[0].target.queued() {
		b.WriteString("The task changed since you opened the dialog. Nothing was changed.\n\n")
	} else if total == 1 {
		b.WriteString("The lease changed since you opened the dialog. Nothing was changed.\n\n")
	} else {
		n := d.countKinds()
		var what string
		switch {
		case n[kindQueued] == 0 && n[kindQuestion] == 0 && n[kindResult] == 0:
			verb, to := d.verbs(kindLease)
			what = fmt.Sprintf("%s %d of %d leases%s", verb, d.done[kindLease], total, to)
		case n[kindLease] == 0 && n[kindQuestion] == 0 && n[kindResult] == 0:
			verb, to := d.verbs(kindQueued)
			what = fmt.Sprintf("%s %d of %d queued tasks%s", verb, d.done[kindQueued], total, to)
		default:
			what = fmt.Sprintf("%s, of %d", strings.TrimSuffix(d.summary(), fmt.Sprintf(", %d had changed", len(d.conflicts))), total)
		}
		seen := "since you marked them"
		if d.agent != "" {
			seen = "since you opened the dialog"
		}
		fmt.Fprintf(&b, "%s. %d had changed %s; nothing was done to them:\n\n", strings.ToUpper(what[:1])+what[1:], len(d.conflicts), seen)
	}
	for _, cf := range d.conflicts {
		t := cf.target
		det := cf.err.Details
		switch t.what() {
		case kindQueued:
			fmt.Fprintf(&b, "task %s: you saw it queued for %s.\n", mailbox.ShortID(t.taskID), t.queuedFor)
			switch {
			case det != nil && det.ActualRecipient != "":
				fmt.Fprintf(&b, "  It is queued for %s now.\n", det.ActualRecipient)
			case det != nil && det.ActualLeaseID != "":
				fmt.Fprintf(&b, "  It was leased by %s since %s (lease %s, attempt %d).\n", det.LeasedTo, formatClock(det.LeasedAtMs), mailbox.ShortID(det.ActualLeaseID), det.Attempt)
			case det != nil && det.TaskState != "":
				fmt.Fprintf(&b, "  The task is now %s (attempt %d).\n", strings.ReplaceAll(det.TaskState, "_", " "), det.Attempt)
			default:
				b.WriteString("  " + cf.err.Message + "\n")
			}
			continue
		case kindResult:
			fmt.Fprintf(&b, "task %s: you saw its result waiting for %s.\n  %s\n", mailbox.ShortID(t.taskID), t.undrainedBy, cf.err.Message)
			continue
		}
		fmt.Fprintf(&b, "task %s: you inspected lease %s (attempt %d, %s).\n", mailbox.ShortID(t.taskID), mailbox.ShortID(t.leaseID), t.attempt, t.leasedTo)
		switch {
		case det != nil && det.ActualLeaseID != "":
			fmt.Fprintf(&b, "  The current lease is %s, held by %s since %s (attempt %d).\n", mailbox.ShortID(det.ActualLeaseID), det.LeasedTo, formatClock(det.LeasedAtMs), det.Attempt)
		case det != nil && det.TaskState != "":
			fmt.Fprintf(&b, "  The task is now %s (attempt %d): it has no lease to repair.\n", strings.ReplaceAll(det.TaskState, "_", " "), det.Attempt)
		default:
			b.WriteString("  " + cf.err.Message + "\n")
		}
	}
	b.WriteString("\nThe panes show the current state.")
	what := "the lease"
	if k := d.conflicts[0].target.what(); k == kindQueued || k == kindResult {
		what = "the task"
	}
	title := " Lease changed: repair refused "
	if total == 1 && what == "the task" {
		title = " Task changed: repair refused "
	}
	if total > 1 {
		title = fmt.Sprintf(" %d repaired, %d refused: %s had changed ", d.total(), len(d.conflicts), what)
	}
	c.showRefusals(b.String(), title)
	c.flash(false, fmt.Sprintf("%d of %d repairs refused: %s had changed", len(d.conflicts), total, what))
}

// modal centers a primitive on the screen at the size it asks for, never
// larger than the screen, so that an 80x24 terminal shows every field.
type modal struct {
	tview.Primitive
	size func(screenW, screenH int) (w, h int)
}

func (m *modal) Draw(screen tcell.Screen) {
	sw, sh := screen.Size()
	w, h := m.size(sw, sh)
	w, h = min(w, sw), min(h, sh)
	m.SetRect((sw-w)/2, (sh-h)/2, w, h)
	m.Primitive.Draw(screen)
}

// wrappedRows is how many rows text takes wrapped at width.
func wrappedRows(text string, width int) int {
	if text == "" || width <= 0 {
		return 0
	}
	n := 0
	for _, line := range strings.Split(text, "\n") {
		n += max(1, len(tview.WordWrap(line, width)))
	}
	return n
}

// refuseRequeueWaiting is R on the Waiting pane: a task waiting on its
// sender is not requeued (the daemon refuses it: the worker's turn is
// over), so nothing is sent, and the operator is told what does end the
// wait.
func (c *Console) refuseRequeueWaiting() {
	orE := ""
	if c.keys.has(actForceError) {
		orE = ", or E forces an error on it"
	}
	i, ok := c.panes[paneWaiting].selected()
	if !ok {
		c.flash(false, "a task waiting on its sender is not requeued: the sender's reply queues it again"+orE)
		return
	}
	e := &c.rows.waiting[i]
	c.flash(false, fmt.Sprintf("cannot requeue task %s: it waits on %s to answer its worker's question (%s); the reply queues it again%s",
		mailbox.ShortID(e.Task.ID), e.Task.Sender, questionOf(&e.Task).Status, orE))
}

// showRefusals shows what a repair left alone because it had changed: the
// text, an OK that closes it, under a red title; the panes show the rest.
func (c *Console) showRefusals(body, title string) {
	text := tview.NewTextView().SetDynamicColors(true).SetWrap(true).SetWordWrap(true).SetText(escapeTags(body))
	closePage := func() {
		c.pages.RemovePage(pageOutcome)
		c.focusPane(c.focus)
	}
	ok := tview.NewForm().AddButton("OK", closePage)
	ok.SetCancelFunc(closePage)
	ok.SetBorderPadding(0, 0, 1, 1)
	box := tview.NewFlex().SetDirection(tview.FlexRow).AddItem(text, 0, 1, false).AddItem(ok, 1, 0, true)
	box.SetBorder(true).SetTitle(title).SetBorderColor(tcell.ColorRed)
	c.pages.AddPage(pageOutcome, &modal{Primitive: box, size: func(sw, sh int) (int, int) {
		w := min(dialogWidth, sw)
		return w, min(sh, 3+wrappedRows(text.GetText(false), w-2)+1)
	}}, true, true)
	c.app.SetFocus(ok)
}
