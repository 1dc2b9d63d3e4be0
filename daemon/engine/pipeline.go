package engine

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/mailroom/mailroom/mailbox"
)

// The decision pipeline: every change to the mailbox takes this one path.
//
//  1. stage, under e.mu: the request decides its events against the
//     decided state (pass.add: stamp the next seq, apply, after, wake the
//     waiter it may serve) and groups them into units (pass.cut: the
//     first event says the unit's size, each is encoded once);
//  2. commit, still under the lock: each unit is appended to the store
//     with one settle callback, so the next request can be decided while
//     this one syncs (group commit);
//  3. wait, outside the lock: the request is answered with the prefix of
//     its units that became durable.
//
// A single request is a batch of one unit of one event (as raft-boltdb's
// StoreLog is StoreLogs([]*Log{log})); a lease of several is several
// units of one, so a write failing partway leaves a durable prefix; a
// batch request is one unit, durable whole or not at all.

// decision checks one request against the decided state: it returns the
// event that carries the request out, ok=false when there is nothing to do
// (nothing queued to lease, a live twin answers a send), or a refusal.
type decision func(s *mailbox.State, nowMs int64) (ev mailbox.Event, ok bool, err error)

// pass is one request on its way through the pipeline. Passes are
// pooled, with their first unit, so a single request allocates neither.
type pass struct {
	e     *Engine
	s     *mailbox.State // the decided state, while staging
	now   int64          // the request's time, in ms
	evs   []mailbox.Event
	one   [1]mailbox.Event // evs' storage for a single event
	cut0  int              // where the unit being staged starts in evs
	units []*unit
	first unit
	bug   error
}

// unit is what one store append carries: consecutive events, settled
// together on the store's writer goroutine and waited for together.
type unit struct {
	e       *Engine
	evs     []mailbox.Event
	done    chan error
	settled func(error) // u.settle, bound once
}

// units are the units after a pass's first (a lease of several), reused
// like passes.
var units = sync.Pool{New: func() any {
	u := &unit{done: make(chan error, 1)}
	u.settled = u.settle
	return u
}}

// settle is the unit's done callback, on the store's writer goroutine.
// Sending on done is the last thing it does: the waiter reuses the unit.
func (u *unit) settle(err error) {
	for _, ev := range u.evs {
		u.e.settle(ev, err)
	}
	u.e.pending.Done()
	u.done <- err
}

var passes = sync.Pool{New: func() any {
	p := &pass{}
	p.first.done = make(chan error, 1)
	p.first.settled = p.first.settle
	return p
}}

// add stages ev: it takes the next seq, is applied to the decided state,
// after (when given) reads what it needs from the state right after, and
// the head waiter the event could serve is woken (decided, not durable:
// see wait.go). It returns the stamped event (not yet encoded).
func (p *pass) add(ev mailbox.Event, after func(s *mailbox.State, ev mailbox.Event)) (mailbox.Event, error) {
	ev.Seq = p.s.Seq + 1
	if err := p.s.Apply(ev); err != nil {
		p.bug = p.e.bug(fmt.Errorf("decided event does not apply: %w", err))
		return mailbox.Event{}, p.bug
	}
	if after != nil {
		after(p.s, ev)
	}
	p.e.wakeFor(p.s, ev)
	if p.evs == nil {
		p.evs = p.one[:0]
	}
	p.evs = append(p.evs, ev)
	return ev, nil
}

// cut ends the unit being staged (nothing, when no event was added since
// the last cut): its first event says its size, and each event is encoded
// once (the same bytes go to the log and to every subscriber).
func (p *pass) cut() error {
	evs := p.evs[p.cut0:]
	if len(evs) == 0 {
		return nil
	}
	if len(evs) > 1 {
		evs[0].Unit = len(evs)
	}
	for k := range evs {
		var err error
		if evs[k].Encoded, err = json.Marshal(evs[k]); err != nil {
			p.bug = p.e.bug(fmt.Errorf("decided event %d (%s) does not encode: %w", evs[k].Seq, evs[k].Type, err))
			return p.bug
		}
	}
	u := &p.first
	if len(p.units) > 0 {
		u = units.Get().(*unit)
	}
	u.e, u.evs = p.e, evs
	p.units = append(p.units, u)
	p.cut0 = len(p.evs)
	return nil
}

// reserve makes room for n events, so that staging a batch does not grow
// evs step by step.
func (p *pass) reserve(n int) {
	if n > 1 && n > cap(p.evs) { // one event goes in p.one
		p.evs = make([]mailbox.Event, 0, n)
	}
}

// maxPooledEvents bounds the events a pooled pass keeps room for.
const maxPooledEvents = 64

