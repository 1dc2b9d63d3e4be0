package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/mailbox"
)

// loadResult is what the pairs measured, merged.
type loadResult struct {
	elapsed                           time.Duration
	cycles, requests                  uint64
	send, lease, result, drain, cycle samples
	errors                            map[string]uint64
}

// pair is one sender/recipient pair. Its fields are its own until the
// load ends; only the counters are shared, for progress lines.
type pair struct {
	c                 *client.Client
	sender, recipient string
	payload           string
	sendNs            samples
	leaseNs           samples
	resultNs          samples
	drainNs           samples
	cycleNs           samples
	errors            map[string]uint64
	cycles, requests  *atomic.Uint64
	failures          *atomic.Uint64
}

// maxStale bounds how many leftover tasks or results one step clears
// before giving up on a cycle (see pair.lease and pair.drain).
const maxStale = 16

// runLoad runs the pairs until opts.Duration has passed or opts.Cycles
// have been started, then lets every pair finish the cycle it is in, so the
// elapsed time covers all the work counted.
func runLoad(ctx context.Context, c *client.Client, opts Options) loadResult {
	var cycles, requests, failures atomic.Uint64
	payload := strings.Repeat("x", opts.PayloadBytes)
	pairs := make([]*pair, opts.Pairs)
	for i := range pairs {
		pairs[i] = &pair{c: c, sender: fmt.Sprintf("bench-s-%d@local", i), recipient: fmt.Sprintf("bench-r-%d@local", i),
			payload: payload, errors: map[string]uint64{}, cycles: &cycles, requests: &requests, failures: &failures}
	}
	start := time.Now()
	deadline := start.Add(opts.Duration)
	pace := newPacer(start, opts.Rate)

	stopProgress := make(chan struct{})
	var progress sync.WaitGroup
	if opts.Progress != nil {
		progress.Go(func() { reportProgress(opts.Progress, start, &cycles, &failures, stopProgress) })
	}
	var wg sync.WaitGroup
	var started atomic.Int64
	more := func() bool {
		return ctx.Err() == nil && time.Now().Before(deadline) &&
			(opts.Cycles == 0 || started.Add(1) <= int64(opts.Cycles)) && pace.wait(ctx, deadline)
	}
	for _, p := range pairs {
		wg.Go(func() {
			if opts.Pipeline {
				p.runPipelined(ctx, more)
				return
			}
			if opts.Batch > 1 {
				for more() {
					p.round(ctx, opts.Batch, opts.Wait)
				}
				return
			}
			for more() {
				p.cycle(ctx)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(stopProgress)
	progress.Wait()

	out := loadResult{elapsed: elapsed, cycles: cycles.Load(), requests: requests.Load(), errors: map[string]uint64{}}
	for _, p := range pairs {
		out.send = append(out.send, p.sendNs...)
		out.lease = append(out.lease, p.leaseNs...)
		out.result = append(out.result, p.resultNs...)
		out.drain = append(out.drain, p.drainNs...)
		out.cycle = append(out.cycle, p.cycleNs...)
		for k, n := range p.errors {
			out.errors[k] += n
		}
	}
	return out
}

// cycle runs one full cycle and counts it only if every step got a 2xx
// answer about the task it sent.
func (p *pair) cycle(ctx context.Context) {
	start := time.Now()
	id, ok := p.send(ctx)
	if !ok {
		return
	}
	task, lease, ok := p.lease(ctx, id)
	if !ok {
		return
	}
	if !p.post(ctx, task, lease) {
		return
	}
	if !p.drain(ctx, id) {
		return
	}
	p.cycleNs.add(time.Since(start))
	p.cycles.Add(1)
}

// timed runs one request, counting and timing it.
func (p *pair) timed(into *samples, f func() error) error {
	t := time.Now()
	err := f()
	p.requests.Add(1)
	if err == nil {
		into.add(time.Since(t))
	}
	return err
}

func (p *pair) fail(step, kind string) {
	p.errors[step+": "+kind]++
	p.failures.Add(1)
}

// failed records err unless the run itself was cancelled.
func (p *pair) failed(ctx context.Context, step string, err error) {
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return
	}
	p.fail(step, errorKind(err))
}

func errorKind(err error) string {
	if errors.Is(err, client.ErrUnreachable) {
		return "unreachable"
	}
	if e, ok := errors.AsType[*mailbox.Error](err); ok {
		return e.Code
	}
	return "other"
}

func (p *pair) send(ctx context.Context) (string, bool) {
	var id string
	err := p.timed(&p.sendNs, func() error {
		resp, err := p.c.Send(ctx, mailbox.Task{Sender: p.sender, Recipient: p.recipient, IntentText: p.payload})
		id = resp.TaskID
		return err
	})
	if err != nil {
		p.failed(ctx, "send", err)
		return "", false
	}
	return id, true
}

// lease leases the task the pair just sent. A task left queued by an
// earlier failed cycle (or an earlier run against the same daemon) comes
// first, because leases go oldest first: such a task is finished off with
// an error result and counted as "stale", so the pair heals itself instead
// of falling one task behind for the rest of the run.
func (p *pair) lease(ctx context.Context, id string) (*mailbox.Task, *mailbox.Lease, bool) {
	for range maxStale {
		var task *mailbox.Task
		var lease *mailbox.Lease
		err := p.timed(&p.leaseNs, func() (err error) {
			task, lease, err = p.c.Lease(ctx, p.recipient)
			return err
		})
		switch {
		case err != nil:
			p.failed(ctx, "lease", err)
			return nil, nil, false
		case task == nil:
			p.fail("lease", "empty")
			return nil, nil, false
		case task.ID == id:
			return task, lease, true
		}
		p.fail("lease", "stale")
		p.c.PostResult(ctx, mailbox.Result{TaskID: task.ID, Status: mailbox.StatusError, LeaseID: lease.LeaseID,
			Content: []mailbox.Content{}, ErrorMessage: "left over from an earlier bench cycle"})
		p.requests.Add(1)
	}
	return nil, nil, false
}

func (p *pair) post(ctx context.Context, task *mailbox.Task, lease *mailbox.Lease) bool {
	err := p.timed(&p.resultNs, func() error {
		return p.c.PostResult(ctx, mailbox.Result{TaskID: task.ID, Status: mailbox.StatusOK, LeaseID: lease.LeaseID,
			Content: []mailbox.Content{{Type: mailbox.ContentText, Text: "done"}}})
	})
	if err != nil {
		p.failed(ctx, "result", err)
		return false
	}
	return true
}

// drain drains the result of task id. Results of earlier failed cycles
// come first (drains go oldest first); they are taken and counted as
// "stale", as in lease.
func (p *pair) drain(ctx context.Context, id string) bool {
	for range maxStale {
		var res *mailbox.PendingResult
		err := p.timed(&p.drainNs, func() (err error) {
			res, err = p.c.Drain(ctx, p.sender)
			return err
		})
		switch {
		case err != nil:
			p.failed(ctx, "drain", err)
			return false
		case res == nil:
			p.fail("drain", "empty")
			return false
		case res.TaskID == id && res.Status == mailbox.StatusOK:
			return true
		case res.TaskID == id:
			p.fail("drain", "wrong_result")
			return false
		}
		p.fail("drain", "stale")
	}
	return false
}

// pacer spaces cycle starts across all pairs at rate per second; the zero
// rate lets every cycle start at once.
type pacer struct {
	start time.Time
	every time.Duration
	next  atomic.Int64
}

func newPacer(start time.Time, rate float64) *pacer {
	p := &pacer{start: start}
	if rate > 0 {
		p.every = time.Duration(float64(time.Second) / rate)
	}
	return p
}

// wait blocks until the next cycle slot; false when ctx ends or the slot
// falls after the deadline.
func (p *pacer) wait(ctx context.Context, deadline time.Time) bool {
	if p.every == 0 {
		return true
	}
	at := p.start.Add(time.Duration(p.next.Add(1)-1) * p.every)
	if !at.Before(deadline) {
		return false
	}
	d := time.Until(at)
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// reportProgress writes one line a second, and one more when the load
// ends (so a run shorter than a second says something too): elapsed time,
// cycles so far, cycles per second since the line before, and errors so
// far.
func reportProgress(w io.Writer, start time.Time, cycles, failures *atomic.Uint64, stop <-chan struct{}) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	last, lastAt := uint64(0), start
	line := func(now time.Time) {
		n := cycles.Load()
		rate := float64(n-last) / now.Sub(lastAt).Seconds()
		fmt.Fprintf(w, "bench: %4.0fs  %9d cycles  %8.0f cycles/s  %d errors\n", now.Sub(start).Seconds(), n, rate, failures.Load())
		last, lastAt = n, now
	}
	for {
		select {
		case <-stop:
			if now := time.Now(); now.After(lastAt) {
				line(now)
			}
			return
		case now := <-tick.C:
			line(now)
		}
	}
}
