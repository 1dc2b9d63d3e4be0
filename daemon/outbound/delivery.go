package outbound

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	a2aremote "github.com/mailroom/mailroom/daemon/a2a/remote"
	"github.com/mailroom/mailroom/daemon/a2a/wire"
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
	r.d.eng.RemoteStatusChanged()
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
		wire.SetDeliveryNote(dl.lease.LeaseID, "")
		r.mu.Unlock()
		notify(r.free)
		r.d.eng.RemoteStatusChanged()
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
	dl.r.d.eng.RemoteStatusChanged()
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
	r.d.eng.RemoteStatusChanged()
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
		rec, err := dl.r.d.eng.Task(ctx, dl.task.ID)
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
		if wait := time.Until(at); wait > 0 && !sleep(ctx, wait) {
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
		wait := backoff(r.d.o.RetryMin, r.d.o.RetryMax, n)
		dl.set(mailbox.DeliveryChecking, "asking the remote whether it holds the task failed, asking again: "+err.Error(), time.Now().Add(wait))
		if !sleep(ctx, wait) {
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
	wire.SetDeliveryNote(dl.lease.LeaseID, note+why)
	dl.set(state, why, time.Time{})
	dl.r.d.stats.ended(outcome)
}

// send delivers the task's message, retrying transport failures with
// backoff while the lease is held, until the remote answers; then
// records its acceptance and follows it.
func (dl *delivery) send(ctx context.Context) {
	r := dl.r
	msg, err := dl.message(ctx)
	if err != nil {
		dl.postError(ctx, "mailroom cannot build the message for the remote agent: "+err.Error())
		return
	}
	var (
		client *a2aremote.Client
		first  a2aremote.Update
		st     *a2aremote.Stream
		// noStream: the remote's card says it streams, but it refused to.
		noStream bool
	)
	for n := 1; ; n++ {
		client = r.currentClient()
		dl.mu.Lock()
		dl.attempts = n
		dl.mu.Unlock()
		dl.set(mailbox.DeliverySending, "", time.Time{})
		if client.Streaming() && !noStream {
			st, first, err = dl.openStream(ctx, client, msg)
		} else if msg.TaskID != "" {
			// An answer to the remote's question. Sent without blocking,
			// a remote may answer with its task as it stood (still asking)
			// before it read the answer, which cannot be told from a new
			// question: so it blocks, for as long as the lease is held.
			first.Task, err = client.Send(ctx, msg, true)
		} else if client.Binding() == mailbox.BindingLegacy {
			// The dialect answers when the work is done: however long
			// that takes, while the lease is held. A timeout would resend
			// work under way.
			first.Task, err = client.Send(ctx, msg, false)
		} else {
			cctx, cancel := context.WithTimeout(ctx, r.d.o.CallTimeout)
			first.Task, err = client.Send(cctx, msg, false)
			cancel()
		}
		r.observe(err)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return
		}
		if client.Streaming() && !noStream && errors.Is(err, a2aremote.ErrUnsupported) {
			// Nothing was started: send it the plain way.
			r.d.log.Info("the remote refused to stream although its card says it does; sending without a stream", dl.attrs("err", err)...)
			noStream = true
			n--
			continue
		}
		if msg.TaskID != "" && errors.Is(err, a2aremote.ErrTaskNotFound) {
			r.d.log.Warn("the remote lost the task whose question the sender answered; its lease is left for the operator", dl.attrs("remote_task_id", msg.TaskID)...)
			dl.accepted(msg.TaskID)
			dl.park(mailbox.DeliveryLost, "the remote lost this task (it answers that it does not know task "+msg.TaskID+", whose question the sender answered): left for the operator", outcomeLost)
			return
		}
		if msg.TaskID != "" && a2aremote.Retryable(err) {
			// The remote holds the task, and may hold the answer: never
			// sent again, followed.
			r.d.log.Info("sending an answer to the remote failed; following its task instead of sending the answer again", dl.attrs("remote_task_id", msg.TaskID, "err", err)...)
			if !dl.accept(ctx, client, a2aremote.Task{ID: msg.TaskID, ContextID: msg.ContextID}) {
				return
			}
			dl.follow(ctx, msg.TaskID)
			return
		}
		if !a2aremote.Retryable(err) {
			dl.postError(ctx, "the remote agent refused the task: "+err.Error())
			return
		}
		retryErr := err.Error()
		if msg.TaskID == "" && a2aremote.MayHaveReceived(err) {
			// The remote may hold it (a timeout, a connection broken
			// before the answer): ask it. Sent again without asking, a
			// task that is not idempotent may be done twice, and an
			// idempotent one is done again by a remote that does not
			// dedupe on the messageId.
			t, v, why := dl.settle(ctx, client, time.Now())
			switch v {
			case verdictStopped:
				return
			case verdictFound:
				r.d.log.Info("a send failed after it reached the remote, which holds the task: following it", dl.attrs("remote_task_id", t.ID, "err", err)...)
				dl.adopt(ctx, client, t)
				return
			case verdictAbsent:
				r.d.log.Info("a send failed before it reached the remote (it lists no task of its context): sending it again", dl.attrs("err", err)...)
				retryErr = "the send failed (" + err.Error() + ") and the remote does not hold the task: sending it again"
			case verdictCannot:
				if !dl.task.Idempotent() {
					r.d.log.Warn("sending a task that is not idempotent failed after it may have reached the remote, which cannot say whether it holds it: its lease is left for the operator (requeue or force-error it)", dl.attrs("err", err, "why", why)...)
					dl.park(mailbox.DeliveryUnknown, "the send failed after it may have reached the remote ("+err.Error()+"), and the task is not idempotent; "+why+": not sent again; requeue or force-error it", outcomeUnknown)
					return
				}
				if !dl.resend("the send failed after it may have reached the remote (" + err.Error() + "); " + why) {
					return
				}
				dl.mu.Lock()
				retryErr = fmt.Sprintf("resend %d of %d (remote_resend_max): the send failed after it may have reached the remote: %s", dl.resends, r.d.o.ResendMax, err.Error())
				dl.mu.Unlock()
			}
		}
		wait := backoff(r.d.o.RetryMin, r.d.o.RetryMax, n)
		dl.set(mailbox.DeliveryRetrying, retryErr, time.Now().Add(wait))
		r.d.log.Info("sending to the remote failed before it accepted the task; retrying while the lease is held", dl.attrs("attempt", n, "retry_in", wait, "err", err)...)
		if !sleep(ctx, wait) {
			return
		}
	}
	t := first.Task
	if res, final := t.Outcome(); t.ID != "" && st == nil && final {
		// Answered at once, finished or asking: its acceptance and its
		// answer are recorded together, one sync.
		dl.answered(ctx, client, t, res)
		return
	}
	if t.ID != "" && !dl.accept(ctx, client, t) {
		if st != nil {
			st.Close()
		}
		return
	}
	if st != nil {
		var final bool
		if t, final = dl.stream(st, first, msg.TaskID != ""); final {
			dl.post(ctx, t)
			return
		}
		if ctx.Err() != nil {
			return
		}
		if t.ID != "" {
			// The stream broke: follow the task (a resubscribe, or polls).
			dl.follow(ctx, t.ID)
			return
		}
	}
	if _, final := t.Outcome(); final {
		dl.post(ctx, t)
		return
	}
	if t.ID == "" {
		dl.postError(ctx, "the remote agent answered without a task id and without finishing: it cannot be followed")
		return
	}
	dl.follow(ctx, t.ID)
}

