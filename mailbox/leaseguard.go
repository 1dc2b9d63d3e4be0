package mailbox

import "strconv"

// The lease guard: a result or a repair names the lease it was made under
// (lease_id), and is refused unless that lease is still the task's
// current one, so nothing ends a lease newer than the one its caller saw.

// inFlightTask returns the task if it is leased and, when leaseID is
// given, if leaseID is its current lease; otherwise a not_found or
// conflict error (whose lease details mailbox.HideLease withholds from a
// caller who may not see them).
func (s *State) inFlightTask(taskID, leaseID, leaseField, doing string) (*taskRec, error) {
	t, ok := s.tasks[taskID]
	if !ok {
		return nil, &Error{Code: CodeNotFound, Message: "task_id: task " + taskID + " was never sent through this daemon (or was drained long ago and forgotten)",
			Details: &ErrorDetails{Field: "task_id"}}
	}
	if t.State != TaskInFlight {
		why := map[string]string{
			TaskQueued:        "it is queued and not leased (it may have been requeued)",
			TaskResultPending: "it already has a result waiting for its sender",
			TaskWaiting:       "its worker asked its sender a question, and it waits for the answer (the lease ended with the question)",
			TaskDone:          "it is already resolved and its result was drained",
			TaskCanceled:      "it was canceled" + t.canceledBy() + ", and its caller no longer wants a result",
		}[t.State]
		return nil, &Error{Code: CodeConflict, Message: "cannot " + doing + " task " + taskID + ": " + why,
			Details: &ErrorDetails{TaskState: t.State, Attempt: t.Attempt}}
	}
	if leaseID != "" && leaseID != t.LeaseID {
		return nil, &Error{Code: CodeConflict,
			Message: leaseField + ": cannot " + doing + " task " + taskID + " under lease " + leaseID + ": the current lease is " + t.LeaseID + " (held by " + t.LeasedTo + ", attempt " + strconv.Itoa(t.Attempt) + ")",
			private: leaseField + ": cannot " + doing + " task " + taskID + " under lease " + leaseID + ": it is not the task's current lease",
			Details: &ErrorDetails{Field: leaseField, ExpectedLeaseID: leaseID, ActualLeaseID: t.LeaseID, LeasedTo: t.LeasedTo, LeasedAtMs: t.LeasedAtMs, Attempt: t.Attempt, TaskState: t.State}}
	}
	return t, nil
}
