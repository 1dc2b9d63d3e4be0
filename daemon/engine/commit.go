package engine

import (
	"fmt"

	"github.com/mailroom/mailroom/mailbox"
)

// decide runs one state change: check it against spec (fn returns the event
// or a refusal), append it, apply it to spec, and wait until it is durable.
// The check and the append happen under one lock, so two requests racing
// for the same lease are decided one after the other; the wait happens
// outside it, so many requests share one sync. after, when given, runs under
// the lock right after spec applied the event (to read derived facts such as
// the leased task).
func (e *Engine) decide(fn func(s *mailbox.State, nowMs int64) (mailbox.Event, error), after func(s *mailbox.State, ev mailbox.Event)) (mailbox.Event, error) {
	if e.closed.Load() {
		return mailbox.Event{}, mailbox.Errorf(mailbox.CodeUnavailable, "the mailbox is shutting down; retry against the restarted daemon")
	}
	e.mu.Lock()
	if e.broken.Load() {
		if err := e.recoverLocked(); err != nil {
			e.mu.Unlock()
			return mailbox.Event{}, err
		}
	}
	ev, err := fn(e.spec, e.opts.Now().UnixMilli())
	if err != nil {
		e.mu.Unlock()
		return mailbox.Event{}, err
	}
	ev.Seq = e.spec.Seq + 1
	if err := e.spec.Apply(ev); err != nil {
		e.mu.Unlock()
		// A decision that its own state refuses is a bug, not bad input.
		return mailbox.Event{}, fmt.Errorf("engine: decided event does not apply: %w", err)
	}
	if after != nil {
		after(e.spec, ev)
	}
	done := make(chan error, 1)
	e.pending.Add(1)
	e.st.Append(ev, func(err error) {
		e.durable(ev, err)
		e.pending.Done()
		done <- err
	})
	e.mu.Unlock()
	if err := <-done; err != nil {
		return mailbox.Event{}, &mailbox.Error{Code: mailbox.CodeUnavailable,
			Message: "the mailbox could not write its log, so nothing was changed: " + err.Error()}
	}
	e.maybeCompact()
	return ev, nil
}

// durable runs on the store's writer goroutine, once per event, in seq
// order. Publishing under the committed lock keeps subscribers' snapshots
// and live events seamless: a subscriber registers under the same lock.
func (e *Engine) durable(ev mailbox.Event, err error) {
	if err != nil {
		e.broken.Store(true)
		return
	}
	e.cmu.Lock()
	if aerr := e.committed.Apply(ev); aerr != nil {
		// The event was decided on spec, which mirrors committed; if they
		// disagree the engine has a bug. Keep serving what is durable.
		e.log.Error("committed state refused a durable event", "seq", ev.Seq, "type", ev.Type, "err", aerr)
	}
	e.hub.publish(ev)
	e.cmu.Unlock()
}

// recoverLocked rebuilds spec from committed after a failed write. Every
// event appended before the failure must have had its done called first:
// until then the store may still fail (or, for events before the failed
// one, complete) them, and spec cannot be known.
func (e *Engine) recoverLocked() error {
	e.pending.Wait()
	if err := e.st.Reset(); err != nil {
		return &mailbox.Error{Code: mailbox.CodeUnavailable, Message: "the mailbox cannot write its log, so nothing was changed (reads still work): " + err.Error()}
	}
	e.cmu.RLock()
	e.spec = e.committed.Clone()
	e.cmu.RUnlock()
	e.broken.Store(false)
	e.log.Warn("log writes work again; decisions resume from the durable state", "seq", e.spec.Seq)
	return nil
}

// maybeCompact starts a background compaction when the log has outgrown the
// last snapshot by the configured factor. Stats is cheap but not free, so it
// is looked at every 256 commits.
func (e *Engine) maybeCompact() {
	if e.opts.AutoCompactFactor < 0 || e.sinceCheck.Add(1)%256 != 0 {
		return
	}
	st := e.st.Stats()
	limit := int64(e.opts.AutoCompactFactor * float64(st.SnapshotBytes))
	if limit < e.opts.AutoCompactMinBytes {
		limit = e.opts.AutoCompactMinBytes
	}
	if st.LogBytes <= limit || !e.compacting.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer e.compacting.Store(false)
		out, err := e.st.Compact(e.snapshot)
		if err != nil {
			e.log.Error("automatic compaction failed", "err", err)
			return
		}
		e.log.Info("log compacted automatically", "seq", out.Seq, "bytes_before", out.BytesBefore, "bytes_after", out.BytesAfter)
	}()
}

func (e *Engine) snapshot() *mailbox.Snapshot {
	e.cmu.RLock()
	defer e.cmu.RUnlock()
	return e.committed.Snapshot(e.opts.Now().UnixMilli())
}