// openStream sends msg on a stream and reads the stream's first event.
// The stream lives as long as the delivery, but its first event is
// bounded by CallTimeout like any other call: a remote that took the
// request and then says nothing would otherwise hold the lease for ever.
// Past the bound the stream is cut, and the error is one after which the
// remote may hold the task (as a timeout of a send is): a task that is
// not idempotent is then left for the operator, not sent again.
func (dl *delivery) openStream(ctx context.Context, client *a2aremote.Client, msg a2aremote.Message) (*a2aremote.Stream, a2aremote.Update, error) {
	sctx, cut := context.WithCancel(ctx)
	var silent atomic.Bool
	timer := time.AfterFunc(dl.r.d.o.CallTimeout, func() {
		silent.Store(true)
		cut()
	})
	st, err := client.Stream(sctx, msg)
	var first a2aremote.Update
	if err == nil {
		first, err = st.Next()
	}
	timer.Stop()
	switch {
	case err != nil && silent.Load() && ctx.Err() == nil:
		err = &a2aremote.Error{Kind: a2aremote.Transport, Op: "message/stream",
			Message: "the remote took the message but sent nothing on its stream within " + dl.r.d.o.CallTimeout.String()}
	case err == nil:
		// The stream's context ends with the delivery (finish).
		dl.mu.Lock()
		dl.cuts = append(dl.cuts, cut)
		dl.mu.Unlock()
		return st, first, nil
	}
	if st != nil {
		st.Close()
	}
	cut()
	return nil, a2aremote.Update{}, err
}

