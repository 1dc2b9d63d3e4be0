// Package outbound is the daemon's dispatcher: it delivers the tasks of
// remote agents (A2A servers registered with a remote spec) by leasing
// them on the agent's behalf, calling the remote through daemon/a2a/remote,
// the A2A client, and posting its answers under the lease guard. Only
// the instance that leads the mailbox dispatches: a term of the engine's
// WhileLeading, which ends the moment it stops leading.
//
// What is recorded when (the rest is memory, shown in the agents
// listing): the lease (task_leased, held by the agent); the moment the
// remote answers with its task, remote_accepted (the remote's ids), so a
// crash after it follows the remote task instead of sending again; the
// result or the remote's question (result_posted). Recovery, at start or
// on becoming leader, reads each remote agent's in-flight leases: one
// accepted under its lease is followed; one not accepted is sent again
// only if the task is idempotent, else it is left for the operator,
// marked unknown.
package outbound

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"

	a2aremote "github.com/mailroom/mailroom/daemon/a2a/remote"
	"github.com/mailroom/mailroom/daemon/a2a/wire"
	"github.com/mailroom/mailroom/internal/metrics"
	"github.com/mailroom/mailroom/internal/retry"
	"github.com/mailroom/mailroom/mailbox"
)

// Principal is who the dispatcher's own changes are recorded as: the
// re-registration of a remote agent with its remote's card.
const Principal = "mailroom-dispatcher"

// Options tune the dispatcher. The zero value of each field is its
// default.
type Options struct {
	Logger *slog.Logger
	// Auth holds the credentials of each remote agent, by agent id.
	Auth map[string]a2aremote.Auth
	// TLS is the TLS each remote agent is called with, by agent id (its
	// CA, its client certificate): a transport of its own. An agent
	// without one is called with HTTPClient as it is.
	TLS map[string]*tls.Config
	// OAuth holds the OAuth 2.0 client credentials of remote agents, by
	// agent id: when the agent's card declares a clientCredentials flow,
	// every call carries a token got from its token URL, kept until it
	// expires.
	OAuth map[string]OAuthClient
	// Notes is where the dispatcher tells the A2A callers of a task
	// why its delivery is left to the operator (the edge shows them);
	// nil keeps none.
	Notes *wire.DeliveryNotes
	// HTTPClient calls the remotes; nil is a client of the dispatcher's
	// own without a timeout (streams last as long as their task; every
	// other call is bounded by CallTimeout).
	HTTPClient *http.Client
	// CallTimeout bounds one call to a remote other than a stream (10s).
	CallTimeout time.Duration
	// ResolveInterval is how often a remote's card is read again (5m).
	ResolveInterval time.Duration
	// RetryMin and RetryMax bound the backoff between tries of a send
	// that failed before the remote accepted it, and of a card fetch
	// (200ms, 30s).
	RetryMin, RetryMax time.Duration
	// PollMin and PollMax bound the backoff between polls of a remote
	// task that does not stream (200ms, 5s).
	PollMin, PollMax time.Duration
	// FailuresToOpen is how many failures in a row open a remote's
	// circuit (5).
	FailuresToOpen int
	// ProbeInterval is how long an open circuit waits between probes
	// (30s).
	ProbeInterval time.Duration
	// LeaseWait is how long one long poll for a remote's tasks waits (5s).
	LeaseWait time.Duration
	// ResendMax bounds how many times an idempotent task is sent again
	// after sends that may have reached the remote, when the remote
	// cannot say whether it holds it (remote_resend_max); past it the
	// lease is left to the operator. 0 is the default (3); negative: never
	// sent again.
	ResendMax int
	// SettleDelay is how long after a send that may have reached the
	// remote failed (after a restart or takeover: after this instance
	// began leading, when every earlier send had ended) the remote is
	// asked whether it holds the task, so that a remote still taking it
	// has stored it (CallTimeout).
	SettleDelay time.Duration
	// CheckURL, when set, refuses a remote's URL (the daemon's own
	// address): such a remote is not delivered to.
	CheckURL func(u *url.URL) error
}

// DefaultResendMax is remote_resend_max's default.
const DefaultResendMax = 3

