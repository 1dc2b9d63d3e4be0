package outbound

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	a2aremote "github.com/mailroom/mailroom/daemon/a2a/remote"
	"github.com/mailroom/mailroom/mailbox"
)

// How a delivery starts.
type mode int

const (
	// modeSend sends the task's message (its first, or the sender's
	// answer to the remote's question) and follows what the remote makes
	// of it.
	modeSend mode = iota
	// modeFollow follows a task the remote accepted under this lease: it
	// is never sent again.
	modeFollow
	// modeSettle is a lease recovered without an acceptance: it may have
	// been sent before a restart or a takeover. The remote is asked
	// whether it holds the task: followed if it does, sent if it surely
	// does not, and otherwise sent again only if the task is idempotent
	// (a resend, capped), else left for the operator, marked unknown.
	modeSettle
)

// delivery is one task leased for a remote agent, from its lease to its
// result (or question) posted, a repair that ends it, or the operator's
// hand.
type delivery struct {
	r     *remote
	task  mailbox.Task
	lease mailbox.Lease
	start time.Time

	cancel context.CancelFunc
	// cuts end the contexts of the streams the delivery opened (with mu).
	cuts []context.CancelFunc
	// aborted: a cancel or a repair ended the lease; the remote is told
	// to cancel (best effort).
	aborted atomic.Bool

	mu           sync.Mutex
	state        string
	remoteTaskID string
	lastErr      string
	attempts     int
	nextTryMs    int64
	// resends counts the sends made again after one that may have reached
	// the remote, which could not say whether it holds the task.
	resends int
}

// begin starts delivering a task leased for the agent; remoteTaskID is
// the remote's id of a task to follow.
func (r *remote) begin(ctx context.Context, task mailbox.Task, lease mailbox.Lease, m mode, remoteTaskID string) {
	ctx, cancel := context.WithCancel(ctx)
	dl := &delivery{r: r, task: task, lease: lease, start: time.Now(), cancel: cancel, state: mailbox.DeliverySending}
	if m == modeFollow {
		// Listed as accepted from the start: a recovered delivery shown
		// as sending, even for a moment, tells the operator it is sent
		// again.
		dl.state, dl.remoteTaskID = mailbox.DeliveryAccepted, remoteTaskID
	}
	if m == modeSettle {
		dl.state = mailbox.DeliveryChecking
		dl.lastErr = "recovered after a restart or a takeover without an acceptance: asking the remote whether it holds the task"
	}
	r.mu.Lock()
	r.deliveries[lease.LeaseID] = dl
	r.mu.Unlock()
	r.d.remote.StatusChanged()
	r.wg.Go(func() {
		defer dl.finish()
		dl.run(ctx, m)
	})
}

func (dl *delivery) attrs(args ...any) []any {
	return append([]any{"agent", dl.r.agent, "task_id", dl.task.ID, "lease_id", dl.lease.LeaseID}, args...)
}

// repaired ends the delivery of ev's task when ev ended the lease it is
// delivered under, and reports whether it was one of this remote's.
func (r *remote) repaired(ev mailbox.Event) bool {
	r.mu.Lock()
	var dl *delivery
	if ev.LeaseID != "" {
		dl = r.deliveries[ev.LeaseID]
	} else {
		for _, x := range r.deliveries {
			if x.task.ID == ev.TaskID {
				dl = x
			}
		}
	}
	if dl == nil || dl.task.ID != ev.TaskID {
		r.mu.Unlock()
		return false
	}
	if dl.parked() {
		// Left for the operator, who has now acted.
		delete(r.deliveries, dl.lease.LeaseID)
		r.d.o.Notes.Set(dl.lease.LeaseID, "")
		r.mu.Unlock()
		notify(r.free)
		r.d.remote.StatusChanged()
		return true
	}
	r.mu.Unlock()
	r.d.log.Info("a delivered task's lease ended ("+ev.Type+"): stopping its delivery and passing the cancel on to the remote", dl.attrs()...)
	dl.abort(ev.Type)
	return true
}

// parked reports whether the delivery is left for the operator: it holds
// its lease but no slot.
func (dl *delivery) parked() bool {
	dl.mu.Lock()
	defer dl.mu.Unlock()
	return dl.state == mailbox.DeliveryLost || dl.state == mailbox.DeliveryUnknown
}

func (dl *delivery) set(state, lastErr string, nextTry time.Time) {
	dl.mu.Lock()
	dl.state, dl.lastErr = state, lastErr
	dl.nextTryMs = 0
	if !nextTry.IsZero() {
		dl.nextTryMs = nextTry.UnixMilli()
	}
	dl.mu.Unlock()
	dl.r.d.remote.StatusChanged()
}

func (dl *delivery) status() mailbox.DeliveryStatus {
	dl.mu.Lock()
	defer dl.mu.Unlock()
	st := mailbox.DeliveryStatus{TaskID: dl.task.ID, LeaseID: dl.lease.LeaseID, State: dl.state, RemoteTaskID: dl.remoteTaskID,
		LastError: dl.lastErr, Attempts: dl.attempts, NextTryMs: dl.nextTryMs, Resends: dl.resends}
	if dl.task.Idempotent() {
		st.ResendMax = max(dl.r.d.o.ResendMax, 0)
	}
	return st
}

