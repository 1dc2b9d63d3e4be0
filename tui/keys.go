package tui

import (
	"slices"
	"strconv"
	"strings"

	"github.com/gdamore/tcell/v2"
	"github.com/rivo/tview"
)

// paneID names one of the panes, in screen order.
type paneID int

const (
	paneQueue paneID = iota
	paneLeases
	paneResults
	// paneAudit lists repairs, newest first: who requeued or force-errored
	// which lease, and why.
	paneAudit
	// paneAgents lists every agent the daemon knows, with its queue, its
	// leases and when it was last seen; those that hold leases and went
	// quiet are marked as probably gone.
	paneAgents
	// paneWaiting lists the tasks waiting on their senders: a worker
	// ended its turn with a question (input_required, auth_required) and
	// only the sender's reply moves the task on. Last, so the keys of the
	// panes before it stay where operators learned them.
	paneWaiting
	// paneDeliveries lists the push notifications not yet delivered:
	// pending, failing (the last error, the next try) and dead-lettered,
	// which an operator retries or drops.
	paneDeliveries
	// paneCount is the number of panes; a pane added before it gets its
	// number key, its hint and its help line from the registry below.
	paneCount
)

func (p paneID) String() string {
	return [...]string{"Queue", "Leases", "Results", "Audit", "Agents", "Waiting", "Deliveries"}[p]
}

// paneSet is the set of panes an action applies to.
type paneSet uint16

const (
	inQueue      paneSet = 1 << paneQueue
	inLeases     paneSet = 1 << paneLeases
	inResults    paneSet = 1 << paneResults
	inAudit      paneSet = 1 << paneAudit
	inAgents     paneSet = 1 << paneAgents
	inWaiting    paneSet = 1 << paneWaiting
	inDeliveries paneSet = 1 << paneDeliveries
	// inTasks are the panes of tasks and results, which sort; the Audit
	// pane is a trail and always reads newest first.
	inTasks = inQueue | inLeases | inResults | inWaiting
	// inMarks are the panes whose rows are marked for a repair of many.
	inMarks = inQueue | inLeases | inWaiting | inDeliveries
	inAll   = paneSet(1<<paneCount - 1)
)

func (s paneSet) has(p paneID) bool { return s&(1<<p) != 0 }

// actionID names what a key does; the console maps each to a handler.
type actionID int

const (
	actFocusNext actionID = iota
	actFocusPrev
	actFocusPane
	actMove
	actDetail
	actShowAgent
	actFilter
	actBack
	actSort
	actStaleOnly
	actMark
	actMarkRange
	actMarkAll
	actClearMarks
	actRequeue
	actRequeueWaiting
	actForceError
	// actMoveQueued and actCancelQueued repair queued tasks (Queue pane):
	// hand them to another recipient, or end them with an error result.
	actMoveQueued
	actCancelQueued
	actPushRetry
	actPushDrop
	actZoom
	actCopy
	actSaveCSV
	actSaveJSON
	actPause
	actHelp
	actQuit
)

// keySpec is one key press: a special key, or a rune when key is KeyRune.
// A rune matches only with the Ctrl and Alt modifiers it names, so a
// terminal that reports Ctrl-Space as a space with Ctrl does not mark one
// lease when the operator meant all.
type keySpec struct {
	key tcell.Key
	r   rune
	mod tcell.ModMask
}

func runeKey(r rune) keySpec  { return keySpec{key: tcell.KeyRune, r: r} }
func ctrlRune(r rune) keySpec { return keySpec{key: tcell.KeyRune, r: r, mod: tcell.ModCtrl} }

func (k keySpec) matches(ev *tcell.EventKey) bool {
	if k.key != ev.Key() {
		return false
	}
	return k.key != tcell.KeyRune || k.r == ev.Rune() && ev.Modifiers()&(tcell.ModCtrl|tcell.ModAlt) == k.mod
}

// Capabilities the daemon's whoami lists; a repair key is there only when
// the console's token holds one of those its action needs.
const (
	capAdmin      = "a2a.admin"
	capRequeue    = "a2a.repair.requeue"
	capForceError = "a2a.repair.force_error"
)