func (o Options) withDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.CallTimeout, 10*time.Second)
	def(&o.ResolveInterval, 5*time.Minute)
	def(&o.RetryMin, 200*time.Millisecond)
	def(&o.RetryMax, 30*time.Second)
	def(&o.PollMin, 200*time.Millisecond)
	def(&o.PollMax, 5*time.Second)
	def(&o.ProbeInterval, 30*time.Second)
	def(&o.LeaseWait, 5*time.Second)
	if o.FailuresToOpen <= 0 {
		o.FailuresToOpen = 5
	}
	switch {
	case o.ResendMax == 0:
		o.ResendMax = DefaultResendMax
	case o.ResendMax < 0:
		o.ResendMax = 0
	}
	def(&o.SettleDelay, o.CallTimeout)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.HTTPClient == nil {
		// Keep as many idle connections per remote as deliveries may be
		// under way at once: Go's default keeps 2, so at 16 deliveries in
		// flight about every other one dialed anew (bench --remote: 3,866
		// connections for 7,562 tasks), costing a handshake each and, on
		// a real network, local ports.
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = mailbox.MaxRemoteConcurrency
		tr.MaxIdleConns = 4 * mailbox.MaxRemoteConcurrency
		o.HTTPClient = &http.Client{Transport: tr}
	}
	return o
}

// Dispatcher delivers the tasks of every remote agent while the instance
// leads. Run it once; it reports each remote's status to the engine.
type Dispatcher struct {
	mailbox Mailbox
	remote  Remotes
	o       Options
	log     *slog.Logger
	// retries spaces the tries of a send that failed before the remote
	// accepted it, and of a card fetch; polls the polls of a remote task
	// that does not stream.
	retries, polls retry.Backoff

	mu sync.Mutex
	// leading is false while another instance delivers (every remote
	// reads standby); ledSince is when this instance began leading: every
	// send of an earlier process or leader ended before it.
	leading  bool
	ledSince time.Time
	remotes  map[string]*remote
	// clients are the remote agents' ways out, made once each
	// (transport.go).
	clients map[string]*remoteClient

	stats *stats
	// side are the goroutines that pass a cancel on outside a delivery,
	// and those that stop the loop of an agent no longer remote.
	side sync.WaitGroup
}

// New makes a dispatcher of the remote agents of m, whose side for them
// is rs (in the daemon, the engine and engine.Remote), and has the agents
// listing ask it for their status.
func New(m Mailbox, rs Remotes, o Options) *Dispatcher {
	o = o.withDefaults()
	d := &Dispatcher{mailbox: m, remote: rs, o: o, log: o.Logger, remotes: map[string]*remote{}, clients: map[string]*remoteClient{}, stats: newStats(),
		retries: retry.Backoff{Min: o.RetryMin, Max: o.RetryMax}, polls: retry.Backoff{Min: o.PollMin, Max: o.PollMax}}
	rs.SetStatus(d.Status)
	return d
}

// Run dispatches while the instance leads, a term at a time, until ctx
// ends; it returns once every delivery it started has stopped (their
// leases stay, for the next leader's recovery).
func (d *Dispatcher) Run(ctx context.Context) {
	d.mailbox.WhileLeading(ctx, func(term context.Context) {
		d.setLeading(true)
		defer d.setLeading(false)
		d.lead(term)
		// The cancels passed on under the term end with it.
		d.side.Wait()
	})
}

func (d *Dispatcher) setLeading(on bool) {
	d.mu.Lock()
	changed := d.leading != on
	d.leading = on
	if changed && on {
		d.ledSince = time.Now()
	}
	d.mu.Unlock()
	if changed {
		if on {
			d.log.Info("remote dispatcher on: this instance leads")
		}
		d.remote.StatusChanged()
	}
}

// lead runs the remote loops until term ends (the instance stops leading,
// or Run's context ends), following the registry and the repairs through
// the event stream.
func (d *Dispatcher) lead(term context.Context) {
	defer d.stopAll()
	for n := 1; term.Err() == nil; n++ {
		sub, err := d.mailbox.SubscribeInternal(term, nil)
		if err != nil {
			d.log.Warn("remote dispatcher: cannot follow the mailbox's events; trying again", "err", err)
			retry.Sleep(term, d.retries.After(n))
			continue
		}
		n = 0
		d.reconcile(term)
		d.follow(term, sub)
		sub.Close()
	}
}

