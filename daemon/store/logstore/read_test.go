package logstore

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/daemon/store"
	"github.com/mailroom/mailroom/daemon/store/storetest"
	"github.com/mailroom/mailroom/mailbox"
)

// TestEventsSinceFromEveryPosition reads from every seq with limits on
// both sides of the index spacing, in one long segment and across the
// segments a compaction in progress leaves.
func TestEventsSinceFromEveryPosition(t *testing.T) {
	w := storetest.NewWorkload(71)
	evs := w.Events(t, 3*indexEvery+9)
	split := 2*indexEvery + 5
	snapSeq := uint64(20)

	layouts := []struct {
		name  string
		files []dirFile
		first uint64 // the first seq still in the log
	}{
		{"one segment", []dirFile{seg(1, segmentBytes(t, evs...))}, 1},
		{"two segments after a snapshot", []dirFile{
			snapf(snapSeq, snapshotBytes(t, stateOf(t, evs[:snapSeq]...).Snapshot(1))),
			seg(snapSeq+1, segmentBytes(t, evs[snapSeq:split]...)),
			seg(uint64(split)+1, segmentBytes(t, evs[split:]...)),
		}, snapSeq + 1},
	}
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			s := mustOpen(t, writeDir(t, l.files...), Options{})
			for after := uint64(0); after <= uint64(len(evs))+1; after++ {
				for _, limit := range []int{1, 7, indexEvery, indexEvery + 1, 1000} {
					got, err := s.EventsSince(after, limit)
					if after+1 < l.first {
						if !errors.Is(err, store.ErrCompacted) {
							t.Fatalf("EventsSince(%d, %d) = %d events, %v; want ErrCompacted", after, limit, len(got), err)
						}
						continue
					}
					if err != nil {
						t.Fatalf("EventsSince(%d, %d): %v", after, limit, err)
					}
					from := min(int(after), len(evs))
					want := evs[from:min(from+limit, len(evs))]
					if len(got) != len(want) || (len(want) > 0 && (got[0].Seq != want[0].Seq || got[len(got)-1].Seq != want[len(want)-1].Seq)) {
						t.Fatalf("EventsSince(%d, %d) = %s, want %s", after, limit, seqs(got), seqs(want))
					}
				}
			}
			got, err := s.EventsSince(l.first-1, len(evs))
			if err != nil {
				t.Fatal(err)
			}
			storetest.SameEvents(t, got, evs[l.first-1:])
		})
	}
}

func seqs(evs []mailbox.Event) string {
	if len(evs) == 0 {
		return "none"
	}
	return fmt.Sprintf("%d events, seq %d..%d", len(evs), evs[0].Seq, evs[len(evs)-1].Seq)
}

// TestEventsSinceSeesWhatIsDurable: events are readable once their batch
// is synced, without a restart.
func TestEventsSinceSeesWhatIsDurable(t *testing.T) {
	w := storetest.NewWorkload(72)
	s := mustOpen(t, t.TempDir(), Options{})
	var all []mailbox.Event
	for batch := range 5 {
		evs := w.Events(t, 10+batch*30)
		storetest.AppendAll(t, s, evs...)
		all = append(all, evs...)
		got, err := s.EventsSince(0, len(all)+10)
		if err != nil {
			t.Fatal(err)
		}
		storetest.SameEvents(t, got, all)
	}
}

func TestSecondOpenOfADataDirFails(t *testing.T) {
	dir := t.TempDir()
	first := mustOpen(t, dir, Options{})
	second, err := Open(dir, Options{})
	if err == nil {
		second.Close()
	}
	wantErrorNaming(t, err, dir, "in use", fmt.Sprintf("process %d", os.Getpid()))
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	again := mustOpen(t, dir, Options{})
	if err := again.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestNoAutomaticCompaction: when to compact is the engine's decision.
func TestNoAutomaticCompaction(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{MaxBatch: 64})
	storetest.AppendAll(t, s, storetest.NewWorkload(73).Events(t, 3000)...)
	if st := s.Stats(); st.Compactions != 0 || st.SnapshotBytes != 0 {
		t.Errorf("Stats() after 3000 events: Compactions %d, SnapshotBytes %d; want 0, 0", st.Compactions, st.SnapshotBytes)
	}
	for _, name := range dirNames(t, dir) {
		if strings.HasPrefix(name, snapshotPrefix) {
			t.Errorf("the store wrote %s on its own", name)
		}
	}
}
