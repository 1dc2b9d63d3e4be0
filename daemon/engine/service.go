package engine

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/mailroom/mailroom/internal/metrics"
	"github.com/mailroom/mailroom/mailbox"
)

// Send queues a task, assigning an id when it has none. An idempotent task
// whose twin is queued or in flight is answered with the twin's id; one
// whose twin already has a result gets a copy of it (deduplicated either way).
func (e *Engine) Send(ctx context.Context, t mailbox.Task) (mailbox.TaskQueuedResponse, error) {
	if t.ID == "" {
		t.ID = e.opts.NewID()
	}
	t, err := mailbox.NormalizeTask(t)
	if err != nil {
		return mailbox.TaskQueuedResponse{}, err
	}
	e.seen(t.Sender)
	var twin string
	ev, sent, err := e.decide(func(s *mailbox.State, now int64) (mailbox.Event, bool, error) {
		if id, ok := s.LiveDuplicate(t); ok {
			twin = id
			return mailbox.Event{}, false, nil
		}
		ev, err := s.DecideSend(t, now)
		return ev, err == nil, err
	}, nil)
	if err != nil {
		return mailbox.TaskQueuedResponse{}, err
	}
	if !sent {
		return mailbox.TaskQueuedResponse{Kind: mailbox.KindTaskQueued, TaskID: twin, Deduplicated: true}, nil
	}
	return mailbox.TaskQueuedResponse{Kind: mailbox.KindTaskQueued, TaskID: t.ID, Deduplicated: ev.Type == mailbox.EventResultReplayed}, nil
}

// Lease leases the oldest task queued for recipient ("" = any). The lease is
// recorded as held by the recipient, or by the caller's principal when
// leasing on another's behalf without naming a recipient. The caller is
// seen as the recipient it asked for, else as the lease holder.
func (e *Engine) Lease(ctx context.Context, recipient string) (*mailbox.Task, *mailbox.Lease, error) {
	got, err := e.LeaseN(ctx, recipient, 1, 0)
	if err != nil || len(got) == 0 {
		return nil, nil, err
	}
	return &got[0].Task, &got[0].Lease, nil
}

// LeaseN leases up to n tasks for recipient, waiting up to wait for one
// when none is queued (see mailbox.Service).
func (e *Engine) LeaseN(ctx context.Context, recipient string, n int, wait time.Duration) ([]mailbox.LeasedTask, error) {
	if recipient != "" {
		if err := mailbox.ValidateAgentID("recipient", recipient); err != nil {
			return nil, err
		}
	}
	if err := mailbox.ValidateBatch(n, wait.Milliseconds()); err != nil {
		return nil, err
	}
	leasedTo := recipient
	if leasedTo == "" {
		leasedTo = mailbox.PrincipalFrom(ctx)
	}
	var got []mailbox.LeasedTask
	holder := leasedTo
	try := func() (bool, error) {
		got = got[:0]
		made, err := e.decideN(n, func(s *mailbox.State, now int64) (mailbox.Event, bool, error) {
			ev, ok := s.DecideLease(recipient, leasedTo, e.opts.NewID(), now)
			return ev, ok, nil
		}, func(s *mailbox.State, ev mailbox.Event) {
			task, lease := s.LeaseOf(ev)
			got = append(got, mailbox.LeasedTask{Task: task, Lease: lease})
			holder = ev.LeasedTo
		})
		got = got[:made] // only what was made durable
		return len(got) > 0, err
	}
	stop := e.polling(leasedTo, wait)
	err := e.poll(ctx, waitKey{waitLease, recipient}, wait, try)
	stop()
	e.seen(holder)
	return got, err
}

// poll runs try once, and when it finds nothing and wait allows, queues
// behind the callers already waiting under k and runs it again each time
// it is woken at the head of the queue, until it finds something, the
// wait ends (nothing, no error), the engine shuts down (nothing, no
// error) or ctx ends (its error; nothing is taken after that).
func (e *Engine) poll(ctx context.Context, k waitKey, wait time.Duration, try func() (bool, error)) error {
	if wait <= 0 {
		_, err := try()
		return err
	}
	wt, head, ok := e.waiting.join(k)
	if !ok {
		return nil
	}
	defer e.waiting.leave(k, wt)
	if head {
		wakeUp(wt) // first in line: look at once
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case <-wt.ch:
			if err := ctx.Err(); err != nil {
				return err
			}
			if found, err := try(); found || err != nil {
				return err
			}
		case <-timer.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-e.waiting.closed:
			return nil
		}
	}
}

// must adapts a Decide function that either refuses or returns an event.
func must(ev mailbox.Event, err error) (mailbox.Event, bool, error) { return ev, err == nil, err }

