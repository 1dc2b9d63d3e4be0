package engine

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mailroom/mailroom/daemon/store"
	"github.com/mailroom/mailroom/mailbox"
)

// hub fans committed events out to subscribers. Publishing never blocks:
// each subscriber has a bounded buffer, and one that overflows is cut off
// so a stalled console can never delay the writer or other consoles.
type hub struct {
	mu   sync.Mutex
	subs map[*subscription]struct{}
	cut  atomic.Uint64
}

func newHub() *hub { return &hub{subs: make(map[*subscription]struct{})} }

func (h *hub) publish(ev mailbox.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.subs) == 0 {
		return
	}
	// ev.Encoded was made once, when the event was decided: the log wrote
	// those bytes, and every subscriber's stream writes them too. The
	// subscribers share one copy of the event (a few hundred bytes): with
	// hundreds of them, copying it into each buffer was a tenth of the
	// fan-out profile. Nobody writes to it after this.
	shared := &ev
	for s := range h.subs {
		if s.only != "" && !concerns(ev, s.only) {
			continue
		}
		if s.direct {
			h.sendDirect(s, shared)
			continue
		}
		select {
		case s.live <- shared:
		default:
			h.cut.Add(1)
			h.endLocked(s, mailbox.ErrSlowSubscriber)
		}
	}
}

// sendDirect hands ev to a subscriber whose catch-up is over straight
// into what it reads (see goDirect), under h.mu, with the checks the pump
// makes: a seq it has is dropped, a gap ends it; when out is full the pump
// takes over again.
func (h *hub) sendDirect(s *subscription, ev *mailbox.Event) {
	switch {
	case ev.Seq <= s.last:
		return
	case ev.Seq != s.last+1 && s.only == "":
		h.endLocked(s, mailbox.Errorf(mailbox.CodeInternal, "subscriber missed events %d..%d; reconnect to catch up", s.last+1, ev.Seq-1))
		return
	}
	select {
	case s.out <- ev:
		s.last = ev.Seq
	default:
		// The reader is behind by out's worth: the pump takes over again,
		// with live to fill (empty, as the pump left it), so the
		// subscriber may fall behind by the whole buffer as before.
		s.direct = false
		s.live <- ev
		go h.pumpLive(s, s.last)
	}
}

// goDirect ends the pump's part in s once its catch-up is out and nothing
// waits in s.live: from then on publish writes to s.out itself, and the
// subscriber's reader is woken once for all the events waiting rather
// than the pump once for each. With 500 subscribers that hand-off was a
// quarter of the daemon's CPU (docs/benchmarks.md, fan-out). last is the seq of the
// last event the pump handed on. It reports false when events wait or the
// subscription has ended.
func (h *hub) goDirect(s *subscription, last uint64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[s]; !ok || len(s.live) > 0 {
		return false
	}
	s.direct, s.last = true, last
	select {
	case up := <-s.agentsIn:
		offerLatest(s.agentsOut, up)
	default:
	}
	return true
}

// wantsAgents reports whether any subscriber asked for the agents listing.
func (h *hub) wantsAgents() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		if s.wantAgents.Load() {
			return true
		}
	}
	return false
}

// publishAgents offers up to every subscriber that asked for it, replacing
// one it has not taken yet: the listing is a picture, not a change, so only
// the latest matters, and nobody is ever waited for or cut off for it.
func (h *hub) publishAgents(up mailbox.AgentsUpdate) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		if s.wantAgents.Load() {
			if s.direct {
				offerLatest(s.agentsOut, up)
			} else {
				offerLatest(s.agentsIn, up)
			}
		}
	}
}

// offerLatest puts v in ch (of capacity 1) without waiting, replacing what
// is there. Each channel it is used on has one sender, so after taking the
// old value out there is room.
func offerLatest[T any](ch chan T, v T) {
	select {
	case ch <- v:
		return
	default:
	}
	select {
	case <-ch:
	default:
	}
	select {
	case ch <- v:
	default:
	}
}

