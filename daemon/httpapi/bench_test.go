package httpapi_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/mailbox"
)

// BenchmarkCycle measures full cycles over HTTP: a planner sends a task, its
// worker leases it and posts the result, the planner drains it. Each
// parallel goroutine is one planner/worker pair with its own keep-alive
// connection; every step is durable (fsynced, group-committed) before it is
// answered, so more pairs share each sync.
//
//	go test -run '^$' -bench Cycle -benchtime 3s ./daemon/httpapi
func BenchmarkCycle(b *testing.B) {
	for _, pairs := range []int{1, 16, 32} {
		b.Run(fmt.Sprintf("pairs=%d", pairs), func(b *testing.B) {
			d := daemontest.Start(b, daemontest.Options{})
			c, err := client.New(d.Addr(), client.WithHTTPClient(&http.Client{
				Transport: &http.Transport{MaxIdleConnsPerHost: pairs}}))
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			var n atomic.Int64
			// RunParallel starts parallelism*GOMAXPROCS goroutines.
			b.SetParallelism((pairs + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				p := n.Add(1)
				planner, worker := fmt.Sprintf("planner%d@bench", p), fmt.Sprintf("worker%d@bench", p)
				for pb.Next() {
					if err := cycle(ctx, c, planner, worker); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "cycles/s")
		})
	}
}

// BenchmarkCycleFloor is the ceiling net/http itself puts on BenchmarkCycle
// on this machine: the same client, connections and pairs, four POSTs per
// cycle, against a handler that reads the body and answers a fixed object:
// no JSON decoding, no mailbox, no disk. The mailroom cycle rate can only
// approach it, so it is the yardstick for cycle targets.
//
//	go test -run '^$' -bench 'Cycle(Floor)?/pairs=16' -benchtime 3s ./daemon/httpapi
func BenchmarkCycleFloor(b *testing.B) {
	// Named like BenchmarkCycle's sub-benchmarks, so one -bench pattern
	// runs the two side by side.
	const pairs = 16
	b.Run(fmt.Sprintf("pairs=%d", pairs), func(b *testing.B) {
		answer := []byte(`{"task_id":"0193a4c8-5a2b-7c3d-8e9f-000000000000"}` + "\n")
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if _, err := io.Copy(io.Discard, r.Body); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.Write(answer)
		}))
		defer srv.Close()
		hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: pairs}}
		defer hc.CloseIdleConnections()
		body := []byte(`{"sender":"planner1@bench","recipient":"worker1@bench","intent_text":"benchmark"}`)
		post := func() error {
			resp, err := hc.Post(srv.URL+"/a2a/tasks", "application/json", bytes.NewReader(body))
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if _, err := io.Copy(io.Discard, resp.Body); err != nil {
				return err
			}
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("status %s", resp.Status)
			}
			return nil
		}
		b.SetParallelism((pairs + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
		b.ResetTimer()
		start := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				for range 4 {
					if err := post(); err != nil {
						b.Error(err)
						return
					}
				}
			}
		})
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "cycles/s")
	})
}

func cycle(ctx context.Context, c *client.Client, planner, worker string) error {
	q, err := c.Send(ctx, mailbox.Task{Sender: planner, Recipient: worker, IntentText: "benchmark"})
	if err != nil {
		return err
	}
	task, lease, err := c.Lease(ctx, worker)
	if err != nil {
		return err
	}
	if task == nil || task.ID != q.TaskID {
		return fmt.Errorf("leased %v, want %s", task, q.TaskID)
	}
	err = c.PostResult(ctx, mailbox.Result{TaskID: task.ID, Status: mailbox.StatusOK, LeaseID: lease.LeaseID,
		Content: []mailbox.Content{{Type: mailbox.ContentText, Text: "done"}}})
	if err != nil {
		return err
	}
	r, err := c.Drain(ctx, planner)
	if err != nil {
		return err
	}
	if r == nil || r.TaskID != task.ID {
		return fmt.Errorf("drained %v, want the result of %s", r, task.ID)
	}
	return nil
}

// BenchmarkBatchedRound measures batched rounds over HTTP: 16 pairs, each
// sending 32 tasks in one request, leasing them 32 a request, posting
// their 32 results in one request and draining them 32 a request. One op
// is one task's full cycle.
//
//	go test -run '^$' -bench 'BatchedRound|CycleFloor' -benchtime 3s ./daemon/httpapi
func BenchmarkBatchedRound(b *testing.B) {
	const pairs, batch = 16, 32
	d := daemontest.Start(b, daemontest.Options{})
	c, err := client.New(d.Addr(), client.WithHTTPClient(&http.Client{
		Transport: &http.Transport{MaxIdleConnsPerHost: pairs}}))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var n, done atomic.Int64
	rounds := (b.N + batch - 1) / batch
	var next atomic.Int64
	b.SetParallelism((pairs + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		p := n.Add(1)
		planner, worker := fmt.Sprintf("planner%d@bench", p), fmt.Sprintf("worker%d@bench", p)
		for pb.Next() {
			if next.Add(1) > int64(rounds) {
				continue
			}
			if err := round(ctx, c, planner, worker, batch); err != nil {
				b.Error(err)
				return
			}
			done.Add(batch)
		}
	})
	b.ReportMetric(float64(done.Load())/time.Since(start).Seconds(), "cycles/s")
}

func round(ctx context.Context, c *client.Client, planner, worker string, batch int) error {
	tasks := make([]mailbox.Task, batch)
	for i := range tasks {
		tasks[i] = mailbox.Task{Sender: planner, Recipient: worker, IntentText: "benchmark"}
	}
	if _, err := c.SendBatch(ctx, tasks); err != nil {
		return err
	}
	var results []mailbox.Result
	for len(results) < batch {
		got, err := c.LeaseN(ctx, worker, batch-len(results), time.Second)
		if err != nil {
			return err
		}
		for _, l := range got {
			results = append(results, mailbox.Result{TaskID: l.Task.ID, LeaseID: l.Lease.LeaseID, Status: mailbox.StatusOK, Content: []mailbox.Content{}})
		}
	}
	if _, err := c.PostResults(ctx, results); err != nil {
		return err
	}
	for drained := 0; drained < batch; {
		got, err := c.DrainN(ctx, planner, batch-drained, time.Second)
		if err != nil {
			return err
		}
		drained += len(got)
	}
	return nil
}
