// Package httpapi serves the mailbox over HTTP: the native JSON routes
// (docs/http-api.md), the SSE event stream, /healthz and
// /metrics. Handlers return
// errors; one adapter turns every error into a status and the one error body.
package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/internal/metrics"
	"github.com/mailroom/mailroom/internal/served"
	"github.com/mailroom/mailroom/mailbox"
)

// Defaults for Options.
const (
	DefaultHeartbeatInterval = 15 * time.Second
	DefaultWriteTimeout      = 10 * time.Second
	DefaultFlushDelay        = 5 * time.Millisecond
)

// Authorizer decides whether a request may use a route. It runs before the
// handler; the context it returns (typically carrying mailbox.WithPrincipal)
// is the one the handler and the service see. An error should be a
// *mailbox.Error with code unauthorized or forbidden.
type Authorizer interface {
	Authorize(r *http.Request, route string) (context.Context, error)
}

// Options tune the API. The zero value is usable.
type Options struct {
	Logger *slog.Logger
	// HeartbeatInterval is the longest an event stream stays silent: a
	// comment line is sent at least this often so dead connections surface.
	HeartbeatInterval time.Duration
	// WriteTimeout bounds each write to an event stream, so a subscriber that
	// stops reading is cut off instead of holding its goroutine forever.
	WriteTimeout time.Duration
	// FlushDelay is how long an event stream waits after an event for more
	// to send in the same write (default 5ms; negative: none), for every
	// streamsPerFlushDelay streams open, up to maxFlushDelays times it
	// (see api.flushDelay). Consoles draw at most ~30 times a second, so a
	// few milliseconds cost nothing to see.
	FlushDelay time.Duration
	// Metrics are the components whose figures /metrics reports beside the
	// HTTP layer's own (the daemon passes its engine and its log).
	Metrics []metrics.Source
	// Authorizer, when set, is asked about every routed request; nil allows
	// everything.
	Authorizer Authorizer
	// BatchMax bounds a batch request's items and a lease's or drain's
	// max (default mailbox.DefaultBatchMax).
	BatchMax int
	// Store, when set, says which shared store this instance is part of
	// and its role there, for /healthz.
	Store func() *StoreStatus
}

// Route patterns (Go 1.22 ServeMux syntax). They are also the route label of
// the request counter in /metrics and what an Authorizer is told.
const (
	RouteSendTask      = "POST /a2a/tasks"
	RouteSendBatch     = "POST /a2a/tasks/batch"
	RoutePostResults   = "POST /a2a/results/batch"
	RouteLeaseTaskGet  = "GET /a2a/tasks/next"
	RouteLeaseTask     = "POST /a2a/tasks/next"
	RouteRecentTasks   = "GET /a2a/tasks/recent"
	RoutePostResult    = "POST /a2a/results"
	RouteReply         = "POST /a2a/tasks/{id}/reply"
	RouteGetTask       = "GET /a2a/tasks/{id}"
	RouteCancelTask    = "POST /a2a/tasks/{id}/cancel"
	RouteDrainGet      = "GET /a2a/results/next"
	RouteDrain         = "POST /a2a/results/next"
	RouteRecentResults = "GET /a2a/results/recent"
	RouteQueue         = "GET /a2a/queue"
	RouteRepair        = "POST /a2a/repair"
	RouteCompact       = "POST /a2a/compact"
	RouteEvents        = "GET " + EventsPath
	RouteRetryStale    = "POST /a2a/retry-stale"
	RouteAudit         = "GET /a2a/audit"
	RouteWhoAmI        = "GET /a2a/whoami"
	RouteAgents        = "GET /a2a/agents"
	RouteRegister      = "PUT /a2a/agents/{agent...}"
	RouteDeregister    = "DELETE /a2a/agents/{agent...}"
	RoutePushList      = "GET /a2a/push"
	RoutePushRetry     = "POST /a2a/push/{id}/retry"
	RoutePushDrop      = "POST /a2a/push/{id}/drop"
	RouteHealth        = "GET /healthz"
	RouteMetrics       = "GET /metrics"

	// EventsPath is the event stream's path.
	EventsPath = "/a2a/events"

	// routeUnmatched labels requests no route took (404 and 405).
	routeUnmatched = "unmatched"
)

