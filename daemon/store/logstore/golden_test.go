package logstore_test

import (
	"encoding/json"
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/daemon/store/logstore"
	"github.com/mailroom/mailroom/internal/golden"
	"github.com/mailroom/mailroom/mailbox"
)

// update rewrites the expected states, testdata/v*/state.golden.json. It
// never touches a data dir: those are the frozen input.
var update = flag.Bool("update", false, "rewrite testdata/v*/state.golden.json from what the data dirs load to (never the data dirs)")

// The on-disk format is frozen by the data dirs in testdata/vN/datadir,
// written by the binary of their day (see testdata/README.md). Every
// version must still load, to the state its state.golden.json records. The
// newest must also be exactly what today's encoder writes for the same
// events and snapshot, and must hold every event type, so that a renamed
// JSON tag or a changed record frame fails here even where the decoder
// would tolerate it: such a change needs a new testdata/vN+1 beside the old.
func TestGoldenDataDirs(t *testing.T) {
	versions := goldenVersions(t)
	for i, v := range versions {
		newest := i == len(versions)-1
		t.Run(filepath.Base(v), func(t *testing.T) {
			src := filepath.Join(v, "datadir")
			got := loadGoldenDir(t, src)
			checkGoldenState(t, got, filepath.Join(v, "state.golden.json"))
			if newest {
				checkTodaysEncoderWrites(t, src, got)
				checkCoversTheFormat(t, got)
			}
		})
	}
}

// goldenVersions returns testdata/v1, v2, ... in version order.
func goldenVersions(t *testing.T) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join("testdata", "v*"))
	if err != nil {
		t.Fatal(err)
	}
	num := func(dir string) int {
		n, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(dir), "v"))
		if err != nil {
			t.Fatalf("%s: golden versions are named v1, v2, ...", dir)
		}
		return n
	}
	sort.Slice(dirs, func(i, j int) bool { return num(dirs[i]) < num(dirs[j]) })
	if len(dirs) == 0 {
		t.Fatal("no golden data dirs under testdata/v*")
	}
	return dirs
}

// loadedDir is what a golden data dir replays to, exactly as the engine
// replays it: State.Apply on every event Load passes, the snapshot first.
type loadedDir struct {
	events []mailbox.Event
	state  *mailbox.State
}

// loadGoldenDir opens a copy of src (Open may tidy a data dir, and the
// checked-in one must never change) and replays it.
func loadGoldenDir(t *testing.T, src string) loadedDir {
	t.Helper()
	dir := t.TempDir()
	copyGoldenFiles(t, src, dir, func(string) bool { return true })

	report, err := logstore.Check(dir)
	if err != nil {
		t.Fatalf("log check %s: %v", src, err)
	}
	if !report.Healthy() || len(report.Warnings) > 0 {
		t.Errorf("log check %s: problem %v, damage %v, warnings %q; want a dir the daemon starts on untouched", src, report.Problem, report.Damage, report.Warnings)
	}

	st, err := logstore.Open(dir, logstore.Options{})
	if err != nil {
		t.Fatalf("opening golden data dir %s: %v", src, err)
	}
	defer st.Close()
	var got loadedDir
	got.state = mailbox.NewState()
	err = st.Load(func(ev mailbox.Event) error {
		got.events = append(got.events, ev)
		return got.state.Apply(ev)
	})
	if err != nil {
		t.Fatalf("replaying golden data dir %s: %v", src, err)
	}
	if last := st.LastSeq(); got.state.Seq != last {
		t.Errorf("%s: replay ended at seq %d, the log's last seq is %d", src, got.state.Seq, last)
	}
	if len(got.events) == 0 || got.events[0].Type != mailbox.EventSnapshot {
		t.Fatalf("%s: replay did not start with its snapshot", src)
	}
	return got
}

