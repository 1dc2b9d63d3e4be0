package main

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/cmd/mailroom/internal/bench"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/daemon/store/logstore"
	"github.com/mailroom/mailroom/daemon/store/logstore/logstoretest"
)

// benchCLI runs the bench verb in-process, as run would once it is
// registered, and returns its exit code and output.
func benchCLI(t *testing.T, vars map[string]string, args ...string) outcome {
	t.Helper()
	var stdout, stderr bytes.Buffer
	e := &env{stdout: &stdout, stderr: &stderr, getenv: func(k string) string { return vars[k] }}
	code := report(e, "bench", runBench(t.Context(), e, args))
	return outcome{code, stdout.String(), stderr.String()}
}

func keys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }

func object(t *testing.T, m map[string]any, key string) map[string]any {
	t.Helper()
	o, ok := m[key].(map[string]any)
	if !ok {
		t.Fatalf("%q = %v, want an object", key, m[key])
	}
	return o
}

// TestBenchEmbeddedJSON is a short embedded run with two consoles: it
// completes cycles, no subscriber misses or repeats an event, and the JSON
// object has exactly the documented keys.
func TestBenchEmbeddedJSON(t *testing.T) {
	t.Parallel()
	o := benchCLI(t, nil, "--embedded", "--duration", "300ms", "--pairs", "2", "--fanout", "2", "--json")
	if o.code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", o.code, o.stderr)
	}
	var rep map[string]any
	dec := json.NewDecoder(strings.NewReader(o.stdout))
	if err := dec.Decode(&rep); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, o.stdout)
	}
	if dec.More() {
		t.Errorf("stdout holds more than one JSON value:\n%s", o.stdout)
	}
	wantTop := []string{"batch", "cycles", "cycles_per_s", "daemon", "data_fs", "duration_s", "elapsed_s", "embedded", "errors", "errors_total",
		"fanout", "kind", "latency", "long_poll", "pairs", "payload_bytes", "pipeline", "rate_limit", "requests", "requests_per_s", "target", "volatile_log", "wait_ms", "warnings"}
	if got := keys(rep); !slices.Equal(got, wantTop) {
		t.Errorf("keys = %v, want %v", got, wantTop)
	}
	if rep["kind"] != "mailroom_bench" || rep["target"] != "embedded" || rep["pairs"] != 2.0 {
		t.Errorf("kind %v, target %v, pairs %v", rep["kind"], rep["target"], rep["pairs"])
	}
	if c, _ := rep["cycles"].(float64); c <= 0 {
		t.Errorf("cycles = %v, want more than 0", rep["cycles"])
	}
	if rep["errors_total"] != 0.0 {
		t.Errorf("errors = %v", rep["errors"])
	}
	lat := object(t, rep, "latency")
	if got, want := keys(lat), []string{"cycle", "drain", "lease", "result", "send"}; !slices.Equal(got, want) {
		t.Errorf("latency keys = %v, want %v", got, want)
	}
	for step := range lat {
		if got, want := keys(object(t, lat, step)), []string{"count", "max_ms", "p50_ms", "p90_ms", "p99_ms"}; !slices.Equal(got, want) {
			t.Errorf("latency.%s keys = %v, want %v", step, got, want)
		}
	}
	wantDaemon := []string{"events_appended", "first_seq", "fsync_batches", "fsync_seconds", "last_seq", "mean_batch", "subscribers_cut", "write_errors"}
	if got := keys(object(t, rep, "daemon")); !slices.Equal(got, wantDaemon) {
		t.Errorf("daemon keys = %v, want %v", got, wantDaemon)
	}
	f := object(t, rep, "fanout")
	wantFanout := []string{"complete", "delivery", "events_per_s", "final_seq", "load_s", "missed", "per_subscriber", "received_max", "received_min",
		"reconnects", "repeated", "subscribers"}
	if got := keys(f); !slices.Equal(got, wantFanout) {
		t.Errorf("fanout keys = %v, want %v", got, wantFanout)
	}
	if f["subscribers"] != 2.0 || f["missed"] != 0.0 || f["repeated"] != 0.0 || f["complete"] != true {
		t.Errorf("fanout = %v: want 2 subscribers, nothing missed or repeated", f)
	}
	subs, _ := f["per_subscriber"].([]any)
	if len(subs) != 2 {
		t.Fatalf("per_subscriber = %v, want 2 entries", f["per_subscriber"])
	}
	wantSub := []string{"first_at_ms", "last_at_ms", "last_seq", "missed", "received", "reconnects", "repeated", "snapshot_seq", "snapshots"}
	for i, s := range subs {
		m, _ := s.(map[string]any)
		if got := keys(m); !slices.Equal(got, wantSub) {
			t.Errorf("per_subscriber[%d] keys = %v, want %v", i, got, wantSub)
		}
		if m["received"] == 0.0 {
			t.Errorf("per_subscriber[%d] received nothing", i)
		}
	}
	if !strings.Contains(o.stderr, "cycles/s") {
		t.Errorf("stderr = %q, want progress lines (at least the one at the end)", o.stderr)
	}
}

