// Package covenant serves Covenant's own dialect of the mailbox routes
// (open-covenant/covenant: its daemon's HTTP gateway and the covenant-ipc
// and covenant-a2a types) under /compat/covenant/, so that a Covenant
// deployment can point its daemon URL at Mailroom: AgentIds as
// {display, pubkey} objects, answer kinds as serde spells them
// (a2_a_task_queued), refusals as {"kind":"error","message":...}.
//
// It translates to and from the guarded mailbox.Service, as the native
// routes do: the same policy, the same strict decoding, the same log. The
// public keys a task was sent with are kept on it (mailbox.CovenantOrigin)
// and given back whenever the dialect answers with the task.
package covenant

import (
	"context"
	"log/slog"
	"net/http"
	"sort"
	"strings"

	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/internal/served"
	"github.com/mailroom/mailroom/mailbox"
)

// Prefix is the dialect's base path: a Covenant daemon URL of
// http://host:port/compat/covenant reaches it.
const Prefix = "/compat/covenant/"

// HeaderErrorCode carries the mailbox's error code beside Covenant's
// error body, which has room for a message only.
const HeaderErrorCode = "Mailroom-Error-Code"

// Options tune the dialect. The zero value is usable.
type Options struct {
	Logger *slog.Logger
	// Authenticate, when set, authenticates every request but /health and
	// /version and returns the context the service sees (carrying the caller's
	// identity); nil serves without tokens.
	Authenticate func(r *http.Request) (context.Context, error)
}

// Edge is the dialect's http.Handler.
type Edge struct {
	svc    Service
	opts   Options
	log    *slog.Logger
	routes map[string]map[string]route // path under Prefix -> method -> route
}

type route struct {
	h func(w http.ResponseWriter, r *http.Request) error
	// noBody, when set, says where the route's parameters go: it takes no
	// body.
	noBody string
	// open routes need no token (Covenant's /health and /version).
	open bool
	// template is the route's label in /metrics: Prefix and its path.
	template string
}

// New returns the dialect serving svc, which should be the guarded

// Service is the part of the mailbox Covenant's routes call (guarded): an
// agent's mailbox calls and the operator's reads and repair.
type Service interface {
	mailbox.Mailbox
	mailbox.Operator
}

// service.
func New(svc Service, opts Options) *Edge {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	e := &Edge{svc: svc, opts: opts, log: opts.Logger, routes: map[string]map[string]route{}}
	// Covenant's gateway routes (covenantd's http.rs), as its client calls
	// them.
	e.add("GET", "health", route{h: e.health, noBody: "send it empty", open: true})
	e.add("GET", "version", route{h: e.version, noBody: "send it empty", open: true})
	e.add("POST", "a2a/tasks", route{h: e.sendTask})
	e.add("GET", "a2a/tasks/next", route{h: e.leaseTask, noBody: "the task is leased for the agent your token names"})
	e.add("GET", "a2a/tasks/recent", route{h: e.recentTasks, noBody: "give limit in the query"})
	e.add("POST", "a2a/results", route{h: e.postResult})
	e.add("GET", "a2a/results/next", route{h: e.drainResult, noBody: "the result is drained for the agent your token names"})
	e.add("GET", "a2a/results/recent", route{h: e.recentResults, noBody: "give limit in the query"})
	e.add("GET", "a2a/queue", route{h: e.queue, noBody: "give its filters in the query"})
	e.add("POST", "a2a/repair", route{h: e.repair})
	return e
}

func (e *Edge) add(method, path string, rt route) {
	if e.routes[path] == nil {
		e.routes[path] = map[string]route{}
	}
	rt.template = Prefix + path
	e.routes[path][method] = rt
}

// ServeHTTP routes a request under Prefix.
func (e *Edge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, Prefix)
	methods, ok := e.routes[path]
	if !ok {
		// Not a task that was not found: this one is a 404.
		e.answer(w, r, mailbox.Errorf(mailbox.CodeNotFound, "%s %s: no such route in Covenant's dialect; it serves %s", r.Method, r.URL.Path, e.served()), http.StatusNotFound)
		return
	}
	rt, ok := methods[r.Method]
	if !ok {
		allow := make([]string, 0, len(methods))
		for m := range methods {
			allow = append(allow, m)
		}
		sort.Strings(allow)
		w.Header().Set("Allow", strings.Join(allow, ", "))
		e.fail(w, r, mailbox.Errorf(mailbox.CodeMethodNotAllowed, "%s %s: method not allowed; this path accepts %s", r.Method, r.URL.Path, strings.Join(allow, ", ")))
		return
	}
	served.Route(w, rt.template)
	if e.opts.Authenticate != nil && !rt.open {
		ctx, err := e.opts.Authenticate(r)
		if err != nil {
			e.fail(w, r, err)
			return
		}
		r = r.WithContext(ctx)
	}
	if rt.noBody != "" {
		if err := noBody(r, rt.noBody); err != nil {
			e.fail(w, r, err)
			return
		}
	}
	if err := rt.h(w, r); err != nil {
		e.fail(w, r, err)
	}
}

// served lists the routes, for a request that found none.
func (e *Edge) served() string {
	var all []string
	for p, ms := range e.routes {
		for m := range ms {
			all = append(all, m+" "+Prefix+p)
		}
	}
	sort.Strings(all)
	return strings.Join(all, ", ")
}

// status is the HTTP status of a refusal in Covenant's dialect. Covenant's
// daemon answers whatever its mailbox or its capability checks refuse as
// 200 with {"kind":"error"} (its Response::Error), and its client reads
// the body whatever the status; only a failed bearer check (401), a body
// over the limit (413) and a fault on the daemon's side (503, 500) have
// statuses of their own. The mailbox's code is in HeaderErrorCode.
func status(code string) int {
	switch code {
	case mailbox.CodeUnauthorized:
		return http.StatusUnauthorized
	case mailbox.CodeTooLarge:
		return http.StatusRequestEntityTooLarge
	case mailbox.CodeUnavailable:
		return http.StatusServiceUnavailable
	case mailbox.CodeInternal:
		return http.StatusInternalServerError
	case mailbox.CodeMethodNotAllowed:
		return http.StatusMethodNotAllowed
	}
	return http.StatusOK
}

// fail answers err in Covenant's error shape. Anything that is not a
// *mailbox.Error is answered as a generic internal error and logged in
// full, as the native routes do.
func (e *Edge) fail(w http.ResponseWriter, r *http.Request, err error) {
	e.answer(w, r, err, status(mailbox.ErrorCode(err)))
}

// answer answers err with status st.
func (e *Edge) answer(w http.ResponseWriter, r *http.Request, err error, st int) {
	body := mailbox.ErrorBody(err)
	attrs := []any{"dialect", "covenant", "method", r.Method, "path", r.URL.Path, "status", st, "code", body.Code, "err", err}
	switch {
	case body.Code == mailbox.CodeUnauthorized || body.Code == mailbox.CodeForbidden:
		e.log.Info("request denied", "dialect", "covenant", "path", r.URL.Path, "principal", mailbox.PrincipalFrom(r.Context()), "code", body.Code, "remote", r.RemoteAddr)
	case st >= 500:
		e.log.Error("request failed", attrs...)
	default:
		e.log.Info("request refused", attrs...)
	}
	w.Header().Set(HeaderErrorCode, body.Code)
	if st == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", auth.ChallengeFor(r.Header.Get("Authorization"), err))
	}
	served.Failed(w, body.Code) // /metrics: most refusals here are 200s
	writeJSON(w, st, errorBody{Kind: KindError, Message: body.Message})
}