// release puts p (and its units) back in the pools, holding nothing of
// the request. Every unit's done has been received.
func (p *pass) release() {
	clear(p.evs)
	clear(p.one[:])
	for _, u := range p.units[min(1, len(p.units)):] {
		u.e, u.evs = nil, nil
		units.Put(u)
	}
	if cap(p.evs) > maxPooledEvents {
		return
	}
	clear(p.units)
	p.e, p.s, p.evs, p.cut0, p.units, p.bug = nil, nil, p.evs[:0], 0, p.units[:0], nil
	p.first.e, p.first.evs = nil, nil
	passes.Put(p)
}

// run takes one request through the pipeline. stage decides under the
// lock through p.add and p.cut (what it adds after its last cut is cut
// for it); its error, a refusal, is the answer when it staged nothing.
// Staging nothing (a refusal, or nothing to do) is an answer made from
// the state with no fenced append to vouch for it, so it is given only
// when the instance's view is current. Otherwise the answer is made
// (events, counted in seq order from the first staged) is the durable
// prefix: a write failing on the first unit fails the request with
// outcome ("nothing was changed"), one failing later is logged and the
// units before it stand.
func (e *Engine) run(outcome string, stage func(p *pass) error) (made int, err error) {
	if e.closed.Load() {
		return 0, mailbox.Errorf(mailbox.CodeUnavailable, "the mailbox is shutting down; retry against the restarted daemon")
	}
	if err := e.failed.Load(); err != nil {
		return 0, err
	}
	p := passes.Get().(*pass)
	defer p.release()
	e.mu.Lock()
	if err := e.readyLocked(); err != nil {
		e.mu.Unlock()
		return 0, err
	}
	p.e, p.s, p.now = e, e.decided, e.opts.Now().UnixMilli()
	err = stage(p)
	if p.bug == nil {
		_ = p.cut()
	}
	if p.bug != nil {
		e.mu.Unlock()
		return 0, p.bug
	}
	if len(p.units) == 0 {
		e.mu.Unlock()
		if cerr := e.current(true, 0); cerr != nil {
			return 0, cerr
		}
		return 0, err
	}
	// Commit: the store queues each unit without I/O; the lock is released
	// before the sync, so many requests share one.
	for _, u := range p.units {
		e.pending.Add(1)
		e.st.AppendUnit(u.evs, u.settled)
	}
	e.mu.Unlock()
	// Wait. The store completes units in seq order and fails every one
	// after a failed write, so what is durable is the prefix before the
	// first failure.
	var failed error
	for _, u := range p.units {
		n := len(u.evs)
		if werr := <-u.done; werr != nil && failed == nil {
			failed = werr
		} else if failed == nil {
			made += n
		}
	}
	switch {
	case failed != nil && made == 0:
		return 0, e.writeFailure(outcome, failed)
	case failed != nil:
		e.log.Error("the mailbox log could not be written; the changes before the failure stand", "made", made, "of", len(p.evs), "err", failed)
	}
	e.maybeCompact()
	return made, nil
}

// decide runs one state change: the request is a unit of one event. after,
// when given, runs under the lock right after the decided state applied
// the event (to read derived facts such as the leased task). ok is false
// when fn found nothing to do.
func (e *Engine) decide(fn decision, after func(s *mailbox.State, ev mailbox.Event)) (ev mailbox.Event, ok bool, err error) {
	_, err = e.run("nothing was changed", func(p *pass) error {
		var err error
		if ev, ok, err = fn(p.s, p.now); err != nil || !ok {
			return err
		}
		ev, err = p.add(ev, after)
		return err
	})
	if err != nil {
		return mailbox.Event{}, false, err
	}
	return ev, ok, nil
}

// decideN is decide for up to n changes made one after the other under
// one lock, as a lease of several tasks is: fn runs until it has nothing
// more to do (or refuses, which ends the run without error when something
// was decided before it). Each change is a unit of its own, and they are
// waited for together, so they share a sync; if a write fails partway,
// the changes made durable before it are the answer. It returns how many
// changes were made.
func (e *Engine) decideN(n int, fn decision, after func(s *mailbox.State, ev mailbox.Event)) (int, error) {
	return e.run("nothing was changed", func(p *pass) error {
		p.reserve(min(n, 16))
		for staged := 0; staged < n; staged++ {
			ev, ok, err := fn(p.s, p.now)
			if err != nil && staged == 0 {
				return err
			}
			if err != nil || !ok {
				return nil
			}
			if _, err := p.add(ev, after); err != nil {
				return err
			}
			if err := p.cut(); err != nil {
				return err
			}
		}
		return nil
	})
}
