// Package engine runs the mailbox: it decides each request against the
// state, hands the resulting event to the store's group-committing writer,
// and applies the event to the state everyone reads only once it is durable.
//
// On a shared store it is also the one place that knows whether this
// instance leads: the store tells it of every change of role, and it
// tells those who listen (ListenRole; WhileLeading runs the daemon's
// workers a term at a time). The workers reach the engine through
// narrow ports of their own: the notifier through Push, the dispatcher
// through Remote.
package engine

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/mailroom/mailroom/daemon/store"
	"github.com/mailroom/mailroom/mailbox"
)

// Options tune an Engine. The zero value is usable.
type Options struct {
	Logger *slog.Logger
	Now    func() time.Time
	// NewID makes task and lease ids; default uuid v4.
	NewID func() string
	// SubscriberBuffer is how many events a live subscriber may fall behind
	// before it is cut off (it reconnects and catches up from the log).
	SubscriberBuffer int
	// AutoCompactFactor compacts the log once it is this many times larger
	// than the last snapshot (and larger than AutoCompactMinBytes). Zero
	// means the default (4); negative disables automatic compaction.
	AutoCompactFactor   float64
	AutoCompactMinBytes int64
	// RetainDone bounds how many drained tasks the state remembers;
	// ResultCacheMax and ResultCacheAge bound the idempotent result cache;
	// AuditMax the repair records kept for the audit query. These limits
	// are recorded in the log: replay uses the log's own, and Open appends a
	// limits_set event when these differ from them.
	RetainDone     int
	ResultCacheMax int
	ResultCacheAge time.Duration
	AuditMax       int
	// MaxTurns and MaxTurnsBytes bound a task's conversation (see
	// mailbox.Limits), recorded like the limits above.
	MaxTurns      int
	MaxTurnsBytes int
	// ReplaySnapshotGap: a resuming subscriber further behind than this many
	// events gets a snapshot instead of a replay.
	ReplaySnapshotGap uint64
	// AgentsInterval is how often, at most, the agents listing is pushed to
	// the subscribers that asked for it (default DefaultAgentsInterval;
	// negative: never).
	AgentsInterval time.Duration
	// CheckPushURL, when set, holds a push config's webhook URL to the
	// daemon's configuration (its own address refused, the hosts allowed),
	// before anything is decided; field names the URL in a refusal. The
	// log holds what passed, and replay does not ask again.
	CheckPushURL func(field string, u *url.URL) error
	// CheckRemoteURL, when set, holds a remote agent's URL to the
	// daemon's configuration (its own address refused) at registration;
	// replay does not ask again.
	CheckRemoteURL func(field string, u *url.URL) error
}

// Defaults for Options.
const (
	DefaultSubscriberBuffer    = 4096
	DefaultAutoCompactFactor   = 4
	DefaultAutoCompactMinBytes = 1 << 20
)

func (o *Options) fill() {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.NewID == nil {
		o.NewID = uuid.NewString
	}
	if o.SubscriberBuffer <= 0 {
		o.SubscriberBuffer = DefaultSubscriberBuffer
	}
	if o.AutoCompactFactor == 0 {
		o.AutoCompactFactor = DefaultAutoCompactFactor
	}
	if o.AutoCompactMinBytes <= 0 {
		o.AutoCompactMinBytes = DefaultAutoCompactMinBytes
	}
	if o.RetainDone <= 0 {
		o.RetainDone = mailbox.DefaultRetainDone
	}
	if o.ResultCacheMax <= 0 {
		o.ResultCacheMax = mailbox.DefaultResultCacheMax
	}
	if o.ResultCacheAge <= 0 {
		o.ResultCacheAge = time.Duration(mailbox.DefaultResultCacheAgeMs) * time.Millisecond
	}
	if o.AuditMax <= 0 {
		o.AuditMax = mailbox.DefaultAuditMax
	}
	if o.MaxTurns <= 0 {
		o.MaxTurns = mailbox.DefaultMaxTurns
	}
	if o.MaxTurnsBytes <= 0 {
		o.MaxTurnsBytes = mailbox.DefaultMaxTurnsBytes
	}
	if o.AgentsInterval == 0 {
		o.AgentsInterval = DefaultAgentsInterval
	}
	if o.ReplaySnapshotGap == 0 {
		o.ReplaySnapshotGap = 50000
	}
}

// limits are the mailbox limits the options ask for (after fill).
func (o *Options) limits() mailbox.Limits {
	return mailbox.Limits{RetainDone: o.RetainDone, ResultCacheMax: o.ResultCacheMax, ResultCacheAgeMs: o.ResultCacheAge.Milliseconds(), AuditMax: o.AuditMax,
		MaxTurns: o.MaxTurns, MaxTurnsBytes: o.MaxTurnsBytes}
}

