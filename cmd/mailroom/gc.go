package main

import "runtime/debug"

// daemonGCPercent is the garbage collector's target for a process that runs
// a daemon (daemon, demo, bench --embedded) when GOGC is not set: the heap
// may grow to five times what is live before a collection, instead of
// twice. A daemon's live heap is bounded by retain_done, the audit and the
// result cache (tens of MB), and with Go's default a quarter of a busy
// daemon's CPU went to collecting; 400 gives 5-10% more cycles/s in
// `mailroom bench` (see README). GOGC, when set, wins.
const daemonGCPercent = 400

// tuneGC applies daemonGCPercent unless the operator set GOGC, and says
// what the target was before.
func tuneGC(getenv func(string) string) (previous int) {
	if getenv("GOGC") != "" {
		return -2
	}
	return debug.SetGCPercent(daemonGCPercent)
}
