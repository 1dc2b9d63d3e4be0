package outbound

import (
	"sync"
	"time"

	"github.com/mailroom/mailroom/internal/metrics"
)

// Outcomes of a delivery, as /metrics counts them: a result's status
// (ok, error, rejected, input_required, auth_required), or what ended
// the delivery without one.
const (
	outcomeLate     = "late"     // the result was refused: the lease had changed
	outcomeCanceled = "canceled" // a cancel or repair ended it
	outcomeLost     = "lost"     // the remote forgot the task it had accepted
	outcomeUnknown  = "unknown"  // not known to be sent (a restart, a send that failed after it may have reached the remote), not idempotent
)

type stats struct {
	mu       sync.Mutex
	outcomes map[string]float64
	// settles counts the times the remote was asked whether it holds a
	// task that may have reached it, by its answer: found, absent, cannot.
	settles map[string]float64
	resends float64
	latency *metrics.Histogram
}

func newStats() *stats {
	return &stats{outcomes: map[string]float64{}, settles: map[string]float64{"found": 0, "absent": 0, "cannot": 0},
		latency: metrics.NewHistogram(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800)}
}

func (s *stats) ended(outcome string) {
	s.mu.Lock()
	s.outcomes[outcome]++
	s.mu.Unlock()
}

func (s *stats) settled(verdict string) {
	s.mu.Lock()
	s.settles[verdict]++
	s.mu.Unlock()
}

func (s *stats) resent() {
	s.mu.Lock()
	s.resends++
	s.mu.Unlock()
}

// posted counts a result posted for a delivery that began at start.
func (s *stats) posted(status string, start time.Time) {
	s.ended(status)
	s.latency.Observe(time.Since(start).Seconds())
}

func (s *stats) write(w *metrics.Writer, circuitsOpen, resendMax int) {
	s.mu.Lock()
	samples := make([]metrics.Labeled, 0, len(s.outcomes))
	for o, n := range s.outcomes {
		samples = append(samples, metrics.Labeled{Labels: [][2]string{{"outcome", o}}, Value: n})
	}
	settles := make([]metrics.Labeled, 0, len(s.settles))
	for v, n := range s.settles {
		settles = append(settles, metrics.Labeled{Labels: [][2]string{{"answer", v}}, Value: n})
	}
	resends := s.resends
	s.mu.Unlock()
	w.LabeledCounter("mailroom_remote_deliveries_total", "Deliveries to remote agents that ended, by outcome: the result's status, or late, canceled, lost, unknown.", samples)
	w.Histogram("mailroom_remote_delivery_duration_seconds", "Time from a remote agent's lease to its result (or question) posted.", s.latency)
	w.LabeledCounter("mailroom_remote_settles_total", "Times a remote was asked whether it holds a task a send may have delivered (after a restart, a takeover or a cut send), by answer: found (followed), absent (sent), cannot (a v0.3 or legacy remote, or one without ListTasks).", settles)
	w.Counter("mailroom_remote_resends_total", "Idempotent tasks sent again after a send that may have reached the remote, which could not say whether it held them.", resends)
	w.Gauge("mailroom_remote_resend_max", "remote_resend_max: how many times an idempotent task is sent again before its lease is left to the operator.", float64(resendMax))
	w.Gauge("mailroom_remote_circuits_open", "Remote agents whose circuit is open: no task is leased for them until a probe is answered.", float64(circuitsOpen))
}
