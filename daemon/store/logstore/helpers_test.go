package logstore

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/daemon/store/storetest"
	"github.com/mailroom/mailroom/mailbox"
)

// mustOpen opens dir and closes the store when the test ends.
func mustOpen(t *testing.T, dir string, opts Options) *Store {
	t.Helper()
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// reopen opens dir, loads it, closes it, and returns what it held.
func reopen(t *testing.T, dir string) (*mailbox.State, []mailbox.Event) {
	t.Helper()
	s := mustOpen(t, dir, Options{})
	st, evs := storetest.LoadState(t, s)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return st, evs
}

// stateOf applies evs to a fresh state.
func stateOf(t *testing.T, evs ...mailbox.Event) *mailbox.State {
	t.Helper()
	st := mailbox.NewState()
	for _, ev := range evs {
		if err := st.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

// segmentBytes is the segment the store writes for evs.
func segmentBytes(t *testing.T, evs ...mailbox.Event) []byte {
	t.Helper()
	var b []byte
	for _, ev := range evs {
		line, err := encodeEvent(ev)
		if err != nil {
			t.Fatal(err)
		}
		b = append(b, line...)
	}
	return b
}

func snapshotBytes(t *testing.T, snap *mailbox.Snapshot) []byte {
	t.Helper()
	b, err := encodeSnapshot(snap)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// dirFile is one file of a hand-made data dir.
type dirFile struct {
	name string
	data []byte
}

func seg(start uint64, data []byte) dirFile { return dirFile{segmentName(start), data} }
func snapf(seq uint64, data []byte) dirFile { return dirFile{snapshotName(seq), data} }
func tempf(seq uint64, data []byte) dirFile { return dirFile{snapshotName(seq) + tempSuffix, data} }
func writeDir(t *testing.T, files ...dirFile) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.name), f.data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// dirNames lists dir without its LOCK file.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.Name() != lockName {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	return names
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// lineStarts returns the offset of every line in data.
func lineStarts(data []byte) []int {
	starts := []int{0}
	for i, c := range data {
		if c == '\n' && i+1 < len(data) {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// wantErrorNaming fails unless err mentions every part.
func wantErrorNaming(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one naming %q", parts)
	}
	t.Logf("error as the operator sees it: %v", err)
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not mention %q", err, p)
		}
	}
}
