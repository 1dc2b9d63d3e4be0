package tui

import (
	"strings"
	"testing"

	"github.com/mailroom/mailroom/mailbox"
)

// repaired is a replica with three repairs, oldest first: a requeue by
// oncall-ann, a forced error made without auth, and a retry-stale requeue.
type repaired struct {
	src                      *source
	m                        *model
	requeued, forced, auto   mailbox.Event // the repair events
	requeuedID, forcedID     string
	autoID, untouchedID      string
	requeuedLease, autoLease string
}

func newRepaired(t *testing.T) repaired {
	t.Helper()
	src := newSource(t)
	m := newModel()
	m.receive(src.snapshot())
	r := repaired{src: src, m: m}
	for _, ev := range []mailbox.Event{
		src.send("worker-a@local", withIntent("summarize the on-call notes")),
		src.send("worker-b@local", withIntent("fetch the billing metrics")),
		src.send("worker-c@local", withIntent("classify the tickets"), idempotent("classify:tickets")),
		src.send("worker-a@local", withIntent("never repaired")),
	} {
		m.receive(ev)
	}
	r.requeuedID, r.forcedID, r.autoID = m.rows().queued[0].Task.ID, m.rows().queued[1].Task.ID, m.rows().queued[2].Task.ID
	r.untouchedID = m.rows().queued[3].Task.ID
	leaseA, leaseB, leaseC := src.lease("worker-a@local"), src.lease("worker-b@local"), src.lease("worker-c@local")
	m.receive(leaseA)
	m.receive(leaseB)
	m.receive(leaseC)
	r.requeuedLease, r.autoLease = leaseA.LeaseID, leaseC.LeaseID

	src.nowMs += 10_000
	r.requeued = src.emit(src.s.DecideRepair(mailbox.RepairRequest{TaskID: r.requeuedID, Reason: "worker-a crashed mid-task",
		Command: mailbox.RepairCommand{Action: mailbox.ActionRequeue, LeaseID: leaseA.LeaseID, DuplicateRisk: mailbox.RiskOperatorAccepted}}, "oncall-ann", src.nowMs))
	src.nowMs += 10_000
	r.forced = src.emit(src.s.DecideRepair(mailbox.RepairRequest{TaskID: r.forcedID, Reason: "worker-b is gone",
		Command: mailbox.RepairCommand{Action: mailbox.ActionForceError, LeaseID: leaseB.LeaseID, Message: "given up"}}, "", src.nowMs))
	src.nowMs += 10_000
	r.auto = src.emit(src.s.DecideRetryRequeue(mailbox.RetryRequeued{TaskID: r.autoID, LeaseID: leaseC.LeaseID, Attempt: 1}, "mailroom/retry-stale", src.nowMs))
	for _, ev := range []mailbox.Event{r.requeued, r.forced, r.auto} {
		m.receive(ev)
	}
	return r
}

func TestAuditRowsNewestFirstAndFiltered(t *testing.T) {
	r := newRepaired(t)
	rs := r.m.rows()
	tasks := func(idx []int32) string {
		var out []string
		for _, i := range idx {
			out = append(out, rs.audit[i].TaskID)
		}
		return strings.Join(out, " ")
	}
	all := r.autoID + " " + r.forcedID + " " + r.requeuedID
	tests := []struct {
		filter string
		want   string
	}{
		{"", all}, // newest first
		{"ONCALL", r.requeuedID},
		{"no auth", r.forcedID},
		{"auto", r.autoID},
		{"retry-stale", r.autoID}, // principal and reason both say so
		{"forced_error", r.forcedID},
		{"requeued", r.autoID + " " + r.requeuedID},
		{"crashed mid", r.requeuedID},
		{short(r.forcedID), r.forcedID},
		{short(r.untouchedID), ""},
		{"worker-b@local", ""}, // recipients are not what the trail is searched by
	}
	for _, tt := range tests {
		// A sort chosen on another pane must not reorder the trail.
		got := tasks(selectRows(rs, paneAudit, viewParams{filter: tt.filter, sort: sortSpec{key: 'C'}}, staleness{}))
		if got != tt.want {
			t.Errorf("Audit filter %q = [%s], want [%s]", tt.filter, got, tt.want)
		}
	}
}

