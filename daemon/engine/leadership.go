package engine

import (
	"context"
	"sync"

	"github.com/mailroom/mailroom/daemon/store"
)

// Leadership is what the engine tells those who listen to its role (river's
// leadership.Notification): this instance's part in the mailbox, and which
// of its terms of leading it is in.
type Leadership struct {
	store.Role
	// Term numbers this instance's terms of leading, from 1: a new one
	// each time it begins to lead (0 before the first). A listener that
	// missed a step down between two terms sees the number change.
	Term uint64
}

// RoleSubscription tells its listener of every change of this instance's
// role (ListenRole). Only the latest matters to a listener that falls
// behind: its channel holds one value, replaced by every change.
type RoleSubscription struct {
	c chan Leadership
	r *roles
}

// C delivers the role when the subscription starts, then every change.
func (s *RoleSubscription) C() <-chan Leadership { return s.c }

// Close ends the subscription; C is not closed.
func (s *RoleSubscription) Close() {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	delete(s.r.listeners, s)
}

// roles is the engine's one record of its role, and its listeners: the
// workers that run only while the instance leads (the dispatcher, the
// notifier) and the forwarder that follows the lead, told the moment
// the store reports a change instead of each asking "do I lead?" on a
// timer of its own.
type roles struct {
	mu        sync.Mutex
	now       Leadership
	listeners map[*RoleSubscription]struct{}
}

// set records role r, a new term when began, and tells every listener.
// It runs on the store's writer goroutine and never blocks: a listener's
// value not taken yet is replaced by the newer one.
func (rs *roles) set(r store.Role, began bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.now.Role = r
	if began {
		rs.now.Term++
	}
	for s := range rs.listeners {
		offer(s.c, rs.now)
	}
}

// offer puts l in c, replacing what c holds; only the caller, holding
// roles.mu, sends on c, so once c is emptied the send cannot block.
func offer(c chan Leadership, l Leadership) {
	select {
	case <-c:
	default:
	}
	c <- l
}

// ListenRole subscribes to this instance's role (river's Elector.Listen):
// C delivers the role now, then every change. Close it when done.
func (e *Engine) ListenRole() *RoleSubscription {
	s := &RoleSubscription{c: make(chan Leadership, 1), r: &e.roles}
	e.roles.mu.Lock()
	defer e.roles.mu.Unlock()
	if e.roles.listeners == nil {
		e.roles.listeners = map[*RoleSubscription]struct{}{}
	}
	e.roles.listeners[s] = struct{}{}
	offer(s.c, e.roles.now)
	return s
}

// WhileLeading runs fn once for each term this instance leads, until ctx
// ends. A term owns its work: term is cancelled the moment the instance
// stops leading (or ctx ends), and fn retries what fails within it and
// returns once the work it started has stopped; WhileLeading waits for
// that before it starts the next term, and before it returns. On a store
// of its own the instance leads from Open to Close: one term.
func (e *Engine) WhileLeading(ctx context.Context, fn func(term context.Context)) {
	sub := e.ListenRole()
	defer sub.Close()
	var current uint64
	end := func() {} // ends the term under way and waits for its fn
	defer func() { end() }()
	for {
		select {
		case <-ctx.Done():
			return
		case l := <-sub.C():
			if l.Leader && l.Term == current {
				continue // another change within the term (a new epoch, say)
			}
			end()
			end = func() {}
			if l.Leader {
				current = l.Term
				end = runTerm(ctx, fn)
			}
		}
	}
}

// runTerm runs fn in a term of its own under ctx, and returns what ends
// the term: it cancels it and waits for fn to return.
func runTerm(ctx context.Context, fn func(term context.Context)) (end func()) {
	term, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(term)
	}()
	return func() {
		cancel()
		<-done
	}
}
