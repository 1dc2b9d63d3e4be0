// Package served counts every request the daemon serves, whichever face
// serves it: the native routes, the event stream, the A2A edge's JSON-RPC,
// HTTP+JSON and card, the legacy /rpc dialect, Covenant's dialect and the
// MCP face. One middleware (Counter.Wrap) around the daemon's whole handler
// counts each request by binding, route template, method and outcome, and
// times it; the dispatcher that serves the request tells it what only the
// dispatcher knows (Route, Method, RPCError, Failed), through the
// ResponseWriter it was handed, so no context is built per request.
//
// Every label value is bounded: route templates, never paths (no task or
// agent ids); HTTP methods outside the standard ones are "other"; JSON-RPC
// method names only as the dispatcher recognised them ("unknown" else);
// outcomes are "ok", "error", a JSON-RPC error code or a mailbox error
// code. It is a leaf: it imports only internal/metrics.
package served

import (
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mailroom/mailroom/internal/metrics"
)

// The bindings: how a request reached the daemon.
const (
	Native     = "native"      // the native JSON routes, /healthz, /metrics
	Events     = "events"      // the native event stream, GET /a2a/events
	A2AJSONRPC = "a2a-jsonrpc" // JSON-RPC at an agent's base URL
	A2AREST    = "a2a-rest"    // HTTP+JSON under an agent's base URL
	A2ACard    = "a2a-card"    // an agent's card under .well-known/
	Legacy     = "legacy"      // the pre-0.2 tasks/send dialect at /agents/{agent}/rpc
	Covenant   = "covenant"    // Covenant's dialect under /compat/covenant/
	MCP        = "mcp"         // the MCP face at /mcp
)

// Bindings lists every binding, in the order the exposition writes their
// latency.
var Bindings = []string{Native, Events, A2AJSONRPC, A2AREST, A2ACard, Legacy, Covenant, MCP}

// Unknown is the method label of a JSON-RPC request whose method was not
// recognised (or not read), and Unmatched the route label of a request no
// route took.
const (
	Unknown   = "unknown"
	Unmatched = "unmatched"
)

// Slot is what the middleware and the dispatcher know of one request.
type Slot struct {
	Binding string
	// Route is the route template (/agents/{agent}/tasks/{id}), never
	// the path.
	Route string
	// Method is the HTTP method for REST bindings, the JSON-RPC method
	// for JSON-RPC ones ("" until the dispatcher names it).
	Method string
	// rpc is the JSON-RPC error code answered (0: none); code the
	// mailbox's error code of an answer whose status does not say it
	// (Covenant's 200 errors).
	rpc  int
	code string
}

// writer is the middleware's ResponseWriter: the status for the counter,
// the slot for the dispatcher.
type writer struct {
	http.ResponseWriter
	slot   Slot
	start  time.Duration // since epoch
	status int
	// first is when the status line was written (since epoch): a
	// stream's latency is the time it took to open.
	first time.Duration
}

// epoch is what the middleware's times are measured from: time.Since
// reads the monotonic clock only, where time.Now reads the wall clock
// too, and on some machines each read is a system call.
var epoch = time.Now()

func (w *writer) WriteHeader(status int) {
	if w.status == 0 {
		w.status, w.first = status, time.Since(epoch)
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *writer) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status, w.first = http.StatusOK, time.Since(epoch)
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (Flush,
// deadlines) through the writer.
func (w *writer) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *writer) servedSlot() *Slot { return &w.slot }

type slotter interface{ servedSlot() *Slot }

type unwrapper interface{ Unwrap() http.ResponseWriter }

// slotOf finds the slot of the request w answers, through the writers
// wrapped around the middleware's; nil when the request is not counted
// (a handler served without the middleware, in a test).
func slotOf(w http.ResponseWriter) *Slot {
	for w != nil {
		if s, ok := w.(slotter); ok {
			return s.servedSlot()
		}
		u, ok := w.(unwrapper)
		if !ok {
			return nil
		}
		w = u.Unwrap()
	}
	return nil
}

// Route sets the route template of the request w answers (a dispatcher
// that matched it: the native API's "/a2a/tasks/{id}").
func Route(w http.ResponseWriter, route string) {
	if s := slotOf(w); s != nil {
		s.Route = route
	}
}

// Method sets the method label of the request w answers: a JSON-RPC
// method the dispatcher recognised. Never pass a name it did not
// recognise: labels must stay a bounded set.
func Method(w http.ResponseWriter, method string) {
	if s := slotOf(w); s != nil {
		s.Method = method
	}
}

// RPCError records that the request w answers got JSON-RPC error code (its
// HTTP status may well be 200).
func RPCError(w http.ResponseWriter, code int) {
	if s := slotOf(w); s != nil {
		s.rpc = code
	}
}

// Failed records the mailbox error code (mailbox.CodeInvalid, ...) of an
// answer whose HTTP status does not say it failed (Covenant's dialect
// answers most refusals 200). Pass only the mailbox's own codes.
func Failed(w http.ResponseWriter, code string) {
	if s := slotOf(w); s != nil {
		s.code = code
	}
}

// Classify names a request's binding and its route template as far as
// the path says; the dispatcher may refine both (Route, Method).
type Classify func(r *http.Request) Slot

// Counter is the middleware and its figures (a metrics.Source).
type Counter struct {
	classify Classify
	native   func(r *http.Request) string
	mu       sync.RWMutex
	n        map[key]*atomic.Uint64
	latency  map[string]*histogram // by binding; fixed at New
}

type key struct {
	binding, route, method, code string
	status, rpc                  int
}

// LatencyBounds are the upper bounds (seconds) of the latency histogram.
var LatencyBounds = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// New returns a counter that classifies requests with classify. native,
// when set, names the route template of a native request that no native
// handler named (a follower forwards it to its leader unserved); without
// it, or when it returns "", the route is Unmatched.
func New(classify Classify, native func(r *http.Request) string) *Counter {
	c := &Counter{classify: classify, native: native, n: map[key]*atomic.Uint64{}, latency: map[string]*histogram{}}
	for _, b := range Bindings {
		c.latency[b] = newHistogram(LatencyBounds)
	}
	return c
}

var writers = sync.Pool{New: func() any { return new(writer) }}

// Wrap counts every request next serves.
func (c *Counter) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := writers.Get().(*writer)
		*sw = writer{ResponseWriter: w, start: time.Since(epoch), slot: c.classify(r)}
		defer func() {
			c.count(sw, r)
			*sw = writer{} // drop the request's writer before the next one takes it
			writers.Put(sw)
		}()
		next.ServeHTTP(sw, r)
		if sw.slot.Binding == Native && sw.slot.Route == "" && c.native != nil {
			sw.slot.Route = c.native(r)
		}
	})
}

