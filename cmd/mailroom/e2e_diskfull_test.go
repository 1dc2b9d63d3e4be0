package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/google/uuid"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/mailbox"
)

// TestFaultDiskFull runs the real daemon on a data dir that stops taking
// writes for real, then gets space back. While it is full, every write is
// refused with 503 unavailable saying the log could not be written, reads
// keep answering, and nothing changes; once space returns, writes work
// again; a restart shows exactly the acknowledged changes.
//
// The preferred disk is a small tmpfs filled up by a filler file (a real
// ENOSPC); where mounting is not permitted, the daemon's RLIMIT_FSIZE is
// lowered to its log's size instead (a real EFBIG, as the engine's own
// failure test does in-process).
func TestFaultDiskFull(t *testing.T) {
	root := t.TempDir()
	disk := newDisk(t, root)
	dir := filepath.Join(disk.mount, "data")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := startProc(t, dir)
	c, err := client.New(p.addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	const planner, coder, reviewer = "planner@disk", "coder@disk", "reviewer@disk"

	// A task in every state, so every write has something to act on: one
	// leased (for result and repairs), one with a result pending (for the
	// drain), one queued (for the lease).
	leased := mustSend(t, c, planner, coder)
	lease := mustLease(t, c, coder, leased)
	resulted := mustSend(t, c, planner, reviewer)
	mustPost(t, c, resulted, mustLease(t, c, reviewer, resulted))
	queued := mustSend(t, c, planner, coder)

	disk.makeFull(t, c, dir, p.cmd.Process.Pid)
	t.Logf("disk full: %s", disk.how)
	before := mustQueue(t, c)
	seq := lastSeq(t, c)

	// Every write is refused, and says why.
	refused := uuid.NewString()
	writes := []struct {
		what string
		do   func() error
	}{
		{"send", func() error {
			_, err := c.Send(ctx, mailbox.Task{ID: refused, Sender: planner, Recipient: coder, IntentText: "refused"})
			return err
		}},
		{"lease", func() error { _, _, err := c.Lease(ctx, coder); return err }},
		{"result", func() error { return c.PostResult(ctx, okResult(leased, lease)) }},
		{"requeue", func() error { _, err := c.Repair(ctx, requeue(leased, lease)); return err }},
		{"force_error", func() error { _, err := c.Repair(ctx, forceError(leased, lease)); return err }},
		{"drain", func() error { _, err := c.Drain(ctx, planner); return err }},
	}
	for _, w := range writes {
		err := w.do()
		e, ok := errors.AsType[*mailbox.Error](err)
		if !ok || e.Code != mailbox.CodeUnavailable || !strings.Contains(e.Message, "write its log") || !strings.Contains(e.Message, "nothing was changed") {
			t.Errorf("%s on a full disk = %v; want 503 unavailable saying the log could not be written and nothing changed", w.what, err)
		}
	}

	// Reads keep answering, and show the mailbox as it was.
	if after := mustQueue(t, c); jsonOf(t, after) != jsonOf(t, before) {
		t.Errorf("refused writes changed the queue:\nbefore %s\nafter  %s", jsonOf(t, before), jsonOf(t, after))
	}
	if got := lastSeq(t, c); got != seq {
		t.Errorf("last seq %d after refused writes, want %d", got, seq)
	}
	if tasks, err := c.RecentTasks(ctx, 0); err != nil || !hasTask(tasks, queued) {
		t.Errorf("recent tasks on a full disk = %v, %v; want the queued task %s", tasks, err, queued)
	}
	if results, err := c.RecentResults(ctx, 0); err != nil || len(results) != 1 || results[0].TaskID != resulted {
		t.Errorf("recent results on a full disk = %v, %v; want the result of %s", results, err, resulted)
	}
	if err := c.Health(ctx); err != nil {
		t.Errorf("healthz on a full disk: %v", err)
	}
	if m, err := c.Metrics(ctx); err != nil || !strings.Contains(m, "mailroom_log_write_errors_total ") || strings.Contains(m, "mailroom_log_write_errors_total 0\n") {
		t.Errorf("metrics on a full disk (%v) do not count the write errors:\n%s", err, m)
	}
	subCtx, cancel := context.WithCancel(ctx)
	if ev, ok := <-c.Subscribe(subCtx, 0, nil); !ok || ev.Type != mailbox.EventSnapshot || ev.Seq != seq {
		t.Errorf("event stream on a full disk began with %s at seq %d (open %v), want a snapshot at seq %d", ev.Type, ev.Seq, ok, seq)
	}
	cancel()

	// Space returns: writes work again, from the state as it was.
	disk.free()
	if _, err := c.Send(ctx, mailbox.Task{ID: refused, Sender: planner, Recipient: coder, IntentText: "accepted"}); err != nil {
		t.Fatalf("send after space returned: %v (the refused send must have left no trace)", err)
	}
	mustPost(t, c, leased, lease)
	requeueLease := mustLease(t, c, coder, queued)
	if _, err := c.Repair(ctx, requeue(queued, requeueLease)); err != nil {
		t.Fatalf("requeue after space returned: %v", err)
	}
	if r, err := c.Drain(ctx, planner); err != nil || r == nil || r.TaskID != resulted {
		t.Fatalf("drain after space returned = %v, %v; want the result of %s", r, err, resulted)
	}
	final := mustQueue(t, c)

	// A restart shows exactly what was acknowledged, and nothing of the
	// refused writes was left half-written in the log.
	p.stop(t)
	p = startProc(t, dir)
	if c, err = client.New(p.addr); err != nil {
		t.Fatal(err)
	}
	if got := mustQueue(t, c); jsonOf(t, got) != jsonOf(t, final) {
		t.Errorf("after a restart:\n got %s\nwant %s", jsonOf(t, got), jsonOf(t, final))
	}
	if b := brokenFiles(t, dir); len(b) != 0 {
		t.Errorf("the log needed repair after the refused writes: %v", b)
	}
}

func mustSend(t *testing.T, c *client.Client, sender, recipient string) string {
	t.Helper()
	return mustSendIntent(t, c, sender, recipient, "disk full")
}

func mustSendIntent(t *testing.T, c *client.Client, sender, recipient, intent string) string {
	t.Helper()
	resp, err := c.Send(t.Context(), mailbox.Task{ID: uuid.NewString(), Sender: sender, Recipient: recipient, IntentText: intent})
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	return resp.TaskID
}

// mustLease leases recipient's next task, which must be want, and returns
// the lease id.
func mustLease(t *testing.T, c *client.Client, recipient, want string) string {
	t.Helper()
	task, lease, err := c.Lease(t.Context(), recipient)
	if err != nil || task == nil || task.ID != want {
		t.Fatalf("lease for %s = %v, %v; want task %s", recipient, task, err, want)
	}
	return lease.LeaseID
}

func mustPost(t *testing.T, c *client.Client, taskID, leaseID string) {
	t.Helper()
	if err := c.PostResult(t.Context(), okResult(taskID, leaseID)); err != nil {
		t.Fatalf("post result of %s: %v", taskID, err)
	}
}

func mustQueue(t *testing.T, c *client.Client) mailbox.QueueView {
	t.Helper()
	v, err := c.Queue(t.Context(), mailbox.QueueFilter{Limit: mailbox.MaxLimit})
	if err != nil {
		t.Fatalf("queue: %v", err)
	}
	return v
}

func lastSeq(t *testing.T, c *client.Client) uint64 {
	t.Helper()
	m, err := c.Metrics(t.Context())
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	for _, line := range strings.Split(m, "\n") {
		if v, ok := strings.CutPrefix(line, "mailroom_last_seq "); ok {
			var n uint64
			if _, err := fmt.Sscan(v, &n); err != nil {
				t.Fatalf("mailroom_last_seq %q: %v", v, err)
			}
			return n
		}
	}
	t.Fatalf("no mailroom_last_seq in the metrics:\n%s", m)
	return 0
}

func hasTask(tasks []mailbox.Task, id string) bool {
	for _, t := range tasks {
		if t.ID == id {
			return true
		}
	}
	return false
}

func okResult(taskID, leaseID string) mailbox.Result {
	return mailbox.Result{TaskID: taskID, Status: mailbox.StatusOK, LeaseID: leaseID, Content: []mailbox.Content{{Type: mailbox.ContentText, Text: "done"}}}
}

func requeue(taskID, leaseID string) mailbox.RepairRequest {
	return mailbox.RepairRequest{TaskID: taskID, Reason: "disk full test",
		Command: mailbox.RepairCommand{Action: mailbox.ActionRequeue, LeaseID: leaseID, DuplicateRisk: mailbox.RiskOperatorAccepted}}
}

func forceError(taskID, leaseID string) mailbox.RepairRequest {
	return mailbox.RepairRequest{TaskID: taskID, Reason: "disk full test",
		Command: mailbox.RepairCommand{Action: mailbox.ActionForceError, LeaseID: leaseID, Message: "disk full"}}
}

// disk is a directory that can be made to refuse writes for real.
type disk struct {
	mount    string
	how      string
	makeFull func(t *testing.T, c *client.Client, dataDir string, pid int)
	free     func()
}

func newDisk(t *testing.T, root string) *disk {
	t.Helper()
	mode := *diskFullMode
	if mode == "auto" || mode == "tmpfs" {
		d, err := tmpfsDisk(t, filepath.Join(root, "tmpfs"))
		if err == nil {
			return d
		}
		if mode == "tmpfs" {
			t.Skipf("-fault.diskfull tmpfs: cannot mount a tmpfs (the test needs root or CAP_SYS_ADMIN): %v", err)
		}
		t.Logf("cannot mount a tmpfs (%v); lowering the daemon's RLIMIT_FSIZE instead", err)
	}
	if mode != "auto" && mode != "rlimit" {
		t.Fatalf("-fault.diskfull: got %q, expected tmpfs, rlimit or auto", mode)
	}
	return rlimitDisk(t, root)
}

// tmpfsDisk mounts a 4 MiB tmpfs at dir. Making it full takes care: a
// tmpfs hands out whole pages, so once no page is left the log can still
// grow into the rest of its last page. The test pads that page with real,
// acknowledged sends whose size it picks, until no event fits any more.
func tmpfsDisk(t *testing.T, dir string) (*disk, error) {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=4m,mode=0755"); err != nil {
		return nil, fmt.Errorf("mount -t tmpfs -o size=4m: %w", err)
	}
	// Registered before the daemon starts, so it runs after the daemon is
	// killed (cleanups run last-registered first).
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmounting the tmpfs at %s: %v", dir, err)
		}
	})
	filler := filepath.Join(dir, "filler")
	d := &disk{mount: dir, how: "a 4 MiB tmpfs filled up by " + filler}
	d.makeFull = func(t *testing.T, c *client.Client, dataDir string, _ int) {
		overhead := prepareSlack(t, c, dataDir)
		fillFile(t, filler)
		padSlack(t, c, dataDir, overhead)
	}
	d.free = func() {
		if err := os.Remove(filler); err != nil {
			t.Fatal(err)
		}
	}
	return d, nil
}