// bodiless lists the routes that read no body, with where their parameters
// belong instead.
var bodiless = map[string]string{
	RouteLeaseTaskGet:  "give the recipient in the query, as in ?recipient=coder@local&max=10&wait_ms=20000",
	RouteLeaseTask:     "give the recipient in the query, as in ?recipient=coder@local&max=10&wait_ms=20000",
	RouteDrainGet:      "give the sender in the query, as in ?sender=planner@local&max=10&wait_ms=20000",
	RouteDrain:         "give the sender in the query, as in ?sender=planner@local&max=10&wait_ms=20000",
	RouteRecentTasks:   "give limit in the query",
	RouteGetTask:       "send it empty",
	RouteRecentResults: "give limit in the query",
	RouteQueue:         "give its filters in the query",
	RouteCompact:       "send it empty",
	RouteEvents:        "send it empty",
	RouteAgents:        "give the skill filter in the query",
	RouteDeregister:    "send it empty",
	RouteAudit:         "give limit and task_id in the query",
	RoutePushList:      "give failed in the query",
	RouteWhoAmI:        "send it empty",
	RouteHealth:        "send it empty",
	RouteMetrics:       "send it empty",
}

// handlerFunc is a handler that reports failure by returning an error; the
// adapter writes it.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

type api struct {
	svc  Service
	opts Options
	log  *slog.Logger
	mux  *http.ServeMux
	reqs requestCounter
	// denied counts 401 and 403 answers by route.
	denied requestCounter
	// streams counts the event streams open, for flushDelay.
	streams atomic.Int64
}

// streamsPerFlushDelay and maxFlushDelays scale an event stream's wait
// for more events with how many streams there are: FlushDelay for up to
// 99, twice it from 100, up to four times it (20 ms by default) from 200.
// Every write is a system call in the daemon and another in the reader;
// at 500 subscribers, 5 ms between writes made the daemon spend a third
// of its CPU in them, and 20 ms delivered half as many events again
// (docs/benchmarks.md, fan-out).
const (
	streamsPerFlushDelay = 50
	maxFlushDelays       = 4
)

// flushDelay is how long a stream waits after an event for more, given
// the streams open now.
func (a *api) flushDelay() time.Duration {
	n := a.streams.Load() / streamsPerFlushDelay
	return a.opts.FlushDelay * time.Duration(min(max(n, 1), maxFlushDelays))
}

// Service is the part of the mailbox the native routes call (guarded):
// every role but the A2A edge's, and of that role the cancel.
type Service interface {
	mailbox.Mailbox
	mailbox.Operator
	mailbox.Registry
	mailbox.Push
	mailbox.Stream
	// Cancel is mailbox.A2A's: a sender cancels the tasks it sent.
	Cancel(ctx context.Context, taskID, reason string) (mailbox.TaskRecord, error)
}

