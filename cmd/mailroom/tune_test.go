package main

import (
	"runtime"
	"runtime/debug"
	"testing"
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