func (dl *delivery) remoteID() string {
	dl.mu.Lock()
	defer dl.mu.Unlock()
	return dl.remoteTaskID
}

// abort ends the delivery because its lease ended (a cancel, a requeue,
// a move, a force-error).
func (dl *delivery) abort(why string) {
	dl.aborted.Store(true)
	dl.set(mailbox.DeliveryCanceling, why, time.Time{})
	dl.cancel()
}

// finish passes an abort on to the remote and frees the delivery's slot;
// a delivery left for the operator stays listed until a repair ends it.
func (dl *delivery) finish() {
	if dl.aborted.Load() {
		dl.cancelRemote()
	}
	r := dl.r
	r.mu.Lock()
	if !dl.parked() {
		delete(r.deliveries, dl.lease.LeaseID)
	}
	r.mu.Unlock()
	dl.mu.Lock()
	for _, cut := range dl.cuts {
		cut()
	}
	dl.mu.Unlock()
	dl.cancel()
	notify(r.free)
	r.d.remote.StatusChanged()
}

// cancelRemote asks the remote to cancel its task, best effort: the lease
// guard refuses whatever it answers later anyway.
func (dl *delivery) cancelRemote() {
	id := dl.remoteID()
	dl.r.d.stats.ended(outcomeCanceled)
	if id == "" {
		dl.r.d.log.Info("delivery ended by a cancel or repair before the remote accepted it", dl.attrs()...)
		return
	}
	client := dl.r.currentClient()
	if client == nil {
		dl.r.d.log.Warn("a cancel could not be passed on: the remote's card was never read (its late answer will be refused)", dl.attrs("remote_task_id", id)...)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), dl.r.d.o.CallTimeout)
	defer cancel()
	_, err := client.Cancel(ctx, id)
	if err != nil && !errors.Is(err, a2aremote.ErrNotCancelable) {
		dl.r.d.log.Warn("passing a cancel on to the remote failed (its late answer will be refused)", dl.attrs("remote_task_id", id, "err", err)...)
		return
	}
	dl.r.d.log.Info("cancel passed on to the remote", dl.attrs("remote_task_id", id)...)
}

func (dl *delivery) run(ctx context.Context, m mode) {
	var remoteTaskID string
	if m == modeFollow {
		rec, err := dl.r.d.mailbox.Task(ctx, dl.task.ID)
		if err != nil || !rec.AcceptedUnder(dl.lease.LeaseID) {
			dl.r.d.log.Error("a delivery to follow has no acceptance recorded under its lease; left for the operator", dl.attrs("err", err)...)
			dl.park(mailbox.DeliveryUnknown, "no acceptance recorded under this lease", outcomeUnknown)
			return
		}
		remoteTaskID = rec.Remote.TaskID
		dl.accepted(remoteTaskID)
	}
	select {
	case <-dl.r.ready:
	default:
		dl.set(dl.status().State, "waiting for the remote's card", time.Time{})
		select {
		case <-dl.r.ready:
		case <-ctx.Done():
			return
		}
	}
	switch m {
	case modeFollow:
		dl.follow(ctx, remoteTaskID)
		return
	case modeSettle:
		if !dl.recovered(ctx) {
			return
		}
	}
	dl.send(ctx)
}

// resend counts one more send of an idempotent task after one that may
// have reached the remote; past remote_resend_max it leaves the lease for
// the operator instead, and reports false.
func (dl *delivery) resend(why string) bool {
	r := dl.r
	dl.mu.Lock()
	dl.resends++
	n := dl.resends
	dl.mu.Unlock()
	if n > r.d.o.ResendMax {
		r.d.log.Warn("an idempotent task was sent again as often as remote_resend_max allows; its lease is left for the operator", dl.attrs("resends", n-1, "why", why)...)
		dl.mu.Lock()
		dl.resends = n - 1
		dl.mu.Unlock()
		dl.park(mailbox.DeliveryUnknown, fmt.Sprintf("sent again %d times (remote_resend_max %d) after sends that may have reached the remote, which cannot say whether it holds the task (%s): not sent again; requeue or force-error it", n-1, max(r.d.o.ResendMax, 0), why), outcomeUnknown)
		return false
	}
	r.d.stats.resent()
	return true
}

func (dl *delivery) accepted(remoteTaskID string) {
	dl.mu.Lock()
	dl.remoteTaskID = remoteTaskID
	dl.mu.Unlock()
	dl.set(mailbox.DeliveryAccepted, "", time.Time{})
}

// park leaves the lease for the operator. The A2A caller of the task
// sees why in its status message (its state stays working).
func (dl *delivery) park(state, why, outcome string) {
	note := "the delivery to remote agent " + dl.r.agent + " is left to the operator: "
	if state == mailbox.DeliveryLost {
		note = "the remote agent " + dl.r.agent + " lost this task; the delivery is left to the operator: "
	}
	dl.r.d.o.Notes.Set(dl.lease.LeaseID, note+why)
	dl.set(state, why, time.Time{})
	dl.r.d.stats.ended(outcome)
}
