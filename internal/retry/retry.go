// Package retry is how every part of Mailroom waits between tries: one
// exponential backoff with one jitter rule, and a sleep that a shutdown
// or a lost lead cuts short (river's ExponentialBackoff and
// CancellableSleep are the model). The remote dispatcher, the push
// notifier and the client's event subscription all retry with it, so a
// retry looks and behaves the same everywhere.
package retry

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff doubles the wait after each failure from Min up to Max.
type Backoff struct {
	Min, Max time.Duration
}

// Base is the wait after the n-th failure in a row (n from 1) before
// jitter: Min doubled n-1 times, never more than Max.
func (b Backoff) Base(n int) time.Duration {
	d := b.Min
	for i := 1; i < n && d < b.Max; i++ {
		if d > b.Max/2 {
			// Doubling would pass Max (or overflow): Max it is.
			return b.Max
		}
		d *= 2
	}
	return max(0, min(d, b.Max))
}

// After is the wait after the n-th failure in a row (n from 1): Base(n)
// with jitter.
func (b Backoff) After(n int) time.Duration { return Jitter(b.Base(n)) }

// Jitter is d less up to a fifth of it, at random: the tries of many
// callers that failed together (every console of a restarted daemon,
// every delivery to one remote) spread out instead of coming back in
// step, and a wait is never longer than the bound it was computed from,
// so Max is a real maximum.
func Jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return d - rand.N(d/5+1)
}

// Sleep waits for d or until ctx ends, whichever comes first, and reports
// whether it slept the whole time (false: ctx ended; stop).
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return ctx.Err() == nil
	case <-ctx.Done():
		return false
	}
}