// PostResult records a result for a leased task.
func (e *Engine) PostResult(ctx context.Context, r mailbox.Result) error {
	r, err := mailbox.NormalizeResult(r)
	if err != nil {
		return err
	}
	// The caller is seen as the task's lease holder; when the result is
	// refused, as whom its token speaks for.
	holder := mailbox.PrincipalFrom(ctx)
	decideResult := e.decideResult(ctx, r, &holder)
	// A result is one event; one for a queued task is two (its lease and
	// itself), one unit.
	_, err = e.run("nothing was changed", func(p *pass) error {
		evs, err := decideResult(p.s, p.now)
		if err != nil {
			return err
		}
		for _, ev := range evs {
			if _, err := p.add(ev, nil); err != nil {
				return err
			}
		}
		return nil
	})
	e.seen(holder)
	return resultRefusal(ctx, err)
}

// Drain takes the oldest result pending for sender ("" = any).
func (e *Engine) Drain(ctx context.Context, sender string) (*mailbox.PendingResult, error) {
	got, err := e.DrainN(ctx, sender, 1, 0)
	if err != nil || len(got) == 0 {
		return nil, err
	}
	return &got[0], nil
}

// DrainN drains up to n results for sender, waiting up to wait for one
// when none is pending (see mailbox.Service).
func (e *Engine) DrainN(ctx context.Context, sender string, n int, wait time.Duration) ([]mailbox.PendingResult, error) {
	if sender != "" {
		if err := mailbox.ValidateAgentID("sender", sender); err != nil {
			return nil, err
		}
		e.seen(sender)
	} else {
		e.seen(mailbox.PrincipalFrom(ctx))
	}
	if err := mailbox.ValidateBatch(n, wait.Milliseconds()); err != nil {
		return nil, err
	}
	var got []mailbox.PendingResult
	try := func() (bool, error) {
		got = got[:0]
		made, err := e.decideN(n, func(s *mailbox.State, now int64) (mailbox.Event, bool, error) {
			ev, r, ok := s.DecideDrain(sender, now)
			if ok {
				got = append(got, r)
			}
			return ev, ok, nil
		}, nil)
		got = got[:made] // only what was made durable
		return len(got) > 0, err
	}
	drainer := sender
	if drainer == "" {
		drainer = mailbox.PrincipalFrom(ctx)
	}
	defer e.polling(drainer, wait)()
	return got, e.poll(ctx, waitKey{waitDrain, sender}, wait, try)
}

// Repair requeues or force-errors an in-flight lease, moves or cancels a
// queued task, or hands a task waiting on its sender to another sender, on
// an operator's word.
func (e *Engine) Repair(ctx context.Context, req mailbox.RepairRequest) (mailbox.RepairOutcome, error) {
	req, err := mailbox.NormalizeRepair(req)
	if err != nil {
		return mailbox.RepairOutcome{}, err
	}
	principal := mailbox.PrincipalFrom(ctx)
	unknown := e.unknownRecipient(req)
	var out mailbox.RepairOutcome
	_, _, err = e.decide(func(s *mailbox.State, now int64) (mailbox.Event, bool, error) {
		ev, err := s.DecideRepair(req, principal, now)
		if err == nil && (ev.Recipient != "" || ev.Sender != "") && unknown != nil {
			// A real move, to an agent nobody has heard of: refused after
			// the task and its lease were found good, so a wrong task or
			// lease is told first.
			return mailbox.Event{}, false, unknown
		}
		return must(ev, err)
	},
		func(s *mailbox.State, ev mailbox.Event) { out = s.RepairOutcomeOf(ev) })
	if err != nil {
		return mailbox.RepairOutcome{}, err
	}
	switch {
	case out.Action == mailbox.OutcomeHandedOver:
		e.log.Info("task handed over to another sender", "task_id", req.TaskID, "principal", principal, "reason", req.Reason, "from", req.Command.SentBy, "sender", out.Sender)
	case out.Action == mailbox.OutcomeMoved:
		e.log.Info("queued task moved", "task_id", req.TaskID, "principal", principal, "reason", req.Reason, "from", req.Command.QueuedFor, "recipient", out.Recipient)
	case out.Action == mailbox.OutcomeCanceled:
		e.log.Info("queued task canceled", "task_id", req.TaskID, "principal", principal, "reason", req.Reason)
	case out.Action == mailbox.OutcomeRequeued && out.Recipient != "":
		e.log.Info("lease requeued to another recipient", "task_id", req.TaskID, "principal", principal, "reason", req.Reason, "duplicate_risk", req.Command.DuplicateRisk, "recipient", out.Recipient)
	case out.Action == mailbox.OutcomeRequeued:
		e.log.Info("lease requeued", "task_id", req.TaskID, "principal", principal, "reason", req.Reason, "duplicate_risk", req.Command.DuplicateRisk)
	default:
		e.log.Info("lease force-errored", "task_id", req.TaskID, "principal", principal, "reason", req.Reason)
	}
	return out, nil
}

