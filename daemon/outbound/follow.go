package outbound

import (
	"context"
	"errors"
	"io"
	"time"

	a2aremote "github.com/mailroom/mailroom/daemon/a2a/remote"
	"github.com/mailroom/mailroom/internal/retry"
	"github.com/mailroom/mailroom/mailbox"
)

// Following a task the remote accepted: its stream while it lasts, then
// polls; never sent again.

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
		if ctx.Err() != nil || !retry.Sleep(ctx, r.d.polls.After(n)) {
			return
		}
	}
}
