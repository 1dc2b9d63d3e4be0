package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/mailbox"
)

// Batches under kill -9: every batch the daemon acknowledged is in the log
// whole after the restart, and of the batches in flight at the kill each
// is there whole or not at all.
func TestFaultBatchesKill9(t *testing.T) {
	dir := t.TempDir()
	p := startProc(t, dir)
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	const size = 10
	var (
		acked, sent acks
		wg          sync.WaitGroup
	)
	stop := make(chan struct{})
	for w := range 4 {
		wg.Go(func() {
			c, err := client.New(p.addr)
			if err != nil {
				t.Error(err)
				return
			}
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				tag := fmt.Sprintf("batch-%d-%d", w, i)
				tasks := make([]mailbox.Task, size)
				for k := range tasks {
					tasks[k] = mailbox.Task{Sender: "planner@local", Recipient: "coder@local", IntentText: fmt.Sprintf("%s item %d", tag, k)}
				}
				sent.add(tag)
				items, err := c.SendBatch(ctx, tasks)
				if err != nil {
					return // the daemon is gone
				}
				for _, it := range items {
					if !it.OK() {
						t.Errorf("batch %s: item refused: %+v", tag, it)
						return
					}
				}
				acked.add(tag)
			}
		})
	}
	acked.waitFor(t, 40)
	p.kill9(t)
	close(stop)
	wg.Wait()

	p = startProc(t, dir)
	c, err := client.New(p.addr)
	if err != nil {
		t.Fatal(err)
	}
	view, err := c.Queue(ctx, mailbox.QueueFilter{Limit: mailbox.MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, e := range view.Tasks {
		tag, _, _ := strings.Cut(e.Task.IntentText, " item ")
		count[tag]++
	}
	for _, tag := range acked.list() {
		if count[tag] != size {
			t.Errorf("acknowledged batch %s has %d of its %d tasks after kill -9", tag, count[tag], size)
		}
	}
	for _, tag := range sent.list() {
		if n := count[tag]; n != 0 && n != size {
			t.Errorf("batch %s is half there after kill -9: %d of %d tasks", tag, n, size)
		}
	}
	t.Logf("%d batches acknowledged, %d sent; all whole after kill -9", len(acked.list()), len(sent.list()))
}

// acks collects, from several writers, what they sent or what the daemon
// acknowledged.
type acks struct {
	mu    sync.Mutex
	ids   []string
	count tally // of ids, told to a waiter
}

func (a *acks) add(id string) {
	a.mu.Lock()
	a.ids = append(a.ids, id)
	a.mu.Unlock()
	a.count.add()
}

func (a *acks) list() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.ids...)
}

// waitFor returns once n are in, told by add; 90 s without them fails the
// test (a watchdog, not synchronisation).
func (a *acks) waitFor(t *testing.T, n int) {
	t.Helper()
	if !a.count.waitUntil(90*time.Second, func(got int64) bool { return got >= int64(n) }) {
		t.Fatalf("%d acknowledged in 90s, want %d", a.count.load(), n)
	}
}
