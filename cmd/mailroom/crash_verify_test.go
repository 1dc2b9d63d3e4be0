package main

import (
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/mailbox"
)

// verifyCrash checks the restarted daemon against the ledger and returns
// what it saw. Requests that got no answer may or may not have happened;
// requests that got a 2xx must all be reflected.
func verifyCrash(t *testing.T, c *client.Client, l *ledger, when string) mailbox.QueueView {
	t.Helper()
	ctx := t.Context()
	view, err := c.Queue(ctx, mailbox.QueueFilter{Limit: mailbox.MaxLimit})
	if err != nil {
		t.Fatalf("%s: queue: %v", when, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()

	entries := map[string]mailbox.QueueEntry{}
	for _, e := range view.Tasks {
		if !l.tried[e.Task.ID] {
			t.Errorf("%s: task %s is in the queue but no client ever sent it", when, e.Task.ID)
		}
		entries[e.Task.ID] = e
		// No task is leased twice without a repair in between: every lease
		// but the first needs a requeue, and requeues were counted as tried.
		if e.Attempt > 1+l.requeueTries[e.Task.ID] {
			t.Errorf("%s: task %s at attempt %d after %d requeue attempts", when, e.Task.ID, e.Attempt, l.requeueTries[e.Task.ID])
		}
	}
	pending := map[string]mailbox.PendingResult{}
	for _, r := range view.Results {
		pending[r.TaskID] = r
		if !l.postTried[r.TaskID] {
			t.Errorf("%s: result pending for task %s, which nobody posted a result for", when, r.TaskID)
		}
		if l.leaseTask[r.LeaseID] != r.TaskID {
			t.Errorf("%s: pending result for %s carries lease %q, never acknowledged for that task", when, r.TaskID, r.LeaseID)
		}
		if l.drained[r.TaskID] {
			t.Errorf("%s: result for task %s is pending again after it was drained", when, r.TaskID)
		}
		if _, both := entries[r.TaskID]; both {
			t.Errorf("%s: task %s is both queued and has a result pending", when, r.TaskID)
		}
	}

	for id, acks := range l.leases {
		if len(acks) > 1+l.requeueTries[id] {
			t.Errorf("%s: task %s was leased %d times with %d requeue attempts", when, id, len(acks), l.requeueTries[id])
		}
		attempts := map[int]bool{}
		last := acks[0]
		for _, a := range acks {
			if attempts[a.attempt] {
				t.Errorf("%s: task %s: attempt %d acknowledged twice", when, id, a.attempt)
			}
			attempts[a.attempt] = true
			if a.attempt > last.attempt {
				last = a
			}
		}
		e, inQueue := entries[id]
		current := ""
		if inQueue && e.State == mailbox.EntryInFlight {
			current = e.LeaseID
		}
		for _, a := range acks {
			// A lease only ends through a request carrying its id (every
			// result and requeue here is lease-guarded), so an acknowledged
			// lease that is no longer current must have had one tried.
			if a.leaseID != current && !l.touched[a.leaseID] {
				t.Errorf("%s: task %s: acknowledged lease %s (attempt %d) is gone, but nothing was tried with it (current %q)", when, id, a.leaseID, a.attempt, current)
			}
		}
		if inQueue && e.Attempt < last.attempt {
			t.Errorf("%s: task %s at attempt %d, but attempt %d was acknowledged", when, id, e.Attempt, last.attempt)
		}
		if current == last.leaseID && e.Attempt != last.attempt {
			t.Errorf("%s: task %s holds lease %s at attempt %d, acknowledged as attempt %d", when, id, current, e.Attempt, last.attempt)
		}
	}

	for id, leaseID := range l.posted {
		if _, ok := entries[id]; ok {
			t.Errorf("%s: task %s is queued or in flight again after its result was acknowledged", when, id)
		}
		if r, ok := pending[id]; ok && r.LeaseID != leaseID {
			t.Errorf("%s: task %s: pending result carries lease %s, acknowledged with %s", when, id, r.LeaseID, leaseID)
		}
	}
	for id := range l.drained {
		if _, ok := entries[id]; ok {
			t.Errorf("%s: drained task %s is back in the queue", when, id)
		}
	}

	// Acknowledged work that is no longer visible must have been drained:
	// acknowledged drains, plus at most one per drain that got no answer.
	missing := 0
	for id := range l.sent {
		_, queued := entries[id]
		_, resulted := pending[id]
		if queued || resulted || l.drained[id] {
			continue
		}
		missing++
		probeKnown(t, c, id, when)
	}
	for id := range l.posted {
		if _, ok := l.sent[id]; !ok && !l.drained[id] {
			if _, ok := pending[id]; !ok {
				missing++
				probeKnown(t, c, id, when)
			}
		}
	}
	if missing > l.unackedDrains {
		t.Errorf("%s: %d acknowledged tasks or results vanished, but only %d drains went unanswered", when, missing, l.unackedDrains)
	}
	return view
}

// probeKnown checks that the daemon still knows a task it no longer shows:
// a result under a made-up lease must be refused as a conflict, never as
// "never sent" (404). The made-up lease guarantees nothing changes.
func probeKnown(t *testing.T, c *client.Client, id, when string) {
	t.Helper()
	err := c.PostResult(t.Context(), mailbox.Result{TaskID: id, Status: mailbox.StatusOK, LeaseID: uuid.NewString(), Content: []mailbox.Content{}})
	if !errors.Is(err, mailbox.ErrConflict) {
		t.Errorf("%s: task %s is not shown and a probe got %v, want a conflict (known, resolved)", when, id, err)
	}
}
