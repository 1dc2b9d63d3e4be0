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
		return
	}
	mine := make(map[string]bool, batch)
	for _, it := range items {
		if !it.OK() {
			p.fail("send", it.Code)
			return
		}
		mine[it.TaskID] = true
	}

	// Lease until every task of the round is held; leftovers of an
	// earlier failed round come first and are finished off (stale).
	var results []mailbox.Result
	leased := 0 // of the round's own tasks
	for tries := 0; leased < batch && tries < maxStale; tries++ {
		var got []mailbox.LeasedTask
		if err := p.timed(&p.leaseNs, func() (err error) {
			got, err = p.c.LeaseN(ctx, p.recipient, batch-leased, wait)
			return err
		}); err != nil {
			p.failed(ctx, "lease", err)
			return
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
		return
	}
	// Leftovers can make a round's results more than a request takes.
	for len(results) > 0 {
		chunk := results[:min(len(results), mailbox.MaxBatch)]
		results = results[len(chunk):]
		if err := p.timed(&p.resultNs, func() (err error) {
			items, err = p.c.PostResults(ctx, chunk)
			return err
		}); err != nil {
			p.failed(ctx, "result", err)
			return
		}
		for _, it := range items {
			if !it.OK() {
				p.fail("result", it.Code)
				return
			}
		}
	}

	drained := 0
	for tries := 0; drained < batch && tries < maxStale; tries++ {
		var got []mailbox.PendingResult
		if err := p.timed(&p.drainNs, func() (err error) {
			got, err = p.c.DrainN(ctx, p.sender, batch, wait)
			return err
		}); err != nil {
			p.failed(ctx, "drain", err)
			return
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
		return
	}
	p.cycleNs.add(time.Since(start))
	p.cycles.Add(uint64(batch))
}
