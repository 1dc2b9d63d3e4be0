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
