package bench

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mailroom/mailroom/client"
)

// Metric names read from the daemon's /metrics (daemon/httpapi/metrics.go).
const (
	metricEventsAppended = "mailroom_events_appended_total"
	metricFsyncBatches   = "mailroom_fsync_batches_total"
	metricFsyncSeconds   = "mailroom_fsync_duration_seconds_sum"
	metricLastSeq        = "mailroom_last_seq"
	metricWriteErrors    = "mailroom_log_write_errors_total"
	metricSubscribersCut = "mailroom_sse_subscribers_cut_total"
)

// scrape is one reading of the daemon's unlabelled figures, and of the
// sync histogram's sum as metricFsyncSeconds.
type scrape map[string]float64

// decodeMetrics reads the daemon's JSON metrics (GET /metrics?format=json):
// numbers are unlabelled figures; the sync histogram gives its sum.
func decodeMetrics(m map[string]json.RawMessage) (scrape, error) {
	out := scrape{}
	for name, raw := range m {
		var v float64
		if json.Unmarshal(raw, &v) == nil {
			out[name] = v
		}
	}
	if raw, ok := m["mailroom_fsync_duration_seconds"]; ok {
		var h struct {
			Sum float64 `json:"sum"`
		}
		if err := json.Unmarshal(raw, &h); err != nil {
			return nil, fmt.Errorf("the daemon's sync histogram does not decode: %w", err)
		}
		out[metricFsyncSeconds] = h.Sum
	}
	for _, name := range []string{metricEventsAppended, metricFsyncBatches, metricLastSeq} {
		if _, ok := out[name]; !ok {
			return nil, fmt.Errorf("the daemon's metrics have no %s (is it a mailroom daemon?)", name)
		}
	}
	return out, nil
}

func scrapeMetrics(ctx context.Context, c *client.Client) (scrape, error) {
	m, err := c.MetricsJSON(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the daemon's metrics: %w", err)
	}
	return decodeMetrics(m)
}

// DaemonFigures are the daemon's own counters over the run: the difference
// between a scrape of /metrics before the load and one after it.
type DaemonFigures struct {
	EventsAppended uint64 `json:"events_appended"`
	FsyncBatches   uint64 `json:"fsync_batches"`
	// MeanBatch is events appended per fsync batch: how many requests one
	// group commit served on average.
	MeanBatch     float64 `json:"mean_batch"`
	FsyncSeconds  float64 `json:"fsync_seconds"`
	WriteErrors   uint64  `json:"write_errors"`
	SubscriberCut uint64  `json:"subscribers_cut"`
	FirstSeq      uint64  `json:"first_seq"` // mailroom_last_seq before the load
	LastSeq       uint64  `json:"last_seq"`  // and after it
}

func daemonDelta(before, after scrape) DaemonFigures {
	d := func(name string) uint64 { return uint64(max(after[name]-before[name], 0)) }
	f := DaemonFigures{
		EventsAppended: d(metricEventsAppended),
		FsyncBatches:   d(metricFsyncBatches),
		FsyncSeconds:   max(after[metricFsyncSeconds]-before[metricFsyncSeconds], 0),
		WriteErrors:    d(metricWriteErrors),
		SubscriberCut:  d(metricSubscribersCut),
		FirstSeq:       uint64(before[metricLastSeq]),
		LastSeq:        uint64(after[metricLastSeq]),
	}
	if f.FsyncBatches > 0 {
		f.MeanBatch = float64(f.EventsAppended) / float64(f.FsyncBatches)
	}
	return f
}
