package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/store/logstore"
	"github.com/mailroom/mailroom/mailbox"
)

// TestMillionLiveTasks measures issue 27's fourth target: a mailbox of n
// live tasks (half queued, half in flight, 64-byte intents), compacted,
// then n events after the snapshot (full cycles of other tasks); the real
// binary restarts over it. It reports how long the daemon takes to answer,
// its resident memory (and the peak, both while it replays the whole log
// at its first start and after the restart), and what an operator's reads
// cost: the status, the queue with a limit, one agent's tasks, and a
// lease. The same is measured on a mailbox of 1,000 in the same run, as
// the yardstick. It asserts the state the daemon serves, never a timing.
//
//	go test -run MillionLiveTasks ./cmd/mailroom -fault.live-tasks 1000000 -v
func TestMillionLiveTasks(t *testing.T) {
	n := *liveMillion
	if n == 0 {
		t.Skip("a measurement; run with -fault.live-tasks 1000000")
	}
	small := measureLiveTasks(t, 1000)
	big := measureLiveTasks(t, n)
	for _, r := range []string{"status", "queue", "agent", "lease"} {
		t.Logf("%-6s median %8.3f ms at %d live tasks, %8.3f ms at %d (%.2fx)", r, big[r], n, small[r], 1000, big[r]/small[r])
	}
}

// measureLiveTasks builds, restarts and reads a mailbox of n live tasks,
// and returns each read's median in ms.
func measureLiveTasks(t *testing.T, n int) map[string]float64 {
	dir := t.TempDir()
	begin := time.Now()
	last := writeLiveLog(t, dir, n)
	t.Logf("n=%d: wrote %d events (%.1f MB of log) in %s", n, last, float64(dirBytes(t, dir))/1e6, time.Since(begin).Round(time.Millisecond))

	// First start: the whole log replays (what filling it left), then a
	// compaction writes the snapshot.
	begin = time.Now()
	p := startProcWithin(t, dir, 10*time.Minute)
	c := procClient(t, p)
	t.Logf("n=%d: first start (replay of %d events) answered after %s; %s", n, last, time.Since(begin).Round(time.Millisecond), procMemory(t, p))
	begin = time.Now()
	out, err := c.Compact(t.Context())
	if err != nil {
		t.Fatalf("compact: %v", err)
	}
	t.Logf("n=%d: compaction at seq %d in %s: snapshot and log %.1f MB; %s", n, out.Seq, time.Since(begin).Round(time.Millisecond), float64(out.BytesAfter)/1e6, procMemory(t, p))
	p.stop(t)

	after := appendCycles(t, dir, out.Seq, n)
	t.Logf("n=%d: %d events after the snapshot; data dir %.1f MB", n, after-out.Seq, float64(dirBytes(t, dir))/1e6)

	begin = time.Now()
	p = startProcWithin(t, dir, 10*time.Minute)
	c = procClient(t, p)
	t.Logf("n=%d: restart over the snapshot and %d events answered after %s; %s", n, after-out.Seq, time.Since(begin).Round(time.Millisecond), procMemory(t, p))
	defer p.stop(t)
	// Not synchronisation: what an idle daemon holds a while after its
	// start, once it has given back its replay's memory; the reads below
	// are then measured on a settled daemon, not beside that collection.
	time.Sleep(10 * time.Second)
	t.Logf("n=%d: ten seconds later: %s", n, procMemory(t, p))

	st, err := c.Status(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if st.Queued != n/2 || st.InFlight != n-n/2 || st.LastSeq != after {
		t.Fatalf("n=%d: after the restart %d queued, %d in flight at seq %d; want %d, %d at %d", n, st.Queued, st.InFlight, st.LastSeq, n/2, n-n/2, after)
	}
	const rounds = 50
	reads := map[string]func(i int) error{
		"status": func(int) error { _, err := c.Status(t.Context()); return err },
		"queue": func(int) error {
			v, err := c.Queue(t.Context(), mailbox.QueueFilter{Limit: 100})
			if err == nil && len(v.Tasks) != 100 {
				err = fmt.Errorf("queue: %d tasks, want 100", len(v.Tasks))
			}
			return err
		},
		"agent": func(int) error {
			// 25: the small mailbox's agent has 31, so both answers are
			// the same size and only the lookup differs.
			v, err := c.Queue(t.Context(), mailbox.QueueFilter{Limit: 25, Agent: "idle-3@local"})
			if want := min(25, (n/2+12)/16); err == nil && len(v.Tasks) != want { // the i < n/2 with i%16 == 3
				err = fmt.Errorf("one agent's tasks: %d, want %d", len(v.Tasks), want)
			}
			return err
		},
		"lease": func(i int) error {
			task, _, err := c.Lease(t.Context(), "idle-"+strconv.Itoa(i%16)+"@local")
			if err == nil && task == nil {
				err = fmt.Errorf("lease: nothing leased")
			}
			return err
		},
	}
	figs := map[string]float64{}
	for name, read := range reads {
		ms := make([]float64, 0, rounds)
		for i := range rounds {
			start := time.Now()
			if err := read(i); err != nil {
				t.Fatalf("n=%d: %s: %v", n, name, err)
			}
			ms = append(ms, float64(time.Since(start).Microseconds())/1000)
		}
		slices.Sort(ms)
		figs[name] = ms[len(ms)/2]
	}
	t.Logf("n=%d: after the reads: %s", n, procMemory(t, p))
	return figs
}

func procClient(t *testing.T, p *proc) *client.Client {
	t.Helper()
	c, err := client.New(p.addr)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Health(t.Context()); err != nil {
		t.Fatalf("healthz: %v", err)
	}
	return c
}

// procMemory reads the daemon's resident memory and its peak from /proc.
func procMemory(t *testing.T, p *proc) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p.cmd.Process.Pid), "status"))
	if err != nil {
		return "memory unknown: " + err.Error()
	}
	var rss, hwm string
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "VmRSS:" {
			rss = f[1]
		}
		if len(f) >= 2 && f[0] == "VmHWM:" {
			hwm = f[1]
		}
	}
	kb := func(s string) string {
		v, _ := strconv.ParseFloat(s, 64)
		return fmt.Sprintf("%.0f MB", v/1024)
	}
	return "resident " + kb(rss) + ", peak " + kb(hwm)
}

