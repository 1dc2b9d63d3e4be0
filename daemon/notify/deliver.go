package notify

import (
	"container/heap"
	"context"
	"sync"
	"time"

	"github.com/mailroom/mailroom/internal/retry"
	"github.com/mailroom/mailroom/mailbox"
)

// A term's delivery of the outbox: the look at the heads of its lines,
// an attempt per line at a time, the retries waiting in a heap by when
// they are due, and the bounds held.

// deliver is one term of leading: it delivers the outbox until term
// ends, and returns once every attempt it started has stopped (what they
// did not finish stays in the outbox for the instance that leads).
func (n *Notifier) deliver(term context.Context) {
	n.setLeading(true)
	defer n.setLeading(false)
	n.log.Info("push notifier on: this instance leads")
	var wg sync.WaitGroup
	defer wg.Wait()
	n.follow(term, &wg)
	timer := time.NewTimer(n.o.LookEvery)
	defer timer.Stop()
	var trimmed time.Time
	for term.Err() == nil {
		if time.Since(trimmed) >= n.o.LookEvery {
			n.trim(term)
			trimmed = time.Now()
		}
		n.startDue(term, &wg)
		n.scan(term, &wg)
		// At most one look at the outbox per scanEvery: a busy mailbox
		// wakes the notifier on every change.
		retry.Sleep(term, scanEvery)
		// Reset drops a tick not taken (Go 1.23's timers).
		timer.Reset(n.nextLook())
		select {
		case <-term.Done():
		case <-timer.C:
		case <-n.wake:
		}
	}
}

// nextLook is how long the notifier may sleep: until the first retry is
// due, LookEvery at most.
func (n *Notifier) nextLook() time.Duration {
	n.mu.Lock()
	defer n.mu.Unlock()
	d := n.o.LookEvery
	if len(n.due) > 0 {
		d = max(0, min(d, time.Until(n.due[0].at)))
	}
	return d
}

// scanEvery spaces the notifier's looks at the outbox.
const scanEvery = 10 * time.Millisecond

// setLeading records whether the instance leads: a term begins or ends.
func (n *Notifier) setLeading(on bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.leading = on
	// A new term (or none): the retries waiting, and what is known of
	// their attempts, are the old term's.
	n.term++
	clear(n.waiting)
	clear(n.attempts)
	n.due = nil
}

// follow wakes the notifier on every change that may have put a
// notification in the outbox, while ctx lasts.
func (n *Notifier) follow(ctx context.Context, wg *sync.WaitGroup) {
	wg.Go(func() {
		for ctx.Err() == nil {
			sub, err := n.mailbox.SubscribeInternal(ctx, nil)
			if err != nil {
				retry.Sleep(ctx, n.o.LookEvery)
				continue
			}
			// The subscription starts now, without a snapshot: look at
			// the outbox as it is, then at every change.
			n.Wake()
			for ev := range sub.Events() {
				if ev.TaskID != "" || ev.Type == mailbox.EventSnapshot {
					n.Wake()
				}
			}
			sub.Close()
		}
	})
}

// maxActive bounds the lines an attempt is being made on at once, each a
// goroutine (its POST bounded again by Options.Concurrency): a look at an
// outbox of many lines starts the oldest, and the others as these end.
func (n *Notifier) maxActive() int { return 4 * n.o.Concurrency }

// scan starts an attempt for every line (task, config) with a pending
// notification and none under way or waiting: its oldest, the oldest
// lines first, up to maxActive. It asks the state for those heads alone
// (Outbox.Heads), not for a copy of the outbox.
func (n *Notifier) scan(ctx context.Context, wg *sync.WaitGroup) {
	heads, pending, dead, err := n.outbox.Heads(ctx, func(task, config string) bool {
		n.mu.Lock()
		defer n.mu.Unlock()
		k := key{task, config}
		return n.active[k] || n.waiting[k] != nil
	})
	if err != nil {
		return
	}
	n.stats.gauges(pending, dead)
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, head := range heads {
		if len(n.active) >= n.maxActive() {
			return
		}
		k := key{head.TaskID, head.ConfigID}
		if n.active[k] || n.waiting[k] != nil {
			continue // started since the look
		}
		n.start(ctx, wg, head, 1)
	}
}

// startDue starts the retries that are due, up to maxActive.
func (n *Notifier) startDue(ctx context.Context, wg *sync.WaitGroup) {
	n.mu.Lock()
	defer n.mu.Unlock()
	now := time.Now()
	for len(n.due) > 0 && !n.due[0].at.After(now) && len(n.active) < n.maxActive() {
		r := heap.Pop(&n.due).(*pendingRetry)
		k := key{r.x.TaskID, r.x.ConfigID}
		if n.waiting[k] != r {
			continue
		}
		delete(n.waiting, k)
		if r.term != n.term {
			delete(n.attempts, r.x.ID)
			continue
		}
		n.start(ctx, wg, r.x, r.attempt)
	}
}

// start makes attempt number attempt at x, the head of its line, in a
// goroutine of its own; failed with attempts left, the line waits for its
// retry (due), else it is free for its next notification. The caller
// holds n.mu.
func (n *Notifier) start(ctx context.Context, wg *sync.WaitGroup, x mailbox.Notification, attempt int) {
	k := key{x.TaskID, x.ConfigID}
	n.active[k] = true
	term := n.term
	wg.Go(func() {
		again, wait := n.try(ctx, x, attempt)
		n.mu.Lock()
		delete(n.active, k)
		if again && term == n.term && ctx.Err() == nil {
			r := &pendingRetry{x: x, attempt: attempt + 1, at: time.Now().Add(wait), term: term}
			n.waiting[k] = r
			heap.Push(&n.due, r)
		} else {
			// What is known of its attempts goes with the delivery: the
			// next one (another run, another leader) starts the count
			// again.
			delete(n.attempts, x.ID)
		}
		n.mu.Unlock()
		n.Wake()
	})
}

// trimBatch is how many drops one decision of the bounds makes.
const trimBatch = 1000

// trim holds the outbox to the bounds: the leader drops what they do not
// allow (Outbox.Trim), a batch at a time.
func (n *Notifier) trim(ctx context.Context) {
	for ctx.Err() == nil {
		dropped, err := n.outbox.Trim(ctx, *n.o.Bounds, trimBatch)
		n.stats.dropped(dropped)
		if err != nil {
			n.log.Warn("push outbox: dropping what its bounds do not allow failed; tried again later", "err", err)
			return
		}
		if dropped < trimBatch {
			return
		}
	}
}

// pendingRetry is a line's next attempt, due at at.
type pendingRetry struct {
	x       mailbox.Notification
	attempt int
	at      time.Time
	term    uint64
}

// retryHeap orders retries by when they are due.
type retryHeap []*pendingRetry

func (h retryHeap) Len() int           { return len(h) }
func (h retryHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h retryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *retryHeap) Push(x any)        { *h = append(*h, x.(*pendingRetry)) }
func (h *retryHeap) Pop() any {
	old := *h
	r := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return r
}
