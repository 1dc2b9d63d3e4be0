package main

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestTuneGC(t *testing.T) {
	orig := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(orig) })

	// The operator's GOGC wins: nothing changes.
	if got := tuneGC(func(k string) string {
		if k == "GOGC" {
			return "50"
		}
		return ""
	}); got != -2 {
		t.Fatalf("tuneGC with GOGC set = %d, want -2 (untouched)", got)
	}
	if now := debug.SetGCPercent(100); now != 100 {
		t.Fatalf("GC percent with GOGC set = %d, want it left at 100", now)
	}

	// Without GOGC the daemon's target applies.
	if got := tuneGC(func(string) string { return "" }); got != 100 {
		t.Fatalf("tuneGC returned %d, want the previous 100", got)
	}
	if now := debug.SetGCPercent(100); now != daemonGCPercent {
		t.Fatalf("GC percent = %d, want %d", now, daemonGCPercent)
	}
}

func TestTuneProcs(t *testing.T) {
	orig := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(orig) })
	set := func(k string) func(string) string {
		return func(name string) string {
			if name == k {
				return "3"
			}
			return ""
		}
	}

	// The operator's GOMAXPROCS wins; a PostgreSQL store gets nothing.
	if got := tuneProcs(set("GOMAXPROCS"), true); got != 0 || runtime.GOMAXPROCS(0) != orig {
		t.Fatalf("with GOMAXPROCS set: tuneProcs = %d and GOMAXPROCS now %d, want 0 and %d untouched", got, runtime.GOMAXPROCS(0), orig)
	}
	if got := tuneProcs(set("GOGC"), false); got != 0 || runtime.GOMAXPROCS(0) != orig {
		t.Fatalf("for a PostgreSQL store: tuneProcs = %d and GOMAXPROCS now %d, want 0 and %d untouched", got, runtime.GOMAXPROCS(0), orig)
	}
	for range 2 { // again sets the same count
		if got := tuneProcs(set("GOGC"), true); got != defaultProcs+1 || runtime.GOMAXPROCS(0) != defaultProcs+1 {
			t.Fatalf("for a log store: tuneProcs = %d and GOMAXPROCS now %d, want %d", got, runtime.GOMAXPROCS(0), defaultProcs+1)
		}
	}
}

func TestGCPercentFollowsTheLiveHeap(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, daemonGCPercent},
		{16 << 20, daemonGCPercent},
		{256 << 20, daemonGCPercent},
		{512 << 20, 200},
		{2 << 30, 50},
		{4 << 30, minGCPercent},
		{16 << 30, minGCPercent},
	} {
		if got := gcPercentFor(c.live); got != c.want {
			t.Errorf("gcPercentFor(%d MiB) = %d, want %d", c.live>>20, got, c.want)
		}
	}
}

// TestGCTunerRetunesAfterACollection holds a live heap of 512 MiB and
// checks that, after a collection, the target is the one for it (about
// 200, a little less for the rest of the test binary's heap).
func TestGCTunerRetunesAfterACollection(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 512 MiB")
	}
	orig := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(orig) })
	tuneGC(func(string) string { return "" })
	live := make([][]byte, 512)
	for i := range live {
		live[i] = make([]byte, 1<<20)
	}
	for range 100 { // the finalizer runs after the collection, on its own goroutine
		runtime.GC()
		if now := debug.SetGCPercent(-1); debug.SetGCPercent(now) == -1 && now <= 200 && now > 150 {
			runtime.KeepAlive(live)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	now := debug.SetGCPercent(100)
	debug.SetGCPercent(now)
	t.Fatalf("with 512 MiB live the GC target stayed %d, want about 200", now)
}