// message is the task's first message, or the sender's answer to the
// question the remote asked under an earlier lease (continuing its task).
func (dl *delivery) message(ctx context.Context) (a2aremote.Message, error) {
	rec, err := dl.r.d.eng.Task(ctx, dl.task.ID)
	if err != nil {
		return a2aremote.Message{}, err
	}
	turns := dl.task.Turns
	if rd := rec.Remote; rd != nil && rd.Agent == dl.r.agent && len(turns) > 0 && turns[len(turns)-1].Role == mailbox.RoleSender {
		return a2aremote.MessageFor(dl.task, &a2aremote.Ref{TaskID: rd.TaskID, ContextID: rd.ContextID})
	}
	return a2aremote.MessageFor(dl.task, nil)
}

// accept records the remote's acceptance under the lease before anything
// else, so a crash from here on follows the remote task. A lease that
// ended meanwhile refuses it: the remote is told to cancel.
func (dl *delivery) accept(ctx context.Context, client *a2aremote.Client, t a2aremote.Task) bool {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dl.r.d.o.CallTimeout)
	defer cancel()
	err := dl.r.d.eng.RemoteAccepted(actx, dl.task.ID, dl.lease.LeaseID, mailbox.RemoteRef{TaskID: t.ID, ContextID: t.ContextID, Binding: client.Binding()})
	dl.accepted(t.ID)
	dl.r.sawContext(dl.task.ID, t.ContextID)
	if err == nil {
		return true
	}
	if c := mailbox.ErrorCode(err); c == mailbox.CodeConflict || c == mailbox.CodeNotFound {
		dl.r.d.log.Info("the remote accepted a task whose lease had ended; telling it to cancel", dl.attrs("remote_task_id", t.ID, "err", err)...)
		dl.aborted.Store(true)
		return false
	}
	// Not recorded: a crash now would not know the remote has it. Keep
	// following; the operator sees the error.
	dl.r.d.log.Error("recording the remote's acceptance failed; following the task anyway", dl.attrs("remote_task_id", t.ID, "err", err)...)
	return true
}

// stream reads the remote's events until the task finishes or asks
// something (final), or the stream breaks.
//
// On the stream of an answer, the task as a whole that a remote may send
// first is as it stood before the answer: still asking is not taken for
// a new question (a new one comes as a status update).
func (dl *delivery) stream(st *a2aremote.Stream, u a2aremote.Update, answer bool) (a2aremote.Task, bool) {
	defer st.Close()
	dl.set(mailbox.DeliveryStreaming, "", time.Time{})
	for {
		stale := answer && u.Kind == "task" && u.Task.Interrupted()
		if _, final := u.Task.Outcome(); final && !stale {
			return u.Task, true
		}
		last := u.Task
		var err error
		u, err = st.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				dl.r.observe(err)
				dl.set(mailbox.DeliveryPolling, err.Error(), time.Time{})
			}
			return last, false
		}
	}
}

// follow observes a task the remote accepted: never sent again. It polls
// the remote's task (following its stream when it streams) until it
// finishes or asks something; a remote that no longer knows it lost it.
func (dl *delivery) follow(ctx context.Context, remoteTaskID string) {
	r := dl.r
	resubscribed := false
	for n := 1; ; n++ {
		client := r.currentClient()
		cctx, cancel := context.WithTimeout(ctx, r.d.o.CallTimeout)
		t, err := client.Get(cctx, remoteTaskID)
		cancel()
		r.observe(err)
		switch {
		case err == nil:
			if _, final := t.Outcome(); final {
				dl.post(ctx, t)
				return
			}
			if client.Streaming() && !resubscribed {
				resubscribed = true
				if st, serr := client.Resubscribe(ctx, remoteTaskID); serr == nil {
					if u, nerr := st.Next(); nerr == nil {
						if t, final := dl.stream(st, u, false); final {
							dl.post(ctx, t)
							return
						}
					} else {
						st.Close()
					}
				}
				n = 0
				continue
			}
			dl.set(mailbox.DeliveryPolling, "", time.Time{})
		case errors.Is(err, a2aremote.ErrTaskNotFound):
			lost := "the remote lost this task (it answers that it does not know task " + remoteTaskID + ", which it had accepted)"
			if dl.task.Idempotent() && len(dl.task.Turns) == 0 {
				// Its task store was reset (a restart of an in-memory
				// store): an idempotent task is sent again, as a resend.
				if !dl.resend(lost) {
					return
				}
				r.d.log.Info("the remote lost an idempotent task it had accepted; sending it again", dl.attrs("remote_task_id", remoteTaskID)...)
				dl.send(ctx)
				return
			}
			r.d.log.Warn("the remote lost a task it had accepted; its lease is left for the operator", dl.attrs("remote_task_id", remoteTaskID)...)
			dl.park(mailbox.DeliveryLost, lost+": left for the operator", outcomeLost)
			return
		case ctx.Err() != nil:
			return
		default:
			dl.set(mailbox.DeliveryPolling, err.Error(), time.Time{})
		}
		if ctx.Err() != nil || !sleep(ctx, backoff(r.d.o.PollMin, r.d.o.PollMax, n)) {
			return
		}
	}
}