func TestAuditPaneCells(t *testing.T) {
	r := newRepaired(t)
	rs := r.m.rows()
	now := r.src.nowMs + 60_000
	pc := &paneContent{pane: paneAudit, rows: rs, idx: selectRows(rs, paneAudit, viewParams{}, staleness{}), st: staleness{nowMs: now}}
	tests := []struct {
		row  int
		want []string // AGE AT BY ACTION TASK ATT REASON LEASE POSTURE
	}{
		{0, auditHeadings()},
		{1, []string{"1m00s", formatClock(r.auto.AtMs), "mailroom/retry-stale", "requeued (auto)", short(r.autoID), "1",
			mailbox.RetryStaleReason, short(r.autoLease), "idempotent"}},
		{2, []string{"1m10s", formatClock(r.forced.AtMs), "(no auth)", "forced_error", short(r.forcedID), "1",
			"worker-b is gone", short(r.forced.LeaseID), "-"}},
		{3, []string{"1m20s", formatClock(r.requeued.AtMs), "oncall-ann", "requeued", short(r.requeuedID), "1",
			"worker-a crashed mid-task", short(r.requeuedLease), "operator_accepted"}},
	}
	if n := pc.GetRowCount(); n != len(tests) {
		t.Fatalf("Audit pane has %d rows with its header, want %d", n, len(tests))
	}
	for _, tt := range tests {
		for col, want := range tt.want {
			if got := pc.GetCell(tt.row, col).Text; got != want {
				t.Errorf("row %d %s = %q, want %q", tt.row, paneColumns[paneAudit][col].heading, got, want)
			}
		}
	}
	if got := pc.GetCell(2, 3).Color; got != colorError {
		t.Errorf("a forced error's action is drawn in %v, want %v", got, colorError)
	}
}

func TestAuditRowsAreSharedUntilARepair(t *testing.T) {
	r := newRepaired(t)
	before := r.m.rows()
	r.m.receive(r.src.send("worker-a@local"))
	same := r.m.rows()
	if &same.audit[0] != &before.audit[0] {
		t.Error("a send copied the repair trail again; rows should share it until a repair arrives")
	}
	r.m.receive(r.src.lease("worker-a@local"))
	e := r.m.rows().leases[0]
	r.m.receive(r.src.emit(r.src.s.DecideRepair(mailbox.RepairRequest{TaskID: e.Task.ID, Reason: "again",
		Command: mailbox.RepairCommand{Action: mailbox.ActionRequeue, LeaseID: e.LeaseID, DuplicateRisk: mailbox.RiskOperatorAccepted}}, "oncall-ann", r.src.nowMs)))
	after := r.m.rows()
	if len(after.audit) != 4 || after.audit[0].Reason != "again" {
		t.Errorf("after a fourth repair the trail is %+v, want it first of 4", after.audit)
	}
	if len(before.audit) != 3 {
		t.Errorf("rows built earlier changed under the UI: %d repairs, want 3", len(before.audit))
	}
}

func TestDetailRepairHistory(t *testing.T) {
	r := newRepaired(t)
	now := r.src.nowMs
	text := renderDetail(r.requeuedID, r.m.detail(r.requeuedID), now)
	entry := repairEntry(strings.Split(text, "\n"), "worker-a crashed mid-task")
	for _, want := range []string{formatClock(r.requeued.AtMs), "20s ago", "requeued[::-] by oncall-ann", "lease " + short(r.requeuedLease),
		"attempt 1", "posture operator_accepted", `reason "worker-a crashed mid-task"`} {
		if !strings.Contains(entry, want) {
			t.Errorf("repair history entry %q lacks %q; detail:\n%s", entry, want, text)
		}
	}
	if !strings.Contains(text, "Repair history") || !strings.Contains(text, "Lease history") {
		t.Errorf("detail lacks the repair or lease history:\n%s", text)
	}
	if text := renderDetail(r.untouchedID, r.m.detail(r.untouchedID), now); !strings.Contains(text, "no repairs") {
		t.Errorf("a task never repaired should say no repairs:\n%s", text)
	}

	// A task requeued over and over shows its newest repairs and says where the rest are.
	id := r.requeuedID
	for i := 0; i <= detailRepairs; i++ {
		r.m.receive(r.src.lease("worker-a@local"))
		e := r.m.rows().leases
		var lease string
		for _, l := range e {
			if l.Task.ID == id {
				lease = l.LeaseID
			}
		}
		r.m.receive(r.src.emit(r.src.s.DecideRepair(mailbox.RepairRequest{TaskID: id, Reason: "round",
			Command: mailbox.RepairCommand{Action: mailbox.ActionRequeue, LeaseID: lease, DuplicateRisk: mailbox.RiskOperatorAccepted}}, "oncall-ann", r.src.nowMs)))
	}
	d := r.m.detail(id)
	if len(d.repairs) != detailRepairs || !d.moreRepairs {
		t.Fatalf("detail keeps %d repairs (more: %v), want the newest %d and more", len(d.repairs), d.moreRepairs, detailRepairs)
	}
	if text := renderDetail(id, d, now); !strings.Contains(text, "the Audit pane lists them all") {
		t.Errorf("a capped repair history does not say where the rest are:\n%s", text)
	}
}

func auditHeadings() []string {
	var hs []string
	for _, col := range paneColumns[paneAudit] {
		hs = append(hs, col.heading)
	}
	return hs
}

// repairEntry returns the repair history entry (its two lines joined) whose
// reason contains reason, or "".
func repairEntry(lines []string, reason string) string {
	in := false
	for i, l := range lines {
		switch {
		case strings.Contains(l, "Repair history"):
			in = true
		case in && i > 0 && strings.Contains(l, "reason ") && strings.Contains(l, reason):
			return lines[i-1] + " / " + l
		}
	}
	return ""
}
