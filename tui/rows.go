package tui

import (
	"fmt"
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
	results []resultRow
	// audit is the repair trail, newest first. Records never change once
	// written, so consecutive rows share this slice until a repair arrives.
	audit []mailbox.AuditRecord
}

// resultRow is a pending result with the task facts the Results pane shows
// and filters on.
type resultRow struct {
	mailbox.PendingResult
	kind, intent string
	idempotent   bool
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
	}
	return len(r.results)
}

// fields returns what the filter searches in the panes of tasks and
// results; the Audit pane has its own (auditMatches).
func (r *rows) fields(p paneID, i int) (id, sender, recipient, kind, intent string) {
	switch p {
	case paneQueue, paneLeases:
		e := &r.queued
		if p == paneLeases {
			e = &r.leases
		}
		t := &(*e)[i].Task
		return t.ID, t.Sender, t.Recipient, t.Kind(), t.IntentText
	}
	res := &r.results[i]
	return res.TaskID, res.Sender, res.Recipient, res.kind, res.intent
}

// id returns the task a row is about; on the Audit pane, the repaired task.
func (r *rows) id(p paneID, i int) string {
	if p == paneAudit {
		return r.audit[i].TaskID
	}
	id, _, _, _, _ := r.fields(p, i)
	return id
}

// rowKey identifies a row across rebuilds so the selection can follow it.
// A task appears once in the panes of tasks and results, so its id is
// enough there; the Audit pane can list one task many times, so it adds
// the repair's seq.
type rowKey struct {
	id  string
	seq uint64
}

func (r *rows) key(p paneID, i int) rowKey {
	if p == paneAudit {
		return rowKey{id: r.audit[i].TaskID, seq: r.audit[i].Seq}
	}
	return rowKey{id: r.id(p, i)}
}

// viewParams are what the operator chose for one pane.
type viewParams struct {
	filter    string
	sort      sortSpec
	staleOnly bool
}

// staleness decides which leases are stale: held at least after.
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
		if filter != "" && p == paneAudit {
			if !auditMatches(&r.audit[i], filter) {
				continue
			}
		} else if filter != "" {
			id, sender, recipient, kind, intent := r.fields(p, i)
			if !containsFold(id, filter) && !containsFold(sender, filter) && !containsFold(recipient, filter) &&
				!containsFold(kind, filter) && !containsFold(intent, filter) {
				continue
			}
		}
		idx = append(idx, int32(i))
	}
	if p != paneAudit { // a trail reads newest first, whatever the sort says
		sortRows(r, p, vp.sort, idx)
	}
	return idx
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
