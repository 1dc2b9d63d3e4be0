package engine

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mailroom/mailroom/mailbox"
)

// item is one item of a batch: its decision, or the refusal it met before
// one could be made (a malformed task, say).
type item struct {
	decide decision
	// many, when set instead of decide, decides the item as several events
	// (a result for a queued task is a lease and a result), applied in
	// order; the item's outcome is the last.
	many    func(s *mailbox.State, nowMs int64) ([]mailbox.Event, error)
	refused error
	// after runs under the lock once the item's event is applied.
	after func(s *mailbox.State, ev mailbox.Event)
}

// itemOutcome is what deciding an item gave: an event (ok), nothing to do
// (!ok, err nil), or a refusal.
type itemOutcome struct {
	ev  mailbox.Event
	ok  bool
	err error
}

// decideUnit decides every item under one lock, one after the other, each
// against the state the ones before it left (so two twins in one batch
// dedupe), and appends the events of those accepted as one unit: durable
// together, after one sync, or not at all. A failed write fails the whole
// request; a refused item only itself.
func (e *Engine) decideUnit(items []item) ([]itemOutcome, error) {
	if e.closed.Load() {
		return nil, mailbox.Errorf(mailbox.CodeUnavailable, "the mailbox is shutting down; retry against the restarted daemon")
	}
	if err := e.failed.Load(); err != nil {
		return nil, err
	}
	out := make([]itemOutcome, len(items))
	e.mu.Lock()
	if err := e.readyLocked(); err != nil {
		e.mu.Unlock()
		return nil, err
	}
	now := e.opts.Now().UnixMilli()
	evs := make([]mailbox.Event, 0, len(items))
	at := make([]int, 0, len(items)) // the item of each event
	for i, it := range items {
		if it.refused != nil {
			out[i].err = it.refused
			continue
		}
		var made []mailbox.Event
		if it.many != nil {
			var err error
			if made, err = it.many(e.decided, now); err != nil {
				out[i].err = err
				continue
			}
		} else {
			ev, ok, err := it.decide(e.decided, now)
			if err != nil || !ok {
				out[i] = itemOutcome{ok: false, err: err}
				continue
			}
			made = []mailbox.Event{ev}
		}
		for _, ev := range made {
			ev.Seq = e.decided.Seq + 1
			if err := e.decided.Apply(ev); err != nil {
				e.mu.Unlock()
				return nil, e.bug(fmt.Errorf("decided event does not apply: %w", err))
			}
			if it.after != nil {
				it.after(e.decided, ev)
			}
			e.wakeFor(e.decided, ev)
			evs = append(evs, ev)
			at = append(at, i)
		}
	}
	if len(evs) > 1 {
		evs[0].Unit = len(evs)
	}
	for k := range evs {
		var err error
		if evs[k].Encoded, err = json.Marshal(evs[k]); err != nil {
			e.mu.Unlock()
			return nil, e.bug(fmt.Errorf("decided event %d (%s) does not encode: %w", evs[k].Seq, evs[k].Type, err))
		}
		out[at[k]] = itemOutcome{ev: evs[k], ok: true}
	}
	if len(evs) == 0 {
		e.mu.Unlock()
		// Every item refused, or nothing to do: answers made from the
		// state with no fenced append to vouch for them.
		if cerr := e.current(true, 0); cerr != nil {
			return nil, cerr
		}
		return out, nil
	}
	done := make(chan error, 1)
	e.pending.Add(1)
	e.st.AppendUnit(evs, func(err error) {
		for _, ev := range evs {
			e.settle(ev, err)
		}
		e.pending.Done()
		done <- err
	})
	e.mu.Unlock()
	if err := <-done; err != nil {
		if len(items) == 1 {
			return nil, e.writeFailure("nothing was changed", err)
		}
		return nil, e.writeFailure("nothing of the batch was changed", err)
	}
	e.maybeCompact()
	return out, nil
}

// SendBatch sends each task as Send does (ids assigned, twins deduped,
// the one before it in the batch included).
func (e *Engine) SendBatch(ctx context.Context, tasks []mailbox.Task) ([]mailbox.BatchItem, error) {
	items := make([]item, len(tasks))
	twins := make([]string, len(tasks))
	for i, t := range tasks {
		if t.ID == "" {
			t.ID = e.opts.NewID()
		}
		t, err := mailbox.NormalizeTask(t)
		if err != nil {
			items[i].refused = err
			continue
		}
		e.seen(t.Sender)
		items[i].decide = func(s *mailbox.State, now int64) (mailbox.Event, bool, error) {
			if id, ok := s.LiveDuplicate(t); ok {
				twins[i] = id
				return mailbox.Event{}, false, nil
			}
			return must(s.DecideSend(t, now))
		}
		tasks[i] = t
	}
	out, err := e.decideUnit(items)
	if err != nil {
		return nil, err
	}
	answers := make([]mailbox.BatchItem, len(out))
	for i, o := range out {
		switch {
		case o.err != nil:
			answers[i] = mailbox.Refused("tasks", i, o.err)
		case !o.ok:
			answers[i] = mailbox.BatchItem{Index: i, Kind: mailbox.KindTaskQueued, TaskID: twins[i], Deduplicated: true}
		default:
			answers[i] = mailbox.BatchItem{Index: i, Kind: mailbox.KindTaskQueued, TaskID: tasks[i].ID, Deduplicated: o.ev.Type == mailbox.EventResultReplayed}
		}
	}
	return answers, nil
}

// PostResults posts each result as PostResult does.
func (e *Engine) PostResults(ctx context.Context, results []mailbox.Result) ([]mailbox.BatchItem, error) {
	items := make([]item, len(results))
	holders := make([]string, len(results))
	for i, r := range results {
		r, err := mailbox.NormalizeResult(r)
		if err != nil {
			items[i].refused = err
			continue
		}
		results[i] = r
		items[i].many = e.decideResult(ctx, r, &holders[i])
	}
	out, err := e.decideUnit(items)
	if err != nil {
		return nil, err
	}
	answers := make([]mailbox.BatchItem, len(out))
	seen := map[string]bool{}
	for i, o := range out {
		if o.err != nil {
			answers[i] = mailbox.Refused("results", i, resultRefusal(ctx, o.err))
			continue
		}
		answers[i] = mailbox.BatchItem{Index: i, Kind: mailbox.KindResultPosted, TaskID: results[i].TaskID}
		if h := holders[i]; h != "" && !seen[h] {
			seen[h] = true
			e.seen(h)
		}
	}
	return answers, nil
}

// decideResult decides a normalized result as the caller in ctx posts it
// (see mailbox.State.DecideResult), and records the lease holder in
// *holder.
func (e *Engine) decideResult(ctx context.Context, r mailbox.Result, holder *string) func(s *mailbox.State, now int64) ([]mailbox.Event, error) {
	poster := ""
	if a, ok := mailbox.ActingFrom(ctx); ok {
		poster = a.Agent
	}
	return func(s *mailbox.State, now int64) ([]mailbox.Event, error) {
		evs, err := s.DecideResult(r, poster, e.opts.NewID, now)
		if err == nil {
			*holder = evs[len(evs)-1].LeasedTo
		}
		return evs, err
	}
}

// resultRefusal is a result's refusal as the caller in ctx may see it: a
// caller held to an agent that may not repair leases does not learn the
// current lease of a task it does not hold.
func resultRefusal(ctx context.Context, err error) error {
	if a, ok := mailbox.ActingFrom(ctx); ok && !a.SeesLeases {
		return mailbox.HideLease(err, a.Agent)
	}
	return err
}