func (h *hub) add(s *subscription) {
	h.mu.Lock()
	h.subs[s] = struct{}{}
	h.mu.Unlock()
}

func (h *hub) end(s *subscription, err error) {
	h.mu.Lock()
	h.endLocked(s, err)
	h.mu.Unlock()
}

// endLocked closes the live channel under h.mu, the same lock publish sends
// under, so nothing is ever sent on a closed channel.
func (h *hub) endLocked(s *subscription, err error) {
	if _, ok := h.subs[s]; !ok {
		return
	}
	delete(h.subs, s)
	s.setErr(err)
	if s.direct {
		close(s.out) // the pump has gone: publish was its only writer
		s.cancel()
	} else {
		close(s.live)
	}
}

func (h *hub) closeAll() {
	h.endAll(mailbox.Errorf(mailbox.CodeUnavailable, "the mailbox is shutting down"))
}

// endAll ends every subscription with err; new ones may still come.
func (h *hub) endAll(err error) {
	h.mu.Lock()
	for s := range h.subs {
		h.endLocked(s, err)
	}
	h.mu.Unlock()
}

func (h *hub) stats() (subs int, cut uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		if !s.internal {
			subs++
		}
	}
	return subs, h.cut.Load()
}

type subscription struct {
	// internal marks the daemon's own subscriber (the dispatcher), which
	// the subscriber gauge does not count: it counts event streams.
	internal bool
	// only, when set, is the one task the subscriber follows: publish and
	// the catch-up pass it only that task's events (and snapshots), so
	// a follower of one task is not woken for every other's.
	only   string
	live   chan *mailbox.Event // filled by publish, bounded; shared, read-only
	out    chan *mailbox.Event // what the subscriber reads
	cancel context.CancelFunc
	ctx    context.Context // the subscription's, for a pump started again
	// direct, once the catch-up is out, has publish write to out itself
	// (goDirect); last is then the seq of the last event put there. Both
	// are guarded by hub.mu.
	direct bool
	last   uint64

	// The agents listing, for a subscriber that asked (wantAgents): the hub
	// offers it to agentsIn, and the pump hands it on to agentsOut once the
	// subscriber's catch-up is out, so it never arrives before the snapshot.
	wantAgents atomic.Bool
	agentsIn   chan mailbox.AgentsUpdate
	agentsOut  chan mailbox.AgentsUpdate

	errMu sync.Mutex
	err   error
}

func (s *subscription) Events() <-chan *mailbox.Event { return s.out }

func (s *subscription) Agents() <-chan mailbox.AgentsUpdate {
	s.wantAgents.Store(true)
	return s.agentsOut
}

func (s *subscription) Err() error {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	return s.err
}

func (s *subscription) setErr(err error) {
	s.errMu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.errMu.Unlock()
}

func (s *subscription) Close() { s.cancel() }

// Subscribe registers a subscriber at the current durable seq, under the
// same lock events are published under, so it sees every later event once.
// A subscriber without a position, or one claiming a position the mailbox
// never reached, or one too far behind, starts from a snapshot; otherwise it
// is replayed the events it missed from the log.
func (e *Engine) Subscribe(ctx context.Context, after *uint64) (mailbox.Subscription, error) {
	return e.SubscribeBuffered(ctx, after, e.opts.SubscriberBuffer)
}

// SubscribeBuffered is Subscribe with a buffer of its own: how many events
// the subscriber may fall behind before it is cut off (at least 2). The
// A2A edge follows one task per subscription and reconnects from its
// position when cut off, so it takes a small one rather than the
// consoles' megabyte.
func (e *Engine) SubscribeBuffered(ctx context.Context, after *uint64, buffer int) (mailbox.Subscription, error) {
	return e.subscribe(ctx, after, buffer, false, "")
}

