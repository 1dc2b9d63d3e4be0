package engine

import (
	"context"
	"errors"

	"github.com/mailroom/mailroom/mailbox"
)

// RetryStalePrincipal names the scan in the audit trail when nobody else
// asked for it (the scheduler).
const RetryStalePrincipal = "mailroom/retry-stale"

// RetryStale plans the scan against the durable state, then (when enabled)
// requeues each planned lease guarded by the lease id it observed. A lease
// that moved in between is reported as lease_changed, never requeued.
func (e *Engine) RetryStale(ctx context.Context, p mailbox.RetryPolicy) (mailbox.RetryReport, error) {
	if err := p.Validate(); err != nil {
		return mailbox.RetryReport{}, err
	}
	now := e.opts.Now().UnixMilli()
	e.cmu.RLock()
	plan := e.committed.PlanRetryStale(p, now)
	e.cmu.RUnlock()
	if !p.Enabled {
		return plan, nil
	}
	return e.executeRetry(ctx, plan)
}

func (e *Engine) executeRetry(ctx context.Context, plan mailbox.RetryReport) (mailbox.RetryReport, error) {
	principal := mailbox.PrincipalFrom(ctx)
	if principal == "" {
		principal = RetryStalePrincipal
	}
	planned := plan.Requeued
	plan.Requeued = []mailbox.RetryRequeued{}
	for _, r := range planned {
		ev, err := e.decide(func(s *mailbox.State, now int64) (mailbox.Event, error) {
			return s.DecideRetryRequeue(r, principal, now)
		}, nil)
		switch {
		case errors.Is(err, mailbox.ErrConflict):
			plan.Skipped = append(plan.Skipped, mailbox.RetrySkipped{TaskID: r.TaskID, Reason: mailbox.SkipLeaseChanged, Attempt: r.Attempt})
		case err != nil:
			return plan, err
		default:
			plan.Requeued = append(plan.Requeued, r)
			e.log.Info("stale lease requeued by retry-stale", "task_id", r.TaskID, "lease_id", r.LeaseID, "attempt", ev.Attempt, "principal", principal)
		}
	}
	return plan, nil
}

// Audit lists repairs, newest first.
func (e *Engine) Audit(ctx context.Context, taskID string, limit int) ([]mailbox.AuditRecord, error) {
	limit, err := mailbox.ValidateLimit("limit", limit)
	if err != nil {
		return nil, err
	}
	if taskID != "" {
		if taskID, err = mailbox.CanonicalUUID("task_id", taskID); err != nil {
			return nil, err
		}
	}
	e.cmu.RLock()
	defer e.cmu.RUnlock()
	return e.committed.Audit(taskID, limit), nil
}

// Task returns the durable record of one task.
func (e *Engine) Task(ctx context.Context, id string) (mailbox.TaskRecord, error) {
	id, err := mailbox.CanonicalUUID("task_id", id)
	if err != nil {
		return mailbox.TaskRecord{}, err
	}
	e.cmu.RLock()
	rec, ok := e.committed.Task(id)
	e.cmu.RUnlock()
	if !ok {
		return rec, &mailbox.Error{Code: mailbox.CodeNotFound, Message: "task_id: task " + id + " was never sent through this daemon (or was drained long ago and forgotten)",
			Details: &mailbox.ErrorDetails{Field: "task_id"}}
	}
	return rec, nil
}