// Padding sends go between their own agents, so they stay out of the
// test's way.
const padSender, padRecipient = "pad@disk", "padr@disk"

// minEventLine is less than any event's log line: the smallest, a
// result_drained, takes about 145 bytes.
const minEventLine = 100

// slack is how many more bytes the active log segment can take without a
// new page.
func slack(t *testing.T, dataDir string) int64 {
	t.Helper()
	page := int64(os.Getpagesize())
	return (page - activeSegmentSize(t, dataDir)%page) % page
}

// padIntent sends a padding task whose intent_text is n bytes and returns
// how many bytes its log line took, or ok false when the daemon refused
// it for want of space.
func padIntent(t *testing.T, c *client.Client, dataDir string, n int) (line int64, ok bool) {
	t.Helper()
	size := activeSegmentSize(t, dataDir)
	_, err := c.Send(t.Context(), mailbox.Task{ID: uuid.NewString(), Sender: padSender, Recipient: padRecipient, IntentText: strings.Repeat("x", n)})
	if errors.Is(err, mailbox.ErrUnavailable) {
		return 0, false
	}
	if err != nil {
		t.Fatalf("padding send: %v", err)
	}
	return activeSegmentSize(t, dataDir) - size, true
}

// prepareSlack runs before the disk is filled: it measures a send's log
// line apart from its intent, and makes sure the last page has room for
// at least one padding send.
func prepareSlack(t *testing.T, c *client.Client, dataDir string) (overhead int64) {
	t.Helper()
	const probe = 200
	line, _ := padIntent(t, c, dataDir, probe)
	overhead = line - probe
	if s := slack(t, dataDir); s < overhead+minEventLine {
		// A line longer than the slack ends in a fresh page.
		line, _ = padIntent(t, c, dataDir, int(s)+probe)
		overhead = line - (s + probe)
	}
	return overhead
}

