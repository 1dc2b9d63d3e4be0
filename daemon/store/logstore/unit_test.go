package logstore

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/daemon/store/storetest"
	"github.com/mailroom/mailroom/internal/testlog"
	"github.com/mailroom/mailroom/mailbox"
)

// TestTornUnitIsCutWhole cuts a log at every byte of a unit of three
// events written together, as a crash in the middle of their one write
// leaves it: whatever part of the unit the disk holds, whole records
// included, is cut with it, so none of its (unacknowledged) events is read
// back; the log then continues where the unit began.
func TestTornUnitIsCutWhole(t *testing.T) {
	w := storetest.NewWorkload(43)
	evs := w.Events(t, 5)
	before := stateOf(t, evs[:2]...)
	unit := append([]mailbox.Event(nil), evs[2:]...)
	unit[0].Unit = len(unit)

	dir := t.TempDir()
	s := mustOpen(t, dir, Options{})
	storetest.AppendAll(t, s, evs[:2]...)
	done := make(chan error, 1)
	s.AppendUnit(unit, func(err error) { done <- err })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	s.Close()
	pristine := readFile(t, filepath.Join(dir, segmentName(1)))
	starts := lineStarts(pristine)
	unitStart := starts[2]
	if _, body, err := parseRecord(pristine[unitStart:starts[3]-1], keyEvent); err != nil || unitOf(body) != 3 {
		t.Fatalf("the unit's first record does not say its size: %v %d", err, unitOf(body))
	}

	for cut := unitStart + 1; cut < len(pristine); cut++ {
		d := writeDir(t, seg(1, pristine[:cut]))
		path := filepath.Join(d, segmentName(1))
		var logs testlog.Buffer
		s, err := Open(d, Options{Logger: logs.Logger()})
		if err != nil {
			t.Fatalf("cut at %d: Open: %v", cut, err)
		}
		st, _ := storetest.LoadState(t, s)
		storetest.SameState(t, st, before)
		if got := s.LastSeq(); got != 2 {
			t.Fatalf("cut at %d: LastSeq %d, want 2: part of the unit was kept", cut, got)
		}
		if broken, err := os.ReadFile(path + brokenSuffix); err != nil || !bytes.Equal(broken, pristine[:cut]) {
			t.Fatalf("cut at %d: the file as found is not kept aside (%v)", cut, err)
		}
		// Cut inside the unit's first record it is a torn line like any;
		// past it, the warning says a unit was cut. Either way the cut is
		// where the unit begins.
		if cut >= starts[3] && !strings.Contains(logs.String(), "a unit of 3 events written together was cut short") {
			t.Fatalf("cut at %d: the warning does not say a unit was cut:\n%s", cut, logs.String())
		}
		if !strings.Contains(logs.String(), "offset="+strconv.Itoa(unitStart)) {
			t.Fatalf("cut at %d: the cut is not at the unit's start, %d:\n%s", cut, unitStart, logs.String())
		}
		// The unit can be written again, and gives back the original
		// file byte for byte.
		done := make(chan error, 1)
		s.AppendUnit(unit, func(err error) { done <- err })
		if err := <-done; err != nil {
			t.Fatalf("cut at %d: writing the unit again: %v", cut, err)
		}
		s.Close()
		if got := readFile(t, path); !bytes.Equal(got, pristine) {
			t.Fatalf("cut at %d: the log written again differs from the original", cut)
		}
	}
}