// SubscribeTask is SubscribeBuffered for one task: the subscriber gets
// only the events that concern task id (those that carry it as their
// task_id or their task), and snapshots; seqs in between are skipped. It
// is what the A2A edge follows a task with: a blocking send or a stream
// is then woken for its own task's events, not for every event of the
// mailbox. Without a position it starts at the durable seq of the moment,
// with neither a snapshot nor a replay: the follower reads the task after
// subscribing, and every later change is on the subscription.
func (e *Engine) SubscribeTask(ctx context.Context, after *uint64, buffer int, id string) (mailbox.Subscription, error) {
	if id == "" {
		return nil, mailbox.Invalidf("task_id", "expected the id of the task to follow")
	}
	return e.subscribe(ctx, after, buffer, false, id)
}

// concerns reports whether a follower of task id gets ev: an event about
// it, or a snapshot.
func concerns(ev mailbox.Event, id string) bool {
	return ev.Type == mailbox.EventSnapshot || ev.Concerns(id)
}

// SubscribeInternal is Subscribe for the daemon's own components (the
// dispatcher, the notifier): the same feed, not counted among the event
// streams in mailroom_sse_subscribers, and without a position it starts
// at the durable seq of the moment, with neither a snapshot nor a replay.
// Those components read the state they need when they subscribe; a
// snapshot made for each of them at start was a deep copy of the whole
// mailbox they never looked inside (4 of the 17 s of a restart with a
// million live tasks, and as much memory again, issue 27).
func (e *Engine) SubscribeInternal(ctx context.Context, after *uint64) (mailbox.Subscription, error) {
	return e.subscribe(ctx, after, e.opts.SubscriberBuffer, true, "")
}

func (e *Engine) subscribe(ctx context.Context, after *uint64, buffer int, internal bool, only string) (mailbox.Subscription, error) {
	if e.closed.Load() {
		return nil, mailbox.Errorf(mailbox.CodeUnavailable, "the mailbox is shutting down")
	}
	buffer = max(buffer, 2)
	if e.shared != nil && after != nil && *after > e.DurableSeq() {
		// On a shared log an id this instance has not reached yet was
		// given out by an instance ahead of it: wait for it briefly rather
		// than send a snapshot.
		wctx, wcancel := context.WithTimeout(ctx, catchUpWait)
		if !e.WaitDurable(wctx, *after) && ctx.Err() == nil {
			e.log.Warn("a subscriber resumes from an id this instance has not reached; it gets a snapshot", "last_event_id", *after, "seq", e.DurableSeq())
		}
		wcancel()
	}
	ctx, cancel := context.WithCancel(ctx)
	// The two buffers together hold buffer events: how far a subscriber
	// may fall behind before it is cut off.
	ready := min(subscriberOut, buffer/2)
	s := &subscription{ctx: ctx, internal: internal, only: only, live: make(chan *mailbox.Event, buffer-ready), out: make(chan *mailbox.Event, ready), cancel: cancel,
		agentsIn: make(chan mailbox.AgentsUpdate, 1), agentsOut: make(chan mailbox.AgentsUpdate, 1)}

	e.durableMu.RLock()
	base := e.durable.Seq
	var snap *mailbox.Snapshot
	if (only != "" || internal) && after == nil {
		// A task's follower, or one of the daemon's components, from now
		// on: it reads the task, or what it needs, itself.
		after = &base
	}
	if after == nil || *after > base || base-*after > e.opts.ReplaySnapshotGap {
		snap = e.durable.Snapshot(e.opts.Now().UnixMilli())
	}
	e.hub.add(s)
	e.durableMu.RUnlock()

	from := base
	if snap == nil {
		from = *after
	}
	// The pump watches ctx while it runs; once it has handed over to
	// publish (goDirect), this ends the subscription when ctx ends.
	context.AfterFunc(ctx, func() { e.hub.end(s, ctx.Err()) })
	go e.pump(s, snap, from, base)
	return s, nil
}