// New returns the HTTP handler for svc.
func New(svc Service, opts Options) http.Handler {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.HeartbeatInterval <= 0 {
		opts.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = DefaultWriteTimeout
	}
	if opts.FlushDelay == 0 {
		opts.FlushDelay = DefaultFlushDelay
	}
	if opts.BatchMax <= 0 {
		opts.BatchMax = mailbox.DefaultBatchMax
	}
	a := &api{svc: svc, opts: opts, log: opts.Logger, mux: http.NewServeMux()}
	a.handle(RouteSendTask, a.sendTask)
	a.handle(RouteSendBatch, a.sendBatch)
	a.handle(RoutePostResults, a.postResults)
	a.handle(RouteLeaseTaskGet, a.leaseTask)
	a.handle(RouteLeaseTask, a.leaseTask)
	a.handle(RouteRecentTasks, a.recentTasks)
	a.handle(RoutePostResult, a.postResult)
	a.handle(RouteReply, a.reply)
	a.handle(RouteGetTask, a.getTask)
	a.handle(RouteCancelTask, a.cancelTask)
	a.handle(RouteDrainGet, a.drainResult)
	a.handle(RouteDrain, a.drainResult)
	a.handle(RouteRecentResults, a.recentResults)
	a.handle(RouteQueue, a.queue)
	a.handle(RouteRepair, a.repair)
	a.handle(RouteCompact, a.compact)
	a.handle(RouteEvents, a.events)
	a.handle(RouteRetryStale, a.retryStale)
	a.handle(RouteAudit, a.audit)
	a.handle(RouteWhoAmI, a.whoami)
	a.handle(RouteAgents, a.agents)
	a.handle(RouteRegister, a.register)
	a.handle(RouteDeregister, a.deregister)
	a.handle(RoutePushList, a.pushList)
	a.handle(RoutePushRetry, a.pushRetry)
	a.handle(RoutePushDrop, a.pushDrop)
	a.handle(RouteHealth, a.health)
	a.handle(RouteMetrics, a.metrics)
	return a
}

func (a *api) handle(route string, h handlerFunc) {
	a.mux.Handle(route, a.adapt(route, h))
}

// RouteOf is the route template (the path of a route pattern, such as
// "/a2a/tasks/{id}") that would serve r, or "" when none would: /metrics
// names with it the native requests a follower forwards to its leader,
// which no handler here serves.
func RouteOf(r *http.Request) string {
	_, pattern := routeMux().Handler(r)
	_, path, _ := strings.Cut(pattern, " ")
	return path
}

// routeMux holds the native routes' patterns (its handlers are never
// called).
var routeMux = sync.OnceValue(func() *http.ServeMux { return New(nil, Options{}).(*api).mux })

// ServeHTTP routes r. The mux's own 404 and 405 answers are plain text, so
// requests no route takes are answered here in the one error shape.
func (a *api) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h, pattern := a.mux.Handler(r)
	if pattern != "" {
		a.mux.ServeHTTP(w, r)
		return
	}
	// Ask the mux what it would have said (404, or 405 with Allow) without
	// letting it write.
	probe := &headerProbe{header: http.Header{}}
	h.ServeHTTP(probe, r)
	var err *mailbox.Error
	if probe.status == http.StatusMethodNotAllowed {
		allow := probe.header.Get("Allow")
		w.Header().Set("Allow", allow)
		err = mailbox.Errorf(mailbox.CodeMethodNotAllowed, "%s %s: method not allowed; this path accepts %s", r.Method, r.URL.Path, allow)
	} else {
		err = mailbox.Errorf(mailbox.CodeNotFound, "%s %s: no such route; see the API reference in docs/http-api.md", r.Method, r.URL.Path)
	}
	sw := &statusWriter{ResponseWriter: w}
	a.fail(sw, r, routeUnmatched, err)
	a.reqs.add(routeUnmatched, sw.code())
}

// adapt turns a handlerFunc into an http.Handler: authorization, error
// mapping and the request counter.
func (a *api) adapt(route string, h handlerFunc) http.Handler {
	_, template, _ := strings.Cut(route, " ")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Route(w, template) // /metrics: the route, never the path
		sw := statusWriters.Get().(*statusWriter)
		*sw = statusWriter{ResponseWriter: w}
		defer func() {
			a.reqs.add(route, sw.code())
			*sw = statusWriter{} // drop the request's writer before the next one takes it
			statusWriters.Put(sw)
		}()
		if az := a.opts.Authorizer; az != nil {
			ctx, err := az.Authorize(r, route)
			if ctx != nil {
				r = r.WithContext(ctx)
			}
			if err != nil {
				a.fail(sw, r, route, err)
				return
			}
		}
		if where, ok := bodiless[route]; ok {
			if err := noBody(r, where); err != nil {
				a.fail(sw, r, route, err)
				return
			}
		}
		if err := h(sw, r); err != nil {
			if clientGone(r, err) {
				// The client hung up before its answer (a long poll it
				// gave up on): nobody is left to answer, and nothing
				// failed here. Counted apart, as nginx's 499.
				a.log.Debug("client went away before its answer", "route", route, "method", r.Method, "path", r.URL.Path)
				sw.status, sw.wrote = statusClientClosed, true
				return
			}
			a.fail(sw, r, route, err)
		}
	})
}