// StatusClientClosed is the status counted for a request answered with
// nothing because its client went away first (nginx's 499).
const StatusClientClosed = 499

func (c *Counter) count(w *writer, r *http.Request) {
	s := &w.slot
	status, end := w.status, w.first
	if status == 0 {
		// Nothing written: net/http answers 200 with no body, unless
		// the client has gone.
		status, end = http.StatusOK, time.Since(epoch)
		if r.Context().Err() != nil {
			status = StatusClientClosed
		}
	}
	k := key{binding: s.Binding, route: s.Route, method: s.Method, code: s.code, status: status, rpc: s.rpc}
	c.mu.RLock()
	n := c.n[k]
	c.mu.RUnlock()
	if n == nil {
		c.mu.Lock()
		if n = c.n[k]; n == nil {
			n = new(atomic.Uint64)
			c.n[k] = n
		}
		c.mu.Unlock()
	}
	n.Add(1)
	if h := c.latency[s.Binding]; h != nil {
		h.observe(end - w.start)
	}
}

// WriteMetrics writes the request counts and latencies.
func (c *Counter) WriteMetrics(mw *metrics.Writer) {
	c.mu.RLock()
	samples := make([]metrics.Labeled, 0, len(c.n))
	for k, n := range c.n {
		samples = append(samples, metrics.Labeled{Labels: k.labels(), Value: float64(n.Load())})
	}
	c.mu.RUnlock()
	mw.LabeledCounter("mailroom_requests_total",
		"Every request the daemon served, by binding, route template, method (HTTP, or JSON-RPC as recognised), HTTP status and outcome (ok, error, a JSON-RPC error code, or the mailbox's error code).", samples)
	hists := make([]metrics.HistogramSample, 0, len(Bindings))
	for _, b := range Bindings {
		hists = append(hists, c.latency[b].sample([][2]string{{"binding", b}}))
	}
	mw.LabeledHistogram("mailroom_request_duration_seconds",
		"Time from a request's arrival to its answer's status line, by binding (a stream's: until it opened).", hists)
}

func (k key) labels() [][2]string {
	method := k.method
	if method == "" {
		method = Unknown
	}
	route := k.route
	if route == "" {
		route = Unmatched
	}
	outcome := "ok"
	switch {
	case k.rpc != 0:
		outcome = strconv.Itoa(k.rpc)
	case k.code != "":
		outcome = k.code
	case k.status >= 400:
		outcome = "error"
	}
	return [][2]string{{"binding", k.binding}, {"route", route}, {"method", method}, {"code", strconv.Itoa(k.status)}, {"outcome", outcome}}
}

// HTTPMethod is m if it is a standard HTTP method, else "other": the
// method label of a REST binding.
func HTTPMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions:
		return m
	}
	return "other"
}

// histogram counts durations into fixed buckets with atomics: the hot
// path takes no lock.
type histogram struct {
	bounds []float64
	ns     []int64 // bounds in nanoseconds
	counts []atomic.Uint64
	sum    atomic.Int64 // nanoseconds
	n      atomic.Uint64
}

func newHistogram(bounds []float64) *histogram {
	h := &histogram{bounds: bounds, ns: make([]int64, len(bounds)), counts: make([]atomic.Uint64, len(bounds))}
	for i, b := range bounds {
		h.ns[i] = int64(b * 1e9)
	}
	return h
}

func (h *histogram) observe(d time.Duration) {
	if d < 0 {
		d = 0
	}
	for i, b := range h.ns {
		if int64(d) <= b {
			h.counts[i].Add(1)
			break
		}
	}
	h.sum.Add(int64(d))
	h.n.Add(1)
}

func (h *histogram) sample(labels [][2]string) metrics.HistogramSample {
	s := metrics.HistogramSample{Labels: labels, Bounds: h.bounds, Counts: make([]uint64, len(h.bounds))}
	// An observation counts in its bucket before the total: one made
	// while this reads may show in a bucket and not yet in the total,
	// so the total (the +Inf bucket) is made at least the buckets' sum.
	var inBuckets uint64
	for i := range h.counts {
		s.Counts[i] = h.counts[i].Load()
		inBuckets += s.Counts[i]
	}
	s.Count = max(h.n.Load(), inBuckets)
	s.Sum = float64(h.sum.Load()) / 1e9
	return s
}
