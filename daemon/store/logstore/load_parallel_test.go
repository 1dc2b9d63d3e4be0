package logstore

import (
	"fmt"
	"os"
	"testing"

	"github.com/mailroom/mailroom/daemon/store/storetest"
	"github.com/mailroom/mailroom/mailbox"
)

// TestLoadStopsAtDamageInOrder damages a line after Open checked the files
// (the disk changed under the store): the parallel Load must still hand
// over every event before the damage, in order, and then name the line and
// its offset, wherever the damage falls in the decoding chunks.
func TestLoadStopsAtDamageInOrder(t *testing.T) {
	evs := storetest.NewWorkload(3).Events(t, 3*loadChunkLines+7)
	data := segmentBytes(t, evs...)
	starts := lineStarts(data)
	for _, bad := range []int{0, 1, loadChunkLines - 1, loadChunkLines, 2*loadChunkLines + 3, len(evs) - 1} {
		t.Run(fmt.Sprint("line ", bad+1), func(t *testing.T) {
			dir := writeDir(t, seg(1, data))
			s := mustOpen(t, dir, Options{})
			damaged := append([]byte(nil), data...)
			damaged[starts[bad]+2] = 'X' // inside the frame's "seq" key
			if err := os.WriteFile(s.segs[0].path, damaged, 0o644); err != nil {
				t.Fatal(err)
			}
			var got []mailbox.Event
			err := s.Load(func(ev mailbox.Event) error {
				got = append(got, ev)
				return nil
			})
			wantErrorNaming(t, err, fmt.Sprintf("line %d", bad+1), fmt.Sprintf("offset %d", starts[bad]))
			if len(got) != bad {
				t.Fatalf("Load passed %d events before the damage at line %d, want %d", len(got), bad+1, bad)
			}
			for i, ev := range got {
				if ev.Seq != evs[i].Seq {
					t.Fatalf("event %d has seq %d, want %d: out of order", i, ev.Seq, evs[i].Seq)
				}
			}
		})
	}
}
