package auth

import (
	"context"
	"time"

	"github.com/mailroom/mailroom/mailbox"
)

// Guard returns next with the whole access policy in front of it: every
// method checks the caller's identity (IdentityFrom(ctx)) against what it
// asks for, and refuses with 403 before next is called. It is the one place
// the policy lives; the HTTP API, the coming protocol edges and batch routes,
// and any in-process caller reach the mailbox through it.
//
// The guard decides only on well-formed requests. It reads a request's
// fields with the same validators the service uses, and passes a request
// whose fields are malformed straight to next, which refuses it with 400:
// so a caller always hears about bad input before missing rights, and the
// service stays the only place that normalizes a request and assigns ids.
//
// A context without an identity is Unauthenticated: the daemon runs
// without tokens (loopback only), or the caller is the daemon itself.
func Guard(next mailbox.Service) mailbox.Service { return guard{next} }

type guard struct{ next mailbox.Service }

var _ mailbox.Service = guard{}

func (g guard) Send(ctx context.Context, t mailbox.Task) (mailbox.TaskQueuedResponse, error) {
	if mailbox.ValidateAgentID("sender", t.Sender) == nil && mailbox.ValidateAgentID("recipient", t.Recipient) == nil {
		if err := IdentityFrom(ctx).CheckSend(t); err != nil {
			return mailbox.TaskQueuedResponse{}, err
		}
	}
	return g.next.Send(ctx, t)
}

func (g guard) Lease(ctx context.Context, recipient string) (*mailbox.Task, *mailbox.Lease, error) {
	if recipient == "" || mailbox.ValidateAgentID("recipient", recipient) == nil {
		// Without a2a.admin a caller only ever leases its own tasks,
		// whatever it asked for.
		var err error
		if recipient, err = IdentityFrom(ctx).LeaseScope(recipient); err != nil {
			return nil, nil, err
		}
	}
	return g.next.Lease(ctx, recipient)
}

func (g guard) LeaseN(ctx context.Context, recipient string, n int, wait time.Duration) ([]mailbox.LeasedTask, error) {
	if recipient == "" || mailbox.ValidateAgentID("recipient", recipient) == nil {
		var err error
		if recipient, err = IdentityFrom(ctx).LeaseScope(recipient); err != nil {
			return nil, err
		}
	}
	return g.next.LeaseN(ctx, recipient, n, wait)
}

// PostResult needs a2a.respond.<the task's sender>, and the result is
// accepted only from the lease's holder (or an admin): the service checks
// that under its lock (mailbox.Acting), since a lease can change hands
// between a look here and the decision.
func (g guard) PostResult(ctx context.Context, r mailbox.Result) error {
	id := IdentityFrom(ctx)
	ctx = acting(ctx, id)
	if id.Can(CapRespondPrefix + "*") {
		return g.next.PostResult(ctx, r)
	}
	// Whose task it is decides: look it up. An unknown or malformed id is
	// left to next, so a made-up task id is a 404 (or a 400) before any
	// capability is looked at, and nobody probes capabilities with ids.
	if taskID, err := mailbox.CanonicalUUID("task_id", r.TaskID); err == nil {
		if rec, err := g.next.Task(ctx, taskID); err == nil {
			if err := id.CheckRespond(rec.Task.Sender); err != nil {
				return err
			}
		}
	}
	return g.next.PostResult(ctx, r)
}

// Reply is a send of more work to the task's recipient: it needs what a
// send of the task needs (speaking for its sender, a2a.send.<recipient>),
// and the service checks under its lock that the caller is the task's
// sender (mailbox.Acting). A malformed or unknown task id is left to next,
// so it is a 400 or 404 before any capability is looked at.
func (g guard) Reply(ctx context.Context, r mailbox.Reply) (mailbox.ReplyOutcome, error) {
	id := IdentityFrom(ctx)
	ctx = acting(ctx, id)
	if taskID, err := mailbox.CanonicalUUID("task_id", r.TaskID); err == nil && mailbox.ValidateAgentID("sender", r.Sender) == nil {
		if rec, err := g.next.Task(ctx, taskID); err == nil {
			if err := id.CheckSend(mailbox.Task{Sender: r.Sender, Recipient: rec.Task.Recipient}); err != nil {
				return mailbox.ReplyOutcome{}, err
			}
		}
	}
	return g.next.Reply(ctx, r)
}

