// Package a2a serves every registered agent as a standard A2A server backed
// by the mailbox: its Agent Card, JSON-RPC in both protocol generations
// (v0.3 and v1.0, chosen by the A2A-Version header) and the v1.0 HTTP+JSON
// binding, all under the agent's base URL /agents/{agent}/. A message sent
// there becomes a durable mailbox task for the agent; the worker leases it
// with the native API, and the A2A client follows it through the task's
// states. Every call goes through the guarded mailbox.Service, so the
// access policy is the one the native routes obey.
package a2a

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/mailroom/mailroom/mailbox"

	"github.com/mailroom/mailroom/daemon/a2a/wire"
)

// Prefix is where every agent's base URL starts.
const Prefix = "/agents/"

// Defaults for Options.
const (
	DefaultBlockingTimeout   = 30 * time.Second
	DefaultHeartbeatInterval = 15 * time.Second
	DefaultWriteTimeout      = 10 * time.Second
)

// AnonymousSender sends the tasks of callers that name nobody (no tokens,
// and no valid mailroom.sender in the message's metadata).
const AnonymousSender = "anonymous@a2a"

// Options tune the edge. The zero value is usable.
type Options struct {
	Logger *slog.Logger
	// Authenticate, when set, authenticates every request but the card's
	// and returns the context the service sees (carrying the caller's
	// identity); nil serves without tokens.
	Authenticate func(r *http.Request) (context.Context, error)
	// BlockingTimeout bounds how long a blocking send waits for its task
	// to finish before answering with the task as it stands.
	BlockingTimeout time.Duration
	// HeartbeatInterval is the longest a stream stays silent.
	HeartbeatInterval time.Duration
	// WriteTimeout bounds each write to a stream.
	WriteTimeout time.Duration
	// CardSecurityRequirements, with Authenticate set, has the card list
	// its securityRequirements in the A2A 1.0 JSON form beside
	// securitySchemes and the v0.3 security. Off by default: a2a-go
	// v2.3.1 cannot parse that form (a2aproject/a2a-go#430) and so cannot
	// resolve the card at all.
	CardSecurityRequirements bool
	// Card says what the cards declare of authentication, and signs them.
	Card CardOptions
	// Notes are the dispatcher's notes on deliveries left to the
	// operator, shown as the status message of the tasks they are about;
	// nil shows none.
	Notes *wire.DeliveryNotes
	// Now is the clock the card's Last-Modified is read against (the
	// mailbox's, which stamps registrations); nil is time.Now.
	Now func() time.Time
	// HTTPS has every URL the edge writes say https, though requests
	// arrive in plain HTTP: a proxy in front ends TLS
	// (tls_terminated_by_proxy). None of the proxy's headers is trusted
	// for it.
	HTTPS bool
}

// Service is the part of the mailbox the edge calls (guarded): it sends
// tasks, answers their questions, reads agents' cards, and reads, lists
// and cancels the tasks its callers sent.
type Service interface {
	Send(ctx context.Context, t mailbox.Task) (mailbox.TaskQueuedResponse, error)
	Reply(ctx context.Context, r mailbox.Reply) (mailbox.ReplyOutcome, error)
	Registered(ctx context.Context, agent string) (mailbox.RegisteredAgent, error)
	mailbox.A2A
}

// Feed is what the edge follows tasks with, unguarded: the engine itself.
type Feed interface {
	Status() mailbox.Status
	Task(ctx context.Context, id string) (mailbox.TaskRecord, error)
	// SubscribeTask subscribes as mailbox.Service.Subscribe does, with a
	// buffer of its own, to the events of one task (and snapshots); after
	// nil is from now, with neither snapshot nor replay.
	SubscribeTask(ctx context.Context, after *uint64, buffer int, id string) (mailbox.Subscription, error)
}

// followBuffer is how far one followed task's subscription may fall
// behind before it is cut off and resumes from its position. It carries
// only that task's events (Feed.SubscribeTask), a handful a turn, so a
// small buffer is plenty, and a blocking send allocates little for it.
var followBuffer = 16

// Edge is the A2A server of every registered agent.
type Edge struct {
	svc  Service // guarded: every caller's request goes here
	feed Feed    // unguarded: only to follow a task the caller may read
	opts Options
	log  *slog.Logger
	// started is when the edge was made: a card served since may differ
	// from one served before (tokens, CardSecurityRequirements), so its
	// Last-Modified is never earlier.
	started time.Time
}

