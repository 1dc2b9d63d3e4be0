package tui

import (
	"strings"

	"github.com/gdamore/tcell/v2"
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
	paneCount
)

func (p paneID) String() string {
	return [...]string{"Queue", "Leases", "Results", "Audit"}[p]
}

// paneSet is the set of panes an action applies to.
type paneSet uint8

const (
	inQueue   paneSet = 1 << paneQueue
	inLeases  paneSet = 1 << paneLeases
	inResults paneSet = 1 << paneResults
	inAudit   paneSet = 1 << paneAudit
	// inTasks are the panes of tasks and results, which sort; the Audit
	// pane is a trail and always reads newest first.
	inTasks = inQueue | inLeases | inResults
	inAll   = inTasks | inAudit
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
	actFilter
	actBack
	actSort
	actStaleOnly
	actRequeue
	actForceError
	actPause
	actHelp
	actQuit
)

// keySpec is one key press: a special key, or a rune when key is KeyRune.
type keySpec struct {
	key tcell.Key
	r   rune
}

func runeKey(r rune) keySpec { return keySpec{key: tcell.KeyRune, r: r} }

func (k keySpec) matches(ev *tcell.EventKey) bool {
	if k.key != ev.Key() {
		return false
	}
	return k.key != tcell.KeyRune || k.r == ev.Rune()
}

// action is one entry of the key registry. The same entries render the hint
// bar and the help page and dispatch key presses, so the three cannot drift.
type action struct {
	id    actionID
	keys  []keySpec
	label string // how the keys are written on screen
	short string // the hint bar's words; empty keeps the action off the hint bar
	desc  string
	// dangerous actions change the mailbox; read-only mode removes them.
	dangerous bool
	panes     paneSet
	// widget actions are handled by the focused table itself (movement);
	// they are registered so the help page documents them.
	widget bool
}

// registry is the console's one list of key bindings.
type registry struct {
	actions []action
}

func defaultRegistry() registry {
	return registry{actions: []action{
		{id: actFocusNext, keys: []keySpec{{key: tcell.KeyTab}}, label: "Tab", desc: "focus the next pane", panes: inAll},
		{id: actFocusPrev, keys: []keySpec{{key: tcell.KeyBacktab}}, label: "Shift-Tab", desc: "focus the previous pane", panes: inAll},
		{id: actFocusPane, keys: []keySpec{runeKey('1'), runeKey('2'), runeKey('3'), runeKey('4')}, short: "pane", label: "1 2 3 4", desc: "focus Queue / Leases / Results / Audit", panes: inAll},
		{id: actMove, keys: []keySpec{{key: tcell.KeyUp}, {key: tcell.KeyDown}, runeKey('j'), runeKey('k'), runeKey('g'), runeKey('G'), {key: tcell.KeyPgUp}, {key: tcell.KeyPgDn}},
			label: "↑ ↓ j k g G PgUp PgDn", desc: "move the selection (g first, G last)", panes: inAll, widget: true},
		{id: actDetail, keys: []keySpec{{key: tcell.KeyEnter}}, short: "detail", label: "Enter", desc: "detail view: full record, lease and repair history, parent and children (Esc back)", panes: inAll},
		{id: actFilter, keys: []keySpec{runeKey('/')}, short: "filter", label: "/", desc: "filter the pane by id, sender, recipient, kind, intent; Audit by task, principal, action, reason (Esc clears)", panes: inAll},
		{id: actBack, keys: []keySpec{{key: tcell.KeyEscape}}, label: "Esc", desc: "clear the pane's filter; leave the detail view, help page or a dialog", panes: inAll},
		{id: actSort, keys: []keySpec{runeKey('s')}, short: "sort", label: "s", desc: "cycle sort: age, recipient, attempt", panes: inTasks},
		{id: actStaleOnly, keys: []keySpec{runeKey('!')}, short: "stale only", label: "!", desc: "show only stale leases", panes: inLeases},
		{id: actRequeue, keys: []keySpec{runeKey('R')}, short: "requeue", label: "R", desc: "requeue the selected lease (guarded by its lease id)", dangerous: true, panes: inLeases},
		{id: actForceError, keys: []keySpec{runeKey('E')}, short: "force error", label: "E", desc: "force an error result on the selected lease", dangerous: true, panes: inLeases},
		{id: actPause, keys: []keySpec{runeKey('p')}, short: "pause", label: "p", desc: "pause / resume live updates (events are kept and applied on resume)", panes: inAll},
		{id: actHelp, keys: []keySpec{runeKey('?')}, short: "help", label: "?", desc: "this help page", panes: inAll},
		{id: actQuit, keys: []keySpec{runeKey('q'), {key: tcell.KeyCtrlC}}, short: "quit", label: "q Ctrl-C", desc: "quit", panes: inAll},
	}}
}

// withoutDangerous returns the registry read-only mode uses: every action
// that changes the mailbox is gone, so its key does nothing and is never shown.
func (r registry) withoutDangerous() registry {
	var out registry
	for _, a := range r.actions {
		if !a.dangerous {
			out.actions = append(out.actions, a)
		}
	}
	return out
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

// hintText renders the hint bar for pane p with tview color tags; dangerous
// actions are red so they stand out.
func (r registry) hintText(p paneID) string {
	var b strings.Builder
	for _, a := range r.actions {
		if a.short == "" || !a.panes.has(p) {
			continue
		}
		color := "aqua"
		if a.dangerous {
			color = "red"
		}
		if b.Len() > 0 {
			b.WriteString("  ")
		}
		b.WriteString("[" + color + "]<" + escapeTags(a.label) + ">[-] " + a.short)
	}
	return b.String()
}

// helpLines renders the help page: every action, its keys, where it works,
// and whether it changes the mailbox.
func (r registry) helpLines() []string {
	lines := make([]string, 0, len(r.actions))
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
		line := "[aqua]" + padRight(escapeTags(a.label), 24) + "[-] " + escapeTags(a.desc) + "  [gray](" + where + ")[-]"
		if a.dangerous {
			line += "  [red]changes the mailbox[-]"
		}
		lines = append(lines, line)
	}
	return lines
}

func padRight(s string, n int) string {
	if w := len([]rune(s)); w < n {
		return s + strings.Repeat(" ", n-w)
	}
	return s
}
