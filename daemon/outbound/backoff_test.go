package outbound

import (
	"testing"
	"time"
)

func TestBackoffDoublesWithinItsBounds(t *testing.T) {
	lo, hi := 100*time.Millisecond, 2*time.Second
	for _, c := range []struct {
		n    int
		want time.Duration // before jitter
	}{{1, 100 * time.Millisecond}, {2, 200 * time.Millisecond}, {3, 400 * time.Millisecond}, {5, 1600 * time.Millisecond}, {6, 2 * time.Second}, {60, 2 * time.Second}} {
		for range 50 {
			if got := backoff(lo, hi, c.n); got < c.want/2 || got > c.want {
				t.Fatalf("backoff(%v, %v, %d) = %v, want between %v and %v", lo, hi, c.n, got, c.want/2, c.want)
			}
		}
	}
}
