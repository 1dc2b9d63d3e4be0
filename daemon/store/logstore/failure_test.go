package logstore

import (
	"bytes"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/mailroom/mailroom/daemon/store/storetest"
	"github.com/mailroom/mailroom/internal/testlog"
	"github.com/mailroom/mailroom/mailbox"
)

// failureChildDir names the data dir of TestWriteFailureChild; set only in
// the process TestWriteFailure starts.
const failureChildDir = "LOGSTORE_WRITE_FAILURE_DIR"

// TestWriteFailure makes the kernel refuse a real write, half-way: the
// child process lowers its file-size limit (RLIMIT_FSIZE) below the end of
// the next batch, so the write is cut short and then fails with EFBIG.
// The limit is per process, so it runs in a process of its own.
func TestWriteFailure(t *testing.T) {
	if os.Getenv(failureChildDir) != "" {
		t.Skip("this is the child process")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestWriteFailureChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), failureChildDir+"="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("--- PASS: TestWriteFailureChild")) {
		t.Fatalf("child process: %v\n%s", err, out)
	}
}

func TestWriteFailureChild(t *testing.T) {
	dir := os.Getenv(failureChildDir)
	if dir == "" {
		t.Skip("runs in the process TestWriteFailure starts")
	}
	var logs testlog.Buffer
	s, err := Open(dir, Options{Logger: logs.Logger(), MaxBatch: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w := storetest.NewWorkload(81)
	storetest.AppendAll(t, s, w.Events(t, 10)...)
	retry := storetest.NewWorkload(81)
	retry.Events(t, 10) // the same state at 10, to decide again after the failure
	path := filepath.Join(dir, segmentName(1))
	good := readFile(t, path)

	// Queue five events behind a paused writer; the first batch (two)
	// will be cut short by the limit, the other three are still queued.
	doomed := w.Events(t, 5)
	line, _ := encodeEvent(doomed[0])
	release := s.pauseWriter()
	var (
		mu    sync.Mutex
		order []uint64
		errs  = make(chan error, len(doomed))
	)
	for _, ev := range doomed {
		s.AppendUnit([]mailbox.Event{ev}, func(err error) {
			mu.Lock()
			order = append(order, ev.Seq)
			mu.Unlock()
			errs <- err
		})
	}
	limitFileSize(t, uint64(len(good)+len(line)+len(line)/2))
	release()
	for range doomed {
		err := <-errs
		if !errors.Is(err, syscall.EFBIG) || !strings.Contains(err.Error(), "writing the log in "+dir) {
			t.Errorf("done(%v), want an error saying the log in %s could not be written, wrapping EFBIG", err, dir)
		}
	}
	if got := []uint64{11, 12, 13, 14, 15}; !slices.Equal(order, got) {
		t.Errorf("failed events answered in order %v, want %v", order, got)
	}
	if got := readFile(t, path); !bytes.Equal(got, good) {
		t.Fatalf("after the failed write the log is %d bytes, want its %d durable bytes and nothing half-written", len(got), len(good))
	}
	if st := s.Stats(); st.WriteErrors != 1 || st.LastSeq != 10 {
		t.Errorf("Stats(): WriteErrors %d, LastSeq %d; want 1, 10", st.WriteErrors, st.LastSeq)
	}
	if !strings.Contains(logs.String(), "log write failed") {
		t.Errorf("the failure was not logged:\n%s", logs.String())
	}

	// Failed: every append is refused at once, from Append itself, and
	// compaction waits for Reset.
	answered := false
	s.AppendUnit([]mailbox.Event{retry.Next(t)}, func(err error) {
		answered = true
		if !errors.Is(err, syscall.EFBIG) {
			t.Errorf("append while failed: done(%v), want the write failure", err)
		}
	})
	if !answered {
		t.Errorf("append while failed was not answered before Append returned")
	}
	if _, err := s.Compact(func() *mailbox.Snapshot { return w.State.Snapshot(0) }); err == nil {
		t.Errorf("Compact while failed succeeded")
	}

	// Once the disk takes writes again, Reset lets appends through from
	// LastSeq()+1.
	limitFileSize(t, math.MaxUint64) // up to the hard limit
	if err := s.Reset(); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	retry = storetest.NewWorkload(81)
	retry.Events(t, 10)
	again := retry.Events(t, 5)
	storetest.AppendAll(t, s, again...)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	st, evs := reopen(t, dir)
	storetest.SameState(t, st, retry.State)
	storetest.SameEvents(t, evs[10:], again)
}

// limitFileSize sets this process's soft file-size limit.
func limitFileSize(t *testing.T, max uint64) {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Fatal(err)
	}
	lim.Cur = min(max, lim.Max)
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Fatal(err)
	}
}

// pauseWriter holds the writer between batches until release is called,
// so that appends queue up behind it.
func (s *Store) pauseWriter() (release func()) {
	entered, gate := make(chan struct{}), make(chan struct{})
	if !s.q.Control(func() { close(entered); <-gate }) {
		panic("pauseWriter on a closed store")
	}
	<-entered
	return func() { close(gate) }
}
