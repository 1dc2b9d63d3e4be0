package main

import (
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
