package logstore

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/mailroom/mailroom/daemon/store/storetest"
	"github.com/mailroom/mailroom/mailbox"
)

// TestCompactionRoundTrips compacts a real store twice and checks the
// files it leaves and the state a restart reads back.
func TestCompactionRoundTrips(t *testing.T) {
	dir := t.TempDir()
	w := storetest.NewWorkload(61)
	s := mustOpen(t, dir, Options{})
	snapshot := func() *mailbox.Snapshot { return w.State.Snapshot(1) }

	storetest.AppendAll(t, s, w.Events(t, 150)...)
	out, err := s.Compact(snapshot)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, snapshotName(150)); out.Seq != 150 || out.SnapshotPath != want || out.BytesBefore <= out.BytesAfter {
		t.Errorf("first Compact = %+v; want seq 150 at %s, fewer bytes after than before", out, want)
	}
	storetest.AppendAll(t, s, w.Events(t, 50)...)
	if _, err := s.Compact(snapshot); err != nil {
		t.Fatal(err)
	}
	tail := w.Events(t, 20)
	storetest.AppendAll(t, s, tail...)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	if got, want := dirNames(t, dir), []string{segmentName(201), snapshotName(200)}; !slices.Equal(got, want) {
		t.Errorf("after two compactions the dir holds %q, want %q", got, want)
	}
	st, evs := reopen(t, dir)
	storetest.SameEvents(t, evs, tail)
	storetest.SameState(t, st, w.State)
}

// TestCrashDuringCompactionLosesNothing builds the data dir as a crash
// leaves it after each step of a compaction (see Compact) and opens it.
func TestCrashDuringCompactionLosesNothing(t *testing.T) {
	w := storetest.NewWorkload(62)
	upTo30 := w.Events(t, 30)
	snap30 := snapshotBytes(t, w.State.Snapshot(1))
	upTo60 := w.Events(t, 30)
	at60 := w.State.Clone()
	snap60 := snapshotBytes(t, w.State.Snapshot(2))
	upTo80 := w.Events(t, 20)
	at80 := w.State.Clone()
	after80 := w.Next(t)

	all60 := segmentBytes(t, append(slices.Clone(upTo30), upTo60...)...)
	log31, log61 := segmentBytes(t, upTo60...), segmentBytes(t, upTo80...)

	cases := []struct {
		name  string
		files []dirFile
		want  *mailbox.State
		next  mailbox.Event // the event that continues want
		left  []string      // the dir once Open has tidied up
	}{
		// The first compaction ever, at seq 60; the log is log-1.
		{"first: new segment started",
			[]dirFile{seg(1, all60), seg(61, nil)},
			at60, upTo80[0], []string{segmentName(1), segmentName(61)}},
		{"first: appends went on into the new segment",
			[]dirFile{seg(1, all60), seg(61, log61)},
			at80, after80, []string{segmentName(1), segmentName(61)}},
		{"first: snapshot half written to its temp file",
			[]dirFile{seg(1, all60), seg(61, log61), tempf(60, snap60[:len(snap60)/2])},
			at80, after80, []string{segmentName(1), segmentName(61)}},
		{"first: snapshot whole in its temp file, not renamed",
			[]dirFile{seg(1, all60), seg(61, log61), tempf(60, snap60)},
			at80, after80, []string{segmentName(1), segmentName(61)}},
		{"first: snapshot renamed, old segment not yet removed",
			[]dirFile{seg(1, all60), seg(61, log61), snapf(60, snap60)},
			at80, after80, []string{segmentName(61), snapshotName(60)}},

		// A later compaction, at 60, after one at 30: snapshot-30 + log-31.
		{"later: new segment started",
			[]dirFile{snapf(30, snap30), seg(31, log31), seg(61, nil)},
			at60, upTo80[0], []string{segmentName(31), segmentName(61), snapshotName(30)}},
		{"later: appends went on into the new segment",
			[]dirFile{snapf(30, snap30), seg(31, log31), seg(61, log61)},
			at80, after80, []string{segmentName(31), segmentName(61), snapshotName(30)}},
		{"later: snapshot whole in its temp file, not renamed",
			[]dirFile{snapf(30, snap30), seg(31, log31), seg(61, log61), tempf(60, snap60)},
			at80, after80, []string{segmentName(31), segmentName(61), snapshotName(30)}},
		{"later: snapshot renamed, nothing removed yet",
			[]dirFile{snapf(30, snap30), seg(31, log31), seg(61, log61), snapf(60, snap60)},
			at80, after80, []string{segmentName(61), snapshotName(60)}},
		{"later: old segment removed, old snapshot not yet",
			[]dirFile{snapf(30, snap30), seg(61, log61), snapf(60, snap60)},
			at80, after80, []string{segmentName(61), snapshotName(60)}},
		{"later: old snapshot removed, old segment not yet",
			[]dirFile{seg(31, log31), seg(61, log61), snapf(60, snap60)},
			at80, after80, []string{segmentName(61), snapshotName(60)}},
		{"later: done",
			[]dirFile{seg(61, log61), snapf(60, snap60)},
			at80, after80, []string{segmentName(61), snapshotName(60)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := writeDir(t, c.files...)
			s := mustOpen(t, dir, Options{})
			st, _ := storetest.LoadState(t, s)
			storetest.SameState(t, st, c.want)
			if got := s.LastSeq(); got != c.want.Seq {
				t.Errorf("LastSeq() = %d, want %d", got, c.want.Seq)
			}
			if got := dirNames(t, dir); !slices.Equal(got, c.left) {
				t.Errorf("after Open the dir holds %q, want %q", got, c.left)
			}
			// The store goes on from there, and a compaction now finishes
			// what the crash interrupted.
			storetest.AppendAll(t, s, c.next)
			if _, err := s.Compact(func() *mailbox.Snapshot { return stateWith(t, c.want, c.next).Snapshot(3) }); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			st, _ = reopen(t, dir)
			storetest.SameState(t, st, stateWith(t, c.want, c.next))
			if got := dirNames(t, dir); len(got) != 2 {
				t.Errorf("after compacting again the dir holds %q, want one segment and one snapshot", got)
			}
		})
	}
}

// stateWith returns a copy of st with evs applied.
func stateWith(t *testing.T, st *mailbox.State, evs ...mailbox.Event) *mailbox.State {
	t.Helper()
	c := st.Clone()
	for _, ev := range evs {
		if err := c.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	return c
}
