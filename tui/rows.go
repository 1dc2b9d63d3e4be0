package tui

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mailroom/mailroom/mailbox"
)

// rows is an immutable copy of the replica's lists, taken under the
// model's lock and then read by the UI goroutine without any lock. A new one
// is built only when the state changed, never per frame.
type rows struct {
	version uint64 // the model version it was built from
	seq     uint64 // the last event seq applied
	queued  []mailbox.QueueEntry
	leases  []mailbox.QueueEntry
	// waiting are the tasks waiting on their senders, longest waiting
	// first.
	waiting []mailbox.QueueEntry
	results []resultRow
	// audit is the repair trail, newest first. Records never change once
	// written, so consecutive rows share this slice until a repair arrives.
	audit []mailbox.AuditRecord
	// agents are the daemon's agents listing, with what the replica says
	// of their leases.
	agents []agentRow
	// remote are the leases held by remote agents, by lease id: how the
	// daemon delivers each (remote.go).
	remote map[string]remoteLease
	// deliveries are the outbox's push notifications, oldest first, with
	// what the daemon's notifier last said of the failing ones.
	deliveries []mailbox.NotificationStatus
}

// agentRow is one agent of the daemon's listing. The leases it holds are
// counted from the replica, so the count, the oldest lease's age (ticking
// on the console's clock) and what R repairs are the Leases pane's.
// Likewise the tasks waiting on it, as their sender, are the Waiting pane's.
type agentRow struct {
	mailbox.AgentInfo
	held             int
	oldestLeasedAtMs int64
	waiting          int
	oldestWaitingMs  int64 // when the longest waiting question was asked
	// undrained counts the results waiting for it to drain, from the
	// replica (debt.go).
	undrained int
}

// joinAgents builds the Agents pane's rows: the listing, in its order,
// with each agent's leases counted from leases and the tasks waiting on
// it from waiting.
func joinAgents(list []mailbox.AgentInfo, leases, waiting []mailbox.QueueEntry, results []resultRow) []agentRow {
	if len(list) == 0 {
		return nil
	}
	out := make([]agentRow, len(list))
	at := make(map[string]int, len(list))
	for i := range list {
		out[i].AgentInfo = list[i]
		at[list[i].Agent] = i
	}
	for i := range leases {
		e := &leases[i]
		j, ok := at[e.LeasedTo]
		if !ok {
			continue
		}
		a := &out[j]
		if a.held == 0 || e.LeasedAtMs < a.oldestLeasedAtMs {
			a.oldestLeasedAtMs = e.LeasedAtMs
		}
		a.held++
	}
	asked := make(map[string]bool, len(waiting))
	for i := range waiting {
		asked[waiting[i].Task.ID] = true
	}
	for sender, n := range countUndrained(results, asked) {
		if j, ok := at[sender]; ok {
			out[j].undrained = n
		}
	}
	for i := range waiting {
		e := &waiting[i]
		j, ok := at[e.Task.Sender]
		if !ok {
			continue
		}
		a := &out[j]
		if a.waiting == 0 || e.WaitingSinceMs < a.oldestWaitingMs {
			a.oldestWaitingMs = e.WaitingSinceMs
		}
		a.waiting++
	}
	return out
}

// gone reports an agent that is probably gone: it owes anything (holds
// leases, has work queued, a question waits on its answer or a result on
// its drain), and has not acted or called for longer than the stale limit, or
// ever (the daemon knows its last action from the log, across restarts,
// and its last call since it started). A remote agent never calls: the
// daemon calls it, and its state (an open circuit) says what gone says of
// the others. An agent whose long poll waits is seen (the listing says
// Polling), however long ago the poll began.
func (s staleness) gone(a *agentRow) bool {
	return a.owes() && !isRemote(&a.AgentInfo) && !a.Polling && (a.LastSeenMs == 0 || s.nowMs-a.LastSeenMs > s.afterMs)
}

// resultRow is a pending result with the task facts the Results pane shows
// and filters on.
type resultRow struct {
	mailbox.PendingResult
	kind, intent string
	idempotent   bool
	// a2a: the task came through the A2A edge.
	a2a bool
}