// padSlack fills the log's last page once no page is left. The line's
// checksum is printed in 1 to 10 digits, so the intent is sized for the
// longest; the line then fits and leaves at most a few bytes, far less
// than any event needs. A refused padding send changes nothing and is
// tried again a little shorter.
func padSlack(t *testing.T, c *client.Client, dataDir string, overhead int64) {
	t.Helper()
	for range 8 {
		s := slack(t, dataDir)
		if s < minEventLine {
			return
		}
		n := s - overhead - 12
		if n < 1 {
			t.Fatalf("padding: %d bytes left in the last page, a send takes at least %d", s, overhead+1)
		}
		if line, ok := padIntent(t, c, dataDir, int(n)); ok && line > s {
			t.Fatalf("padding: a %d-byte line was written with %d bytes left in the last page; the disk is not full", line, s)
		}
		overhead += 12 // if it was refused, try shorter
	}
	t.Fatalf("padding: the log's last page still has %d bytes free after 8 tries", slack(t, dataDir))
}

// fillFile writes path until the filesystem has no space left: whole
// pages first, then single bytes; both loops are bounded by the 4 MiB size.
func fillFile(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	block := make([]byte, os.Getpagesize())
	for range 4 << 20 / len(block) {
		if _, err := f.Write(block); err != nil {
			break
		}
	}
	for range len(block) {
		if _, err := f.Write(block[:1]); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling the tmpfs: %v, want ENOSPC", err)
			}
			return
		}
	}
	t.Fatalf("filling the tmpfs: it never ran out of space")
}

