package logstore_test

import (
	"sync"
	"testing"

	"github.com/mailroom/mailroom/daemon/store/logstore"
	"github.com/mailroom/mailroom/mailbox"
)

// BenchmarkAppend measures durable events per second as clients see them:
// every appender waits for its event's done before appending the next, as
// a request waits for its response. With one appender every event pays a
// whole fdatasync; with many, group commit lets them share one.
//
//	go test -run '^$' -bench Append -benchtime 3s ./daemon/store/logstore
func BenchmarkAppend(b *testing.B) {
	for _, bc := range []struct {
		name      string
		appenders int
	}{
		{"one_fsync_per_event", 1},
		{"group_commit_16_appenders", 16},
		{"group_commit_128_appenders", 128},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s, err := logstore.Open(b.TempDir(), logstore.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			deadline := int64(1_767_229_200_000)
			kind := "review"
			task := &mailbox.Task{ID: "6f9619ff-8b86-4d11-b42d-00c04fc964ff", Sender: "planner@local", Recipient: "coder@local",
				IntentText: "review the diff of PR 42 and list every behaviour change", TaskKind: &kind, DeadlineMs: &deadline,
				Idempotency: &mailbox.Idempotency{DuplicateSafety: mailbox.DuplicateIdempotent, Key: "pr-42-review"}}

			var (
				mu   sync.Mutex // the engine's lock: it assigns seqs
				next uint64     = 1
				wg   sync.WaitGroup
			)
			b.ResetTimer()
			for range bc.appenders {
				wg.Add(1)
				go func() {
					defer wg.Done()
					done := make(chan error, 1)
					for {
						mu.Lock()
						if next > uint64(b.N) {
							mu.Unlock()
							return
						}
						s.AppendUnit([]mailbox.Event{{Seq: next, AtMs: deadline, Type: mailbox.EventTaskSent, Task: task}}, func(err error) { done <- err })
						next++
						mu.Unlock()
						if err := <-done; err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			st := s.Stats()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(st.EventsAppended)/float64(max(st.Batches, 1)), "events/sync")
			syncSecs, syncs := s.SyncSeconds()
			b.ReportMetric(syncSecs/float64(max(syncs, 1))*1e6, "µs/sync")
		})
	}
}
