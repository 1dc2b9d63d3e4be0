package engine

import (
	"context"
	"errors"
	"time"

	"github.com/mailroom/mailroom/daemon/store"
	"github.com/mailroom/mailroom/mailbox"
)

// Answers made from the state on a shared store: given only while this
// instance's view is known current (store.Current), confirmed first when
// it may not be.

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
