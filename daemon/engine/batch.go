package engine

import (
	"context"

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
	out := make([]itemOutcome, len(items))
	outcome := "nothing of the batch was changed"
	if len(items) == 1 {
		outcome = "nothing was changed"
	}
	_, err := e.run(outcome, func(p *pass) error {
		p.reserve(len(items))
		for i, it := range items {
			if it.refused != nil {
				out[i].err = it.refused
				continue
			}
			var made []mailbox.Event
			if it.many != nil {
				var err error
				if made, err = it.many(p.s, p.now); err != nil {
					out[i].err = err
					continue
				}
			} else {
				ev, ok, err := it.decide(p.s, p.now)
				if err != nil || !ok {
					out[i] = itemOutcome{ok: false, err: err}
					continue
				}
				made = []mailbox.Event{ev}
			}
			for _, ev := range made {
				ev, err := p.add(ev, it.after)
				if err != nil {
					return err
				}
				out[i] = itemOutcome{ev: ev, ok: true}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
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