func (g guard) Drain(ctx context.Context, sender string) (*mailbox.PendingResult, error) {
	if sender == "" || mailbox.ValidateAgentID("sender", sender) == nil {
		var err error
		if sender, err = IdentityFrom(ctx).DrainScope(sender); err != nil {
			return nil, err
		}
	}
	return g.next.Drain(ctx, sender)
}

func (g guard) DrainN(ctx context.Context, sender string, n int, wait time.Duration) ([]mailbox.PendingResult, error) {
	if sender == "" || mailbox.ValidateAgentID("sender", sender) == nil {
		var err error
		if sender, err = IdentityFrom(ctx).DrainScope(sender); err != nil {
			return nil, err
		}
	}
	return g.next.DrainN(ctx, sender, n, wait)
}

func (g guard) RecentTasks(ctx context.Context, limit int) ([]mailbox.Task, error) {
	if err := IdentityFrom(ctx).CheckRead(); err != nil {
		return nil, err
	}
	return g.next.RecentTasks(ctx, limit)
}

func (g guard) RecentResults(ctx context.Context, limit int) ([]mailbox.PendingResult, error) {
	if err := IdentityFrom(ctx).CheckRead(); err != nil {
		return nil, err
	}
	return g.next.RecentResults(ctx, limit)
}

func (g guard) Queue(ctx context.Context, f mailbox.QueueFilter) (mailbox.QueueView, error) {
	if err := IdentityFrom(ctx).CheckRead(); err != nil {
		return mailbox.QueueView{}, err
	}
	return g.next.Queue(ctx, f)
}

func (g guard) Repair(ctx context.Context, req mailbox.RepairRequest) (mailbox.RepairOutcome, error) {
	id := IdentityFrom(ctx)
	switch req.Command.Action {
	case mailbox.ActionRequeue, mailbox.ActionForceError, mailbox.ActionMove, mailbox.ActionCancel, mailbox.ActionHandOver:
		if err := id.CheckRepair(req.Command.Action); err != nil {
			return mailbox.RepairOutcome{}, err
		}
	}
	// Handing a task to another recipient delivers its work there, so the
	// caller must also be one who may send that recipient tasks: a repair
	// token is not a way around a2a.send.<recipient>. Checked on a request
	// that is otherwise well formed, so bad input is still a 400 first.
	if req.Command.Recipient != "" {
		if norm, err := mailbox.NormalizeRepair(req); err == nil {
			if c := CapSendPrefix + norm.Command.Recipient; !id.Can(c) {
				return mailbox.RepairOutcome{}, Forbidden(id, c, "hand tasks to "+norm.Command.Recipient)
			}
		}
	}
	return g.next.Repair(ctx, req)
}

func (g guard) Compact(ctx context.Context) (mailbox.CompactOutcome, error) {
	if err := IdentityFrom(ctx).CheckCompact(); err != nil {
		return mailbox.CompactOutcome{}, err
	}
	return g.next.Compact(ctx)
}

func (g guard) RetryStale(ctx context.Context, p mailbox.RetryPolicy) (mailbox.RetryReport, error) {
	if p.Validate() == nil {
		if err := IdentityFrom(ctx).CheckRetryStale(p.Enabled); err != nil {
			return mailbox.RetryReport{}, err
		}
	}
	return g.next.RetryStale(ctx, p)
}

// Task lets a caller read every task with a2a.read, and without it the
// tasks it sent itself (what an A2A caller reads to follow its own work).
func (g guard) Task(ctx context.Context, id string) (mailbox.TaskRecord, error) {
	ident := IdentityFrom(ctx)
	if err := ident.CheckRead(); err != nil {
		if rec, terr := g.next.Task(ctx, id); terr == nil && rec.Task.Sender == ident.Principal {
			return rec, nil
		}
		return mailbox.TaskRecord{}, err
	}
	return g.next.Task(ctx, id)
}

func (g guard) Audit(ctx context.Context, taskID string, limit int) ([]mailbox.AuditRecord, error) {
	if err := IdentityFrom(ctx).CheckRead(); err != nil {
		return nil, err
	}
	return g.next.Audit(ctx, taskID, limit)
}

func (g guard) Agents(ctx context.Context) ([]mailbox.AgentInfo, error) {
	if err := IdentityFrom(ctx).CheckRead(); err != nil {
		return nil, err
	}
	return g.next.Agents(ctx)
}

func (g guard) Subscribe(ctx context.Context, after *uint64) (mailbox.Subscription, error) {
	if err := IdentityFrom(ctx).CheckRead(); err != nil {
		return nil, err
	}
	return g.next.Subscribe(ctx, after)
}

// Status carries no caller: /healthz is open to every caller by design.
func (g guard) Status() mailbox.Status { return g.next.Status() }

