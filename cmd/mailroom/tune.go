package main

import (
	"runtime"
	"runtime/debug"
)

// daemonGCPercent is the garbage collector's target for a process that runs
// a daemon (daemon, demo, bench --embedded) when GOGC is not set: the heap
// may grow to five times what is live before a collection, instead of
// twice. A daemon's live heap is bounded by retain_done, the audit and the
// result cache (tens of MB), and with Go's default a quarter of a busy
// daemon's CPU went to collecting; 400 gives 5-10% more cycles/s in
// `mailroom bench` (see README). It also covers the log's replay at start,
// which makes garbage at a furious rate (a decoded event per line) while the
// live heap barely grows: 400 cut a million-event restart by a fifth. GOGC,
// when set, wins. This is the one place the collector is tuned: the daemon
// and engine packages leave it to the process that hosts them.
const daemonGCPercent = 400

// tuneGC applies daemonGCPercent unless the operator set GOGC, and says
// what the target was before.
func tuneGC(getenv func(string) string) (previous int) {
	if getenv("GOGC") != "" {
		return -2
	}
	return debug.SetGCPercent(daemonGCPercent)
}

// tuneProcs gives a process whose daemon keeps its log in files one P (a
// slot to run Go code) more than the runtime's default, unless the operator
// set GOMAXPROCS. The log writer holds its P through each sync
// (logstore.fdatasyncHolding), so that it answers as soon as the disk has;
// without the extra P the requests would have one core fewer while it
// waits. Measured with `mailroom bench --embedded` on two cores: 3,264 and
// 3,539 cycles/s before, 4,300 and 4,433 with both (see README). It
// returns the P count it set, or 0 when it left it alone. Calling it again
// (tests run several daemons in one process) sets the same count.
func tuneProcs(getenv func(string) string, logStore bool) int {
	if getenv("GOMAXPROCS") != "" || !logStore {
		return 0
	}
	n := defaultProcs + 1
	runtime.GOMAXPROCS(n)
	return n
}

// defaultProcs is the runtime's P count when the process started.
var defaultProcs = runtime.GOMAXPROCS(0)