// post records the remote task's outcome under the lease guard.
// answered records the remote's acceptance of a task it answered at once
// and its answer, in one unit (engine.RemoteAnswered).
func (dl *delivery) answered(ctx context.Context, client *a2aremote.Client, t a2aremote.Task, res mailbox.Result) {
	if dl.aborted.Load() {
		return
	}
	dl.accepted(t.ID)
	dl.r.sawContext(dl.task.ID, t.ContextID)
	pctx, cancel := context.WithTimeout(mailbox.WithPrincipal(context.WithoutCancel(ctx), dl.r.agent), dl.r.d.o.CallTimeout)
	defer cancel()
	ref := mailbox.RemoteRef{TaskID: t.ID, ContextID: t.ContextID, Binding: client.Binding()}
	err := dl.r.d.eng.RemoteAnswered(pctx, dl.task.ID, dl.lease.LeaseID, ref, res)
	switch {
	case err == nil:
		dl.r.d.stats.posted(res.Status, dl.start)
		dl.r.d.log.Info("remote agent's answer posted", dl.attrs("status", res.Status, "remote_task_id", t.ID)...)
	case mailbox.ErrorCode(err) == mailbox.CodeConflict || mailbox.ErrorCode(err) == mailbox.CodeNotFound:
		dl.r.d.stats.ended(outcomeLate)
		dl.r.d.log.Info("late result dropped: the lease it was delivered under has ended", dl.attrs("status", res.Status, "remote_task_id", t.ID, "err", err)...)
	default:
		dl.r.d.log.Error("recording the remote agent's answer failed; its lease stays for the operator", dl.attrs("status", res.Status, "remote_task_id", t.ID, "err", err)...)
	}
}

func (dl *delivery) post(ctx context.Context, t a2aremote.Task) {
	res, _ := t.Outcome()
	dl.postResult(ctx, res)
}

func (dl *delivery) postError(ctx context.Context, msg string) {
	dl.postResult(ctx, mailbox.Result{Status: mailbox.StatusError, ErrorMessage: msg, Content: []mailbox.Content{}})
}

func (dl *delivery) postResult(ctx context.Context, res mailbox.Result) {
	if dl.aborted.Load() {
		return
	}
	res.TaskID, res.LeaseID = dl.task.ID, dl.lease.LeaseID
	pctx, cancel := context.WithTimeout(mailbox.WithPrincipal(context.WithoutCancel(ctx), dl.r.agent), dl.r.d.o.CallTimeout)
	defer cancel()
	err := dl.r.d.eng.PostResult(pctx, res)
	switch {
	case err == nil:
		dl.r.d.stats.posted(res.Status, dl.start)
		dl.r.d.log.Info("remote agent's answer posted", dl.attrs("status", res.Status, "remote_task_id", dl.remoteID())...)
	case mailbox.ErrorCode(err) == mailbox.CodeConflict || mailbox.ErrorCode(err) == mailbox.CodeNotFound:
		dl.r.d.stats.ended(outcomeLate)
		dl.r.d.log.Info("late result dropped: the lease it was delivered under has ended", dl.attrs("status", res.Status, "err", err)...)
	default:
		dl.r.d.log.Error("posting the remote agent's answer failed; its lease stays for the operator", dl.attrs("status", res.Status, "err", err)...)
	}
}