// subscriberOut is how many events wait ready for a subscriber's reader, so
// one that waits a few milliseconds to batch its writes finds them all
// there in one go.
const subscriberOut = 256

// catchUpWait bounds how long a subscription on a shared log waits for
// this instance to reach the id it resumes from.
const catchUpWait = 2 * time.Second

// pump delivers a subscriber's catch-up (snapshot or replay) and then its
// live events, dropping live events the catch-up already covered.
func (e *Engine) pump(s *subscription, snap *mailbox.Snapshot, from, base uint64) {
	ended := true
	defer func() {
		if ended {
			s.cancel()
			close(s.out)
		}
	}()
	send := func(ev *mailbox.Event) bool { return e.hub.handOn(s, ev) }
	sendSnapshot := func(snap *mailbox.Snapshot) bool {
		return send(&mailbox.Event{Seq: snap.Seq, AtMs: snap.AtMs, Type: mailbox.EventSnapshot, Snapshot: snap})
	}
	last := from
	if snap != nil {
		if !sendSnapshot(snap) {
			return
		}
		last = snap.Seq
	}
	for last < base {
		evs, err := e.st.EventsSince(last, 1024)
		if errors.Is(err, store.ErrCompacted) {
			snap := e.snapshot()
			if !sendSnapshot(snap) {
				return
			}
			last = snap.Seq
			break
		}
		if err != nil || len(evs) == 0 {
			if err == nil {
				err = errors.New("log ended before the subscriber's position")
			}
			e.log.Error("replaying events for a subscriber", "after", last, "err", err)
			e.hub.end(s, mailbox.Errorf(mailbox.CodeInternal, "replaying the log failed"))
			return
		}
		for i := range evs {
			ev := &evs[i]
			if s.only == "" || concerns(*ev, s.only) {
				if !send(ev) {
					return
				}
			}
			last = ev.Seq
		}
	}
	ended = false
	e.hub.pumpLive(s, last)
}

// handOn is the pump putting ev where s's reader takes it, waiting for
// room; false when the subscription's context ended first (it is ended).
func (h *hub) handOn(s *subscription, ev *mailbox.Event) bool {
	select {
	case s.out <- ev:
		return true
	case <-s.ctx.Done():
		h.end(s, s.ctx.Err())
		return false
	}
}

// pumpLive hands s's live events on from s.live to s.out until it can
// hand over to publish (goDirect) or the subscription ends, dropping
// events the subscriber has (seq up to last). It runs after the catch-up,
// and again whenever a direct subscriber's reader falls behind.
func (h *hub) pumpLive(s *subscription, last uint64) {
	ctx := s.ctx
	handedOff := false
	defer func() {
		if !handedOff {
			s.cancel()
			close(s.out)
		}
	}()
	// forward hands on one live event; false ends the subscription.
	forward := func(ev *mailbox.Event, ok bool) bool {
		switch {
		case !ok:
			return false
		case ev.Seq <= last:
			return true
		case ev.Seq != last+1 && s.only == "":
			h.end(s, mailbox.Errorf(mailbox.CodeInternal, "subscriber missed events %d..%d; reconnect to catch up", last+1, ev.Seq-1))
			return false
		case !h.handOn(s, ev):
			return false
		}
		last = ev.Seq
		return true
	}
	for {
		// Caught up, with nothing waiting: hand over to publish.
		if len(s.live) == 0 && h.goDirect(s, last) {
			handedOff = true
			return
		}
		select {
		case ev, ok := <-s.live:
			if !forward(ev, ok) {
				return
			}
		case up := <-s.agentsIn:
			// The stream holds it until it has sent the events it counts
			// (up.Seq).
			offerLatest(s.agentsOut, up)
		case <-ctx.Done():
			h.end(s, ctx.Err())
			return
		}
	}
}
