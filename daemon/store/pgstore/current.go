package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/mailroom/mailroom/daemon/store"
)

// How current an instance's view is (store.Current). A leader that was
// paused (a long GC pause, a frozen VM, SIGSTOP) may have been replaced
// while it could not look; its appends are fenced, but what it decided,
// refused or read from its state since would be answered from a view
// another instance has overtaken. So the writer goroutine notes when each
// round trip that showed the view current started (confirmed), and an
// answer made after that plus a lease is given only once Confirm has
// looked again.

// clock0 anchors the monotonic times kept as integers.
var clock0 = time.Now()

func mono(t time.Time) int64 { return int64(t.Sub(clock0)) }

var _ store.Current = (*Store)(nil)
var _ store.Standing = (*Store)(nil)

// leadLease is how long after a round trip on the writer session started
// this instance may take itself to lead. PostgreSQL frees the lock only by
// ending the session, which it does after the session has been idle for
// SessionTimeout, counted from the end of that round trip at the earliest;
// another instance takes over no sooner. Half of it leaves room for
// scheduling and clock rates, and is still two pings long (pingEvery).
func (s *Store) leadLease() time.Duration { return s.o.SessionTimeout / 2 }

// followLease is how long after a read of the table started a follower
// takes its state to be current: it reads on every notification and at
// least every campaign interval, so one that has not read for four of
// them was kept from reading (paused) and reads before it answers.
func (s *Store) followLease() time.Duration { return 4 * s.o.CampaignInterval }

// confirm notes a round trip, started at start, that showed the view
// current. Writer goroutine only.
func (s *Store) confirm(start time.Time) { s.confirmed.Store(mono(start)) }

// CurrentAt reports whether the view is known current at t (store.Current).
func (s *Store) CurrentAt(t time.Time) bool {
	c := s.confirmed.Load()
	if c == 0 {
		return false
	}
	lease := s.followLease()
	if s.Role().Leader {
		lease = s.leadLease()
	}
	return mono(t)-c < int64(lease)
}

// Confirm makes the view current (store.Current): on the writer
// goroutine, a leader reads the leader row on its own session (a session
// that answers still holds the lock) and steps down when the epoch is no
// longer its own or the session is gone; a follower reads to the head.
func (s *Store) Confirm(ctx context.Context) error {
	done := make(chan error, 1)
	if !s.wq.Control(func() { done <- s.confirmNow() }) {
		return store.ErrClosed
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Store) confirmNow() error {
	start := time.Now()
	ctx, cancel := context.WithTimeout(s.stopCtx, s.o.SessionTimeout)
	defer cancel()
	if !s.Role().Leader {
		s.fmu.Lock()
		apply := s.apply
		s.fmu.Unlock()
		if apply == nil {
			return fmt.Errorf("postgres store (schema %s): not following yet", s.o.Schema)
		}
		if err := s.tail(ctx, apply); err != nil {
			return err
		}
		s.confirm(start)
		return nil
	}
	if s.conn == nil {
		return fmt.Errorf("postgres store (schema %s): %w (no writer session)", s.o.Schema, store.ErrNotLeader)
	}
	var epoch int64
	err := s.conn.QueryRow(ctx, `SELECT epoch FROM `+s.q+`.leader WHERE id = 1`).Scan(&epoch)
	switch {
	case err != nil:
		s.lostSession(err)
		return fmt.Errorf("postgres store (schema %s): %w (the writer session was lost: %s)", s.o.Schema, store.ErrNotLeader, scrub(err.Error(), s.o.URL))
	case epoch != s.epoch.Load():
		lost := fmt.Errorf("postgres store (schema %s): %w (epoch %d took over from %d)", s.o.Schema, store.ErrNotLeader, epoch, s.epoch.Load())
		s.log.Warn("this instance lost the lead while it could not look; stepping down", "schema", s.o.Schema, "epoch", s.epoch.Load(), "now", epoch)
		s.setFailed(lost)
		s.stepDown()
		return lost
	}
	s.confirm(start)
	return nil
}
