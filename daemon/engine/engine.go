// Package engine runs the mailbox: it decides each request against the
// state, hands the resulting event to the store's group-committing writer,
// and applies the event to the state everyone reads only once it is durable.
package engine

import (
	"fmt"
	"log/slog"
	"runtime/debug"
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
	// RetainDone bounds how many drained tasks the state remembers.
	RetainDone int
	// ResultCacheMax and ResultCacheAge bound the idempotent result cache;
	// AuditMax the repair records kept for the audit query.
	ResultCacheMax int
	ResultCacheAge time.Duration
	AuditMax       int
	// ReplaySnapshotGap: a resuming subscriber further behind than this many
	// events gets a snapshot instead of a replay.
	ReplaySnapshotGap uint64
}

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
		o.SubscriberBuffer = 4096
	}
	if o.AutoCompactFactor == 0 {
		o.AutoCompactFactor = 4
	}
	if o.AutoCompactMinBytes <= 0 {
		o.AutoCompactMinBytes = 1 << 20
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
	if o.ReplaySnapshotGap == 0 {
		o.ReplaySnapshotGap = 50000
	}
}

// Engine implements mailbox.Service over a store.Store.
//
// It keeps two copies of the state. spec is what decisions are made
// against: it already includes events handed to the writer but not yet
// durable, so concurrent requests can be decided while an earlier batch is
// syncing (that is what makes group commit possible). committed holds only
// durable events: reads, snapshots and subscribers see it, so nobody is
// ever shown a change that a crash could take back. When a write fails,
// spec is rebuilt from committed.
type Engine struct {
	opts Options
	log  *slog.Logger
	st   store.Store

	mu      sync.Mutex // guards spec, the decision path and Append order
	spec    *mailbox.State
	broken  atomic.Bool    // a write failed: spec is ahead of the disk
	pending sync.WaitGroup // appended events whose done has not run

	cmu       sync.RWMutex // guards committed
	committed *mailbox.State

	hub        *hub
	compacting atomic.Bool
	sinceCheck atomic.Uint64
	closed     atomic.Bool
}

var _ mailbox.Service = (*Engine)(nil)

// Open replays st into memory and returns a running engine.
func Open(st store.Store, opts Options) (*Engine, error) {
	opts.fill()
	committed := mailbox.NewState()
	committed.RetainDone = opts.RetainDone
	committed.ResultCacheMax, committed.ResultCacheAgeMs = opts.ResultCacheMax, opts.ResultCacheAge.Milliseconds()
	committed.AuditMax = opts.AuditMax
	// Replay makes garbage at a furious rate (a decoded event per line) while
	// the live heap barely grows; collecting less often during it cut a
	// million-event restart by a fifth. The setting is restored after.
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	var replayed int
	err := st.Load(func(ev mailbox.Event) error {
		replayed++
		return committed.Apply(ev)
	})
	if err != nil {
		return nil, fmt.Errorf("replaying the mailbox log: %w", err)
	}
	e := &Engine{opts: opts, log: opts.Logger, st: st, committed: committed, hub: newHub()}
	e.spec = committed.Clone()
	c := committed.Counts()
	opts.Logger.Info("mailbox replayed", "seq", committed.Seq, "events", replayed, "queued", c.Queued, "in_flight", c.InFlight, "results_pending", c.ResultsPending)
	return e, nil
}
