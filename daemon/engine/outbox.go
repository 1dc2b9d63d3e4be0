package engine

import (
	"context"

	"github.com/mailroom/mailroom/mailbox"
)

// Push is the engine's side the notifier delivers the outbox through
// (daemon/notify): the heads of its lines, what it learns of each
// notification (push_delivered, push_dead_lettered), the bounds it holds
// the outbox to, and what it knows for the operator's view. None of it
// is the mailbox's service to its clients, so it stands apart from the
// Service methods.
type Push struct{ e *Engine }

// Push is the notifier's side of the engine.
func (e *Engine) Push() Push { return Push{e} }

// SetStatus has the operator's view of the outbox ask status for what
// the notifier knows of its deliveries: whether it delivers (this
// instance leads), its attempts by notification id, its bounds and what
// it dropped by them.
func (p Push) SetStatus(status func() mailbox.PushStatus) {
	p.e.pushStatus.Store(&status)
}

// Outbox returns the push notifications not yet delivered (pending and
// dead), in the order they were made.
func (p Push) Outbox(ctx context.Context) ([]mailbox.Notification, error) {
	e := p.e
	var out []mailbox.Notification
	err := e.read(func() {
		e.durableMu.RLock()
		out = e.durable.Outbox()
		e.durableMu.RUnlock()
	})
	return out, err
}

// Heads returns the oldest pending notification of each line (a
// task's push config, or its sender's webhook) that busy does not report
// busy, in the order they were made, and how many notifications are
// pending and dead: what the notifier's look needs, without a copy of the
// outbox (mailbox.State.OutboxHeads). busy is called under the durable
// state's read lock.
func (p Push) Heads(ctx context.Context, busy func(taskID, configID string) bool) (heads []mailbox.Notification, pending, dead int, err error) {
	e := p.e
	err = e.read(func() {
		e.durableMu.RLock()
		heads, pending, dead = e.durable.OutboxHeads(busy)
		e.durableMu.RUnlock()
	})
	return heads, pending, dead, err
}

// Pending reports whether notification id is still to be
// delivered (not delivered, dropped or dead).
func (p Push) Pending(ctx context.Context, id string) (bool, error) {
	e := p.e
	var ok bool
	err := e.read(func() {
		e.durableMu.RLock()
		ok = e.durable.NotificationPending(id)
		e.durableMu.RUnlock()
	})
	return ok, err
}

// Trim drops the notifications the bounds b do not allow, at most
// limit of them, the oldest first (mailbox.State.OutboxOverflow chooses
// them): a push_dropped event each, on the daemon's word
// (mailbox.OutboxPrincipal) with the reason naming the bound, so a drop
// is audited and every replay drops the same. They are chosen from the
// durable state, outside the decision lock, and decided one by one: one
// delivered or dropped meanwhile is passed over. It returns how many were
// dropped.
func (p Push) Trim(ctx context.Context, b mailbox.OutboxBounds, limit int) (int, error) {
	e := p.e
	var drops []mailbox.OutboxDrop
	if err := e.read(func() {
		e.durableMu.RLock()
		drops = e.durable.OutboxOverflow(b, e.opts.Now().UnixMilli(), limit)
		e.durableMu.RUnlock()
	}); err != nil || len(drops) == 0 {
		return 0, err
	}
	next := 0
	n, err := e.decideN(len(drops), func(s *mailbox.State, now int64) (mailbox.Event, bool, error) {
		for next < len(drops) {
			d := drops[next]
			next++
			if ev, err := s.DecidePushDrop(d.ID, mailbox.OutboxPrincipal, d.Reason, false, now); err == nil {
				return ev, true, nil
			}
		}
		return mailbox.Event{}, false, nil
	}, nil)
	if n > 0 {
		e.log.Warn("push notifications dropped: the outbox passed a bound", "dropped", n, "reason", drops[0].Reason)
	}
	return n, err
}

// Delivered records that notification id's receiver acknowledged it
// after attempts attempts. Refused (conflict, not found) when it is no
// longer pending: an operator dropped it, or another leader delivered it.
func (p Push) Delivered(ctx context.Context, id string, attempts int) error {
	e := p.e
	_, _, err := e.decide(func(s *mailbox.State, now int64) (mailbox.Event, bool, error) {
		return must(s.DecidePushDelivered(id, attempts, now))
	}, nil)
	return err
}

// DeadLettered records that notification id's retries ran out after
// attempts attempts, the last failing with lastError.
func (p Push) DeadLettered(ctx context.Context, id string, attempts int, lastError string) error {
	e := p.e
	_, _, err := e.decide(func(s *mailbox.State, now int64) (mailbox.Event, bool, error) {
		return must(s.DecidePushDeadLettered(id, attempts, lastError, now))
	}, nil)
	if err == nil {
		e.log.Warn("push notification dead-lettered", "notification", id, "attempts", attempts, "last_error", lastError)
	}
	return err
}