func (r *rows) len(p paneID) int {
	if r == nil {
		return 0
	}
	switch p {
	case paneQueue:
		return len(r.queued)
	case paneLeases:
		return len(r.leases)
	case paneAudit:
		return len(r.audit)
	case paneAgents:
		return len(r.agents)
	case paneWaiting:
		return len(r.waiting)
	case paneDeliveries:
		return len(r.deliveries)
	}
	return len(r.results)
}

// fields returns what the filter searches in the panes of tasks and
// results; the Audit pane has its own (auditMatches).
func (r *rows) fields(p paneID, i int) (id, sender, recipient, kind, intent string) {
	switch p {
	case paneQueue, paneLeases, paneWaiting:
		t := &r.entries(p)[i].Task
		return t.ID, t.Sender, t.Recipient, t.Kind(), t.IntentText
	}
	res := &r.results[i]
	return res.TaskID, res.Sender, res.Recipient, res.kind, res.intent
}

// entries are the rows of a pane of tasks: Queue, Leases or Waiting.
func (r *rows) entries(p paneID) []mailbox.QueueEntry {
	switch p {
	case paneLeases:
		return r.leases
	case paneWaiting:
		return r.waiting
	}
	return r.queued
}

// id returns the task a row is about; on the Audit pane, the repaired task.
func (r *rows) id(p paneID, i int) string {
	switch p {
	case paneAudit:
		return r.audit[i].TaskID
	case paneAgents:
		return r.agents[i].Agent
	case paneDeliveries:
		return r.deliveries[i].TaskID
	}
	id, _, _, _, _ := r.fields(p, i)
	return id
}

// rowKey identifies a row across rebuilds so the selection can follow it.
// A task appears once in the panes of tasks and results, and an agent once
// in the Agents pane, so its id is enough there; the Audit pane can list one task many times, so it adds
// the repair's seq.
type rowKey struct {
	id  string
	seq uint64
}

func (r *rows) key(p paneID, i int) rowKey {
	if p == paneAudit {
		return rowKey{id: r.audit[i].TaskID, seq: r.audit[i].Seq}
	}
	if p == paneDeliveries {
		return rowKey{id: r.deliveries[i].ID}
	}
	return rowKey{id: r.id(p, i)}
}

// viewParams are what the operator chose for one pane.
type viewParams struct {
	filter    string
	sort      sortSpec
	staleOnly bool
	// agent shows only the rows an agent takes part in: Enter on the
	// Agents pane sets it on every other pane.
	agent string
}

// involves reports whether row i of pane p is about agent: as the sender,
// the recipient or the lease holder of a task; as the poster or the
// addressee of a result; as the worker that asked a waiting task's
// question (its recipient) or the sender it waits on; as the holder of a repaired lease, the principal
// that repaired it, or the recipient a requeue moved the task from or to.
func (r *rows) involves(p paneID, i int, agent string) bool {
	switch p {
	case paneQueue, paneLeases, paneWaiting:
		e := &r.entries(p)[i]
		return e.Task.Sender == agent || e.Task.Recipient == agent || e.LeasedTo == agent
	case paneResults:
		return r.results[i].Sender == agent || r.results[i].Recipient == agent
	case paneAudit:
		a := &r.audit[i]
		return a.LeasedTo == agent || a.Principal == agent || a.FromRecipient == agent || a.ToRecipient == agent
	case paneDeliveries:
		return false // a notification goes to a webhook, not an agent
	}
	return r.agents[i].Agent == agent
}

// staleness decides which leases are stale: held at least after; and
// which questions: waiting on their sender at least as long.
type staleness struct {
	nowMs   int64
	afterMs int64
}

func (s staleness) stale(leasedAtMs int64) bool { return s.nowMs-leasedAtMs >= s.afterMs }

// aging reports a lease that is three quarters of the way to stale, so the
// operator sees trouble coming.
func (s staleness) aging(leasedAtMs int64) bool { return s.nowMs-leasedAtMs >= s.afterMs*3/4 }

// countStale counts the stale leases.
func (r *rows) countStale(st staleness) int {
	if r == nil {
		return 0
	}
	n := 0
	for i := range r.leases {
		if st.stale(r.leases[i].LeasedAtMs) {
			n++
		}
	}
	return n
}

