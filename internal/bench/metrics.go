package bench

import (
	"context"
	"fmt"
	"strconv"
	"strings"

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

// scrape is one reading of the daemon's unlabelled samples.
type scrape map[string]float64

// parseMetrics reads the Prometheus text format (version 0.0.4): comment
// lines start with #, samples are "name value" or "name{labels} value"
// with an optional timestamp. Labelled samples are skipped: the figures the
// bench needs are all unlabelled.
func parseMetrics(text string) (scrape, error) {
	out := scrape{}
	for n, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, rest, ok := strings.Cut(line, " ")
		if !ok {
			return nil, fmt.Errorf("metrics line %d: %q has no value", n+1, line)
		}
		if strings.Contains(name, "{") {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return nil, fmt.Errorf("metrics line %d: %q has no value", n+1, line)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return nil, fmt.Errorf("metrics line %d: value %q of %s is not a number", n+1, fields[0], name)
		}
		out[name] = v
	}
	return out, nil
}

func scrapeMetrics(ctx context.Context, c *client.Client) (scrape, error) {
	text, err := c.Metrics(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the daemon's metrics: %w", err)
	}
	s, err := parseMetrics(text)
	if err != nil {
		return nil, err
	}
	for _, name := range []string{metricEventsAppended, metricFsyncBatches, metricLastSeq} {
		if _, ok := s[name]; !ok {
			return nil, fmt.Errorf("the daemon's metrics have no %s (is it a mailroom daemon?)", name)
		}
	}
	return s, nil
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
