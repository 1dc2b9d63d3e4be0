package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// daemonGCPercent is the garbage collector's target for a process that runs
// a daemon (daemon, demo, bench --embedded) when GOGC is not set: the heap
// may grow to five times what is live before a collection, instead of
// twice. A daemon's live heap is bounded by retain_done, the audit and the
// result cache (tens of MB), and with Go's default a quarter of a busy
// daemon's CPU went to collecting; 400 gives 5-10% more cycles/s in
// `mailroom bench` (see docs/benchmarks.md). It also covers the log's replay at start,
// which makes garbage at a furious rate (a decoded event per line) while the
// live heap barely grows: 400 cut a million-event restart by a fifth. GOGC,
// when set, wins. This is the one place the collector is tuned: the daemon
// and engine packages leave it to the process that hosts them.
const daemonGCPercent = 400

// gcHeadroom bounds how far the heap may grow past what the last
// collection found live, once daemonGCPercent would let it grow further:
// the target stays 400 for a live heap of 256 MiB and less, and falls to
// minGCPercent for one of 4 GiB and more. A mailbox of a million live
// tasks keeps about 2 GB live, and 400 let the process grow to five times
// that (6.3 GB resident after a restart, issue 27); with 1 GiB of headroom
// it stays at 2.7 GB and restarts as fast (14.2 s against 13.4 to 14.9 s
// with 400), where 256 MiB saved 200 MB more but collected so often that
// the restart took 20 s (go test -run MillionLiveTasks ./cmd/mailroom
// -fault.live-tasks 1000000 -v, docs/benchmarks.md).
const (
	gcHeadroom   = 1 << 30
	minGCPercent = 25
)

// gcPercentFor is the collector's target for a live heap of live bytes.
func gcPercentFor(live uint64) int {
	if live == 0 {
		return daemonGCPercent
	}
	return int(min(max(gcHeadroom*100/live, minGCPercent), daemonGCPercent))
}

// tuneGC applies daemonGCPercent unless the operator set GOGC, and says
// what the target was before. From then on, after each collection, the
// target follows the live heap (gcPercentFor).
func tuneGC(getenv func(string) string) (previous int) {
	if getenv("GOGC") != "" {
		return -2
	}
	previous = debug.SetGCPercent(daemonGCPercent)
	gcTunerOnce.Do(func() { armGCTuner(&gcTuner{percent: daemonGCPercent}) })
	return previous
}

var gcTunerOnce sync.Once

// gcTuner holds the target it last set. Each collection finalizes a
// sentinel (gcSentinel), which retunes and arms a new one: the runtime's
// own way to run code after every collection.
type gcTuner struct {
	percent int
	sample  [1]metrics.Sample
}

// gcSentinel is big enough, and has a pointer, so that the runtime gives
// it an object of its own and runs its finalizer (tiny objects are
// batched and may never be finalized).
type gcSentinel struct {
	tuner *gcTuner
	_     [16]byte
}

func armGCTuner(t *gcTuner) {
	runtime.SetFinalizer(&gcSentinel{tuner: t}, func(s *gcSentinel) {
		s.tuner.retune()
		armGCTuner(s.tuner)
	})
}

func (t *gcTuner) retune() {
	t.sample[0].Name = "/gc/heap/live:bytes"
	metrics.Read(t.sample[:])
	if t.sample[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	if p := gcPercentFor(t.sample[0].Value.Uint64()); p != t.percent {
		t.percent = p
		debug.SetGCPercent(p)
	}
}

// tuneProcs gives a process whose daemon keeps its log in files one P (a
// slot to run Go code) more than the runtime's default, unless the operator
// set GOMAXPROCS. The log writer holds its P through each sync
// (logstore.fdatasyncHolding), so that it answers as soon as the disk has;
// without the extra P the requests would have one core fewer while it
// waits. Measured with `mailroom bench --embedded` on two cores: 3,264 and
// 3,539 cycles/s before, 4,300 and 4,433 with both (see docs/benchmarks.md). It
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

// releaseReplayMemory collects once the daemon is open and gives the
// memory its replay used back to the system. Replay makes garbage much
// faster than the mailbox grows (a decoded event per line, a snapshot's
// decoded copy), and the runtime returns freed pages only slowly: after a
// restart over a million live tasks the process held 3.3 GB resident for
// about 1.7 GB live (issue 27). It runs beside the daemon, which already
// answers; on a small mailbox it takes milliseconds.
func releaseReplayMemory() { debug.FreeOSMemory() }