// Engine implements mailbox.Service over a store.Store.
//
// It keeps two copies of the state. decided is what requests are decided
// against: it already includes events handed to the writer but not yet
// durable, so concurrent requests can be decided while an earlier batch is
// syncing (that is what makes group commit possible). durable holds only
// durable events: reads, snapshots and subscribers see it, so nobody is
// ever shown a change that a crash could take back. When a write fails,
// decided is rebuilt from durable.
type Engine struct {
	opts Options
	log  *slog.Logger
	st   store.Store

	mu      sync.Mutex // guards decided, the decision path and Append order
	decided *mailbox.State
	broken  atomic.Bool    // a write failed: decided is ahead of the disk
	pending sync.WaitGroup // appended events whose done has not run
	// failed, once set, refuses every write: the engine found a bug in
	// itself (see bug).
	failed atomic.Pointer[mailbox.Error]

	durableMu sync.RWMutex // guards durable
	durable   *mailbox.State

	hub        *hub
	waiting    *waiters
	presence   *presence
	stopAgents chan struct{} // closed by Close; nil when nothing pushes the listing
	agentsDone chan struct{}
	compacting atomic.Bool
	sinceCheck atomic.Uint64
	closed     atomic.Bool

	// On a shared store (several daemons on one log), only the instance
	// that leads decides; the others apply what the leader wrote.
	shared store.Shared
	// cur is the store's word on whether this instance's view is current
	// (store.Current); nil on a store of its own, whose view always is.
	cur     store.Current
	leading atomic.Bool
	rebuild atomic.Bool // decided must be rebuilt from durable before the next decision
	opened  atomic.Bool
	role    atomic.Pointer[store.Role]
	// roles tells the role's every change to those listening (ListenRole).
	roles roles
	// seqWaiters counts WaitDurable calls; while there are any, each
	// applied event closes advanced (and replaces it) to wake them.
	seqWaiters atomic.Int32
	advanced   atomic.Pointer[chan struct{}]
	// remoteStatus, when set, says what the dispatcher knows of a remote
	// agent, for the agents listing.
	remoteStatus atomic.Pointer[func(agent string) *mailbox.RemoteStatus]
	// pushStatus, when set, says what the notifier knows of its
	// deliveries (Push.SetStatus).
	pushStatus atomic.Pointer[func() mailbox.PushStatus]
	// retrying is how many notifications the notifier was retrying when
	// the agents listing last looked: a change is a webhook starting or
	// stopping to fail, which the listing shows (webhook_failing).
	retrying atomic.Int64
}

var _ mailbox.Service = (*Engine)(nil)

// Open replays st into memory and returns a running engine. Replay uses
// the limits the log records (the defaults until it records any), never the
// configured ones, so it gives the state the log was written under; when the
// configured limits differ, a limits_set event is appended before anything
// else, which makes the change durable and visible to every subscriber.
// The caller closes st when Open fails.
func Open(st store.Store, opts Options) (*Engine, error) {
	opts.fill()
	durable := mailbox.NewState()
	var replayed int
	began := time.Now()
	err := st.Load(func(ev mailbox.Event) error {
		replayed++
		return durable.Apply(ev)
	})
	if err != nil {
		return nil, fmt.Errorf("replaying the mailbox log: %w", err)
	}
	e := &Engine{opts: opts, log: opts.Logger, st: st, durable: durable, hub: newHub(), waiting: newWaiters(), presence: newPresence()}
	e.decided = durable.Clone()
	c := durable.Counts()
	opts.Logger.Info("mailbox replayed", "took", time.Since(began).Round(time.Millisecond), "seq", durable.Seq, "events", replayed, "queued", c.Queued, "in_flight", c.InFlight, "results_pending", c.ResultsPending)
	e.role.Store(&store.Role{Leader: true})
	e.cur, _ = st.(store.Current)
	if sh, ok := st.(store.Shared); ok {
		e.shared = sh
		// Follow reports the role at once: following; the store reports
		// Leader when this instance wins the lead.
		sh.Follow(durable.Seq, e.applyFollowed, e.roleChanged)
	} else {
		e.leading.Store(true)
		e.roles.set(store.Role{Leader: true}, true)
	}
	if e.leading.Load() {
		if err := e.setLimits(opts.limits()); err != nil {
			return nil, err
		}
	}
	e.opened.Store(true)
	if opts.AgentsInterval > 0 {
		e.stopAgents, e.agentsDone = make(chan struct{}), make(chan struct{})
		go e.pushAgents(opts.AgentsInterval, e.stopAgents, e.agentsDone)
	}
	return e, nil
}

// applyFollowed applies an event another instance wrote to the shared
// log, as settle does for this instance's own.
func (e *Engine) applyFollowed(ev mailbox.Event) error {
	e.durableMu.Lock()
	defer e.durableMu.Unlock()
	if ev.Type == mailbox.EventSnapshot {
		// This instance fell behind a compaction and starts again from
		// its snapshot: streams cannot continue across the jump, so they
		// end, and their clients reconnect and catch up.
		if err := e.durable.Apply(ev); err != nil {
			return e.bug(fmt.Errorf("the durable state refused the snapshot at seq %d from the shared log: %w", ev.Seq, err))
		}
		e.hub.endAll(mailbox.Errorf(mailbox.CodeUnavailable, "this instance reloaded the mailbox from a snapshot at seq %d; reconnect to catch up", ev.Seq))
		e.wakeSeqWaiters()
		return nil
	}
	if err := e.durable.Apply(ev); err != nil {
		return e.bug(fmt.Errorf("the durable state refused event %d (%s) from the shared log: %w", ev.Seq, ev.Type, err))
	}
	e.hub.publish(ev)
	e.presence.settled(ev)
	e.wakeSeqWaiters()
	return nil
}

