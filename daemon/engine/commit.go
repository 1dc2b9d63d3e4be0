package engine

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/mailroom/mailroom/daemon/store"
	"github.com/mailroom/mailroom/mailbox"
)

// settle runs on the store's writer goroutine, once per event, in seq
// order. Publishing under the durable state's lock keeps subscribers'
// snapshots and live events seamless: a subscriber registers under the same
// lock.
func (e *Engine) settle(ev mailbox.Event, err error) {
	if err != nil {
		e.broken.Store(true)
		return
	}
	e.durableMu.Lock()
	defer e.durableMu.Unlock()
	if aerr := e.durable.Apply(ev); aerr != nil {
		// The event was decided on a state that mirrors this one; if they
		// disagree the engine has a bug, and every later decision would be
		// made on a state that is not the log's. Stop deciding; reads keep
		// serving what is durable, and a restart replays the log.
		e.bug(fmt.Errorf("the durable state refused durable event %d (%s): %w", ev.Seq, ev.Type, aerr))
		return
	}
	e.hub.publish(ev)
	e.presence.settled(ev)
	e.wakeSeqWaiters()
}

// bug fails the engine: from now on every write is refused with a message
// that says why and asks for a restart. It returns that refusal.
func (e *Engine) bug(cause error) error {
	refusal := &mailbox.Error{Code: mailbox.CodeUnavailable,
		Message: "the mailbox stopped accepting writes after an internal error (see the daemon's log); reads still work. Restart the daemon: it replays its log"}
	if e.failed.CompareAndSwap(nil, refusal) {
		e.log.Error("engine failed: refusing writes until a restart", "err", cause)
	}
	return e.failed.Load()
}

// recoverLocked rebuilds the decided state from the durable one after a
// failed write. Every event appended before the failure must have had its
// done called first: until then the store may still fail (or, for events
// before the failed one, complete) them, and the decided state cannot be
// known.
func (e *Engine) recoverLocked() error {
	e.pending.Wait()
	if err := e.st.Reset(); err != nil {
		return e.writeFailure("nothing was changed (reads still work)", err)
	}
	e.durableMu.RLock()
	e.decided = e.durable.Clone()
	e.durableMu.RUnlock()
	e.broken.Store(false)
	e.log.Warn("log writes work again; decisions resume from the durable state", "seq", e.decided.Seq)
	return nil
}

// writeFailure is the answer to a request whose event the store could not
// write. A client sees what an operator can act on, never a path or a
// system call's text; the cause goes to the daemon's log.
func (e *Engine) writeFailure(outcome string, err error) error {
	if errors.Is(err, store.ErrNotLeader) {
		// Fenced: another instance took the lead while this one could not
		// look; nothing was written.
		e.log.Warn("an append was fenced: another instance leads the shared mailbox now", "err", err)
		return leaderChanged("this instance lost the lead of the shared mailbox (another took over while it was paused or cut off); nothing was changed")
	}
	e.log.Error("the mailbox log could not be written", "err", err)
	return &mailbox.Error{Code: mailbox.CodeUnavailable,
		Message: "the mailbox could not write its log: " + storeProblem(err) + "; " + outcome}
}

// storeProblem says in an operator's words what went wrong with the store.
func storeProblem(err error) string {
	switch {
	case errors.Is(err, syscall.ENOSPC):
		return "no space left on the data dir's filesystem"
	case errors.Is(err, syscall.EDQUOT):
		return "the disk quota of the data dir's filesystem is used up"
	case errors.Is(err, syscall.EFBIG):
		return "a log file reached the daemon's file size limit"
	case errors.Is(err, syscall.EROFS):
		return "the data dir's filesystem is read-only"
	case errors.Is(err, syscall.EIO):
		return "the data dir's disk reported an I/O error"
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return "the daemon may not write to its data dir"
	}
	return "the write failed (the daemon's log has the cause)"
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
	e.durableMu.RLock()
	defer e.durableMu.RUnlock()
	return e.durable.Snapshot(e.opts.Now().UnixMilli())
}

// confirmTimeout bounds how long an answer waits for the store to confirm
// the instance's view (store.Current.Confirm).
const confirmTimeout = 10 * time.Second

// current is the check every answer made from the state passes before it
// is given, unless a fenced append vouches for it (a decision that
// appended was made while this instance led: the append would have been
// refused otherwise). On a shared store an instance that could not look
// for a while (a pause) may have been overtaken; its view is confirmed
// first, and an answer it cannot stand behind becomes a 503 that says so
// and that nothing changed. On a store of its own it is always current.
//
// led is whether the instance led when the answer was made (decisions
// only run while it leads), seq the durable seq it was made at. An answer
// made while leading stands only if the instance still leads with the
// same epoch (then nobody else wrote since); one made while following
// only if reading the table to its head found nothing past seq
// (errBehind otherwise: the caller may make it again, see read).
func (e *Engine) current(led bool, seq uint64) error {
	c := e.cur
	if c == nil {
		return nil
	}
	var err error
	if !c.CurrentAt(time.Now()) {
		ctx, cancel := context.WithTimeout(context.Background(), confirmTimeout)
		defer cancel()
		err = c.Confirm(ctx)
	}
	if err == nil && !led && e.DurableSeq() != seq {
		// A follower read to the head while the answer was made (this
		// call's Confirm, another's, or its own reading): the view is
		// current now, but the answer was made before some of it. This
		// holds when the view was already current too: the read that made
		// it so may have been applied after the answer began, and a
		// follower resumed from a pause answered from what it knew before
		// it (a queue without the leases the new leader gave meanwhile).
		err = errBehind
	}
	if now := e.leading.Load(); err == nil && now != led {
		// The role changed under the answer (another question's Confirm
		// stepped this instance down, or it took the lead).
		err = errBehind
		if led {
			err = store.ErrNotLeader
		}
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, errBehind) && !led:
		return err
	}
	e.log.Warn("an answer made from this instance's state was withheld: its view of the shared mailbox could not be confirmed current", "err", err)
	return leaderChanged("this instance could not confirm that its view of the shared mailbox is current (it was paused or cut off, and the lead may have moved); nothing was changed")
}

// read runs fn, which makes an answer from the durable state, and gives
// it only when that state was current (see current): a follower found
// behind the table has caught up, and fn runs again.
func (e *Engine) read(fn func()) error {
	if e.cur == nil {
		// A store of its own: the view is always current.
		fn()
		return nil
	}
	// A follower reading a busy log may see it move under a few answers
	// in a row; each try reads the state anew.
	for range 5 {
		led, seq := e.leading.Load(), e.DurableSeq()
		fn()
		if err := e.current(led, seq); !errors.Is(err, errBehind) {
			return err
		}
	}
	return leaderChanged("this instance's view of the shared mailbox kept moving while it answered; nothing was changed")
}

// errBehind says a follower's view was behind the shared log when an
// answer was made from it: it is current now, and the answer is made again.
var errBehind = errors.New("this instance's view was behind the shared log")

// leaderChanged is the answer to a request an instance cannot stand
// behind: 503, nothing changed, safe to send again (through any instance).
func leaderChanged(why string) error {
	return &mailbox.Error{Code: mailbox.CodeUnavailable, Message: why + "; retry",
		Details: &mailbox.ErrorDetails{Retry: mailbox.RetryLeaderChanged}}
}