// unknownRecipient is the refusal of a requeue to an agent the mailbox
// does not know (in the agents listing: registered, heard from since
// start, or sender, recipient or holder of a remembered task) unless the
// request confirms a new agent: a mistyped name would otherwise send the
// work where nobody reads it. The refusal names the known agents it is
// close to. nil when the recipient is known, confirmed, or not given.
func (e *Engine) unknownRecipient(req mailbox.RepairRequest) error {
	to, field := req.Command.Recipient, "command.recipient"
	if req.Command.Action == mailbox.ActionHandOver {
		to, field = req.Command.Sender, "command.sender"
	}
	if to == "" || req.Command.NewAgent {
		return nil
	}
	var known []string
	for _, a := range e.agents(e.opts.Now().UnixMilli()) {
		if a.Agent == to {
			return nil
		}
		known = append(known, a.Agent)
	}
	msg := field + ": got " + strconv.Quote(to) + ", an agent the mailbox does not know (never registered, heard from, or holding tasks)"
	if close := mailbox.CloseMatches(to, known, 5); len(close) > 0 {
		msg += "; did you mean " + strings.Join(close, ", ")
	}
	msg += "; expected a known agent, or command.new_agent to confirm a new one"
	return &mailbox.Error{Code: mailbox.CodeInvalid, Message: msg, Details: &mailbox.ErrorDetails{Field: field}}
}

// RecentTasks lists queued tasks, oldest first, without consuming them.
func (e *Engine) RecentTasks(ctx context.Context, limit int) ([]mailbox.Task, error) {
	limit, err := mailbox.ValidateLimit("limit", limit)
	if err != nil {
		return nil, err
	}
	var view mailbox.QueueView
	if err := e.read(func() { view = e.query(mailbox.QueueFilter{Limit: limit, State: mailbox.TaskQueued}) }); err != nil {
		return nil, err
	}
	tasks := make([]mailbox.Task, len(view.Tasks))
	for i, q := range view.Tasks {
		tasks[i] = q.Task
	}
	return tasks, nil
}

// RecentResults lists pending results, oldest first, without consuming them.
func (e *Engine) RecentResults(ctx context.Context, limit int) ([]mailbox.PendingResult, error) {
	limit, err := mailbox.ValidateLimit("limit", limit)
	if err != nil {
		return nil, err
	}
	var rs []mailbox.PendingResult
	if err := e.read(func() {
		e.durableMu.RLock()
		rs = e.durable.PendingResults()
		e.durableMu.RUnlock()
	}); err != nil {
		return nil, err
	}
	if len(rs) > limit {
		rs = rs[:limit]
	}
	return rs, nil
}

// Queue answers a filtered view of the durable queue.
func (e *Engine) Queue(ctx context.Context, f mailbox.QueueFilter) (mailbox.QueueView, error) {
	limit, err := mailbox.ValidateLimit("limit", f.Limit)
	if err != nil {
		return mailbox.QueueView{}, err
	}
	f.Limit = limit
	switch f.State {
	case "", mailbox.TaskQueued, mailbox.TaskInFlight, mailbox.TaskWaiting:
	default:
		return mailbox.QueueView{}, mailbox.Invalidf("state", "got %q, expected \"queued\", \"in_flight\" or \"waiting\"", f.State)
	}
	for _, d := range []struct {
		name string
		v    *int64
	}{{"min_lease_age_ms", f.MinLeaseAgeMs}, {"deadline_within_ms", f.DeadlineWithinMs}} {
		if d.v != nil && (*d.v < 0 || *d.v > mailbox.MaxDurationMs) {
			return mailbox.QueueView{}, mailbox.Invalidf(d.name, "got \"%d\", expected milliseconds from 0 to %d (100 years)", *d.v, mailbox.MaxDurationMs)
		}
	}
	if f.Agent != "" {
		if err := mailbox.ValidateAgentID("agent", f.Agent); err != nil {
			return mailbox.QueueView{}, err
		}
	}
	var v mailbox.QueueView
	err = e.read(func() { v = e.query(f) })
	return v, err
}