// action is one entry of the key registry. The same entries render the hint
// bar and the help page and dispatch key presses, so the three cannot drift.
type action struct {
	id    actionID
	keys  []keySpec
	label string // how the keys are written on screen
	// short is the hint bar's words; empty keeps the action off the hint
	// bar. hintKey, when set, is the hint bar's shorter label.
	short, hintKey string
	desc           string
	// hint ranks the action on a narrow hint bar: the lowest go first, so
	// help and quit, ranked highest, are always shown.
	hint int
	// dangerous actions change the mailbox; read-only mode removes them.
	dangerous bool
	// needs lists the capabilities of which the token must hold one.
	needs []string
	panes paneSet
	// widget actions are handled by the focused table itself (movement);
	// they are registered so the help page documents them.
	widget bool
	// forRepairs actions serve the repairs only (marks): a console that
	// does not repair has no use for them, and its help does not offer them.
	forRepairs bool
}

// repairCaps are the capabilities of which a token needs one to repair
// anything: marks are for repairs.
var repairCaps = []string{capAdmin, capRequeue, capForceError}

// registry is the console's one list of key bindings.
type registry struct {
	actions []action
}

func defaultRegistry() registry {
	paneKeys, paneLabels, paneNames := []keySpec{}, []string{}, []string{}
	for p := paneQueue; p < paneCount; p++ {
		n := strconv.Itoa(int(p) + 1)
		paneKeys, paneLabels, paneNames = append(paneKeys, runeKey(rune('0'+p+1))), append(paneLabels, n), append(paneNames, p.String())
	}
	return registry{actions: []action{
		{id: actFocusNext, keys: []keySpec{{key: tcell.KeyTab}}, label: "Tab", desc: "focus the next pane down the screen", panes: inAll},
		{id: actFocusPrev, keys: []keySpec{{key: tcell.KeyBacktab}}, label: "Shift-Tab", desc: "focus the previous pane up the screen", panes: inAll},
		{id: actFocusPane, keys: paneKeys, short: "pane", hintKey: "1-" + strconv.Itoa(int(paneCount)), hint: 80, label: strings.Join(paneLabels, " "), desc: "focus " + strings.Join(paneNames, " / "), panes: inAll},
		{id: actMove, keys: []keySpec{{key: tcell.KeyUp}, {key: tcell.KeyDown}, runeKey('j'), runeKey('k'), runeKey('g'), runeKey('G'), {key: tcell.KeyPgUp}, {key: tcell.KeyPgDn}},
			label: "↑ ↓ j k g G PgUp PgDn", desc: "move the selection (g first, G last)", panes: inAll, widget: true},
		{id: actDetail, keys: []keySpec{{key: tcell.KeyEnter}}, short: "detail", hint: 50, label: "Enter", desc: "detail view: every id in full, lease and repair history; Enter opens the parent or a child", panes: inAll &^ inAgents},
		{id: actShowAgent, keys: []keySpec{{key: tcell.KeyEnter}}, short: "show in all panes", hint: 50, label: "Enter", desc: "show only the selected agent's tasks, leases, results and repairs in every other pane (Esc: all again)", panes: inAgents},
		{id: actFilter, keys: []keySpec{runeKey('/')}, short: "filter", hint: 70, label: "/", desc: "filter the pane by id, sender, recipient, kind, intent (Waiting: and question); Audit by task, principal, action, reason", panes: inAll},
		{id: actBack, keys: []keySpec{{key: tcell.KeyEscape}}, label: "Esc", desc: "clear the filter, the agent shown, stale-only and marks; leave the detail view, help page or a dialog", panes: inAll},
		{id: actSort, keys: sortKeys(), short: "sort", hint: 30, label: "Shift-letter", desc: "sort by the column with that letter (below); again to reverse", panes: inTasks | inAgents},
		{id: actStaleOnly, keys: []keySpec{runeKey('!')}, short: "stale only", hint: 55, label: "!", desc: "show only stale leases; on Waiting, the questions unanswered for as long", panes: inLeases | inWaiting},
		{id: actMark, keys: []keySpec{runeKey(' ')}, short: "mark", hint: 75, label: "Space", desc: "mark or unmark the selected row, for one repair of the marked rows", forRepairs: true, needs: repairCaps, panes: inMarks},
		{id: actMarkRange, keys: []keySpec{{key: tcell.KeyCtrlSpace}, ctrlRune(' ')}, label: "Ctrl-Space", desc: "mark the rows from the last one marked to the selected one", forRepairs: true, needs: repairCaps, panes: inMarks},
		{id: actMarkAll, keys: []keySpec{runeKey('*')}, label: "*", desc: "mark every row the pane shows (again: unmark them)", forRepairs: true, needs: repairCaps, panes: inMarks},
		{id: actClearMarks, keys: []keySpec{{key: tcell.KeyCtrlBackslash}}, label: "Ctrl-\\", desc: "clear every mark", forRepairs: true, needs: repairCaps, panes: inMarks},
		{id: actRequeue, keys: []keySpec{runeKey('R')}, short: "requeue", hint: 90, label: "R", desc: "requeue the marked leases or the selected one",
			dangerous: true, needs: []string{capAdmin, capRequeue}, panes: inLeases},
		// On Agents, R and E open one dialog for everything the agent owes
		// (leases, queued tasks, questions, undrained results): R with its
		// work handed to another agent, E with its leases ended.
		{id: actRequeue, keys: []keySpec{runeKey('R')}, short: "settle all it owes", hint: 90, label: "R", desc: "settle all the agent owes in one dialog, its work handed to another agent",
			dangerous: true, needs: []string{capAdmin, capRequeue}, panes: inAgents},
		{id: actMoveQueued, keys: []keySpec{runeKey('R')}, short: "move", hint: 90, label: "R", desc: "move the marked queued tasks (or the selected one) to another recipient",
			dangerous: true, needs: []string{capAdmin, capRequeue}, panes: inQueue},
		{id: actCancelQueued, keys: []keySpec{runeKey('E')}, short: "cancel", hint: 85, label: "E", desc: "cancel the marked queued tasks (or the selected one): each sender gets an error",
			dangerous: true, needs: []string{capAdmin, capForceError}, panes: inQueue},
		// Not offered on the Waiting pane (no hint), but an operator used to
		// R on a stuck task is told why nothing happens, and what would.
		{id: actRequeueWaiting, keys: []keySpec{runeKey('R')}, label: "R", desc: "says why R does nothing to a waiting task: only its sender's reply (or E) ends the wait", panes: inWaiting},
		{id: actForceError, keys: []keySpec{runeKey('E')}, short: "force error", hint: 85, label: "E", desc: "force an error on the marked leases or the selected one; on Waiting the marked questions or the selected one",
			dangerous: true, needs: []string{capAdmin, capForceError}, panes: inLeases | inWaiting},
		{id: actForceError, keys: []keySpec{runeKey('E')}, short: "end all it owes", hint: 85, label: "E", desc: "settle all the agent owes in one dialog, its leases and questions ended",
			dangerous: true, needs: []string{capAdmin, capForceError}, panes: inAgents},
		{id: actPushRetry, keys: []keySpec{runeKey('R')}, short: "retry", hint: 90, label: "R", desc: "retry the marked dead-lettered notifications, or the selected one, now (audited)",
			dangerous: true, needs: []string{capAdmin}, panes: inDeliveries},
		{id: actPushDrop, keys: []keySpec{runeKey('D')}, short: "drop", hint: 85, label: "D", desc: "drop the marked notifications, or the selected one, pending or dead, with a reason (audited)",
			dangerous: true, needs: []string{capAdmin}, panes: inDeliveries},
		{id: actZoom, keys: []keySpec{runeKey('z')}, short: "zoom", hint: 65, label: "z", desc: "zoom the focused pane to the full screen and back", panes: inAll},
		{id: actCopy, keys: []keySpec{runeKey('y')}, short: "copy id", hint: 35, label: "y", desc: "copy the selected row's full task id to the clipboard (OSC 52)", panes: inAll},
		{id: actSaveCSV, keys: []keySpec{{key: tcell.KeyCtrlS}}, short: "save csv", hint: 25, label: "Ctrl-S", desc: "save the pane, as filtered and sorted, to a CSV file", panes: inAll},
		{id: actSaveJSON, keys: []keySpec{runeKey('J')}, short: "json", hint: 20, label: "J", desc: "save the pane, as filtered and sorted, to a JSON file", panes: inAll},
		{id: actPause, keys: []keySpec{runeKey('p')}, short: "pause", hint: 45, label: "p", desc: "pause / resume live updates (events are kept and applied on resume)", panes: inAll},
		{id: actHelp, keys: []keySpec{runeKey('?')}, short: "help", hint: 100, label: "?", desc: "this help page", panes: inAll},
		{id: actQuit, keys: []keySpec{runeKey('q'), {key: tcell.KeyCtrlC}}, short: "quit", hintKey: "q", hint: 100, label: "q Ctrl-C", desc: "quit", panes: inAll},
	}}
}