// countStaleWaiting counts the questions unanswered for longer than the
// stale limit: a question nobody answered for an hour is an incident, as
// a lease held for an hour is.
func (r *rows) countStaleWaiting(st staleness) int {
	if r == nil {
		return 0
	}
	n := 0
	for i := range r.waiting {
		if st.stale(r.waiting[i].WaitingSinceMs) {
			n++
		}
	}
	return n
}

// selectRows returns the indexes of pane p's rows that pass vp's filter, in
// vp's order. It touches every row once, allocating only the index slice.
func selectRows(r *rows, p paneID, vp viewParams, st staleness) []int32 {
	n := r.len(p)
	idx := make([]int32, 0, n)
	filter := strings.TrimSpace(vp.filter)
	for i := 0; i < n; i++ {
		if p == paneLeases && vp.staleOnly && !st.stale(r.leases[i].LeasedAtMs) {
			continue
		}
		if p == paneWaiting && vp.staleOnly && !st.stale(r.waiting[i].WaitingSinceMs) {
			continue
		}
		if vp.agent != "" && !r.involves(p, i, vp.agent) {
			continue
		}
		if filter != "" && !r.matches(p, i, filter) {
			continue
		}
		idx = append(idx, int32(i))
	}
	switch p {
	case paneAudit, paneDeliveries: // a trail reads newest first, the outbox oldest first, whatever the sort says
	case paneAgents:
		sortAgentRows(r.agents, st, vp.sort, idx)
	default:
		sortRows(r, p, vp.sort, idx)
	}
	return idx
}

// matches reports whether row i of pane p has filter in a field the pane
// shows.
func (r *rows) matches(p paneID, i int, filter string) bool {
	switch p {
	case paneAgents:
		return containsFold(r.agents[i].Agent, filter)
	case paneAudit:
		return auditMatches(&r.audit[i], filter)
	case paneDeliveries:
		return deliveryMatches(&r.deliveries[i], filter)
	}
	id, sender, recipient, kind, intent := r.fields(p, i)
	return containsFold(id, filter) || containsFold(sender, filter) || containsFold(recipient, filter) ||
		containsFold(kind, filter) || containsFold(intent, filter) ||
		p == paneWaiting && containsFold(questionText(&r.waiting[i].Task), filter) ||
		p == paneLeases && r.remoteMatches(r.leases[i].LeaseID, filter)
}

// sortAgents puts the agents that are probably gone first, the longest
// unseen first, so that the first row is the one to act on; the others
// keep the listing's order, by id.
func sortAgents(as []agentRow, st staleness, idx []int32) {
	slices.SortStableFunc(idx, func(a, b int32) int {
		x, y := &as[a], &as[b]
		gx, gy := st.gone(x), st.gone(y)
		switch {
		case gx && !gy:
			return -1
		case gy && !gx:
			return 1
		case gx:
			return cmp.Compare(x.LastSeenMs, y.LastSeenMs)
		}
		return 0
	})
}

// containsFold reports whether sub occurs in s, ignoring case, without
// allocating: the filter runs over every row of a 100k-row pane.
func containsFold(s, sub string) bool {
	if sub == "" {
		return true
	}
	for i := 0; i+len(sub) <= len(s); {
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
		_, w := utf8.DecodeRuneInString(s[i:])
		i += w
	}
	return false
}

// formatAge writes a duration the way the panes show ages: short and
// readable at a glance, seconds precision.
func formatAge(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	s := int64(d / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	case s < 86400:
		return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
	}
	return fmt.Sprintf("%dd%02dh", s/86400, s%86400/3600)
}

// formatDeadline says how far away a deadline is, and whether it is past due.
func formatDeadline(deadlineMs *int64, nowMs int64) (text string, pastDue bool) {
	if deadlineMs == nil {
		return "-", false
	}
	left := time.Duration(*deadlineMs-nowMs) * time.Millisecond
	if left < 0 {
		return "! overdue " + formatAge(-left), true
	}
	return "in " + formatAge(left), false
}

// msAge is the age at nowMs of something that happened at atMs.
func msAge(nowMs, atMs int64) time.Duration {
	return time.Duration(nowMs-atMs) * time.Millisecond
}

// formatClock shows when something happened, as local wall-clock time.
func formatClock(atMs int64) string {
	return time.UnixMilli(atMs).Format("15:04:05")
}