// query answers a queue query that is already valid.
func (e *Engine) query(f mailbox.QueueFilter) mailbox.QueueView {
	now := e.opts.Now().UnixMilli()
	e.durableMu.RLock()
	defer e.durableMu.RUnlock()
	return e.durable.Query(f, now)
}

// View runs fn with the durable state, read-only. Tests read the state
// through it (here and in daemon/auth's policy tests), where a request
// would go through the policy they are testing.
func (e *Engine) View(fn func(s *mailbox.State)) {
	e.durableMu.RLock()
	defer e.durableMu.RUnlock()
	fn(e.durable)
}

// Stats are the engine's own figures.
type Stats struct {
	mailbox.Status
	Subscribers    int
	SubscribersCut uint64
}

// Stats reports the durable state's sizes and the event streams.
func (e *Engine) Stats() Stats {
	subs, cut := e.hub.stats()
	return Stats{Status: e.Status(), Subscribers: subs, SubscribersCut: cut}
}

// Status reports the durable state's sizes and last seq.
func (e *Engine) Status() mailbox.Status {
	e.durableMu.RLock()
	defer e.durableMu.RUnlock()
	return mailbox.Status{Counts: e.durable.Counts(), LastSeq: e.durable.Seq}
}

// WriteMetrics reports the engine's own figures: the mailbox's sizes and
// its event streams. The log reports its own (see logstore.Store).
func (e *Engine) WriteMetrics(w *metrics.Writer) {
	st := e.Stats()
	w.Gauge("mailroom_tasks_queued", "Tasks waiting to be leased.", float64(st.Queued))
	w.Gauge("mailroom_tasks_in_flight", "Tasks leased and not yet resolved.", float64(st.InFlight))
	w.Gauge("mailroom_tasks_waiting", "Tasks whose worker asked a question, waiting on their sender's reply.", float64(st.Waiting))
	w.Gauge("mailroom_results_pending", "Results waiting for their sender to drain them.", float64(st.ResultsPending))
	w.Gauge("mailroom_tasks_known", "Tasks the state remembers, finished ones included.", float64(st.Known))
	w.Gauge("mailroom_last_seq", "Sequence number of the last durable event.", float64(st.LastSeq))
	w.Gauge("mailroom_sse_subscribers", "Event-stream subscribers connected now.", float64(st.Subscribers))
	w.Gauge("mailroom_long_polls_waiting", "Leases and drains waiting for work to arrive (wait_ms).", float64(e.waiting.count()))
	w.Counter("mailroom_sse_subscribers_cut_total", "Subscribers disconnected for falling behind.", float64(st.SubscribersCut))
}

// EndSubscriptions ends every live subscription and answers every long
// poll (a shutdown starts here, since neither ends by itself soon).
func (e *Engine) EndSubscriptions() {
	e.waiting.shutdown()
	e.hub.closeAll()
}

// Close ends every subscription and closes the store, which syncs what was
// appended. Requests still deciding get their answers first.
func (e *Engine) Close() error {
	if e.closed.Swap(true) {
		return nil
	}
	if e.stopAgents != nil {
		close(e.stopAgents)
		<-e.agentsDone
	}
	e.waiting.shutdown()
	e.hub.closeAll()
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.st.Close()
}

// Audit lists repairs, newest first.
func (e *Engine) Audit(ctx context.Context, taskID string, limit int) ([]mailbox.AuditRecord, error) {
	limit, err := mailbox.ValidateLimit("limit", limit)
	if err != nil {
		return nil, err
	}
	if taskID != "" {
		if taskID, err = mailbox.CanonicalUUID("task_id", taskID); err != nil {
			return nil, err
		}
	}
	var out []mailbox.AuditRecord
	err = e.read(func() {
		e.durableMu.RLock()
		out = e.durable.Audit(taskID, limit)
		e.durableMu.RUnlock()
	})
	return out, err
}

// Task returns the durable record of one task.
func (e *Engine) Task(ctx context.Context, id string) (mailbox.TaskRecord, error) {
	id, err := mailbox.CanonicalUUID("task_id", id)
	if err != nil {
		return mailbox.TaskRecord{}, err
	}
	var rec mailbox.TaskRecord
	var ok bool
	if err := e.read(func() {
		e.durableMu.RLock()
		rec, ok = e.durable.Task(id)
		e.durableMu.RUnlock()
	}); err != nil {
		return mailbox.TaskRecord{}, err
	}
	if !ok {
		return rec, &mailbox.Error{Code: mailbox.CodeNotFound, Message: "task_id: task " + id + " was never sent through this daemon (or was drained long ago and forgotten)",
			Details: &mailbox.ErrorDetails{Field: "task_id"}}
	}
	return rec, nil
}