// RegisterAgent needs a2a.register; a malformed agent id or card goes on to
// be refused by next first, as everywhere.
func (g guard) RegisterAgent(ctx context.Context, agent string, card mailbox.AgentCard) (mailbox.RegisteredAgent, error) {
	if _, err := mailbox.NormalizeCard(card); err == nil && mailbox.ValidateAgentID("agent", agent) == nil {
		if err := IdentityFrom(ctx).CheckRegister(); err != nil {
			return mailbox.RegisteredAgent{}, err
		}
	}
	return g.next.RegisterAgent(ctx, agent, card)
}

func (g guard) DeregisterAgent(ctx context.Context, agent string) error {
	if mailbox.ValidateStoredAgentID("agent", agent) == nil {
		if err := IdentityFrom(ctx).CheckRegister(); err != nil {
			return err
		}
	}
	return g.next.DeregisterAgent(ctx, agent)
}

// Registered needs no rights: an agent's card is public.
func (g guard) Registered(ctx context.Context, agent string) (mailbox.RegisteredAgent, error) {
	return g.next.Registered(ctx, agent)
}

// Cancel lets a caller cancel the tasks it sent; a2a.admin cancels any.
func (g guard) Cancel(ctx context.Context, taskID, reason string) (mailbox.TaskRecord, error) {
	if err := g.checkOwn(ctx, taskID, "cancel"); err != nil {
		return mailbox.TaskRecord{}, err
	}
	return g.next.Cancel(ctx, taskID, reason)
}

// Delivered lets a caller mark the results of the tasks it sent as
// delivered; a2a.admin marks any.
func (g guard) Delivered(ctx context.Context, taskID string) error {
	if err := g.checkOwn(ctx, taskID, "take the results of"); err != nil {
		return err
	}
	return g.next.Delivered(ctx, taskID)
}

// SendWithPush holds the task to Send's policy; the config is the
// sender's own.
func (g guard) SendWithPush(ctx context.Context, t mailbox.Task, c mailbox.PushConfig) (mailbox.TaskQueuedResponse, error) {
	if mailbox.ValidateAgentID("sender", t.Sender) == nil && mailbox.ValidateAgentID("recipient", t.Recipient) == nil {
		if err := IdentityFrom(ctx).CheckSend(t); err != nil {
			return mailbox.TaskQueuedResponse{}, err
		}
	}
	return g.next.SendWithPush(ctx, t, c)
}

// SetPushConfig, PushConfigs and DeletePushConfig are for the task's
// sender (a config holds the token its receiver checks); a2a.admin may
// manage any.
func (g guard) SetPushConfig(ctx context.Context, taskID string, c mailbox.PushConfig) (mailbox.PushConfig, error) {
	if err := g.checkOwn(ctx, taskID, "set push configs on"); err != nil {
		return mailbox.PushConfig{}, err
	}
	return g.next.SetPushConfig(ctx, taskID, c)
}

func (g guard) PushConfigs(ctx context.Context, taskID, configID string) ([]mailbox.PushConfig, error) {
	if err := g.checkOwn(ctx, taskID, "read the push configs of"); err != nil {
		return nil, err
	}
	return g.next.PushConfigs(ctx, taskID, configID)
}

func (g guard) DeletePushConfig(ctx context.Context, taskID, configID string) error {
	if err := g.checkOwn(ctx, taskID, "delete push configs of"); err != nil {
		return err
	}
	return g.next.DeletePushConfig(ctx, taskID, configID)
}

// Deliveries needs a2a.read: the operator's view of the outbox.
func (g guard) Deliveries(ctx context.Context, failedOnly bool) (mailbox.PushListing, error) {
	if err := IdentityFrom(ctx).CheckRead(); err != nil {
		return mailbox.PushListing{}, err
	}
	return g.next.Deliveries(ctx, failedOnly)
}

// RetryNotification and DropNotification are an operator's repairs of
// the outbox: a2a.admin.
func (g guard) RetryNotification(ctx context.Context, id, reason string) (mailbox.Notification, error) {
	if ident := IdentityFrom(ctx); !ident.Admin() {
		return mailbox.Notification{}, Forbidden(ident, CapAdmin, "retry push notifications")
	}
	return g.next.RetryNotification(ctx, id, reason)
}

func (g guard) DropNotification(ctx context.Context, id, reason string) error {
	if ident := IdentityFrom(ctx); !ident.Admin() {
		return Forbidden(ident, CapAdmin, "drop push notifications")
	}
	return g.next.DropNotification(ctx, id, reason)
}

