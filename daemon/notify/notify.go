// Package notify is the daemon's notifier: while the instance leads (a
// term of the engine's WhileLeading), it delivers the outbox of push
// notifications (mailbox/push.go) to their webhooks. Each notification is POSTed until its receiver answers 2xx
// (push_delivered), retried with exponential backoff and jitter up to
// MaxAttempts, then dead-lettered (push_dead_lettered). One notification
// per task and config (a line) is in flight at a time, the oldest first,
// so a receiver sees a task's changes in order; an attempt is a goroutine
// of its own while it lasts, and a line waiting out its backoff an entry
// in a heap of retries by when they are due, so a receiver down costs
// memory by the line, not a goroutine. Attempts, their errors and
// the next try are memory only (Status), shown to the operator; a restart
// or a new leader starts the count again and delivers what the outbox
// holds: at least once, every duplicate with the same id. Once a second
// the notifier holds the outbox to its bounds (Options.Bounds): what they
// do not allow, the oldest first, is dropped with push_dropped events by
// mailbox.OutboxPrincipal, audited and replayed like an operator's drop.
package notify

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/mailroom/mailroom/internal/metrics"
	"github.com/mailroom/mailroom/internal/retry"
	"github.com/mailroom/mailroom/internal/webhook"
	"github.com/mailroom/mailroom/mailbox"
)

// Headers of a notification's POST.
const (
	// HeaderToken carries the config's token, as the A2A SDKs' senders do.
	HeaderToken = "X-A2A-Notification-Token"
	// HeaderID is the notification's stable id: a receiver drops one it
	// has seen.
	HeaderID = "Mailroom-Notification-Id"
)

// Options tune the notifier; the zero value of each field is its default.
type Options struct {
	Logger *slog.Logger
	// Policy is held to before every POST (the hosts allowed can change
	// with the configuration, a name can resolve elsewhere); nil allows
	// any URL the log holds.
	Policy *webhook.Policy
	// HTTPClient posts the notifications; nil is a client of the
	// notifier's own that follows no redirect and speaks TLS as TLS and
	// Receivers say.
	HTTPClient *http.Client
	// TLS is what the notifier's own client verifies receivers with over
	// https, and the client certificate it shows one that asks (config's
	// push_ca_file, push_cert_file, push_key_file); nil is the system's
	// CAs and no certificate. It serves every receiver not in
	// Receivers. Unused with HTTPClient.
	TLS *tls.Config
	// Receivers are the receiver hosts posted to with a TLS of their own
	// instead of TLS (config's push_receivers), each over a transport of
	// its own (receivers.go). Unused with HTTPClient.
	Receivers []Receiver
	// Timeout bounds one POST (10s).
	Timeout time.Duration
	// RetryMin and RetryMax bound the backoff between attempts (1s, 5m).
	RetryMin, RetryMax time.Duration
	// MaxAttempts is how many attempts a notification gets before it is
	// dead-lettered (8).
	MaxAttempts int
	// Concurrency bounds the POSTs in flight at once (16).
	Concurrency int
	// LookEvery is how often the notifier looks at the outbox when
	// nothing woke it (1s); it holds the outbox to Bounds as often. It
	// never asks whether the instance leads: the engine tells it.
	LookEvery time.Duration
	// Bounds bound the outbox: past them the oldest notifications are
	// dropped (push_dropped, by "mailroom", the reason naming the bound);
	// nil is mailbox.DefaultOutboxBounds, a zero field no bound.
	Bounds *mailbox.OutboxBounds
}

// Defaults of Options.
const (
	DefaultMaxAttempts = 8
	DefaultRetryMax    = 5 * time.Minute
)

func (o Options) withDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.Timeout, 10*time.Second)
	def(&o.RetryMin, time.Second)
	def(&o.RetryMax, DefaultRetryMax)
	def(&o.LookEvery, time.Second)
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 16
	}
	if o.Bounds == nil {
		b := mailbox.DefaultOutboxBounds()
		o.Bounds = &b
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Notifier delivers the outbox while the instance leads. Run it once.
type Notifier struct {
	mailbox Mailbox
	outbox  Outbox
	o       Options
	log     *slog.Logger
	backoff retry.Backoff
	// routes are the clients receivers are posted with.
	routes routes

	wake chan struct{}
	sem  chan struct{}

	mu sync.Mutex
	// leading is false while another instance delivers.
	leading bool
	// term counts the terms of leading: a retry of an earlier term is
	// not made (the new term starts the count again).
	term uint64
	// active holds the lines (task, config) an attempt is being made on
	// (a goroutine each, at most maxActive); waiting, the lines whose
	// last attempt failed, until their next one is due (due, a heap by
	// time): a line waiting out its backoff costs a small entry, not a
	// goroutine.
	active  map[key]bool
	waiting map[key]*pendingRetry
	due     retryHeap
	// attempts holds what is known of each notification being delivered.
	attempts map[string]mailbox.PushAttempt

	stats *stats
}

type key struct{ task, config string }

// New makes a notifier of the outbox: m is the mailbox it reads, box the
// outbox it delivers (in the daemon, the engine and engine.Push).
func New(m Mailbox, box Outbox, o Options) *Notifier {
	o = o.withDefaults()
	n := &Notifier{mailbox: m, outbox: box, o: o, log: o.Logger, backoff: retry.Backoff{Min: o.RetryMin, Max: o.RetryMax}, routes: newRoutes(o),
		wake: make(chan struct{}, 1), sem: make(chan struct{}, o.Concurrency),
		active: map[key]bool{}, waiting: map[key]*pendingRetry{}, attempts: map[string]mailbox.PushAttempt{}, stats: newStats()}
	box.SetStatus(func() mailbox.PushStatus {
		return mailbox.PushStatus{Delivering: n.Leading(), Attempts: n.Status(), Bounds: o.Bounds.View(), Dropped: n.stats.droppedCount()}
	})
	return n
}

// Leading reports whether this instance's notifier delivers (false: it
// stands by while another instance leads).
func (n *Notifier) Leading() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.leading
}

// Status returns what the notifier knows of the notifications it is
// delivering, by id: attempts so far, the last error, the next try.
func (n *Notifier) Status() map[string]mailbox.PushAttempt {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make(map[string]mailbox.PushAttempt, len(n.attempts))
	for id, a := range n.attempts {
		out[id] = a
	}
	return out
}

// Wake makes the notifier look at the outbox now (after an operator's
// retry, say).
func (n *Notifier) Wake() {
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// Run delivers while the instance leads, a term at a time, until ctx
// ends; it returns once every delivery it started has stopped (what was
// not acknowledged stays in the outbox for the next run or leader).
func (n *Notifier) Run(ctx context.Context) { n.mailbox.WhileLeading(ctx, n.deliver) }

// WriteMetrics writes the notifier's figures to /metrics.
func (n *Notifier) WriteMetrics(w *metrics.Writer) { n.stats.write(w) }
