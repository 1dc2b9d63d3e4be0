package engine

import (
	"context"

	"github.com/mailroom/mailroom/mailbox"
)

// Remote is the engine's side the dispatcher (daemon/outbound) delivers
// remote agents' tasks through: the agents registered as remote, what it
// records of a delivery (remote_accepted, with the answer when it came
// at once), and what it knows for the agents listing. None of it is the
// mailbox's service to its clients, so it stands apart from the Service
// methods.
type Remote struct{ e *Engine }

// Remote is the dispatcher's side of the engine.
func (e *Engine) Remote() Remote { return Remote{e} }

// Agents lists the agents registered as remote agents (their card has a
// remote spec), sorted by agent id.
func (r Remote) Agents() []mailbox.RegisteredAgent {
	e := r.e
	e.durableMu.RLock()
	defer e.durableMu.RUnlock()
	var out []mailbox.RegisteredAgent
	for _, ra := range e.durable.Registry() {
		if ra.IsRemote() {
			out = append(out, ra)
		}
	}
	return out
}

// Results returns the tasks remote agent agent answered whose results
// wait for their senders: what the dispatcher learns of how the remote
// keeps the ids it is sent.
func (r Remote) Results(agent string) []mailbox.TaskRecord {
	e := r.e
	e.durableMu.RLock()
	defer e.durableMu.RUnlock()
	var out []mailbox.TaskRecord
	for _, pr := range e.durable.PendingResults() {
		if rec, ok := e.durable.Task(pr.TaskID); ok && rec.Remote != nil && rec.Remote.Agent == agent {
			out = append(out, rec)
		}
	}
	return out
}

// SetStatus makes the agents listing ask status for what the dispatcher
// knows of each remote agent; status is called outside the engine's
// locks, and answers nil for an agent it does not deliver to.
func (r Remote) SetStatus(status func(agent string) *mailbox.RemoteStatus) {
	r.e.remoteStatus.Store(&status)
	r.e.presence.changed.Store(true)
}

// StatusChanged tells the engine that what the dispatcher knows changed,
// so the next agents push carries it.
func (r Remote) StatusChanged() { r.e.presence.changed.Store(true) }

// Accepted records that a remote agent accepted task taskID,
// delivered to it under lease leaseID, as ref (remote_accepted). The
// daemon's dispatcher calls it the moment the remote answers, so that
// after a crash the task is followed at the remote rather than sent
// again. A lease that is no longer the task's current one is refused
// (conflict), like a late result.
func (r Remote) Accepted(ctx context.Context, taskID, leaseID string, ref mailbox.RemoteRef) error {
	e := r.e
	taskID, err := mailbox.CanonicalUUID("task_id", taskID)
	if err != nil {
		return err
	}
	if leaseID, err = mailbox.CanonicalUUID("lease_id", leaseID); err != nil {
		return err
	}
	_, _, err = e.decide(func(s *mailbox.State, now int64) (mailbox.Event, bool, error) {
		return must(s.DecideRemoteAccepted(taskID, leaseID, ref, now))
	}, nil)
	return err
}

// Answered records a remote's acceptance of task taskID under lease
// leaseID and its answer r in one unit: a remote that answered the send
// with the task already finished (or asking) costs one sync, not two, and
// a crash keeps both or neither (neither: the send is unanswered, which
// recovery handles as before). Refused as Accepted and PostResult refuse,
// and then nothing is recorded.
func (rm Remote) Answered(ctx context.Context, taskID, leaseID string, ref mailbox.RemoteRef, r mailbox.Result) error {
	e := rm.e
	taskID, err := mailbox.CanonicalUUID("task_id", taskID)
	if err != nil {
		return err
	}
	if leaseID, err = mailbox.CanonicalUUID("lease_id", leaseID); err != nil {
		return err
	}
	r.TaskID, r.LeaseID = taskID, leaseID
	if r, err = mailbox.NormalizeResult(r); err != nil {
		return err
	}
	holder := ""
	decideResult := e.decideResult(ctx, r, &holder)
	_, err = e.run("nothing was changed", func(p *pass) error {
		// Both are decided before either is staged, so a refusal of
		// either stages nothing: both go, or neither. The acceptance
		// changes nothing the result's decision reads (the task stays in
		// flight under the same lease).
		accepted, err := p.s.DecideRemoteAccepted(taskID, leaseID, ref, p.now)
		if err != nil {
			return err
		}
		evs, err := decideResult(p.s, p.now)
		if err != nil {
			return err
		}
		if _, err := p.add(accepted, nil); err != nil {
			return err
		}
		for _, ev := range evs {
			if _, err := p.add(ev, nil); err != nil {
				return err
			}
		}
		return nil
	})
	e.seen(holder)
	return resultRefusal(ctx, err)
}