// New returns the edge over svc (the guarded service) and feed (the
// engine without the guard, used only to follow the events of a task the
// guard has already let the caller read).
func New(svc Service, feed Feed, opts Options) *Edge {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.BlockingTimeout <= 0 {
		opts.BlockingTimeout = DefaultBlockingTimeout
	}
	if opts.HeartbeatInterval <= 0 {
		opts.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = DefaultWriteTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Edge{svc: svc, feed: feed, opts: opts, log: opts.Logger, started: opts.Now()}
}

// request is one call to an agent's base URL.
type request struct {
	agent string
	// rest is the path after the base URL, without its leading slash
	// ("" for the base itself), still escaped.
	rest    string
	baseURL string // the agent's base URL as the client reached it, with a trailing slash
}

// ServeHTTP routes a request under /agents/.
func (e *Edge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req, err := parsePath(r, e.opts.HTTPS)
	if err != nil {
		writeRESTError(w, r, err)
		return
	}
	ctx := r.Context()
	// The card is public: a client reads it before it has a token.
	if strings.HasPrefix(req.rest, ".well-known/") {
		e.card(w, r, req)
		return
	}
	if req.rest == legacyPath {
		e.legacy(w, r, req) // the pre-0.2 tasks/send dialect: legacy.go
		return
	}
	if _, err := e.svc.Registered(ctx, req.agent); err != nil {
		e.refuse(w, r, req, err)
		return
	}
	if e.opts.Authenticate != nil {
		actx, err := e.opts.Authenticate(r)
		if err != nil {
			e.refuse(w, r, req, err)
			return
		}
		r = r.WithContext(actx)
	}
	if req.rest == "" {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			writeRESTError(w, r, mailbox.Errorf(mailbox.CodeMethodNotAllowed,
				"%s %s: the agent's base URL takes JSON-RPC requests by POST; its card is at %s.well-known/agent-card.json", r.Method, r.URL.Path, req.baseURL))
			return
		}
		e.jsonrpc(w, r, req)
		return
	}
	e.rest(w, r, req)
}

// refuse answers err in the shape the request's binding expects.
func (e *Edge) refuse(w http.ResponseWriter, r *http.Request, req request, err error) {
	if req.rest == "" && r.Method == http.MethodPost {
		v, verr := version(r)
		if verr != nil {
			v = wire.V03
		}
		writeRPCError(w, r, v, peekID(w, r), rpcErrorFrom(err, v))
		return
	}
	writeRESTError(w, r, err)
}

// parsePath splits /agents/{agent}/{rest}. The agent id is one path
// segment: an id holding a slash is given escaped (%2F). The base URL is
// https when the request came over TLS or https says a proxy ended it.
func parsePath(r *http.Request, https bool) (request, error) {
	p, ok := strings.CutPrefix(r.URL.EscapedPath(), Prefix)
	if !ok {
		return request{}, mailbox.Errorf(mailbox.CodeNotFound, "%s: no such route", r.URL.Path)
	}
	seg, rest, _ := strings.Cut(p, "/")
	agent, err := url.PathUnescape(seg)
	if err != nil || agent == "" {
		return request{}, mailbox.Invalidf("agent", "got %q in the path, expected /agents/{agent}/ with an agent id such as coder@local", seg)
	}
	if err := mailbox.ValidateAgentID("agent", agent); err != nil {
		return request{}, err
	}
	scheme := "http"
	if r.TLS != nil || https {
		scheme = "https"
	}
	base := scheme + "://" + r.Host + Prefix + seg + "/"
	return request{agent: agent, rest: rest, baseURL: base}, nil
}

// caller is the sender of the tasks a request sends: the token's principal,
// or without tokens the message's mailroom.sender when it is an agent id,
// else AnonymousSender.
func (e *Edge) caller(ctx context.Context, meta map[string]json.RawMessage) string {
	if e.opts.Authenticate != nil {
		if p := mailbox.PrincipalFrom(ctx); p != "" {
			return p
		}
	}
	if s, ok := metaString(meta, "sender"); ok && mailbox.ValidateAgentID("sender", s) == nil {
		return s
	}
	return AnonymousSender
}

// actor is whom the audit trail records for a cancel or a delivery.
func actor(ctx context.Context) context.Context {
	if mailbox.PrincipalFrom(ctx) == "" {
		return mailbox.WithPrincipal(ctx, AnonymousSender)
	}
	return ctx
}
