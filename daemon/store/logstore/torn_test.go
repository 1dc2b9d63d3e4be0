package logstore

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/daemon/store/storetest"
	"github.com/mailroom/mailroom/internal/testlog"
	"github.com/mailroom/mailroom/mailbox"
)

// TestTornLastLineIsCutAtEveryOffset truncates a log at every byte of its
// last line, as a crash in the middle of a write leaves it, and opens it.
func TestTornLastLineIsCutAtEveryOffset(t *testing.T) {
	w := storetest.NewWorkload(41)
	evs := w.Events(t, 6)
	withoutLast, whole := stateOf(t, evs[:5]...), w.State

	layouts := []struct {
		name  string
		files func(t *testing.T) []dirFile // the last one is the segment to tear
	}{
		{"one segment written by the store", func(t *testing.T) []dirFile {
			dir := t.TempDir()
			s := mustOpen(t, dir, Options{})
			storetest.AppendAll(t, s, evs...)
			s.Close()
			return []dirFile{seg(1, readFile(t, filepath.Join(dir, segmentName(1))))}
		}},
		{"the second of two segments after a snapshot", func(t *testing.T) []dirFile {
			return []dirFile{
				snapf(2, snapshotBytes(t, stateOf(t, evs[:2]...).Snapshot(1))),
				seg(3, segmentBytes(t, evs[2:4]...)),
				seg(5, segmentBytes(t, evs[4:]...)),
			}
		}},
	}
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			files := l.files(t)
			lastFile := files[len(files)-1]
			pristine := lastFile.data
			starts := lineStarts(pristine)
			last := starts[len(starts)-1]
			t.Logf("cutting %s's last line (%d bytes, from offset %d) at each of its offsets", lastFile.name, len(pristine)-last, last)
			for cut := last; cut <= len(pristine); cut++ {
				want := withoutLast
				if cut == len(pristine) {
					want = whole
				}
				files[len(files)-1].data = pristine[:cut]
				openTorn(t, files, cut, last, len(pristine), want, evs[5], pristine)
			}
		})
	}
}

// openTorn opens a dir whose last segment is cut at cut (its last line
// starts at last, its whole length is full) and checks what Open did.
func openTorn(t *testing.T, files []dirFile, cut, last, full int, want *mailbox.State, lost mailbox.Event, pristine []byte) {
	t.Helper()
	torn := cut > last && cut < full
	dir := writeDir(t, files...)
	path := filepath.Join(dir, files[len(files)-1].name)
	var logs testlog.Buffer
	s, err := Open(dir, Options{Logger: logs.Logger()})
	if err != nil {
		t.Fatalf("cut at %d: Open: %v", cut, err)
	}
	st, _ := storetest.LoadState(t, s)
	storetest.SameState(t, st, want)

	broken, berr := os.ReadFile(path + brokenSuffix)
	switch {
	case torn && berr != nil:
		t.Fatalf("cut at %d: no .broken copy: %v", cut, berr)
	case torn && !bytes.Equal(broken, pristine[:cut]):
		t.Fatalf("cut at %d: the .broken copy is not the file as found", cut)
	case !torn && berr == nil:
		t.Fatalf("cut at %d: a whole log got a .broken copy", cut)
	}
	if got := logs.String(); torn && (!strings.Contains(got, fmt.Sprintf("offset=%d", last)) || !strings.Contains(got, path)) {
		t.Fatalf("cut at %d: the warning does not name %s and offset %d:\n%s", cut, path, last, got)
	} else if !torn && strings.Contains(got, "level=WARN") {
		t.Fatalf("cut at %d: warning about a whole log:\n%s", cut, got)
	}

	// The log continues where its intact part ends: appending the lost
	// event again gives back the original file, byte for byte.
	if cut < full {
		storetest.AppendAll(t, s, lost)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, path); !bytes.Equal(got, pristine) {
		t.Fatalf("cut at %d: after appending the last event again the segment differs from the original", cut)
	}
}
