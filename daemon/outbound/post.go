package outbound

import (
	"context"

	a2aremote "github.com/mailroom/mailroom/daemon/a2a/remote"
	"github.com/mailroom/mailroom/mailbox"
)

// Posting the remote's answer: the result (or question) under the lease
// guard, in the agent's name.

// answered records the remote's acceptance of a task it answered at once
// and its answer, in one unit (Remotes.Answered).
func (dl *delivery) answered(ctx context.Context, client *a2aremote.Client, t a2aremote.Task, res mailbox.Result) {
	if dl.aborted.Load() {
		return
	}
	dl.accepted(t.ID)
	dl.r.sawContext(dl.task.ID, t.ContextID)
	pctx, cancel := context.WithTimeout(mailbox.WithPrincipal(context.WithoutCancel(ctx), dl.r.agent), dl.r.d.o.CallTimeout)
	defer cancel()
	ref := mailbox.RemoteRef{TaskID: t.ID, ContextID: t.ContextID, Binding: client.Binding()}
	err := dl.r.d.remote.Answered(pctx, dl.task.ID, dl.lease.LeaseID, ref, res)
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

// post records the remote task's outcome under the lease guard.
func (dl *delivery) post(ctx context.Context, t a2aremote.Task) {
	res, _ := t.Outcome()
	dl.postResult(ctx, res)
}

// postError posts an error result the daemon made: msg says why.
func (dl *delivery) postError(ctx context.Context, msg string) {
	dl.postResult(ctx, mailbox.Result{Status: mailbox.StatusError, ErrorMessage: msg, Content: []mailbox.Content{}})
}

// postResult posts res under the delivery's lease, on the agent's word;
// a lease ended meanwhile refuses it (a late result, dropped).
func (dl *delivery) postResult(ctx context.Context, res mailbox.Result) {
	if dl.aborted.Load() {
		return
	}
	res.TaskID, res.LeaseID = dl.task.ID, dl.lease.LeaseID
	pctx, cancel := context.WithTimeout(mailbox.WithPrincipal(context.WithoutCancel(ctx), dl.r.agent), dl.r.d.o.CallTimeout)
	defer cancel()
	err := dl.r.d.mailbox.PostResult(pctx, res)
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
