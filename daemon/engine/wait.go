package engine

import (
	"sync"

	"github.com/mailroom/mailroom/mailbox"
)

// Long polls. A lease or drain that finds nothing may wait for work to
// arrive. Waiters queue per recipient (per sender for drains), and only the
// one at the head of its queue is woken, so waiters are served in arrival
// order; a waiter leaving (served, timed out, or its client gone) wakes the
// next. Waking happens when an event is decided, not when it is durable:
// the waiter's own lease is appended after the send it takes, so it is
// never acknowledged before that send is.

// waitKind tells the two kinds of queues apart.
type waitKind uint8

const (
	waitLease waitKind = iota // waiting for a task queued for a recipient
	waitDrain                 // waiting for a result pending for a sender
)

type waitKey struct {
	kind  waitKind
	agent string // "" waits for any agent
}

// waiter is one long poll. ch holds at most one wake-up.
type waiter struct{ ch chan struct{} }

// waiters is every long poll of the engine.
type waiters struct {
	mu     sync.Mutex
	queues map[waitKey][]*waiter
	// closed is closed when the engine shuts down: every waiter answers
	// at once with what it has.
	closed chan struct{}
	shut   bool
}

func newWaiters() *waiters {
	return &waiters{queues: make(map[waitKey][]*waiter), closed: make(chan struct{})}
}

// join queues a new waiter under k and reports whether it is at the head;
// ok is false once the engine is shutting down.
func (w *waiters) join(k waitKey) (wt *waiter, head, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.shut {
		return nil, false, false
	}
	wt = &waiter{ch: make(chan struct{}, 1)}
	w.queues[k] = append(w.queues[k], wt)
	return wt, len(w.queues[k]) == 1, true
}

// leave takes wt out of its queue and wakes the waiter that is now at the
// head, if any: what wt did not take (or the wake-up it got) is the next
// one's to try.
func (w *waiters) leave(k waitKey, wt *waiter) {
	w.mu.Lock()
	defer w.mu.Unlock()
	q := w.queues[k]
	for i, x := range q {
		if x == wt {
			q = append(q[:i:i], q[i+1:]...)
			break
		}
	}
	if len(q) == 0 {
		delete(w.queues, k)
		return
	}
	w.queues[k] = q
	wakeUp(q[0])
}

// wake wakes the head waiter for agent, and the head of those waiting for
// any agent.
func (w *waiters) wake(kind waitKind, agent string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, k := range []waitKey{{kind, agent}, {kind, ""}} {
		if q := w.queues[k]; len(q) > 0 {
			wakeUp(q[0])
		}
	}
}

// count reports how many waiters wait, for metrics and tests.
func (w *waiters) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, q := range w.queues {
		n += len(q)
	}
	return n
}

// shutdown answers every waiter.
func (w *waiters) shutdown() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.shut {
		w.shut = true
		close(w.closed)
	}
}

func wakeUp(wt *waiter) {
	select {
	case wt.ch <- struct{}{}:
	default:
	}
}

// wakeFor wakes the waiters an event just decided may serve: a task queued
// (sent, requeued, or moved) for its recipient, a result queued for its sender.
// It runs under the engine's lock, with s the decided state after ev.
func (e *Engine) wakeFor(s *mailbox.State, ev mailbox.Event) {
	switch ev.Type {
	case mailbox.EventTaskSent:
		e.waiting.wake(waitLease, ev.Task.Recipient)
	case mailbox.EventTaskRequeued, mailbox.EventTaskReplied, mailbox.EventTaskMoved:
		if _, recipient, ok := s.Parties(ev.TaskID); ok {
			e.waiting.wake(waitLease, recipient)
		}
	case mailbox.EventResultReplayed:
		e.waiting.wake(waitDrain, ev.Task.Sender)
	case mailbox.EventTaskHandedOver:
		// Its question or result now waits for its new sender.
		e.waiting.wake(waitDrain, ev.Sender)
	case mailbox.EventResultPosted, mailbox.EventTaskForceErrored, mailbox.EventTaskWithdrawn:
		if sender, _, ok := s.Parties(ev.TaskID); ok {
			e.waiting.wake(waitDrain, sender)
		}
	}
}
