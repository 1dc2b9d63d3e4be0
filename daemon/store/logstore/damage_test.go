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
)

// flipAt names a byte of a line to flip.
var flipAt = []struct {
	name string
	at   func(line []byte) int
}{
	{"the opening brace", func([]byte) int { return 0 }},
	{"a seq digit", func([]byte) int { return len(`{"seq":`) }},
	{"a crc digit", func(l []byte) int { return bytes.Index(l, []byte(`,"crc":`)) + len(`,"crc":`) + 1 }},
	{"a byte of the event", func(l []byte) int { return bytes.Index(l, []byte(`"type"`)) + 2 }},
	{"the closing brace", func(l []byte) int { return len(l) - 2 }},
	{"the newline", func(l []byte) int { return len(l) - 1 }},
}

// TestFlippedByteBeforeTheLastLineRefusesToOpen flips each kind of byte in
// lines before the last: Open must refuse, name the line and its offset,
// and leave the file as it was.
func TestFlippedByteBeforeTheLastLineRefusesToOpen(t *testing.T) {
	evs := storetest.NewWorkload(51).Events(t, 8)
	pristine := segmentBytes(t, evs...)
	starts := append(lineStarts(pristine), len(pristine))
	for _, line := range []int{1, 4, 7} {
		for _, f := range flipAt {
			t.Run(fmt.Sprintf("line %d, %s", line, f.name), func(t *testing.T) {
				start, end := starts[line-1], starts[line]
				damaged := bytes.Clone(pristine)
				damaged[start+f.at(pristine[start:end])] ^= 0x01
				dir := writeDir(t, seg(1, damaged))
				path := filepath.Join(dir, segmentName(1))

				s, err := Open(dir, Options{})
				if err == nil {
					s.Close()
				}
				wantErrorNaming(t, err, path, fmt.Sprintf("line %d ", line), fmt.Sprintf("byte offset %d)", start))
				if got := readFile(t, path); !bytes.Equal(got, damaged) {
					t.Errorf("the refused file was changed")
				}
				if names := dirNames(t, dir); len(names) != 1 {
					t.Errorf("the refused dir now holds %q", names)
				}
			})
		}
	}
}

// TestFlippedByteInTheLastLineIsCut: a last line failing its checksum is
// what a torn write leaves, so it is cut like one.
func TestFlippedByteInTheLastLineIsCut(t *testing.T) {
	evs := storetest.NewWorkload(52).Events(t, 8)
	pristine := segmentBytes(t, evs...)
	starts := lineStarts(pristine)
	last := starts[len(starts)-1]
	for _, f := range flipAt[1:] {
		t.Run(f.name, func(t *testing.T) {
			damaged := bytes.Clone(pristine)
			damaged[last+f.at(pristine[last:])] ^= 0x01
			dir := writeDir(t, seg(1, damaged))
			if f.name == "a seq digit" {
				// A whole, checksummed line with the wrong seq is no torn
				// write: refused.
				_, err := Open(dir, Options{})
				wantErrorNaming(t, err, "line 8 ", fmt.Sprintf("byte offset %d)", last), "seq")
				return
			}
			st, _ := reopen(t, dir)
			storetest.SameState(t, st, stateOf(t, evs[:7]...))
			if got := readFile(t, filepath.Join(dir, segmentName(1)+brokenSuffix)); !bytes.Equal(got, damaged) {
				t.Errorf("the .broken copy is not the file as found")
			}
		})
	}
}

