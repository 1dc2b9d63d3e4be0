package notify

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/mailroom/mailroom/daemon/engine"
	"github.com/mailroom/mailroom/daemon/store/logstore"
	"github.com/mailroom/mailroom/mailbox"
)

// With a receiver down, every line waits out its backoff as an entry of
// the notifier's, not as a goroutine: 500 failing lines hold no more
// goroutines than the attempts under way; each shows its attempt and next
// try; the receiver back and the retries due, every notification is
// delivered.
func TestLinesWaitingOutTheirBackoffHoldNoGoroutine(t *testing.T) {
	const lines = 200
	var mu sync.Mutex
	up := false
	got := map[string]bool{}
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if !up {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		got[r.Header.Get(HeaderID)] = true
	}))
	defer rcv.Close()
	st, err := logstore.Open(t.TempDir(), logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.Open(st, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	var sends sync.WaitGroup
	for range lines { // at once, so they share the log's syncs
		sends.Go(func() {
			if _, err := eng.SendWithPush(ctx, mailbox.Task{Sender: "caller@a2a", Recipient: "worker@local", IntentText: "work"},
				mailbox.PushConfig{URL: rcv.URL + "/hook"}); err != nil {
				t.Error(err)
			}
		})
	}
	sends.Wait()
	before := runtime.NumGoroutine()
	n := New(eng, eng.Push(), Options{RetryMin: 200 * time.Millisecond, RetryMax: 200 * time.Millisecond, MaxAttempts: 1000})
	rctx, stop := context.WithCancel(ctx)
	ran := make(chan struct{})
	go func() { defer close(ran); n.Run(rctx) }()
	defer func() { stop(); <-ran }()

	waitFor(t, ctx, "every line waiting", func() bool {
		n.mu.Lock()
		defer n.mu.Unlock()
		return len(n.waiting) == lines
	})
	if g := runtime.NumGoroutine() - before; g > n.maxActive()+20 {
		t.Errorf("%d goroutines more with %d lines waiting; want at most the %d attempts under way and the notifier's own", g, lines, n.maxActive())
	}
	for id, a := range n.Status() {
		if a.Attempts < 1 || a.NextTryMs == 0 {
			t.Errorf("notification %s: %+v, want its attempts and next try", id, a)
		}
	}
	mu.Lock()
	up = true
	mu.Unlock()
	waitFor(t, ctx, "the outbox delivered", func() bool {
		box, err := eng.Push().Outbox(ctx)
		return err == nil && len(box) == 0
	})
	mu.Lock()
	defer mu.Unlock()
	if len(got) != lines {
		t.Errorf("the receiver got %d notifications, want %d", len(got), lines)
	}
}

func waitFor(t *testing.T, ctx context.Context, what string, ok func() bool) {
	t.Helper()
	for !ok() {
		select {
		case <-ctx.Done():
			t.Fatalf("never %s", what)
		case <-time.After(5 * time.Millisecond):
		}
	}
}
