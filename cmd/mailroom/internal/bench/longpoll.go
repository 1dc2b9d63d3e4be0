package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/mailbox"
)

// LongPollReport is what a long-poll run measured (--idle-workers).
type LongPollReport struct {
	// Workers long-polled, each on a queue of its own, waiting WaitMs.
	Workers int   `json:"workers"`
	WaitMs  int64 `json:"wait_ms"`
	// IdleRequestsPerS is the lease requests all the workers made per
	// second while their queues stayed empty: what idle workers cost.
	IdleRequestsPerS float64 `json:"idle_requests_per_s"`
	IdleS            float64 `json:"idle_s"`
	// Delay is from the start of a send to a waiting worker's lease
	// answer holding that task, for Sends tasks sent one at a time to a
	// random worker.
	Sends int     `json:"sends"`
	Delay Latency `json:"delay"`
	// Lost counts sends no worker got within the wait.
	Lost int `json:"lost"`
}

// runLongPoll runs workers long-polling on empty queues: first idle for
// half the duration, counting their requests, then for the other half a
// sender sends one task at a time to a random worker and each send's
// delay to the worker's lease is timed.
func runLongPoll(ctx context.Context, c *client.Client, opts Options) LongPollReport {
	wait := opts.Wait
	if wait <= 0 {
		wait = time.Duration(mailbox.MaxWaitMs) * time.Millisecond
	}
	rep := LongPollReport{Workers: opts.IdleWorkers, WaitMs: wait.Milliseconds()}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var requests atomic.Int64
	type leased struct {
		id string
		at time.Time
	}
	got := make(chan leased, opts.IdleWorkers)
	var wg sync.WaitGroup
	for i := range opts.IdleWorkers {
		recipient := fmt.Sprintf("bench-idle-%d@local", i)
		wg.Go(func() {
			for ctx.Err() == nil {
				requests.Add(1)
				l, err := c.LeaseN(ctx, recipient, 1, wait)
				if err != nil || len(l) == 0 {
					continue
				}
				got <- leased{l[0].Task.ID, time.Now()}
			}
		})
	}
	// Idle: every worker waiting, none answered.
	idle := opts.Duration / 2
	for requests.Load() < int64(opts.IdleWorkers) && ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // the last requests reach the daemon
	before := requests.Load()
	start := time.Now()
	time.Sleep(idle)
	rep.IdleS = time.Since(start).Seconds()
	rep.IdleRequestsPerS = float64(requests.Load()-before) / rep.IdleS

	// Sends to waiting workers, one at a time.
	var delays samples
	rng := rand.New(rand.NewPCG(1, 2))
	end := time.Now().Add(opts.Duration - idle)
	for time.Now().Before(end) && ctx.Err() == nil {
		recipient := fmt.Sprintf("bench-idle-%d@local", rng.IntN(opts.IdleWorkers))
		sent := time.Now()
		res, err := c.Send(ctx, mailbox.Task{Sender: "bench-idle-sender@local", Recipient: recipient, IntentText: "wake up"})
		if err != nil {
			rep.Lost++
			continue
		}
		rep.Sends++
		select {
		case l := <-got:
			if l.id != res.TaskID {
				rep.Lost++
				continue
			}
			delays.add(l.at.Sub(sent))
		case <-time.After(wait):
			rep.Lost++
		}
		// Let the worker ask again before the next send.
		time.Sleep(2 * time.Millisecond)
	}
	rep.Delay = delays.summarize()
	cancel()
	wg.Wait()
	return rep
}