// rlimitDisk lowers the daemon process's file size limit to the size of
// its log's active segment, so its next append fails with EFBIG. The
// daemon must ignore SIGXFSZ to see the error instead of dying: it
// inherits the disposition from this process, which ignores it here.
func rlimitDisk(t *testing.T, root string) *disk {
	signal.Ignore(syscall.SIGXFSZ)
	d := &disk{mount: root, how: "the daemon's RLIMIT_FSIZE lowered to its log's size"}
	var pid int
	var old syscall.Rlimit
	d.makeFull = func(t *testing.T, _ *client.Client, dataDir string, p int) {
		pid = p
		if err := prlimit(pid, syscall.RLIMIT_FSIZE, nil, &old); err != nil {
			t.Skipf("cannot read the daemon's RLIMIT_FSIZE: %v", err)
		}
		size := activeSegmentSize(t, dataDir)
		if err := prlimit(pid, syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: uint64(size), Max: old.Max}, nil); err != nil {
			t.Skipf("cannot lower the daemon's RLIMIT_FSIZE: %v", err)
		}
	}
	d.free = func() {
		if err := prlimit(pid, syscall.RLIMIT_FSIZE, &old, nil); err != nil {
			t.Fatalf("lifting the daemon's RLIMIT_FSIZE: %v", err)
		}
	}
	return d
}

// prlimit sets another process's resource limit (prlimit(2)), which the
// syscall package does not wrap.
func prlimit(pid, resource int, limit, old *syscall.Rlimit) error {
	_, _, errno := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), uintptr(resource),
		uintptr(unsafe.Pointer(limit)), uintptr(unsafe.Pointer(old)), 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// activeSegmentSize is the size of the log segment appends go to: the one
// with the highest first seq (names are zero-padded, so the last in order).
func activeSegmentSize(t *testing.T, dir string) int64 {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(dir, "log-*.jsonl"))
	if err != nil || len(segs) == 0 {
		t.Fatalf("no log segment in %s (%v)", dir, err)
	}
	fi, err := os.Stat(segs[len(segs)-1])
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