// writeLiveLog appends n live tasks to a fresh log in dir: n/2 queued for
// 16 idle agents, the rest sent to 16 busy agents and leased. It returns
// the last seq.
func writeLiveLog(t *testing.T, dir string, n int) uint64 {
	t.Helper()
	w := openLogWriter(t, dir, 0)
	intent := strings.Repeat("x", 64)
	for i := range n / 2 {
		w.add(mailbox.Event{Type: mailbox.EventTaskSent, Task: &mailbox.Task{ID: bigID(4, i), Sender: "planner@local", Recipient: fmt.Sprintf("idle-%d@local", i%16), IntentText: intent}})
	}
	for i := range n - n/2 {
		task, to := bigID(5, i), fmt.Sprintf("busy-%d@local", i%16)
		w.add(mailbox.Event{Type: mailbox.EventTaskSent, Task: &mailbox.Task{ID: task, Sender: "planner@local", Recipient: to, IntentText: intent}})
		w.add(mailbox.Event{Type: mailbox.EventTaskLeased, TaskID: task, LeaseID: bigID(6, i), LeasedTo: to, Attempt: 1})
	}
	return w.close()
}

// appendCycles appends full cycles (send, lease, result, drain) of new
// tasks after seq until n more events are written, and returns the last.
func appendCycles(t *testing.T, dir string, seq uint64, n int) uint64 {
	t.Helper()
	w := openLogWriter(t, dir, seq)
	intent := strings.Repeat("x", 64)
	for i := 0; int(w.seq-seq)+4 <= n; i++ {
		task, lease := bigID(7, i), bigID(8, i)
		sender, recipient := fmt.Sprintf("bench-s-%d@local", i%16), fmt.Sprintf("bench-r-%d@local", i%16)
		w.add(mailbox.Event{Type: mailbox.EventTaskSent, Task: &mailbox.Task{ID: task, Sender: sender, Recipient: recipient, IntentText: intent}})
		w.add(mailbox.Event{Type: mailbox.EventTaskLeased, TaskID: task, LeaseID: lease, LeasedTo: recipient, Attempt: 1})
		w.add(mailbox.Event{Type: mailbox.EventResultPosted, TaskID: task, LeaseID: lease, LeasedTo: recipient, Attempt: 1,
			Result: &mailbox.Result{TaskID: task, Status: mailbox.StatusOK, LeaseID: lease, Content: []mailbox.Content{{Type: mailbox.ContentText, Text: "done"}}}})
		w.add(mailbox.Event{Type: mailbox.EventResultDrained, TaskID: task, Attempt: 1})
	}
	return w.close()
}

func bigID(prefix, i int) string { return fmt.Sprintf("%08x-0000-4000-8000-%012x", prefix, i) }

// logWriter appends events to a log store with group commit, as the
// daemon would have, a bounded number in flight.
type logWriter struct {
	t      *testing.T
	st     *logstore.Store
	seq    uint64
	at     int64
	wg     sync.WaitGroup
	mu     sync.Mutex
	failed error
}

func openLogWriter(t *testing.T, dir string, seq uint64) *logWriter {
	st, err := logstore.Open(dir, logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if st.LastSeq() != seq {
		t.Fatalf("the log ends at seq %d, want %d", st.LastSeq(), seq)
	}
	return &logWriter{t: t, st: st, seq: seq, at: time.Now().Add(-time.Hour).UnixMilli()}
}

func (w *logWriter) add(ev mailbox.Event) {
	w.seq++
	ev.Seq, ev.AtMs = w.seq, w.at+int64(w.seq/1000)
	w.wg.Add(1)
	w.st.AppendUnit([]mailbox.Event{ev}, func(err error) {
		if err != nil {
			w.mu.Lock()
			w.failed = err
			w.mu.Unlock()
		}
		w.wg.Done()
	})
	if w.seq%16384 == 0 {
		w.wg.Wait()
	}
}

func (w *logWriter) close() uint64 {
	w.wg.Wait()
	if err := w.st.Close(); err != nil {
		w.t.Fatal(err)
	}
	if w.failed != nil {
		w.t.Fatalf("writing the log: %v", w.failed)
	}
	return w.seq
}
