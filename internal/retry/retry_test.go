package retry

import (
	"context"
	"math"
	"testing"
	"time"
)

// The wait doubles from Min up to Max and stays there, however many
// failures come (no overflow past 63 doublings).
func TestBase(t *testing.T) {
	for _, tc := range []struct {
		b    Backoff
		n    int
		want time.Duration
	}{
		// The notifier's bounds (push_retry_max's default).
		{Backoff{time.Second, 5 * time.Minute}, 1, time.Second},
		{Backoff{time.Second, 5 * time.Minute}, 2, 2 * time.Second},
		{Backoff{time.Second, 5 * time.Minute}, 3, 4 * time.Second},
		{Backoff{time.Second, 5 * time.Minute}, 9, 256 * time.Second},
		{Backoff{time.Second, 5 * time.Minute}, 10, 5 * time.Minute},
		{Backoff{time.Second, 5 * time.Minute}, 100, 5 * time.Minute},
		// The dispatcher's.
		{Backoff{100 * time.Millisecond, 2 * time.Second}, 1, 100 * time.Millisecond},
		{Backoff{100 * time.Millisecond, 2 * time.Second}, 2, 200 * time.Millisecond},
		{Backoff{100 * time.Millisecond, 2 * time.Second}, 3, 400 * time.Millisecond},
		{Backoff{100 * time.Millisecond, 2 * time.Second}, 5, 1600 * time.Millisecond},
		{Backoff{100 * time.Millisecond, 2 * time.Second}, 6, 2 * time.Second},
		{Backoff{100 * time.Millisecond, 2 * time.Second}, 60, 2 * time.Second},
		// The client's reconnects.
		{Backoff{100 * time.Millisecond, 5 * time.Second}, 7, 5 * time.Second},
		{Backoff{100 * time.Millisecond, 5 * time.Second}, 1000, 5 * time.Second},
		// Bounds at the edge.
		{Backoff{time.Nanosecond, math.MaxInt64}, 200, math.MaxInt64},
		{Backoff{time.Second, time.Second}, 0, time.Second},
		{Backoff{0, time.Second}, 5, 0},
	} {
		if got := tc.b.Base(tc.n); got != tc.want {
			t.Errorf("%+v.Base(%d) = %v, want %v", tc.b, tc.n, got, tc.want)
		}
	}
}

// The jitter keeps a wait within a fifth of its base and never above it:
// between half and all of it (as the dispatcher's was), and within a
// fifth either way (as the notifier's and the client's were).
func TestAfterJitter(t *testing.T) {
	b := Backoff{100 * time.Millisecond, 2 * time.Second}
	for _, n := range []int{1, 2, 3, 5, 6, 60} {
		base := b.Base(n)
		for range 200 {
			got := b.After(n)
			if got < base-base/5 || got > base {
				t.Fatalf("After(%d) = %v, want between %v and %v", n, got, base-base/5, base)
			}
		}
	}
	for range 1000 {
		if j := Jitter(10 * time.Second); j < 8*time.Second || j > 10*time.Second {
			t.Fatalf("Jitter(10s) = %v, want within 8s to 10s", j)
		}
	}
	for _, d := range []time.Duration{0, -time.Second} {
		if got := Jitter(d); got != 0 {
			t.Errorf("Jitter(%v) = %v, want 0", d, got)
		}
	}
}

// A sleep reports whether it slept the whole time: a context that ends
// cuts it short (a shutdown never waits out a backoff).
func TestSleep(t *testing.T) {
	if !Sleep(t.Context(), time.Millisecond) {
		t.Error("Sleep(1ms) on a live context = false, want true")
	}
	if !Sleep(t.Context(), 0) {
		t.Error("Sleep(0) on a live context = false, want true")
	}
	ended, cancel := context.WithCancel(t.Context())
	cancel()
	if Sleep(ended, time.Hour) {
		t.Error("Sleep(1h) on an ended context = true, want false")
	}
	if Sleep(ended, 0) {
		t.Error("Sleep(0) on an ended context = true, want false")
	}
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan bool)
	go func() { done <- Sleep(ctx, time.Hour) }()
	stop()
	if <-done {
		t.Error("Sleep(1h) whose context ended meanwhile = true, want false")
	}
}