// follow reads events until the subscription ends (subscribe again) or
// the term does.
func (d *Dispatcher) follow(term context.Context, sub mailbox.Subscription) {
	for {
		select {
		case ev, ok := <-sub.Events():
			if !ok {
				return
			}
			d.handle(term, *ev)
		case <-term.Done():
			return
		}
	}
}

func (d *Dispatcher) handle(ctx context.Context, ev mailbox.Event) {
	switch ev.Type {
	case mailbox.EventAgentRegistered, mailbox.EventAgentDeregistered, mailbox.EventSnapshot:
		d.reconcile(ctx)
	case mailbox.EventTaskCanceled, mailbox.EventTaskRequeued, mailbox.EventTaskForceErrored:
		if !d.repaired(ev) && ev.Type == mailbox.EventTaskCanceled {
			d.side.Go(func() { d.canceledWaiting(ctx, ev.TaskID) })
		}
	}
}

// canceledWaiting passes on the cancel of a task that is not being
// delivered but that a remote holds: one waiting on its sender's answer
// to the remote's question.
func (d *Dispatcher) canceledWaiting(ctx context.Context, taskID string) {
	rec, err := d.mailbox.Task(ctx, taskID)
	if err != nil || rec.Remote == nil {
		return
	}
	d.mu.Lock()
	r := d.remotes[rec.Remote.Agent]
	d.mu.Unlock()
	if r == nil {
		return
	}
	client := r.currentClient()
	if client == nil {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, d.o.CallTimeout)
	defer cancel()
	if _, err := client.Cancel(cctx, rec.Remote.TaskID); err != nil && !errors.Is(err, a2aremote.ErrNotCancelable) {
		d.log.Warn("passing a cancel on to the remote failed", "agent", r.agent, "task_id", taskID, "remote_task_id", rec.Remote.TaskID, "err", err)
		return
	}
	d.log.Info("cancel passed on to the remote", "agent", r.agent, "task_id", taskID, "remote_task_id", rec.Remote.TaskID)
}

// reconcile starts a loop for each remote agent in the registry, passes
// a changed registration to its loop, and stops the loops of agents no
// longer remote.
func (d *Dispatcher) reconcile(ctx context.Context) {
	want := map[string]mailbox.RegisteredAgent{}
	for _, ra := range d.remote.Agents() {
		want[ra.Agent] = ra
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for agent, r := range d.remotes {
		if _, ok := want[agent]; !ok {
			delete(d.remotes, agent)
			d.side.Go(r.stop)
			d.log.Info("remote agent no longer registered as remote: its deliveries stop, its leases stay", "agent", agent)
		}
	}
	for agent, ra := range want {
		if r, ok := d.remotes[agent]; ok {
			r.registered(ra)
			continue
		}
		r := newRemote(d, ra)
		d.remotes[agent] = r
		r.start(ctx)
	}
	d.remote.StatusChanged()
}

// repaired ends the delivery of a task that was canceled, requeued or
// force-errored under the lease it was delivered with.
func (d *Dispatcher) repaired(ev mailbox.Event) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, r := range d.remotes {
		if r.repaired(ev) {
			return true
		}
	}
	return false
}

func (d *Dispatcher) stopAll() {
	d.mu.Lock()
	rs := d.remotes
	d.remotes = map[string]*remote{}
	d.mu.Unlock()
	var wg sync.WaitGroup
	for _, r := range rs {
		wg.Go(r.stop)
	}
	wg.Wait()
	d.remote.StatusChanged()
}

// Status is what the dispatcher knows of agent now, for the agents
// listing: nil for an agent it does not deliver to.
func (d *Dispatcher) Status(agent string) *mailbox.RemoteStatus {
	d.mu.Lock()
	leading, r := d.leading, d.remotes[agent]
	d.mu.Unlock()
	if !leading {
		return &mailbox.RemoteStatus{State: mailbox.RemoteStandby}
	}
	if r == nil {
		return &mailbox.RemoteStatus{State: mailbox.RemoteResolving}
	}
	return r.status()
}

// WriteMetrics reports deliveries by outcome, their latency and the
// circuits open.
func (d *Dispatcher) WriteMetrics(w *metrics.Writer) {
	d.mu.Lock()
	open := 0
	for _, r := range d.remotes {
		if r.circuitOpen() {
			open++
		}
	}
	d.mu.Unlock()
	d.stats.write(w, open, d.o.ResendMax)
}