func TestBenchHumanSummary(t *testing.T) {
	t.Parallel()
	addr := startDaemon(t)
	o := benchCLI(t, map[string]string{"MAILROOM_ADDR": addr}, "--duration", "300ms", "--pairs", "1")
	if o.code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", o.code, o.stderr)
	}
	for _, want := range []string{"mailroom bench: daemon at " + addr + ", 1 pairs, 300ms asked", "cycles ", "requests ",
		"errors             0", "each 2xx and durable", "events per batch", "latency ms", "p99", "cycle"} {
		if !strings.Contains(o.stdout, want) {
			t.Errorf("summary does not say %q:\n%s", want, o.stdout)
		}
	}
	if strings.Contains(o.stdout, "fanout") {
		t.Errorf("summary mentions fanout without --fanout:\n%s", o.stdout)
	}
}

// TestBenchSaysWhenItsLogIsInMemory: an embedded run whose log is on tmpfs
// says so in its header and warns that its figures are not durable.
func TestBenchSaysWhenItsLogIsInMemory(t *testing.T) {
	t.Parallel()
	shm := logstoretest.TmpfsDir(t)
	o := benchCLI(t, nil, "--embedded", "--dir", shm, "--duration", "200ms", "--pairs", "1")
	if o.code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", o.code, o.stderr)
	}
	for _, want := range []string{"mailroom bench: embedded daemon (log on tmpfs), 1 pairs", "WARNING: the embedded daemon's log is on tmpfs",
		"not durable throughput", "each 2xx and synced, to memory only"} {
		if !strings.Contains(o.stdout, want) {
			t.Errorf("summary does not say %q:\n%s", want, o.stdout)
		}
	}
}

func TestBenchUsage(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--embedded", "--addr", "127.0.0.1:7717"}, "give one, not both"},
		{[]string{"--embedded", "--pairs", "0"}, "--pairs: got 0"},
		{[]string{"--embedded", "--duration", "0s"}, "--duration: got 0s"},
		{[]string{"--embedded", "--payload-bytes", "0"}, "--payload-bytes: got 0"},
		{[]string{"--embedded", "--fanout", "-1"}, "--fanout: got -1"},
		{[]string{"--embedded", "--rate", "-2"}, "--rate: got -2"},
		{[]string{"--embedded", "extra"}, `unexpected argument "extra"`},
		{[]string{"--dir", "/tmp"}, `--dir "/tmp": only an --embedded daemon`},
		{[]string{"--pairs", "many"}, `--pairs: got "many", expected a whole number`},
		{[]string{"--fanout-only"}, "--fanout-only: give --fanout K"},
		{[]string{"--embedded", "--fanout", "5", "--fanout-only"}, "an embedded daemon has no load"},
		{[]string{"--fanout", "5", "--fanout-only", "--rate", "100"}, "--fanout-only runs no load of its own"},
		{[]string{"--fanout", "5", "--fanout-only", "--pairs", "4"}, "--fanout-only runs no load of its own"},
	}
	for _, tt := range tests {
		o := benchCLI(t, nil, tt.args...)
		if o.code != exitUsage || !strings.Contains(o.stderr, tt.want) || !strings.Contains(o.stderr, "run 'mailroom bench --help'") {
			t.Errorf("bench %q = exit %d, stderr %q; want exit 2 saying %q", tt.args, o.code, o.stderr, tt.want)
		}
	}
	o := benchCLI(t, nil, "--help")
	if o.code != exitOK || !strings.Contains(o.stdout, "Example:\n  mailroom bench --embedded --pairs 16") || !strings.Contains(o.stdout, "-fanout") {
		t.Errorf("bench --help = exit %d:\n%s", o.code, o.stdout)
	}
}

