package bench

import (
	"context"
	"time"

	"github.com/mailroom/mailroom/mailbox"
)

// round runs one batched round: send batch tasks in one request, lease
// them (up to batch a request, long-polling for wait), post their results
// in one request, and drain them the same way. It counts batch cycles,
// and only when every request got a 2xx answer about the tasks the round
// sent; the round's latency is the cycle latency.
func (p *pair) round(ctx context.Context, batch int, wait time.Duration) {
	start := time.Now()
	mine, ok := p.sendBatch(ctx, batch)
	if !ok {
		return
	}
	results, ok := p.leaseBatch(ctx, batch, wait, mine)
	if !ok || !p.postBatch(ctx, results) || !p.drainBatch(ctx, batch, wait, mine) {
		return
	}
	p.cycleNs.add(time.Since(start))
	p.cycles.Add(uint64(batch))
}

// sendBatch sends the round's tasks in one request; mine holds their ids.
func (p *pair) sendBatch(ctx context.Context, batch int) (mine map[string]bool, ok bool) {
	tasks := make([]mailbox.Task, batch)
	for i := range tasks {
		tasks[i] = mailbox.Task{Sender: p.sender, Recipient: p.recipient, IntentText: p.payload}
	}
	var items []mailbox.BatchItem
	if err := p.timed(&p.sendNs, func() (err error) {
		items, err = p.c.SendBatch(ctx, tasks)
		return err
	}); err != nil {
		p.failed(ctx, "send", err)
		return nil, false
	}
	mine = make(map[string]bool, batch)
	for _, it := range items {
		if !it.OK() {
			p.fail("send", it.Code)
			return nil, false
		}
		mine[it.TaskID] = true
	}
	return mine, true
}

// leaseBatch leases until every task of the round is held, and returns
// the results to post; leftovers of an earlier failed round come first
// and are finished off (stale).
func (p *pair) leaseBatch(ctx context.Context, batch int, wait time.Duration, mine map[string]bool) ([]mailbox.Result, bool) {
	var results []mailbox.Result
	leased := 0 // of the round's own tasks
	for tries := 0; leased < batch && tries < maxStale; tries++ {
		var got []mailbox.LeasedTask
		if err := p.timed(&p.leaseNs, func() (err error) {
			got, err = p.c.LeaseN(ctx, p.recipient, batch-leased, wait)
			return err
		}); err != nil {
			p.failed(ctx, "lease", err)
			return nil, false
		}
		for _, l := range got {
			r := mailbox.Result{TaskID: l.Task.ID, LeaseID: l.Lease.LeaseID, Status: mailbox.StatusOK, Content: []mailbox.Content{{Type: mailbox.ContentText, Text: "done"}}}
			if mine[l.Task.ID] {
				leased++
			} else {
				p.fail("lease", "stale")
				r.Status, r.Content, r.ErrorMessage = mailbox.StatusError, []mailbox.Content{}, "left over from an earlier bench round"
			}
			results = append(results, r)
		}
	}
	if leased < batch {
		p.fail("lease", "empty")
		return nil, false
	}
	return results, true
}

// postBatch posts the results, as many requests as they take: leftovers
// can make a round's results more than one takes.
func (p *pair) postBatch(ctx context.Context, results []mailbox.Result) bool {
	for len(results) > 0 {
		chunk := results[:min(len(results), mailbox.MaxBatch)]
		results = results[len(chunk):]
		var items []mailbox.BatchItem
		if err := p.timed(&p.resultNs, func() (err error) {
			items, err = p.c.PostResults(ctx, chunk)
			return err
		}); err != nil {
			p.failed(ctx, "result", err)
			return false
		}
		for _, it := range items {
			if !it.OK() {
				p.fail("result", it.Code)
				return false
			}
		}
	}
	return true
}

// drainBatch drains the round's results.
func (p *pair) drainBatch(ctx context.Context, batch int, wait time.Duration, mine map[string]bool) bool {
	drained := 0
	for tries := 0; drained < batch && tries < maxStale; tries++ {
		var got []mailbox.PendingResult
		if err := p.timed(&p.drainNs, func() (err error) {
			got, err = p.c.DrainN(ctx, p.sender, batch, wait)
			return err
		}); err != nil {
			p.failed(ctx, "drain", err)
			return false
		}
		for _, r := range got {
			switch {
			case !mine[r.TaskID]:
				p.fail("drain", "stale")
			case r.Status != mailbox.StatusOK:
				p.fail("drain", "wrong_result")
			default:
				drained++
			}
		}
	}
	if drained < batch {
		p.fail("drain", "empty")
		return false
	}
	return true
}