// copyGoldenFiles copies the files of src that keep says to dst.
func copyGoldenFiles(t *testing.T, src, dst string, keep func(name string) bool) {
	t.Helper()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !keep(e.Name()) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// goldenState is the content of state.golden.json.
type goldenState struct {
	// Events are what Load passed, the snapshot first.
	Events []goldenEvent `json:"events"`
	// State is the replayed state, State.Snapshot(0).
	State *mailbox.Snapshot `json:"state"`
}

type goldenEvent struct {
	Seq    uint64 `json:"seq"`
	AtMs   int64  `json:"at_ms"`
	Type   string `json:"type"`
	TaskID string `json:"task_id,omitempty"`
}

func checkGoldenState(t *testing.T, got loadedDir, path string) {
	t.Helper()
	gs := goldenState{State: got.state.Snapshot(0)}
	for _, ev := range got.events {
		id := ev.TaskID
		if ev.Task != nil {
			id = ev.Task.ID
		}
		gs.Events = append(gs.Events, goldenEvent{Seq: ev.Seq, AtMs: ev.AtMs, Type: ev.Type, TaskID: id})
	}
	data, err := json.MarshalIndent(gs, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	data = append(data, '\n')
	if d := golden.Compare(t, path, data, *update); d != "" {
		t.Errorf("the golden data dir no longer loads to %s:\n%s\nA data dir written by an earlier binary must keep loading to the same state. If the state's JSON gained a field on purpose, rerun with -update and review the diff.", path, d)
	}
}

// checkTodaysEncoderWrites feeds what src loaded to the real writer (Append
// for the events, Compact for the snapshot) in a fresh data dir and requires
// the same files, byte for byte. Decoding may tolerate a renamed tag or
// another frame; this does not.
func checkTodaysEncoderWrites(t *testing.T, src string, got loadedDir) {
	t.Helper()
	snap := got.events[0].Snapshot
	dir := t.TempDir()
	// The snapshot alone makes a store whose log continues at its seq + 1.
	copyGoldenFiles(t, src, dir, func(name string) bool { return strings.HasPrefix(name, "snapshot-") })
	st, err := logstore.Open(dir, logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Compact(func() *mailbox.Snapshot { return snap }); err != nil {
		st.Close()
		t.Fatalf("rewriting the snapshot: %v", err)
	}
	for _, ev := range got.events[1:] {
		done := make(chan error, 1)
		st.AppendUnit([]mailbox.Event{ev}, func(err error) { done <- err })
		if err := <-done; err != nil {
			st.Close()
			t.Fatalf("appending event %d (%s): %v", ev.Seq, ev.Type, err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	want, have := logFiles(t, src), logFiles(t, dir)
	if !slices.Equal(fileNames(want), fileNames(have)) {
		t.Fatalf("today's writer makes the files %q from %s, which holds %q", fileNames(have), src, fileNames(want))
	}
	for _, name := range fileNames(want) {
		w := want[name]
		// A changed body changes its checksum, the first thing on the line:
		// look past the checksums to show where the bytes really differ.
		d := golden.Diff(crcNumber.ReplaceAll(have[name], []byte(`"crc":N`)), crcNumber.ReplaceAll(w, []byte(`"crc":N`)))
		if d != "" {
			d += "\n(checksums shown as N)"
		} else {
			d = golden.Diff(have[name], w)
		}
		if d != "" {
			t.Errorf("today's encoder writes %s differently from the golden file:\n%s\nThe on-disk format changed: keep %s as it is (it must still load) and add the new format as a new testdata/vN beside it.", name, d, src)
		}
	}
}

// crcNumber is a record's checksum; a record body cannot hold it
// unescaped except as a key of a json content value, which the golden
// files do not have.
var crcNumber = regexp.MustCompile(`"crc":[0-9]+`)

// logFiles returns the segments and snapshots in dir by name.
func logFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := make(map[string][]byte)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if n := e.Name(); strings.HasPrefix(n, "log-") || strings.HasPrefix(n, "snapshot-") {
			if out[n], err = os.ReadFile(filepath.Join(dir, n)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return out
}

// fileNames returns the names of files in order.
func fileNames(files map[string][]byte) []string {
	out := make([]string, 0, len(files))
	for n := range files {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// checkCoversTheFormat requires the newest golden dir to hold every event
// type mailbox/events.go declares (the snapshot aside, which is the dir's
// snapshot file) in its segments, and a snapshot with tasks in every state,
// a pending result, a cached result, audit records and limits. A new event
// type therefore needs a new golden dir.
func checkCoversTheFormat(t *testing.T, got loadedDir) {
	t.Helper()
	logged := make(map[string]bool)
	for _, ev := range got.events[1:] {
		logged[ev.Type] = true
	}
	for _, typ := range declaredConsts(t, "events.go", "Event") {
		if typ != mailbox.EventSnapshot && !logged[typ] {
			t.Errorf("event type %q is in mailbox/events.go but in no golden segment: write a new golden data dir (testdata/README.md)", typ)
		}
	}
	// Every result status too: a worker's question (input_required,
	// auth_required) is a result whose status decides what replay does.
	posted := make(map[string]bool)
	for _, ev := range got.events[1:] {
		if ev.Result != nil {
			posted[ev.Result.Status] = true
		}
	}
	for _, status := range declaredConsts(t, "entities.go", "Status") {
		if !posted[status] {
			t.Errorf("result status %q is in mailbox/entities.go but no golden segment posts it: write a new golden data dir (testdata/README.md)", status)
		}
	}
	snap := got.events[0].Snapshot
	states := make(map[string]bool)
	for _, tr := range snap.Tasks {
		states[tr.State] = true
	}
	for _, s := range []string{mailbox.TaskQueued, mailbox.TaskInFlight, mailbox.TaskWaiting, mailbox.TaskResultPending, mailbox.TaskDone} {
		if !states[s] {
			t.Errorf("the golden snapshot holds no %s task", s)
		}
	}
	if len(snap.Results) == 0 || len(snap.ResultCache) == 0 || len(snap.Audit) == 0 || snap.Limits == nil {
		t.Errorf("the golden snapshot holds %d results, %d cached results, %d audit records, limits %v; want some of each",
			len(snap.Results), len(snap.ResultCache), len(snap.Audit), snap.Limits)
	}
}

// declaredConsts reads the values of the string constants named prefix*
// in mailbox/file (the Event* types of events.go, the Status* of
// entities.go), so a value added there is checked without editing this
// test.
func declaredConsts(t *testing.T, file, prefix string) []string {
	t.Helper()
	path := filepath.Join("..", "..", "..", "mailbox", file)
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if !strings.HasPrefix(n.Name, prefix) || i >= len(vs.Values) {
					continue
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					s, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					types = append(types, s)
				}
			}
		}
	}
	if len(types) < 2 {
		t.Fatalf("found only %q in %s: has the file moved?", types, path)
	}
	return types
}
