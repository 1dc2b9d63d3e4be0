package engine

import (
	"context"

	"github.com/mailroom/mailroom/mailbox"
)

// RemoteAccepted records that a remote agent accepted task taskID,
// delivered to it under lease leaseID, as ref (remote_accepted). The
// daemon's dispatcher calls it the moment the remote answers, so that
// after a crash the task is followed at the remote rather than sent
// again. A lease that is no longer the task's current one is refused
// (conflict), like a late result.
func (e *Engine) RemoteAccepted(ctx context.Context, taskID, leaseID string, ref mailbox.RemoteRef) error {
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

// RemoteAnswered records a remote's acceptance of task taskID under lease
// leaseID and its answer r in one unit: a remote that answered the send
// with the task already finished (or asking) costs one sync, not two, and
// a crash keeps both or neither (neither: the send is unanswered, which
// recovery handles as before). Refused as RemoteAccepted and PostResult
// refuse, and then nothing is recorded.
func (e *Engine) RemoteAnswered(ctx context.Context, taskID, leaseID string, ref mailbox.RemoteRef, r mailbox.Result) error {
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
