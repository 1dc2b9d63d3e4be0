package outbound

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	a2aremote "github.com/mailroom/mailroom/daemon/a2a/remote"
	"github.com/mailroom/mailroom/internal/retry"
	"github.com/mailroom/mailroom/mailbox"
)

// Sending a task to its remote: the message (the task's first, or the
// sender's answer to the remote's question), the way the remote takes
// it, what comes of a send that failed, and the remote's first answer.

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
		st, first, err = dl.sendOnce(ctx, client, msg, noStream)
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
		retryErr, again := dl.sendFailed(ctx, client, msg, err)
		if !again {
			return
		}
		wait := r.d.retries.After(n)
		dl.set(mailbox.DeliveryRetrying, retryErr, time.Now().Add(wait))
		r.d.log.Info("sending to the remote failed before it accepted the task; retrying while the lease is held", dl.attrs("attempt", n, "retry_in", wait, "err", err)...)
		if !retry.Sleep(ctx, wait) {
			return
		}
	}
	dl.sent(ctx, client, msg, first, st)
}

// sendOnce makes one send of msg, in the way the remote takes it: on a
// stream (unless it refused one), or a plain send, bounded by CallTimeout
// unless the remote may take as long as the work (an answer to its
// question, the legacy dialect).
func (dl *delivery) sendOnce(ctx context.Context, client *a2aremote.Client, msg a2aremote.Message, noStream bool) (st *a2aremote.Stream, first a2aremote.Update, err error) {
	switch {
	case client.Streaming() && !noStream:
		return dl.openStream(ctx, client, msg)
	case msg.TaskID != "":
		// An answer to the remote's question. Sent without blocking,
		// a remote may answer with its task as it stood (still asking)
		// before it read the answer, which cannot be told from a new
		// question: so it blocks, for as long as the lease is held.
		first.Task, err = client.Send(ctx, msg, true)
	case client.Binding() == mailbox.BindingLegacy:
		// The dialect answers when the work is done: however long
		// that takes, while the lease is held. A timeout would resend
		// work under way.
		first.Task, err = client.Send(ctx, msg, false)
	default:
		cctx, cancel := context.WithTimeout(ctx, dl.r.d.o.CallTimeout)
		first.Task, err = client.Send(cctx, msg, false)
		cancel()
	}
	return nil, first, err
}

// sendFailed decides what comes of a send the remote did not accept:
// again (after a backoff, retryErr saying why for the operator), or not
// (the delivery ended here: a result or question posted, the task
// followed, or the lease left for the operator).
func (dl *delivery) sendFailed(ctx context.Context, client *a2aremote.Client, msg a2aremote.Message, err error) (retryErr string, again bool) {
	r := dl.r
	if msg.TaskID != "" && errors.Is(err, a2aremote.ErrTaskNotFound) {
		r.d.log.Warn("the remote lost the task whose question the sender answered; its lease is left for the operator", dl.attrs("remote_task_id", msg.TaskID)...)
		dl.accepted(msg.TaskID)
		dl.park(mailbox.DeliveryLost, "the remote lost this task (it answers that it does not know task "+msg.TaskID+", whose question the sender answered): left for the operator", outcomeLost)
		return "", false
	}
	if msg.TaskID != "" && a2aremote.Retryable(err) {
		// The remote holds the task, and may hold the answer: never
		// sent again, followed.
		r.d.log.Info("sending an answer to the remote failed; following its task instead of sending the answer again", dl.attrs("remote_task_id", msg.TaskID, "err", err)...)
		if dl.accept(ctx, client, a2aremote.Task{ID: msg.TaskID, ContextID: msg.ContextID}) {
			dl.follow(ctx, msg.TaskID)
		}
		return "", false
	}
	if !a2aremote.Retryable(err) {
		dl.postError(ctx, "the remote agent refused the task: "+err.Error())
		return "", false
	}
	if msg.TaskID == "" && a2aremote.MayHaveReceived(err) {
		return dl.mayHaveReceived(ctx, client, err)
	}
	return err.Error(), true
}

// mayHaveReceived asks the remote whether it holds the task after a send
// that may have reached it (a timeout, a connection broken before the
// answer), and says whether to send it again. Sent again without asking,
// a task that is not idempotent may be done twice, and an idempotent one
// is done again by a remote that does not dedupe on the messageId.
func (dl *delivery) mayHaveReceived(ctx context.Context, client *a2aremote.Client, err error) (retryErr string, again bool) {
	r := dl.r
	t, v, why := dl.settle(ctx, client, time.Now())
	switch v {
	case verdictFound:
		r.d.log.Info("a send failed after it reached the remote, which holds the task: following it", dl.attrs("remote_task_id", t.ID, "err", err)...)
		dl.adopt(ctx, client, t)
		return "", false
	case verdictAbsent:
		r.d.log.Info("a send failed before it reached the remote (it lists no task of its context): sending it again", dl.attrs("err", err)...)
		return "the send failed (" + err.Error() + ") and the remote does not hold the task: sending it again", true
	case verdictCannot:
		if !dl.task.Idempotent() {
			r.d.log.Warn("sending a task that is not idempotent failed after it may have reached the remote, which cannot say whether it holds it: its lease is left for the operator (requeue or force-error it)", dl.attrs("err", err, "why", why)...)
			dl.park(mailbox.DeliveryUnknown, "the send failed after it may have reached the remote ("+err.Error()+"), and the task is not idempotent; "+why+": not sent again; requeue or force-error it", outcomeUnknown)
			return "", false
		}
		if !dl.resend("the send failed after it may have reached the remote (" + err.Error() + "); " + why) {
			return "", false
		}
		dl.mu.Lock()
		defer dl.mu.Unlock()
		return fmt.Sprintf("resend %d of %d (remote_resend_max): the send failed after it may have reached the remote: %s", dl.resends, r.d.o.ResendMax, err.Error()), true
	}
	return "", false // verdictStopped: the delivery ended while it asked
}

// sent takes the remote's first answer to a send: answered at once (its
// acceptance and answer recorded together), or accepted and then followed
// on its stream, or by polls.
func (dl *delivery) sent(ctx context.Context, client *a2aremote.Client, msg a2aremote.Message, first a2aremote.Update, st *a2aremote.Stream) {
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
	rec, err := dl.r.d.mailbox.Task(ctx, dl.task.ID)
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
	err := dl.r.d.remote.Accepted(actx, dl.task.ID, dl.lease.LeaseID, mailbox.RemoteRef{TaskID: t.ID, ContextID: t.ContextID, Binding: client.Binding()})
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
