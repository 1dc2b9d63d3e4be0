package main

import (
	"errors"
	"testing"

	"github.com/google/uuid"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/mailbox"
)

// verify checks a restarted daemon against the ledger and returns the queue
// it saw. A request that got a 2xx must be reflected; one that got no
// answer may or may not have happened; nothing nobody tried may appear.
func (l *ledger) verify(c *client.Client, when string) mailbox.QueueView {
	t := l.t
	t.Helper()
	ctx := t.Context()
	view, err := c.Queue(ctx, mailbox.QueueFilter{Limit: mailbox.MaxLimit})
	if err != nil {
		t.Fatalf("%s: queue: %v", when, err)
	}
	if len(view.Tasks) == mailbox.MaxLimit || len(view.Results) == mailbox.MaxLimit {
		t.Fatalf("%s: the queue holds %d entries and %d results, the most one request shows; the check needs them all", when, len(view.Tasks), len(view.Results))
	}
	audit, err := c.Audit(ctx, "", mailbox.MaxLimit)
	if err != nil {
		t.Fatalf("%s: audit: %v", when, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()

	// The audit trail holds every repair the daemon made (while it holds
	// fewer than the most it keeps): each one must have been tried, and
	// each acknowledged one must be there.
	auditRequeues := map[string]int{}
	inAudit := map[repairAck]bool{}
	for _, a := range audit {
		if !l.repairTry[a.TaskID] || !l.touched[a.LeaseID] {
			t.Errorf("%s: the audit trail records a %s of task %s under lease %s, which nobody tried", when, a.Action, a.TaskID, a.LeaseID)
		}
		if a.Action == mailbox.OutcomeRequeued {
			auditRequeues[a.TaskID]++
		}
		inAudit[repairAck{taskID: a.TaskID, leaseID: a.LeaseID, action: a.Action, attempt: a.Attempt}] = true
	}
	complete := len(audit) < mailbox.DefaultAuditMax && len(audit) < mailbox.MaxLimit
	if complete {
		for _, r := range l.repairs {
			if !inAudit[r] {
				t.Errorf("%s: acknowledged %s of task %s (lease %s, attempt %d) is not in the audit trail", when, r.action, r.taskID, r.leaseID, r.attempt)
			}
		}
	}
	// relets is how many more leases task id may have had than one.
	relets := func(id string) int {
		if complete {
			return auditRequeues[id]
		}
		return l.requeues[id]
	}

	entries := map[string]mailbox.QueueEntry{}
	for _, e := range view.Tasks {
		id := e.Task.ID
		entries[id] = e
		if !l.tried[id] {
			t.Errorf("%s: task %s is in the queue but nobody ever sent it", when, id)
		}
		// No task is leased twice without a requeue in between.
		if e.Attempt > 1+relets(id) {
			t.Errorf("%s: task %s at attempt %d after %d requeues", when, id, e.Attempt, relets(id))
		}
		if lease, ok := l.posted[id]; ok {
			t.Errorf("%s: task %s is %s again after its result under lease %s was acknowledged", when, id, e.State, lease)
		}
		if lease, ok := l.forced[id]; ok {
			t.Errorf("%s: task %s is %s again after a force_error of lease %s was acknowledged", when, id, e.State, lease)
		}
		if l.drained[id] {
			t.Errorf("%s: drained task %s is %s again", when, id, e.State)
		}
		if e.State == mailbox.TaskInFlight && l.requeued[e.LeaseID] {
			t.Errorf("%s: task %s still holds lease %s, whose requeue was acknowledged", when, id, e.LeaseID)
		}
	}

	pending := map[string]mailbox.PendingResult{}
	for _, r := range view.Results {
		id := r.TaskID
		pending[id] = r
		if _, both := entries[id]; both {
			t.Errorf("%s: task %s is both in the queue and has a result pending", when, id)
		}
		if l.drained[id] {
			t.Errorf("%s: the result of task %s is pending again after it was drained", when, id)
		}
		switch {
		case r.Forced:
			if !l.repairTry[id] {
				t.Errorf("%s: forced result pending for task %s, which nobody repaired", when, id)
			}
			if lease, ok := l.forced[id]; ok && r.LeaseID != lease {
				t.Errorf("%s: forced result of %s carries lease %s, the force_error was acknowledged for %s", when, id, r.LeaseID, lease)
			}
			if lease, ok := l.posted[id]; ok {
				t.Errorf("%s: task %s has a forced result pending, but a result under lease %s was acknowledged", when, id, lease)
			}
		default:
			if !l.postTried[id] {
				t.Errorf("%s: result pending for task %s, which nobody posted a result for", when, id)
			}
			if l.leaseTask[r.LeaseID] != id {
				t.Errorf("%s: pending result of %s carries lease %q, never acknowledged for that task", when, id, r.LeaseID)
			}
			if lease, ok := l.posted[id]; ok && r.LeaseID != lease {
				t.Errorf("%s: pending result of %s carries lease %s, acknowledged under %s", when, id, r.LeaseID, lease)
			}
			if lease, ok := l.forced[id]; ok {
				t.Errorf("%s: task %s has a posted result pending, but a force_error of lease %s was acknowledged", when, id, lease)
			}
		}
	}

	for id, acks := range l.leases {
		if len(acks) > 1+relets(id) {
			t.Errorf("%s: task %s was leased %d times with %d requeues", when, id, len(acks), relets(id))
		}
		last := acks[len(acks)-1]
		e, queued := entries[id]
		current := ""
		if queued && e.State == mailbox.TaskInFlight {
			current = e.LeaseID
		}
		for _, a := range acks {
			// A lease ends only through a request carrying its id (every
			// result and repair here is lease-guarded), so an acknowledged
			// lease that is no longer current must have had one tried.
			if a.leaseID != current && !l.touched[a.leaseID] {
				t.Errorf("%s: task %s: acknowledged lease %s (attempt %d) is gone, but nothing was tried with it (current %q)", when, id, a.leaseID, a.attempt, current)
			}
		}
		if queued && e.Attempt < last.attempt {
			t.Errorf("%s: task %s at attempt %d, but attempt %d was acknowledged", when, id, e.Attempt, last.attempt)
		}
		if current == last.leaseID && e.Attempt != last.attempt {
			t.Errorf("%s: task %s holds lease %s at attempt %d, acknowledged as attempt %d", when, id, current, e.Attempt, last.attempt)
		}
	}

	// Acknowledged work that no longer shows must have been drained: by an
	// acknowledged drain, or by one that got no answer (at most one task
	// each). A task found so is remembered as lost to such a drain, so it
	// is probed once, while the daemon still remembers it.
	gone := func(id string) bool {
		_, queued := entries[id]
		_, resulted := pending[id]
		return !queued && !resulted && !l.drained[id]
	}
	for _, set := range []map[string]string{boolKeys(l.sent), l.posted, l.forced} {
		for id := range set {
			if gone(id) && !l.lost[id] {
				l.lost[id] = true
				probeKnown(t, c, id, when)
			}
		}
	}
	if len(l.lost) > l.noAnswer {
		t.Errorf("%s: %d acknowledged tasks or results vanished, but only %d drains went unanswered", when, len(l.lost), l.noAnswer)
	}
	return view
}

func boolKeys(m map[string]bool) map[string]string {
	out := make(map[string]string, len(m))
	for k := range m {
		out[k] = ""
	}
	return out
}

// probeKnown checks that the daemon still knows a task it no longer shows:
// a result under a made-up lease must be refused as a conflict (known,
// resolved), never as never sent (404). The made-up lease guarantees the
// probe changes nothing.
func probeKnown(t *testing.T, c *client.Client, id, when string) {
	t.Helper()
	err := c.PostResult(t.Context(), mailbox.Result{TaskID: id, Status: mailbox.StatusOK, LeaseID: uuid.NewString(), Content: []mailbox.Content{}})
	if !errors.Is(err, mailbox.ErrConflict) {
		t.Errorf("%s: task %s no longer shows and a probe got %v, want a conflict (known and resolved)", when, id, err)
	}
}
