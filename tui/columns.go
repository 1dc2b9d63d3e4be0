package tui

import (
	"cmp"
	"slices"
	"strings"

	"github.com/mailroom/mailroom/mailbox"
)

// column is one column of a pane.
type column struct {
	heading string
	// sortKey sorts the pane by this column: Shift and the column's letter,
	// as in k9s; 0 for a column that does not sort.
	sortKey  rune
	sortName string // how the title names this sort
	// maxWidth caps the column: a longer id is cut with …. 0 leaves it
	// uncapped.
	maxWidth int
	// agent columns hold agent ids, capped by the pane's width (agentCap)
	// so one 90-character agent id cannot push the other columns off
	// screen.
	agent bool
	// expand gives the column the width left over: the intent, the error,
	// the reason, whatever tells rows apart.
	expand bool
	// largestFirst columns (ages, attempts) sort largest first on the
	// first press: the oldest and most retried are what an operator wants.
	largestFirst bool
	// only, when set, says whether the rows need the column at all: when
	// they do not, its heading is left out too, so it takes no room.
	only func(r *rows) bool
	// widthCap, when set, caps the column by the pane's width, as agent
	// columns are capped.
	widthCap func(paneWidth int) int
}

// idWidth is a short id's width; textWidth is how much of a free text
// (intent, error, reason) a column takes before the columns after it, and
// the text grows further when the pane is wider than all of them.
const (
	idWidth   = 8
	textWidth = 48
)

// agentCap is how wide an agent id may be in a pane w cells wide: the
// start of a name is what tells agents apart, and on 80 columns the
// intent must keep some room.
func agentCap(w int) int { return max(16, min(32, w/5)) }

// paneColumns are each pane's columns, in screen order; each pane's
// renderer (render_*.go) owns its list and writes its cells in that order.
var paneColumns = [paneCount][]column{
	paneQueue:      queueColumns,
	paneLeases:     leasesColumns,
	paneResults:    resultsColumns,
	paneAudit:      auditColumns,
	paneAgents:     agentsColumns,
	paneWaiting:    waitingColumns,
	paneDeliveries: deliveriesColumns,
}

const maxColumns = 10

// sortSpec is how a pane is ordered: by the column whose letter is key,
// largest first when desc. The zero value is the pane's own order: on the
// Queue pane the order workers lease in, on the Agents pane the agents
// probably gone first.
type sortSpec struct {
	key  rune
	desc bool
}

// naturalSort is the order the state lists pane p in, so sorting by it
// costs nothing: leases, results and questions oldest first.
func naturalSort(p paneID) sortSpec {
	switch p {
	case paneLeases, paneResults, paneWaiting:
		return sortSpec{key: 'A', desc: true}
	}
	return sortSpec{}
}

// next is the sort after the operator pressed key: another column starts
// in its own first direction, the same column again reverses it, and a
// third time goes back to the pane's own order.
func (s sortSpec) next(p paneID, key rune) (sortSpec, bool) {
	col, _, ok := sortColumn(p, key)
	if !ok {
		return s, false
	}
	first := sortSpec{key: key, desc: col.largestFirst}
	switch {
	case s.key != key:
		return first, true
	case s == first:
		return sortSpec{key: key, desc: !s.desc}, true
	}
	if n := naturalSort(p); n != s {
		return n, true
	}
	return first, true
}

// label is the sort as the title shows it: ↓ when the values shrink down
// the list (largest first), ↑ when they grow.
func (s sortSpec) label(p paneID) string {
	col, _, ok := sortColumn(p, s.key)
	switch {
	case !ok && p == paneAgents:
		return agentsOrder
	case !ok:
		return "queue order"
	}
	return col.sortName + sortArrow(s.desc)
}

func sortArrow(desc bool) string {
	if desc {
		return "↓"
	}
	return "↑"
}

func sortColumn(p paneID, key rune) (column, int, bool) {
	for i, col := range paneColumns[p] {
		if key != 0 && col.sortKey == key {
			return col, i, true
		}
	}
	return column{}, -1, false
}

// sortRows orders idx (indexes into pane p's rows) by s, stably: rows that
// tie keep the state's order.
func sortRows(r *rows, p paneID, s sortSpec, idx []int32) {
	if s == naturalSort(p) || p == paneAudit {
		return
	}
	compare := rowComparer(r, p, s.key)
	if compare == nil {
		return
	}
	slices.SortStableFunc(idx, func(a, b int32) int {
		if s.desc {
			return compare(int(b), int(a))
		}
		return compare(int(a), int(b))
	})
}