// wakeSeqWaiters wakes WaitDurable calls after the durable state moved.
func (e *Engine) wakeSeqWaiters() {
	if e.seqWaiters.Load() == 0 {
		return
	}
	next := make(chan struct{})
	if old := e.advanced.Swap(&next); old != nil {
		close(*old)
	}
}

// roleChanged runs on the store's writer goroutine when this instance
// starts or stops leading the shared log. It takes no lock the decision
// path holds: the next decision rebuilds the decided state from the
// durable one, which holds every event up to the head by now.
//
// Those listening to the role (ListenRole, WhileLeading) are told last,
// when a decision would already see the new role.
func (e *Engine) roleChanged(r store.Role) {
	e.role.Store(&r)
	began := r.Leader && !e.leading.Load()
	defer func() { e.roles.set(r, began) }()
	switch {
	case began:
		e.rebuild.Store(true)
		e.leading.Store(true)
		e.log.Info("this instance leads the shared mailbox", "epoch", r.Epoch, "seq", e.DurableSeq())
		if e.opened.Load() && !e.closed.Load() {
			go func() {
				if err := e.setLimits(e.opts.limits()); err != nil && !e.closed.Load() {
					e.log.Error("recording the configured limits after taking the lead", "err", err)
				}
			}()
		}
	case !r.Leader && e.leading.Load():
		e.leading.Store(false)
		e.log.Warn("this instance no longer leads the shared mailbox; it follows", "epoch", r.Epoch, "leader", r.Holder, "leader_url", r.LeaderURL)
	}
}

// Leading reports whether this instance decides (always, on a store of
// its own).
func (e *Engine) Leading() bool { return e.leading.Load() }

// Role is this instance's part in a shared store (Leader on a store of its
// own).
func (e *Engine) Role() store.Role { return *e.role.Load() }

// DurableSeq is the seq of the last event in the durable state.
func (e *Engine) DurableSeq() uint64 {
	e.durableMu.RLock()
	defer e.durableMu.RUnlock()
	return e.durable.Seq
}

// WaitDurable waits until the durable state reaches seq or ctx ends, and
// reports whether it did: a follower answers a write it forwarded only
// once it has applied it (read-your-writes).
func (e *Engine) WaitDurable(ctx context.Context, seq uint64) bool {
	e.seqWaiters.Add(1)
	defer e.seqWaiters.Add(-1)
	for {
		// Take the channel before looking at the seq: an event applied in
		// between closes it.
		ch := e.advanced.Load()
		if ch == nil {
			c := make(chan struct{})
			if e.advanced.CompareAndSwap(nil, &c) {
				ch = &c
			} else {
				ch = e.advanced.Load()
			}
		}
		if e.DurableSeq() >= seq {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-*ch:
		}
	}
}

// notLeader refuses a decision on an instance that does not lead.
func (e *Engine) notLeader() error {
	r := e.Role()
	if r.LeaderURL == "" {
		return mailbox.Errorf(mailbox.CodeUnavailable, "this instance does not lead the shared mailbox and no instance leads right now (an election is under way); retry in a moment")
	}
	return mailbox.Errorf(mailbox.CodeUnavailable, "this instance does not lead the shared mailbox; %s at %s does (writes sent to any instance are forwarded to it)", r.Holder, r.LeaderURL)
}

// readyLocked is the decision path's check, under mu: this instance
// leads, and its decided state is the durable one plus what it decided.
func (e *Engine) readyLocked() error {
	if !e.leading.Load() {
		return e.notLeader()
	}
	if e.rebuild.Load() {
		// Everything this instance appended in its last term was answered
		// when it stepped down.
		e.pending.Wait()
		e.durableMu.RLock()
		e.decided = e.durable.Clone()
		e.durableMu.RUnlock()
		e.broken.Store(false)
		e.rebuild.Store(false)
	}
	if e.broken.Load() {
		return e.recoverLocked()
	}
	return nil
}

// setLimits appends the limits_set event that puts l in force, unless it is
// in force already.
func (e *Engine) setLimits(l mailbox.Limits) error {
	var from mailbox.Limits
	_, changed, err := e.decide(func(s *mailbox.State, now int64) (mailbox.Event, bool, error) {
		from = s.Limits
		ev, ok := s.DecideLimits(l, now)
		return ev, ok, nil
	}, nil)
	if err != nil {
		return fmt.Errorf("recording the configured limits (%v) in the mailbox log: %w", l, err)
	}
	if !changed {
		return nil
	}
	e.log.Info("mailbox limits changed", "from", from, "to", l)
	return nil
}
