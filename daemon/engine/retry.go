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
	e.durableMu.RLock()
	plan := e.durable.PlanRetryStale(p, now)
	e.durableMu.RUnlock()
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
		ev, _, err := e.decide(func(s *mailbox.State, now int64) (mailbox.Event, bool, error) {
			return must(s.DecideRetryRequeue(r, principal, now))
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
