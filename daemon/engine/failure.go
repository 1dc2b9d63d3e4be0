package engine

import (
	"errors"
	"syscall"

	"github.com/mailroom/mailroom/daemon/store"
	"github.com/mailroom/mailroom/mailbox"
)

// The failure path: a write the store refused, answered in an operator's
// words, and the decided state rebuilt before the next decision; a bug
// the engine finds in itself, which refuses every write after it.

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
