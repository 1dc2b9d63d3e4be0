package logstore

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailroom/mailroom/daemon/store/storetest"
	"github.com/mailroom/mailroom/internal/testlog"
)

// The writer syncs holding its P while syncs are fast, and gives it back
// during its syncs for slowSyncRelease after one took slowSync or longer:
// a sync holding its P holds up the collector's stop-the-world, so a disk
// that stalls must not be able to freeze the whole daemon again and again.
func TestCommitSyncReleasesItsPAfterASlowSync(t *testing.T) {
	var mu sync.Mutex
	var calls []string
	slowNext := false
	// The recorded syncs do not reach the disk, and "slow" is far beyond
	// anything a loaded machine adds to a call that does nothing.
	origSlow := slowSync
	slowSync = 200 * time.Millisecond
	record := func(kind string) func(*os.File) error {
		return func(*os.File) error {
			mu.Lock()
			calls = append(calls, kind)
			slow := slowNext
			slowNext = false
			mu.Unlock()
			if slow {
				time.Sleep(slowSync + 50*time.Millisecond)
			}
			return nil
		}
	}
	origHold, origRelease := commitSyncHolding, commitSyncReleasing
	commitSyncHolding, commitSyncReleasing = record("holding"), record("releasing")
	t.Cleanup(func() { commitSyncHolding, commitSyncReleasing, slowSync = origHold, origRelease, origSlow })

	var logged testlog.Buffer
	s := mustOpen(t, t.TempDir(), Options{Logger: logged.Logger()})
	w := storetest.NewWorkload(1)
	appendOne := func() string {
		t.Helper()
		storetest.AppendAll(t, s, w.Events(t, 1)...)
		mu.Lock()
		defer mu.Unlock()
		return calls[len(calls)-1]
	}
	expect := func(n int, want, when string) {
		t.Helper()
		for i := range n {
			if got := appendOne(); got != want {
				t.Fatalf("sync %d %s was %s, want %s", i+1, when, got, want)
			}
		}
	}
	slowNextSync := func() {
		mu.Lock()
		slowNext = true
		mu.Unlock()
	}
	expect(3, "holding", "while syncs are fast")
	slowNextSync()
	expect(1, "holding", "that was slow (nothing was slow before it)")
	expect(3, "releasing", "after a slow one")
	// The slow sync is logged, once: a disk that stays slow says so in the
	// sync histogram, not in a line per sync.
	slowNextSync()
	appendOne()
	if n := strings.Count(logged.String(), "a log sync was slow"); n != 1 {
		t.Fatalf("the slow syncs were logged %d times, want once:\n%s", n, logged.String())
	}

	// Once the release window has passed, fast syncs hold again.
	s.releaseUntil = time.Time{} // the writer is idle: nothing is queued
	expect(1, "holding", "after the release window")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	_, evs := reopen(t, s.dir)
	if len(evs) != 9 {
		t.Fatalf("replay read %d events, want the 9 appended", len(evs))
	}
}

// A sync that holds its P still reports the kernel's refusal.
func TestFdatasyncHoldingReportsErrors(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("x"); err != nil {
		t.Fatal(err)
	}
	if err := fdatasyncHolding(f); err != nil {
		t.Fatalf("fdatasyncHolding on a file: %v", err)
	}
	r, wp, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer wp.Close()
	if err := fdatasyncHolding(wp); err == nil {
		t.Fatal("fdatasyncHolding on a pipe succeeded, want EINVAL")
	}
	f.Close()
	if err := fdatasyncHolding(f); err == nil {
		t.Fatal("fdatasyncHolding on a closed file succeeded")
	}
}
