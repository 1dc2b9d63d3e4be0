package outbound

import (
	"context"
	"errors"
	"time"

	a2aremote "github.com/mailroom/mailroom/daemon/a2a/remote"
	"github.com/mailroom/mailroom/internal/retry"
	"github.com/mailroom/mailroom/mailbox"
)

// Settling a send that may have reached the remote: the remote is asked
// whether it holds the task (followed if it does, sent if it surely does
// not), at recovery and after a send cut before its answer.

// recovered settles a lease recovered without an acceptance, and reports
// whether the task is to be sent (the remote surely does not hold it, or
// cannot say and the task is idempotent, within remote_resend_max).
func (dl *delivery) recovered(ctx context.Context) bool {
	client := dl.r.currentClient()
	// Any send under this lease was made by an earlier process, leader or
	// loop of this agent, so it ended before this instance led and this
	// loop started.
	dl.r.d.mu.Lock()
	since := dl.r.d.ledSince
	dl.r.d.mu.Unlock()
	if dl.r.startedAt.After(since) {
		since = dl.r.startedAt
	}
	t, v, why := dl.settle(ctx, client, since)
	switch v {
	case verdictFound:
		dl.r.d.log.Info("recovering a delivery the remote holds although its acceptance was never recorded: following it, never sending it again", dl.attrs("remote_task_id", t.ID)...)
		dl.adopt(ctx, client, t)
		return false
	case verdictAbsent:
		dl.r.d.log.Info("recovering a delivery the remote never got (it lists no task of its context): sending it", dl.attrs()...)
		return true
	case verdictCannot:
		if !dl.task.Idempotent() {
			dl.r.d.log.Warn("a delivery may have reached the remote before the restart, the remote cannot say, and the task is not idempotent: its lease is left for the operator (requeue or force-error it)", dl.attrs("why", why)...)
			dl.park(mailbox.DeliveryUnknown, "it may have reached the remote before the daemon restarted or lost the lead, and the task is not idempotent; "+why+": not sent again; requeue or force-error it", outcomeUnknown)
			return false
		}
		dl.r.d.log.Info("recovering an idempotent delivery the remote may have: sending it again", dl.attrs("why", why)...)
		return dl.resend("it may have reached the remote before the daemon restarted or lost the lead; " + why)
	}
	return false
}

// Verdicts of settle: what the remote said of a task it may hold.
type verdict int

const (
	verdictStopped verdict = iota // the delivery ended while it asked
	verdictFound                  // it holds the task
	verdictAbsent                 // it surely does not
	verdictCannot                 // it cannot say
)

// settle asks the remote whether it holds the task, whose first message
// may have reached it in a send that ended (failed) by since: a send cut
// before its answer, or one of an earlier process or leader (since is
// when this instance began leading). It asks SettleDelay after since, so
// that a remote still taking the message has stored it; a remote that
// does not answer is asked again with backoff while the lease is held.
// why says, for verdictCannot, why the remote cannot say.
func (dl *delivery) settle(ctx context.Context, client *a2aremote.Client, since time.Time) (t a2aremote.Task, v verdict, why string) {
	r := dl.r
	if client.CanList() {
		at := since.Add(r.d.o.SettleDelay)
		dl.set(mailbox.DeliveryChecking, "the send may have reached the remote: asking it whether it holds the task", at)
		if wait := time.Until(at); wait > 0 && !retry.Sleep(ctx, wait) {
			return t, verdictStopped, ""
		}
	}
	for n := 1; ; n++ {
		client = r.currentClient()
		cctx, cancel := context.WithTimeout(ctx, r.d.o.CallTimeout)
		t, found, err := client.Find(cctx, dl.task.ID)
		cancel()
		r.observe(err)
		switch {
		case ctx.Err() != nil:
			return t, verdictStopped, ""
		case err == nil && found:
			r.d.stats.settled("found")
			r.contextKept.Store(true)
			return t, verdictFound, ""
		case err == nil && !r.keepsContext():
			r.d.stats.settled("cannot")
			return t, verdictCannot, "the remote lists no task of the context the daemon gave it, but none of its tasks has yet shown that it keeps the contextId it is sent, so that proves nothing"
		case err == nil:
			r.d.stats.settled("absent")
			return t, verdictAbsent, ""
		case errors.Is(err, a2aremote.ErrCannotList):
			r.d.stats.settled("cannot")
			return t, verdictCannot, err.Error()
		case !a2aremote.Retryable(err):
			r.d.stats.settled("cannot")
			return t, verdictCannot, "asking it whether it holds the task failed: " + err.Error()
		}
		wait := r.d.retries.After(n)
		dl.set(mailbox.DeliveryChecking, "asking the remote whether it holds the task failed, asking again: "+err.Error(), time.Now().Add(wait))
		if !retry.Sleep(ctx, wait) {
			return t, verdictStopped, ""
		}
	}
}

// adopt takes a task the remote holds, though its acceptance was never
// recorded: recorded now, then followed (its outcome read with Get, which
// carries its artifacts), never sent again.
func (dl *delivery) adopt(ctx context.Context, client *a2aremote.Client, t a2aremote.Task) {
	if !dl.accept(ctx, client, t) {
		return
	}
	dl.follow(ctx, t.ID)
}