func (g guard) DropDeadNotification(ctx context.Context, id, reason string) error {
	if ident := IdentityFrom(ctx); !ident.Admin() {
		return Forbidden(ident, CapAdmin, "drop push notifications")
	}
	return g.next.DropDeadNotification(ctx, id, reason)
}

// checkOwn allows an admin, or the sender of the task. An unknown or
// malformed id is left to next, so it is a 404 (or a 400) before any
// capability is looked at.
func (g guard) checkOwn(ctx context.Context, taskID, doing string) error {
	ident := IdentityFrom(ctx)
	if ident.Admin() {
		return nil
	}
	id, err := mailbox.CanonicalUUID("task_id", taskID)
	if err != nil {
		return nil
	}
	rec, err := g.next.Task(ctx, id)
	if err != nil || rec.Task.Sender == ident.Principal {
		return nil
	}
	return Forbidden(ident, CapAdmin, doing+" tasks "+rec.Task.Sender+" sent")
}

// AgentTasks lists every task of the recipient for a caller with a2a.read,
// and only the tasks it sent for anyone else.
func (g guard) AgentTasks(ctx context.Context, q mailbox.AgentTasksQuery) (mailbox.AgentTasksPage, error) {
	if ident := IdentityFrom(ctx); !ident.Can(CapRead) {
		q.Sender = ident.Principal
	}
	return g.next.AgentTasks(ctx, q)
}

// SendBatch holds every task to the policy Send holds one to: a task the
// caller may not send is refused in its place (403, naming the
// capability), and the others go on. A malformed task goes on to be
// refused by next, so bad input is still reported before missing rights.
func (g guard) SendBatch(ctx context.Context, tasks []mailbox.Task) ([]mailbox.BatchItem, error) {
	id := IdentityFrom(ctx)
	return g.items("tasks", len(tasks), func(i int) error {
		t := tasks[i]
		if mailbox.ValidateAgentID("sender", t.Sender) != nil || mailbox.ValidateAgentID("recipient", t.Recipient) != nil {
			return nil
		}
		return id.CheckSend(t)
	}, func(keep []int) ([]mailbox.BatchItem, error) {
		sub := make([]mailbox.Task, len(keep))
		for k, i := range keep {
			sub[k] = tasks[i]
		}
		return g.next.SendBatch(ctx, sub)
	})
}

// PostResults holds every result to the policy PostResult holds one to.
func (g guard) PostResults(ctx context.Context, results []mailbox.Result) ([]mailbox.BatchItem, error) {
	id := IdentityFrom(ctx)
	ctx = acting(ctx, id)
	return g.items("results", len(results), func(i int) error {
		if id.Can(CapRespondPrefix + "*") {
			return nil
		}
		taskID, err := mailbox.CanonicalUUID("task_id", results[i].TaskID)
		if err != nil {
			return nil
		}
		rec, err := g.next.Task(ctx, taskID)
		if err != nil {
			return nil
		}
		return id.CheckRespond(rec.Task.Sender)
	}, func(keep []int) ([]mailbox.BatchItem, error) {
		sub := make([]mailbox.Result, len(keep))
		for k, i := range keep {
			sub[k] = results[i]
		}
		return g.next.PostResults(ctx, sub)
	})
}

// items checks each of n items with check, sends the ones it lets
// through to next in one call, and answers every item in its place.
func (g guard) items(list string, n int, check func(i int) error, next func(keep []int) ([]mailbox.BatchItem, error)) ([]mailbox.BatchItem, error) {
	out := make([]mailbox.BatchItem, n)
	var keep []int
	for i := range n {
		if err := check(i); err != nil {
			out[i] = mailbox.Refused(list, i, err)
			continue
		}
		keep = append(keep, i)
	}
	if len(keep) == 0 {
		return out, nil
	}
	got, err := next(keep)
	if err != nil {
		return nil, err
	}
	// next numbered the items it saw; say where each is in the request.
	mailbox.Place(list, out, keep, got)
	return out, nil
}

// acting holds a caller that is not an admin to its own agent for the
// decisions that end a lease: only the lease's holder may post its
// result, and only a holder or one who may repair the lease learns the
// current lease id in a conflict's answer.
func acting(ctx context.Context, id Identity) context.Context {
	if id.Admin() {
		return ctx
	}
	return mailbox.WithActing(ctx, mailbox.Acting{Agent: id.Principal, SeesLeases: id.Can(CapRequeue) || id.Can(CapForceError)})
}
