package notify

import (
	"testing"
	"time"
)

// The wait between attempts doubles from RetryMin up to RetryMax, and the
// jitter keeps it within a fifth either way.
func TestBackoff(t *testing.T) {
	for _, tc := range []struct {
		attempt int
		want    time.Duration
	}{{1, time.Second}, {2, 2 * time.Second}, {3, 4 * time.Second}, {9, 256 * time.Second}, {10, 5 * time.Minute}, {100, 5 * time.Minute}} {
		if got := backoffAfter(tc.attempt, time.Second, 5*time.Minute); got != tc.want {
			t.Errorf("backoffAfter(%d) = %v, want %v", tc.attempt, got, tc.want)
		}
	}
	for range 1000 {
		if j := jitter(10 * time.Second); j < 8*time.Second || j > 12*time.Second {
			t.Fatalf("jitter(10s) = %v, want within 8s to 12s", j)
		}
	}
}
