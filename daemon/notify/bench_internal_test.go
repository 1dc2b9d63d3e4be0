package notify

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/mailroom/mailroom/daemon/engine"
	"github.com/mailroom/mailroom/daemon/store/logstore"
	"github.com/mailroom/mailroom/mailbox"
)

// BenchmarkScan is one look of the notifier at an outbox of 4,000
// pending notifications to 2,000 receivers (a task's config each), every
// receiver already being delivered to (a receiver down: its goroutine
// waits out its backoff), which is what each wake costs while they fail.
// Yardstick is a fixed piece of work (sorting 4,000 ints) from the same
// run: compare Scan/Yardstick between two runs, not ns/op.
func BenchmarkScan(b *testing.B) {
	const tasks = 2000
	st, err := logstore.Open(b.TempDir(), logstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	eng, err := engine.Open(st, engine.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer eng.Close()
	ctx := context.Background()
	var wg sync.WaitGroup
	work := make(chan int)
	for range 32 { // concurrent writers share the log's syncs
		wg.Go(func() {
			for range work {
				t := mailbox.Task{Sender: "caller@a2a", Recipient: "worker@local", IntentText: "work"}
				if _, err := eng.SendWithPush(ctx, t, mailbox.PushConfig{URL: "http://127.0.0.1:9/hook", Token: "t"}); err != nil {
					b.Error(err)
				}
				if _, _, err := eng.Lease(ctx, "worker@local"); err != nil {
					b.Error(err)
				}
			}
		})
	}
	for i := range tasks {
		work <- i
	}
	close(work)
	wg.Wait()
	box, err := eng.Push().Outbox(ctx)
	if err != nil || len(box) != 2*tasks {
		b.Fatalf("outbox of %d notifications, %v; want %d", len(box), err, 2*tasks)
	}
	n := New(eng, eng.Push(), Options{})
	for _, x := range box {
		n.active[key{x.TaskID, x.ConfigID}] = true
	}
	ints := make([]int, 2*tasks)
	for i := range ints {
		ints[i] = rand.Int()
	}
	b.Run("Scan", func(b *testing.B) {
		var started sync.WaitGroup
		for b.Loop() {
			n.scan(ctx, &started)
		}
		started.Wait()
	})
	b.Run("Yardstick", func(b *testing.B) {
		for b.Loop() {
			slices.Sort(slices.Clone(ints))
		}
	})
}
