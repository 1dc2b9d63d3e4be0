package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/mailbox"
)

// liveTasks is how many tasks of the generated log stay queued: the live
// state a compaction must keep, however long the history.
const liveTasks = 10_000

// TestRestartMillionEvents measures a restart over a long log (issue 5's
// target: 1,000,000 events replay and serve in under 2 s) and what
// compaction makes of it. It writes the log through the log store itself,
// with group commit, as the daemon would have: liveTasks sends that stay
// queued, then full cycles (send, lease, result, drain). It reports and
// does not assert timings; it does assert that the restarted daemon serves
// exactly the state the log holds.
//
//	go test -run RestartMillion ./faults -fault.restart-events 1000000 -v
func TestRestartMillionEvents(t *testing.T) {
	n := *restartEvents
	if n == 0 {
		t.Skip("a measurement; run with -fault.restart-events 1000000")
	}
	if n < liveTasks+4 {
		t.Fatalf("-fault.restart-events: got %d, expected at least %d", n, liveTasks+4)
	}
	dir := t.TempDir()
	start := time.Now()
	last := writeBigLog(t, dir, n)
	logBytes := dirBytes(t, dir)
	t.Logf("wrote %d events (%.1f MB of log) in %s", last, float64(logBytes)/1e6, time.Since(start).Round(time.Millisecond))

	open := func(what string) (*client.Client, func()) {
		begin := time.Now()
		d := daemontest.Start(t, daemontest.Options{Dir: dir})
		opened := time.Since(begin)
		c, err := client.New(d.Addr())
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Health(t.Context()); err != nil {
			t.Fatalf("%s: healthz: %v", what, err)
		}
		t.Logf("%s: opening the daemon (replay) %s, first answer after %s", what, opened.Round(time.Millisecond), time.Since(begin).Round(time.Millisecond))
		return c, d.Stop
	}

	c, stop := open(fmt.Sprintf("restart over %d events", last))
	view, err := c.Queue(t.Context(), mailbox.QueueFilter{Limit: mailbox.MaxLimit})
	if err != nil || len(view.Tasks) != liveTasks || len(view.Results) != 0 {
		t.Fatalf("after replay: %d tasks, %d results (%v); want %d queued tasks", len(view.Tasks), len(view.Results), err, liveTasks)
	}
	out, err := c.Compact(t.Context())
	if err != nil {
		t.Fatalf("compact: %v", err)
	}
	stop()
	t.Logf("compaction at seq %d: log %.1f MB -> %.1f MB; data dir now %.1f MB (live state: %d queued tasks plus the drained ones the state remembers)",
		out.Seq, float64(out.BytesBefore)/1e6, float64(out.BytesAfter)/1e6, float64(dirBytes(t, dir))/1e6, liveTasks)

	c, stop = open("restart after compaction")
	defer stop()
	if view, err := c.Queue(t.Context(), mailbox.QueueFilter{Limit: mailbox.MaxLimit}); err != nil || len(view.Tasks) != liveTasks {
		t.Fatalf("after compaction and restart: %d tasks (%v), want %d", len(view.Tasks), err, liveTasks)
	}
}

// writeBigLog appends n events to a fresh log in dir and returns the last seq.
func writeBigLog(t *testing.T, dir string, n int) uint64 {
	t.Helper()
	w := openLogWriter(t, dir, 0)
	intent := strings.Repeat("x", 64)
	for i := range liveTasks {
		w.add(mailbox.Event{Type: mailbox.EventTaskSent, Task: &mailbox.Task{ID: bigID(1, i), Sender: "planner@local", Recipient: "idle@local", IntentText: intent}})
	}
	w.close()
	return appendCycles(t, dir, liveTasks, n-liveTasks)
}

func dirBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var total int64
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if fi, err := os.Stat(filepath.Join(dir, e.Name())); err == nil && fi.Mode().IsRegular() {
			total += fi.Size()
		}
	}
	return total
}
