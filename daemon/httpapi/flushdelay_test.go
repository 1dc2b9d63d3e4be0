package httpapi

import (
	"testing"
	"time"
)

// TestFlushDelayGrowsWithTheStreams checks the wait for more events per
// write: FlushDelay up to 99 streams, then a step every 50, at most four
// times it; negative (none) stays none.
func TestFlushDelayGrowsWithTheStreams(t *testing.T) {
	for _, c := range []struct {
		base    time.Duration
		streams int64
		want    time.Duration
	}{
		{5 * time.Millisecond, 0, 5 * time.Millisecond},
		{5 * time.Millisecond, 99, 5 * time.Millisecond},
		{5 * time.Millisecond, 100, 10 * time.Millisecond},
		{5 * time.Millisecond, 150, 15 * time.Millisecond},
		{5 * time.Millisecond, 500, 20 * time.Millisecond},
		{5 * time.Millisecond, 100000, 20 * time.Millisecond},
		{-1, 500, -4},
	} {
		a := &api{opts: Options{FlushDelay: c.base}}
		a.streams.Store(c.streams)
		if got := a.flushDelay(); got != c.want {
			t.Errorf("FlushDelay %v with %d streams: %v, want %v", c.base, c.streams, got, c.want)
		}
	}
}