func TestBenchUnreachable(t *testing.T) {
	addr := closedAddr(t)
	o := benchCLI(t, nil, "--addr", addr, "--duration", "1s")
	if o.code != exitFailure || !strings.Contains(o.stderr, "cannot reach mailroom daemon at "+addr) {
		t.Errorf("bench against nothing = exit %d, stderr %q; want exit 1 saying it cannot reach %s", o.code, o.stderr, addr)
	}
}

// TestRunEmbeddedSaysWhereItsLogIs: the report names the filesystem the
// embedded daemon's log was on, and a log on tmpfs, whose syncs reach no
// disk, comes with a warning that the figures are not durable throughput.
// The run's data dir inside the --dir it was given is removed afterwards.
// (It moved here from the bench package with the embedded wiring.)
func TestRunEmbeddedSaysWhereItsLogIs(t *testing.T) {
	t.Parallel()
	run := func(dir string) bench.Report {
		t.Helper()
		rep, err := benchEmbedded(t.Context(), dir, bench.Options{Pairs: 1, Duration: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if rep.ElapsedS < rep.DurationS || rep.CyclesPerS <= 0 {
			t.Errorf("elapsed %gs for a %gs run, %g cycles/s", rep.ElapsedS, rep.DurationS, rep.CyclesPerS)
		}
		if rep.Cycles == 0 {
			t.Fatalf("no cycles in %s", dir)
		}
		if left, err := os.ReadDir(dir); err != nil || len(left) != 0 {
			t.Errorf("%s after the run holds %v (%v), want nothing", dir, left, err)
		}
		return rep
	}

	disk := t.TempDir()
	fs, volatile, err := logstore.Filesystem(disk)
	if err != nil {
		t.Fatal(err)
	}
	if rep := run(disk); rep.DataFS != fs || rep.VolatileLog != volatile || (len(rep.Warnings) != 0) != volatile {
		t.Errorf("in %s (%s): data_fs %q, volatile %v, warnings %q", disk, fs, rep.DataFS, rep.VolatileLog, rep.Warnings)
	}

	if _, err := benchEmbedded(t.Context(), "/no/such/dir", bench.Options{Duration: time.Millisecond}); err == nil ||
		!strings.Contains(err.Error(), "/no/such/dir") {
		t.Errorf("Run in /no/such/dir: error %v, want one naming the dir", err)
	}

	shm := logstoretest.TmpfsDir(t)
	rep := run(shm)
	if rep.DataFS != "tmpfs" || !rep.VolatileLog || len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], "not durable throughput") {
		t.Errorf("on tmpfs: data_fs %q, warnings %q; want tmpfs and a warning that the figures are not durable", rep.DataFS, rep.Warnings)
	}
}

// bench --fanout-only against a daemon another process loads (here: tasks
// sent meanwhile) prints the subscribers' figures and no cycles.
func TestBenchFanoutOnlySummary(t *testing.T) {
	d := daemontest.Start(t, daemontest.Options{})
	addr := d.Addr()
	done := make(chan outcome, 1)
	go func() { done <- benchCLI(t, nil, "--addr", addr, "--fanout", "2", "--fanout-only", "--duration", "2s") }()
	// The load comes once both subscribers follow the stream: the
	// daemon's count of them says so, not a clock.
	for d.Metric(t, "mailroom_sse_subscribers") < 2 {
		select {
		case o := <-done:
			t.Fatalf("bench ended before its subscribers followed the stream: exit %d: %s", o.code, o.stderr)
		default:
		}
	}
	for range 5 {
		sendTask(t, addr, "p@x", "w@x", "load")
	}
	o := <-done
	if o.code != exitOK {
		t.Fatalf("exit %d: %s", o.code, o.stderr)
	}
	wantContains(t, "the summary", o.stdout, "mailroom bench --fanout-only: daemon at ", "the load from another process", "fanout    2 subscribers at ", "every subscriber got every event once: yes")
	if strings.Contains(o.stdout, "cycles") {
		t.Errorf("a run without load reports cycles:\n%s", o.stdout)
	}
}
