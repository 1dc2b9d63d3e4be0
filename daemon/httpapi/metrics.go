package httpapi

import (
	"bytes"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// requestCounter counts requests by route pattern and status. Routes are a
// fixed set and statuses few, so one small map under a mutex is enough.
type requestCounter struct {
	mu sync.Mutex
	n  map[routeStatus]uint64
}

type routeStatus struct {
	route  string
	status int
}

func (c *requestCounter) add(route string, status int) {
	c.mu.Lock()
	if c.n == nil {
		c.n = make(map[routeStatus]uint64)
	}
	c.n[routeStatus{route, status}]++
	c.mu.Unlock()
}

func (c *requestCounter) snapshot() map[routeStatus]uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[routeStatus]uint64, len(c.n))
	for k, v := range c.n {
		out[k] = v
	}
	return out
}

// metrics answers in the Prometheus text exposition format (version 0.0.4),
// written by hand: the figures are few and a client library would be the
// daemon's largest dependency.
func (a *api) metrics(w http.ResponseWriter, r *http.Request) error {
	st := a.svc.Stats()
	var b bytes.Buffer
	gauge := func(name, help string, v float64) { sample(&b, name, help, "gauge", v) }
	counter := func(name, help string, v float64) { sample(&b, name, help, "counter", v) }

	gauge("mailroom_tasks_queued", "Tasks waiting to be leased.", float64(st.Queued))
	gauge("mailroom_tasks_in_flight", "Tasks leased and not yet resolved.", float64(st.InFlight))
	gauge("mailroom_results_pending", "Results waiting for their sender to drain them.", float64(st.ResultsPending))
	gauge("mailroom_tasks_known", "Tasks the state remembers, finished ones included.", float64(st.Known))
	gauge("mailroom_last_seq", "Sequence number of the last durable event.", float64(st.LastSeq))
	counter("mailroom_events_appended_total", "Events made durable since start.", float64(st.EventsAppended))
	counter("mailroom_fsync_batches_total", "Group commits (one sync each) since start.", float64(st.FsyncBatches))

	const hname = "mailroom_fsync_duration_seconds"
	fmt.Fprintf(&b, "# HELP %s Time per log sync (one per group commit).\n# TYPE %s histogram\n", hname, hname)
	var cum uint64
	for i, le := range st.FsyncBucketSecs {
		if i < len(st.FsyncBucketCount) {
			cum += st.FsyncBucketCount[i]
		}
		fmt.Fprintf(&b, "%s_bucket{le=\"%s\"} %d\n", hname, formatFloat(le), cum)
	}
	// The last count slot holds syncs slower than every bound.
	for i := len(st.FsyncBucketSecs); i < len(st.FsyncBucketCount); i++ {
		cum += st.FsyncBucketCount[i]
	}
	fmt.Fprintf(&b, "%s_bucket{le=\"+Inf\"} %d\n", hname, cum)
	fmt.Fprintf(&b, "%s_sum %s\n%s_count %d\n", hname, formatFloat(st.FsyncSeconds), hname, cum)

	counter("mailroom_log_write_errors_total", "Failed log writes since start.", float64(st.WriteErrors))
	counter("mailroom_compactions_total", "Log compactions since start.", float64(st.Compactions))
	gauge("mailroom_log_bytes", "Size of the log after the latest snapshot.", float64(st.LogBytes))
	gauge("mailroom_snapshot_bytes", "Size of the latest snapshot.", float64(st.SnapshotBytes))
	gauge("mailroom_sse_subscribers", "Event-stream subscribers connected now.", float64(st.Subscribers))
	counter("mailroom_sse_subscribers_cut_total", "Subscribers disconnected for falling behind.", float64(st.SubscribersCut))

	writeRequestCounts(&b, "mailroom_http_requests_total", "HTTP requests by route pattern and status.", a.reqs.snapshot())
	writeRequestCounts(&b, "mailroom_auth_denied_total", "Requests refused with 401 or 403, by route pattern and status.", a.denied.snapshot())

	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, err := w.Write(b.Bytes())
	return err
}

func writeRequestCounts(b *bytes.Buffer, name, help string, counts map[routeStatus]uint64) {
	keys := make([]routeStatus, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y routeStatus) int {
		if c := strings.Compare(x.route, y.route); c != 0 {
			return c
		}
		return x.status - y.status
	})
	fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s counter\n", name, help, name)
	for _, k := range keys {
		fmt.Fprintf(b, "%s{route=\"%s\",code=\"%d\"} %d\n", name, escapeLabel(k.route), k.status, counts[k])
	}
}

func sample(b *bytes.Buffer, name, help, typ string, v float64) {
	fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s %s\n%s %s\n", name, help, name, typ, name, formatFloat(v))
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func escapeLabel(s string) string { return labelEscaper.Replace(s) }
