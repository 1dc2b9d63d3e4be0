package notify

import (
	"context"

	"github.com/mailroom/mailroom/mailbox"
)

// Mailbox is what the notifier reads of the mailbox: when it leads, its
// changes (to look at the outbox again), a task and a sender's card (what
// a notification is made of). *engine.Engine is one; a test's fake is
// another.
type Mailbox interface {
	// WhileLeading runs deliver once for each term this instance leads,
	// term ending the moment it stops leading.
	WhileLeading(ctx context.Context, deliver func(term context.Context))
	// SubscribeInternal streams every change from now on.
	SubscribeInternal(ctx context.Context, after *uint64) (mailbox.Subscription, error)
	Task(ctx context.Context, id string) (mailbox.TaskRecord, error)
	Registered(ctx context.Context, agent string) (mailbox.RegisteredAgent, error)
}

// Outbox is the outbox the notifier delivers: the heads of its lines,
// what came of each attempt, its bounds, and what the notifier knows for
// the operator's view. engine.Push is one.
type Outbox interface {
	// SetStatus has the operator's view ask status for what the
	// notifier knows.
	SetStatus(status func() mailbox.PushStatus)
	// Heads returns the oldest pending notification of each line busy
	// does not report busy, and how many are pending and dead.
	Heads(ctx context.Context, busy func(taskID, configID string) bool) (heads []mailbox.Notification, pending, dead int, err error)
	// Pending reports whether notification id is still to be delivered.
	Pending(ctx context.Context, id string) (bool, error)
	// Trim drops what the bounds do not allow, at most limit, and says
	// how many it dropped.
	Trim(ctx context.Context, b mailbox.OutboxBounds, limit int) (int, error)
	// Delivered records push_delivered; DeadLettered push_dead_lettered.
	Delivered(ctx context.Context, id string, attempts int) error
	DeadLettered(ctx context.Context, id string, attempts int, lastError string) error
}
