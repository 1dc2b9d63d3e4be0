package httpapi

import (
	"net/http"
	"strconv"
	"sync"

	"github.com/mailroom/mailroom/internal/metrics"
	"github.com/mailroom/mailroom/mailbox"
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

// metrics answers with every component's figures (Options.Metrics) and
// this layer's own request counts: Prometheus text (format 0.0.4) by
// default, JSON with ?format=json (the bench reads that).
func (a *api) metrics(w http.ResponseWriter, r *http.Request) error {
	p, err := parseParams(r, "format")
	if err != nil {
		return err
	}
	format, _ := p.get("format")
	if format != "" && format != "json" && format != "text" {
		return mailbox.Invalidf("format", "got %q, expected \"text\" (the default) or \"json\"", format)
	}
	var mw metrics.Writer
	for _, src := range a.opts.Metrics {
		src.WriteMetrics(&mw)
	}
	mw.LabeledCounter("mailroom_http_requests_total", "HTTP requests by route pattern and status.", a.reqs.samples())
	mw.LabeledCounter("mailroom_auth_denied_total", "Requests refused with 401 or 403, by route pattern and status.", a.denied.samples())
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Vary", "Authorization")
	if format == "json" {
		b, err := mw.JSON()
		if err != nil {
			return err
		}
		w.Header().Set("Content-Type", "application/json")
		_, err = w.Write(b)
		return err
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	return mw.WriteText(w)
}

// samples lists the counts as labeled samples.
func (c *requestCounter) samples() []metrics.Labeled {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]metrics.Labeled, 0, len(c.n))
	for k, v := range c.n {
		out = append(out, metrics.Labeled{Labels: [][2]string{{"route", k.route}, {"code", strconv.Itoa(k.status)}}, Value: float64(v)})
	}
	return out
}