// sortKeys are the Shift-letters of every sortable column of every pane.
func sortKeys() []keySpec {
	var letters []rune
	for p := paneQueue; p < paneCount; p++ {
		for _, col := range paneColumns[p] {
			if col.sortKey != 0 && !slices.Contains(letters, col.sortKey) {
				letters = append(letters, col.sortKey)
			}
		}
	}
	slices.Sort(letters)
	keys := make([]keySpec, len(letters))
	for i, r := range letters {
		keys[i] = runeKey(r)
	}
	return keys
}

// filter returns the registry without the actions keep refuses.
func (r registry) filter(keep func(action) bool) registry {
	var out registry
	for _, a := range r.actions {
		if keep(a) {
			out.actions = append(out.actions, a)
		}
	}
	return out
}

// withoutDangerous returns the registry read-only mode uses: every action
// that changes the mailbox is gone, so its key does nothing and is never shown.
func (r registry) withoutDangerous() registry {
	return r.filter(func(a action) bool { return !a.dangerous && !a.forRepairs })
}

// allowedBy returns the registry for a token holding caps: an action that
// needs a capability the token lacks is gone, rather than refused after
// the operator filled its dialog.
func (r registry) allowedBy(caps []string) registry {
	return r.filter(func(a action) bool {
		if len(a.needs) == 0 {
			return true
		}
		for _, c := range a.needs {
			if slices.Contains(caps, c) {
				return true
			}
		}
		return false
	})
}

