package engine

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/mailroom/mailroom/internal/testlog"
	"github.com/mailroom/mailroom/mailbox"
)

// limitFileSize makes every file write of this process past the current size
// of the largest file in dir fail for real (EFBIG), as a full disk would,
// until the returned function lifts the limit.
//
// The limit is the whole process's: go test's own log of the files and
// variables a test touched (testlog.txt, flushed 4 KiB at a time) must
// stay below it, or a flush in the window fails the package after every
// test passed, depending on how long the checkout's paths are. So dir
// must already hold a file of at least minLimitedFile bytes (a task sent
// with bigIntent pads its log).
func limitFileSize(t *testing.T, dir string) (lift func()) {
	t.Helper()
	var largest int64
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() && fi.Size() > largest {
			largest = fi.Size()
		}
		return nil
	})
	if largest < minLimitedFile {
		t.Fatalf("the largest file in %s has %d bytes; limitFileSize needs one of %d or more, so that go test's own files stay writable (send a task with bigIntent first)", dir, largest, minLimitedFile)
	}
	signal.Ignore(syscall.SIGXFSZ)
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Skipf("no RLIMIT_FSIZE here: %v", err)
	}
	lim := syscall.Rlimit{Cur: uint64(largest), Max: old.Max}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Skipf("cannot lower RLIMIT_FSIZE: %v", err)
	}
	lifted := false
	lift = func() {
		if !lifted {
			lifted = true
			if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Cleanup(lift)
	return lift
}

// minLimitedFile is the least size of the file limitFileSize sets the
// limit to, and bigIntent an intent that makes a log that large.
const minLimitedFile = 256 << 10

var bigIntent = strings.Repeat("x", minLimitedFile)

func TestWriteFailureChangesNothingAndRecovers(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	e := open(t, dir, Options{})
	first := mustSendTask(t, e, mailbox.Task{Sender: "p", Recipient: "a", IntentText: bigIntent})
	var before *mailbox.Snapshot
	e.View(func(s *mailbox.State) { before = s.Snapshot(0) })

	lift := limitFileSize(t, dir)
	_, err := e.Send(ctx, mailbox.Task{Sender: "p", Recipient: "a", IntentText: "second"})
	if !errors.Is(err, mailbox.ErrUnavailable) {
		t.Fatalf("send on a full disk = %v, want unavailable", err)
	}
	// The answer says what an operator can act on, never a path or a
	// system call's text.
	if msg := mailbox.ErrorMessage(err); msg != "the mailbox could not write its log: a log file reached the daemon's file size limit; nothing was changed" {
		t.Fatalf("send on a full disk answered %q", msg)
	}
	if _, _, err := e.Lease(ctx, "a"); !errors.Is(err, mailbox.ErrUnavailable) {
		t.Fatalf("lease on a full disk = %v, want unavailable", err)
	}
	// Reads keep working and show the state as it was.
	v, err := e.Queue(ctx, mailbox.QueueFilter{})
	if err != nil || len(v.Tasks) != 1 || v.Tasks[0].Task.ID != first || v.Tasks[0].State != mailbox.TaskQueued {
		t.Fatalf("queue on a full disk = %+v, %v; want only the first task, queued", v.Tasks, err)
	}
	var during *mailbox.Snapshot
	e.View(func(s *mailbox.State) { during = s.Snapshot(0) })
	if during.Seq != before.Seq || len(during.Tasks) != len(before.Tasks) {
		t.Fatalf("state changed by failed writes: seq %d -> %d", before.Seq, during.Seq)
	}

	lift()
	task, l := mustLease(t, e, "a")
	if task.ID != first || l.Attempt != 1 {
		t.Fatalf("lease after space returned = %s attempt %d, want %s attempt 1", task.ID, l.Attempt, first)
	}
	second := mustSend(t, e, "p", "a")
	e.Close()

	// Nothing half-written is read back: the log opens and holds exactly the
	// acknowledged events.
	e = open(t, dir, Options{})
	v, _ = e.Queue(ctx, mailbox.QueueFilter{})
	if len(v.Tasks) != 2 || v.Tasks[0].Task.ID != second || v.Tasks[1].Task.ID != first || v.Tasks[1].LeaseID != l.LeaseID {
		t.Fatalf("after reopen = %+v", v.Tasks)
	}
}

// A durable event that the durable state refuses means the engine decided on
// a state that is not the log's: it stops deciding, says why and asks for a
// restart, and keeps serving reads.
func TestEngineFailsWhenItsStatesDisagree(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	logs := &testlog.Buffer{}
	e := open(t, dir, Options{Logger: logs.Logger()})
	first := mustSend(t, e, "p", "a")
	// Make the durable state disagree with the decided one, as a bug
	// would: it takes an event the log never saw.
	e.View(func(s *mailbox.State) {
		if err := s.Apply(mailbox.Event{Seq: s.Seq + 1, AtMs: 1, Type: mailbox.EventRecordSkipped}); err != nil {
			t.Fatal(err)
		}
	})
	// The next write is durable in the log, but the durable state refuses
	// it; from then on every write is refused.
	mustSend(t, e, "p", "a")
	for i := range 2 {
		_, err := e.Send(ctx, mailbox.Task{Sender: "p", Recipient: "a", IntentText: "after the bug"})
		if !errors.Is(err, mailbox.ErrUnavailable) || !strings.Contains(mailbox.ErrorMessage(err), "Restart the daemon") {
			t.Fatalf("write %d after the engine failed = %v, want unavailable asking for a restart", i, err)
		}
	}
	if !strings.Contains(logs.String(), "engine failed: refusing writes until a restart") || !strings.Contains(logs.String(), "refused durable event") {
		t.Fatalf("the log does not say why the engine failed:\n%s", logs)
	}
	// Reads still answer.
	if rec, err := e.Task(ctx, first); err != nil || rec.Task.ID != first {
		t.Fatalf("a read after the engine failed: %v %v", rec, err)
	}
	e.Close()
	// A restart replays the log, which holds both acknowledged sends.
	e = open(t, dir, Options{})
	if c := e.Stats().Counts; c.Queued != 2 {
		t.Fatalf("after a restart the mailbox holds %d queued tasks, want 2", c.Queued)
	}
	mustSend(t, e, "p", "a")
}
