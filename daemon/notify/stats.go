package notify

import (
	"sort"
	"sync"
	"time"

	"github.com/mailroom/mailroom/internal/metrics"
)

// stats are the notifier's figures for /metrics (WriteMetrics).

type stats struct {
	mu            sync.Mutex
	outcomes      map[string]float64
	latency       *metrics.Histogram
	pending, dead int
	drops         float64
}

func newStats() *stats {
	return &stats{outcomes: map[string]float64{"delivered": 0, "failed": 0, "dead_lettered": 0},
		latency: metrics.NewHistogram(0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 1800, 3600)}
}

func (s *stats) delivered(since time.Duration) {
	s.mu.Lock()
	s.outcomes["delivered"]++
	s.mu.Unlock()
	s.latency.Observe(since.Seconds())
}

func (s *stats) failed() {
	s.mu.Lock()
	s.outcomes["failed"]++
	s.mu.Unlock()
}

func (s *stats) deadLettered() {
	s.mu.Lock()
	s.outcomes["dead_lettered"]++
	s.mu.Unlock()
}

func (s *stats) dropped(n int) {
	if n > 0 {
		s.mu.Lock()
		s.drops += float64(n)
		s.mu.Unlock()
	}
}

func (s *stats) droppedCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return int(s.drops)
}

func (s *stats) gauges(pending, dead int) {
	s.mu.Lock()
	s.pending, s.dead = pending, dead
	s.mu.Unlock()
}

func (s *stats) write(w *metrics.Writer) {
	s.mu.Lock()
	samples := make([]metrics.Labeled, 0, len(s.outcomes))
	for o, v := range s.outcomes {
		samples = append(samples, metrics.Labeled{Labels: [][2]string{{"outcome", o}}, Value: v})
	}
	pending, dead, drops := s.pending, s.dead, s.drops
	s.mu.Unlock()
	sort.Slice(samples, func(i, j int) bool { return samples[i].Labels[0][1] < samples[j].Labels[0][1] })
	w.LabeledCounter("mailroom_push_notifications_total", "Push notification attempts by outcome: delivered (the receiver answered 2xx), failed (retried), dead_lettered (retries ran out).", samples)
	w.Histogram("mailroom_push_delivery_seconds", "Time from a change to its push notification acknowledged by the receiver.", s.latency)
	w.Gauge("mailroom_push_pending", "Push notifications in the outbox waiting for delivery, as this instance's notifier last saw it.", float64(pending))
	w.Gauge("mailroom_push_dead_letters", "Push notifications dead-lettered: their retries ran out; an operator retries or drops them.", float64(dead))
	w.Counter("mailroom_push_dropped_total", "Push notifications this instance dropped because the outbox passed a bound (push_outbox_per_receiver, push_outbox_max, push_dead_retention).", drops)
}
