package mailbox

// The retry-stale scan: requeue leases that have been held too long, but
// only where running the work twice is declared safe.

// Skip reasons of the retry-stale scan.
const (
	SkipLeaseTooYoung      = "lease_too_young"
	SkipMissingIdempotency = "missing_idempotency"
	SkipUnsafe             = "unsafe_duplicate_safety"
	SkipMaxAttempts        = "max_attempts_reached"
	SkipLimitReached       = "limit_reached"
	SkipLeaseChanged       = "lease_changed"
)

// RetryStaleReason is the fixed reason recorded on every scan requeue.
const RetryStaleReason = "retry-stale: lease older than the minimum age on an idempotent task"

// RetryPolicy says which stale leases the scan may requeue.
type RetryPolicy struct {
	Enabled       bool  `json:"enabled"`
	MinLeaseAgeMs int64 `json:"min_lease_age_ms"`
	MaxAttempts   int   `json:"max_attempts"`
	MaxRequeues   int   `json:"max_requeues"`
	ScanLimit     int   `json:"scan_limit"`
}

// DefaultRetryPolicy is a dry run with the documented defaults.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{MinLeaseAgeMs: 5 * 60 * 1000, MaxAttempts: 3, MaxRequeues: 10, ScanLimit: 100}
}

// Validate checks the policy's bounds, naming the field.
func (p RetryPolicy) Validate() error {
	switch {
	case p.MinLeaseAgeMs < 0 || p.MinLeaseAgeMs > MaxDurationMs:
		return Invalidf("min_lease_age_ms", "got %d, expected milliseconds from 0 to %d (100 years)", p.MinLeaseAgeMs, MaxDurationMs)
	case p.MaxAttempts < 1 || p.MaxAttempts > MaxAttempts:
		return Invalidf("max_attempts", "got %d, expected a number from 1 to %d", p.MaxAttempts, MaxAttempts)
	case p.MaxRequeues < 0 || p.MaxRequeues > MaxLimit:
		return Invalidf("max_requeues", "got %d, expected a number from 0 to %d", p.MaxRequeues, MaxLimit)
	case p.ScanLimit < 1 || p.ScanLimit > MaxLimit:
		return Invalidf("scan_limit", "got %d, expected a number from 1 to %d", p.ScanLimit, MaxLimit)
	}
	return nil
}

// RetryRequeued is a lease the scan requeued (or, in a dry run, would).
type RetryRequeued struct {
	TaskID         string `json:"task_id"`
	LeaseID        string `json:"lease_id"`
	Attempt        int    `json:"attempt"`
	IdempotencyKey string `json:"idempotency_key"`
}

// RetrySkipped is a lease the scan considered and left alone, with why.
type RetrySkipped struct {
	TaskID     string `json:"task_id"`
	Reason     string `json:"reason"`
	Attempt    int    `json:"attempt"`
	LeaseAgeMs int64  `json:"lease_age_ms"`
}

// RetryReport is what one scan did.
type RetryReport struct {
	Policy     RetryPolicy     `json:"policy"`
	DryRun     bool            `json:"dry_run"`
	Considered int             `json:"considered"`
	Requeued   []RetryRequeued `json:"requeued"`
	Skipped    []RetrySkipped  `json:"skipped"`
}

// AutoRetryResponse answers POST /a2a/retry-stale.
type AutoRetryResponse struct {
	Kind   string      `json:"kind"`
	Report RetryReport `json:"report"`
}

// PlanRetryStale looks at in-flight leases only, oldest first, up to the
// scan limit (so a long queue never hides stale leases), and sorts them into
// the ones to requeue and the ones to skip. The engine then requeues each
// planned lease guarded by the lease id observed here; one that moved in
// between becomes lease_changed.
func (s *State) PlanRetryStale(p RetryPolicy, nowMs int64) RetryReport {
	rep := RetryReport{Policy: p, DryRun: !p.Enabled, Requeued: []RetryRequeued{}, Skipped: []RetrySkipped{}}
	for _, t := range s.sortedInFlight() {
		if rep.Considered >= p.ScanLimit {
			break
		}
		rep.Considered++
		age := nowMs - t.LeasedAtMs
		skip := func(reason string) {
			rep.Skipped = append(rep.Skipped, RetrySkipped{TaskID: t.Task.ID, Reason: reason, Attempt: t.Attempt, LeaseAgeMs: age})
		}
		switch {
		case age < p.MinLeaseAgeMs:
			skip(SkipLeaseTooYoung)
		case t.Task.Idempotency == nil:
			skip(SkipMissingIdempotency)
		case !t.Task.Idempotent():
			skip(SkipUnsafe)
		case t.Attempt >= p.MaxAttempts:
			skip(SkipMaxAttempts)
		case len(rep.Requeued) >= p.MaxRequeues:
			skip(SkipLimitReached)
		default:
			rep.Requeued = append(rep.Requeued, RetryRequeued{TaskID: t.Task.ID, LeaseID: t.LeaseID, Attempt: t.Attempt, IdempotencyKey: t.Task.Idempotency.Key})
		}
	}
	return rep
}

// DecideRetryRequeue returns the requeue event for a lease the scan planned
// to requeue, guarded by the lease id the scan observed.
func (s *State) DecideRetryRequeue(r RetryRequeued, principal string, nowMs int64) (Event, error) {
	ev, err := s.DecideRepair(RepairRequest{TaskID: r.TaskID, Reason: RetryStaleReason,
		Command: RepairCommand{Action: ActionRequeue, LeaseID: r.LeaseID, DuplicateRisk: RiskIdempotent}}, principal, nowMs)
	ev.Auto = true
	return ev, err
}