// statusClientClosed is what the request counter records for a request
// whose client hung up before it was answered (nginx's "client closed
// request"); nothing is sent.
const statusClientClosed = 499

// clientGone reports whether err is the request's own context ending: its
// client went away.
func clientGone(r *http.Request, err error) bool {
	return r.Context().Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded))
}

// fail answers err in the one error shape. Anything that is not a
// *mailbox.Error is a bug or an outage the caller cannot act on: it is
// answered as a generic internal error and logged in full.
func (a *api) fail(w *statusWriter, r *http.Request, route string, err error) {
	body := mailbox.ErrorBody(err)
	status := mailbox.HTTPStatus(body.Code)
	attrs := []any{"route", route, "method", r.Method, "path", r.URL.Path, "status", status, "code", body.Code, "err", err}
	if deniedError(err) {
		// Who was refused, and where; never the token itself.
		a.denied.add(route, status)
		a.log.Info("request denied", "route", route, "principal", mailbox.PrincipalFrom(r.Context()), "status", status, "code", body.Code, "remote", r.RemoteAddr)
	} else if status >= 500 {
		a.log.Error("request failed", attrs...)
	} else {
		a.log.Info("request refused", attrs...)
	}
	if w.wrote {
		// A stream already started; the status is on the wire. Nothing
		// more can be said to the client.
		return
	}
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", auth.ChallengeFor(r.Header.Get("Authorization"), err))
	}
	if body.Details != nil && body.Details.Retry != "" {
		// Nothing changed: the client may send it again as it is.
		w.Header().Set(mailbox.HeaderRetry, body.Details.Retry)
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, status, body)
}

// writeJSON writes v as the response body, its secrets redacted
// (mailbox.Redact: a push config's or a webhook's token and credentials
// never leave in an answer). Our wire types always encode; a write error
// means the client has gone, and there is nobody left to tell.
func writeJSON(w http.ResponseWriter, status int, v any) {
	// Shared header values: net/http only reads them, and Set would make
	// a new slice for each on every answer.
	h := w.Header()
	h["Content-Type"] = jsonContentType
	h["Cache-Control"] = noStore
	h["Vary"] = varyAuthorization
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(mailbox.Redact(v))
}

var (
	jsonContentType = []string{"application/json"}
	// Answers depend on the caller's token (what it may see): no cache
	// keeps them, and one that would must key them by the token.
	noStore           = []string{"no-store"}
	varyAuthorization = []string{"Authorization"}
)

// statusWriters are reused from request to request: a handler never keeps
// its writer past its return.
var statusWriters = sync.Pool{New: func() any { return new(statusWriter) }}

// statusWriter remembers the status written, for the request counter and
// for fail. Unwrap lets http.ResponseController reach the connection (Flush,
// SetWriteDeadline) through it.
type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *statusWriter) WriteHeader(status int) {
	if !w.wrote {
		w.status, w.wrote = status, true
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.status, w.wrote = http.StatusOK, true
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) code() int {
	if !w.wrote {
		return http.StatusOK
	}
	return w.status
}

// headerProbe records what the mux's fallback handler would answer.
type headerProbe struct {
	header http.Header
	status int
}

func (p *headerProbe) Header() http.Header { return p.header }
func (p *headerProbe) WriteHeader(s int) {
	if p.status == 0 {
		p.status = s
	}
}
func (p *headerProbe) Write(b []byte) (int, error) { return len(b), nil }