// has reports whether the registry holds action id.
func (r registry) has(id actionID) bool {
	return slices.ContainsFunc(r.actions, func(a action) bool { return a.id == id })
}

// lookup returns the action a key press triggers in pane p. Widget actions
// are not returned: the table handles those keys itself.
func (r registry) lookup(ev *tcell.EventKey, p paneID) (action, bool) {
	for _, a := range r.actions {
		if a.widget || !a.panes.has(p) {
			continue
		}
		for _, k := range a.keys {
			if k.matches(ev) {
				return a, true
			}
		}
	}
	return action{}, false
}

// hintText renders the hint bar for pane p in at most width cells, with
// tview color tags; dangerous actions are red so they stand out. When not
// everything fits, the lowest ranked hints are left out, never help and
// quit.
func (r registry) hintText(p paneID, width int) string {
	var shown []action
	for _, a := range r.actions {
		if a.short != "" && a.panes.has(p) {
			shown = append(shown, a)
		}
	}
	render := func(as []action) (string, int) {
		var b strings.Builder
		w := 0
		for _, a := range as {
			color := "aqua"
			if a.dangerous {
				color = "red"
			}
			if b.Len() > 0 {
				b.WriteString("  ")
				w += 2
			}
			label := a.label
			if a.hintKey != "" {
				label = a.hintKey
			}
			b.WriteString("[" + color + "]<" + escapeTags(label) + ">[-] " + a.short)
			w += tview.TaggedStringWidth("<"+escapeTags(label)+"> ") + len([]rune(a.short))
		}
		return b.String(), w
	}
	for {
		text, w := render(shown)
		if w <= width || len(shown) <= 2 {
			return text
		}
		lowest := 0
		for i, a := range shown {
			if a.hint < shown[lowest].hint {
				lowest = i
			}
		}
		shown = slices.Delete(shown, lowest, lowest+1)
	}
}

// helpLines renders the help page: every action, its keys, where it works,
// and whether it changes the mailbox; then the letters that sort each pane.
func (r registry) helpLines() []string {
	lines := make([]string, 0, len(r.actions)+int(paneCount))
	for _, a := range r.actions {
		where := "all panes"
		if a.panes != inAll {
			var ps []string
			for p := paneQueue; p < paneCount; p++ {
				if a.panes.has(p) {
					ps = append(ps, p.String())
				}
			}
			where = strings.Join(ps, ", ") + " pane"
		}
		line := "[aqua]" + padRight(escapeTags(a.label), 22) + "[-] " + escapeTags(a.desc) + "  [gray](" + where + ")[-]"
		if a.dangerous {
			line += "  [red]changes the mailbox[-]"
		}
		lines = append(lines, line)
		if a.id == actSort {
			for p := paneQueue; p < paneCount; p++ {
				if l := sortLetters(p); l != "" {
					lines = append(lines, padRight("", 23)+"[gray]"+p.String()+":[-] "+l)
				}
			}
		}
	}
	return lines
}

// sortLetters lists pane p's sort keys, as "A age  H holder ...".
func sortLetters(p paneID) string {
	var parts []string
	for _, col := range paneColumns[p] {
		if col.sortKey != 0 {
			parts = append(parts, string(col.sortKey)+" "+col.sortName)
		}
	}
	return strings.Join(parts, "  ")
}

func padRight(s string, n int) string {
	if w := len([]rune(s)); w < n {
		return s + strings.Repeat(" ", n-w)
	}
	return s
}