// TestDamageInAnEarlierSegmentRefusesToOpen: only the end of the newest
// segment can be torn; anything wrong before it stops Open.
func TestDamageInAnEarlierSegmentRefusesToOpen(t *testing.T) {
	w := storetest.NewWorkload(53)
	evs := w.Events(t, 20)
	first, second := segmentBytes(t, evs[:10]...), segmentBytes(t, evs[10:]...)
	starts := lineStarts(first)
	flipped := bytes.Clone(first)
	flipped[starts[2]+5] ^= 0x01

	cases := []struct {
		name  string
		files []dirFile
		want  []string // what the error names; nil: opens with all 20 events
	}{
		{"intact", []dirFile{seg(1, first), seg(11, second)}, nil},
		{"the earlier segment's last line is torn",
			[]dirFile{seg(1, first[:len(first)-20]), seg(11, second)},
			[]string{segmentName(1), "line 10 ", fmt.Sprintf("byte offset %d)", starts[9]), "cut short"}},
		{"the earlier segment lacks its final newline",
			[]dirFile{seg(1, first[:len(first)-1]), seg(11, second)},
			[]string{segmentName(1), "line 10 ", fmt.Sprintf("byte offset %d)", starts[9])}},
		{"a byte flipped in the earlier segment",
			[]dirFile{seg(1, flipped), seg(11, second)},
			[]string{segmentName(1), "line 3 ", fmt.Sprintf("byte offset %d)", starts[2])}},
		{"a segment is missing in between",
			[]dirFile{seg(1, first), seg(12, segmentBytes(t, evs[11:]...))},
			[]string{"missing events 11 to 11", segmentName(1), segmentName(12)}},
		{"a segment does not hold the seq its name says",
			[]dirFile{seg(1, first), seg(11, segmentBytes(t, evs[11:]...))},
			[]string{segmentName(11), "line 1 ", "byte offset 0)", "seq 12 where seq 11 was expected"}},
		{"the oldest segment starts late and there is no snapshot",
			[]dirFile{seg(11, second)},
			[]string{"missing events 1 to 10", "no usable snapshot", segmentName(11)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := writeDir(t, c.files...)
			if c.want == nil {
				st, loaded := reopen(t, dir)
				if len(loaded) != 20 {
					t.Fatalf("loaded %d events, want 20", len(loaded))
				}
				storetest.SameState(t, st, w.State)
				return
			}
			s, err := Open(dir, Options{})
			if err == nil {
				s.Close()
			}
			wantErrorNaming(t, err, c.want...)
			for _, f := range c.files {
				if got := readFile(t, filepath.Join(dir, f.name)); !bytes.Equal(got, f.data) {
					t.Errorf("refusing to open changed %s", f.name)
				}
			}
		})
	}
}

// TestDamagedSnapshot: a damaged snapshot is set aside when the log still
// reaches back past it, and refuses to open when it does not.
func TestDamagedSnapshot(t *testing.T) {
	w := storetest.NewWorkload(54)
	evs := w.Events(t, 20)
	snap := snapshotBytes(t, stateOf(t, evs[:10]...).Snapshot(1))
	damaged := bytes.Clone(snap)
	damaged[len(damaged)/2] ^= 0x01
	first, second := segmentBytes(t, evs[:10]...), segmentBytes(t, evs[10:]...)

	cases := []struct {
		name     string
		snapshot []byte
		files    []dirFile
		refused  bool
	}{
		{"a flipped byte, the log before it still there", damaged, []dirFile{seg(1, first), seg(11, second)}, false},
		{"half written, the log before it still there", snap[:len(snap)/2], []dirFile{seg(1, first), seg(11, second)}, false},
		{"a flipped byte, the log before it gone", damaged, []dirFile{seg(11, second)}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := writeDir(t, append(c.files, snapf(10, c.snapshot))...)
			path := filepath.Join(dir, snapshotName(10))
			var logs testlog.Buffer
			s, err := Open(dir, Options{Logger: logs.Logger()})
			if c.refused {
				if err == nil {
					s.Close()
				}
				wantErrorNaming(t, err, "missing events 1 to 10", path, "was not used")
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			st, _ := storetest.LoadState(t, s)
			s.Close()
			storetest.SameState(t, st, w.State)
			if got := readFile(t, path+brokenSuffix); !bytes.Equal(got, c.snapshot) {
				t.Errorf("the damaged snapshot was not kept as %s", path+brokenSuffix)
			}
			if !strings.Contains(logs.String(), path) {
				t.Errorf("no warning names %s:\n%s", path, logs.String())
			}
			if _, err := os.Stat(path); err == nil {
				t.Errorf("the damaged snapshot is still in place")
			}
		})
	}
}