// rowComparer compares two rows of pane p by the column whose letter is
// key, smallest first. Ages compare by their timestamps, reversed.
func rowComparer(r *rows, p paneID, key rune) func(a, b int) int {
	byString := func(f func(i int) string) func(a, b int) int {
		return func(a, b int) int { return strings.Compare(f(a), f(b)) }
	}
	olderLater := func(f func(i int) int64) func(a, b int) int {
		return func(a, b int) int { return cmp.Compare(f(b), f(a)) }
	}
	switch p {
	case paneQueue, paneLeases, paneWaiting:
		es := r.entries(p)
		switch key {
		case 'T':
			return byString(func(i int) string { return es[i].Task.ID })
		case 'A':
			switch p {
			case paneLeases:
				return olderLater(func(i int) int64 { return es[i].LeasedAtMs })
			case paneWaiting:
				return olderLater(func(i int) int64 { return es[i].WaitingSinceMs })
			}
			return olderLater(func(i int) int64 { return es[i].QueuedAtMs })
		case 'S':
			return byString(func(i int) string { return es[i].Task.Sender })
		case 'C':
			return byString(func(i int) string { return es[i].Task.Recipient })
		case 'H':
			return byString(func(i int) string { return es[i].LeasedTo })
		case 'K':
			return byString(func(i int) string { return es[i].Task.Kind() })
		case 'N':
			return func(a, b int) int { return cmp.Compare(es[a].Attempt, es[b].Attempt) }
		case 'D':
			return func(a, b int) int { return compareDeadlines(es[a].Task.DeadlineMs, es[b].Task.DeadlineMs) }
		case 'L':
			return byString(func(i int) string { return es[i].LeaseID })
		case 'I':
			return byString(func(i int) string { return es[i].Task.IntentText })
		case 'U':
			return byString(func(i int) string { return questionOf(&es[i].Task).Status })
		case 'Q':
			return byString(func(i int) string { return questionText(&es[i].Task) })
		}
	case paneResults:
		rs := r.results
		switch key {
		case 'U':
			return byString(func(i int) string { return resultStatus(&rs[i].PendingResult) })
		case 'T':
			return byString(func(i int) string { return rs[i].TaskID })
		case 'S':
			return byString(func(i int) string { return rs[i].Sender })
		case 'F':
			return byString(func(i int) string { return rs[i].Recipient })
		case 'A':
			return olderLater(func(i int) int64 { return rs[i].PostedAtMs })
		case 'M':
			return byString(func(i int) string { return resultMessage(&rs[i].PendingResult) })
		}
	}
	return nil
}

// agentsOrder is the Agents pane's own order, as its title says it.
const agentsOrder = "probably gone first"

// sortAgentRows orders idx (indexes into as) by s; the zero sort is the
// pane's own order (sortAgents). Status ranks probably gone (or a remote
// whose circuit is open), working, idle;
// an agent never seen was seen longest ago; one holding nothing has no
// oldest lease and comes after those that do; OK/ERR compares the errors,
// then the oks.
func sortAgentRows(as []agentRow, st staleness, s sortSpec, idx []int32) {
	if s == (sortSpec{}) {
		sortAgents(as, st, idx)
		return
	}
	var compare func(x, y *agentRow) int
	switch s.key {
	case 'A':
		compare = func(x, y *agentRow) int { return strings.Compare(x.Agent, y.Agent) }
	case 'U':
		rank := func(a *agentRow) int {
			switch {
			case st.gone(a), a.Remote != nil && isRemote(&a.AgentInfo) && a.Remote.State == mailbox.RemoteCircuitOpen:
				return 0
			case a.held > 0:
				return 1
			}
			return 2
		}
		compare = func(x, y *agentRow) int { return cmp.Compare(rank(x), rank(y)) }
	case 'S':
		compare = func(x, y *agentRow) int { return cmp.Compare(y.LastSeenMs, x.LastSeenMs) }
	case 'H':
		compare = func(x, y *agentRow) int { return cmp.Compare(x.held, y.held) }
	case 'O':
		age := func(a *agentRow) int64 {
			if a.held == 0 {
				return -1
			}
			return st.nowMs - a.oldestLeasedAtMs
		}
		compare = func(x, y *agentRow) int { return cmp.Compare(age(x), age(y)) }
	case 'Q':
		compare = func(x, y *agentRow) int { return cmp.Compare(x.Queued, y.Queued) }
	case 'P':
		compare = func(x, y *agentRow) int { return cmp.Compare(x.ResultsPending, y.ResultsPending) }
	case 'W':
		compare = func(x, y *agentRow) int { return cmp.Compare(x.waiting, y.waiting) }
	case 'K':
		compare = func(x, y *agentRow) int {
			return cmp.Or(cmp.Compare(x.ResultsError5m, y.ResultsError5m), cmp.Compare(x.ResultsOK5m, y.ResultsOK5m))
		}
	default:
		sortAgents(as, st, idx)
		return
	}
	slices.SortStableFunc(idx, func(a, b int32) int {
		if s.desc {
			return compare(&as[b], &as[a])
		}
		return compare(&as[a], &as[b])
	})
}

// compareDeadlines puts the soonest first and tasks without one last.
func compareDeadlines(a, b *int64) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return 1
	case b == nil:
		return -1
	}
	return cmp.Compare(*a, *b)
}

// resultStatus is a result's status as the Results pane shows it.
func resultStatus(r *mailbox.PendingResult) string {
	if r.Forced {
		return r.Status + " (forced)"
	}
	return r.Status
}
