package httpapi_test

import (
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/mailbox"
)

// The round-trip invariant: anything the daemon acknowledges can be written
// to the log, replayed, compacted into a snapshot and reloaded, streamed
// over SSE, and decoded by a standard client (Go's encoding/json, jq, and
// JavaScript's JSON.parse under node) - and means the same after each.
//
// FuzzAcceptedRoundTrip feeds client-chosen task bodies and result values
// through all of these. Its seeds, including the nesting limits, run in the
// normal test run; `go test -fuzz FuzzAcceptedRoundTrip ./daemon/httpapi`
// explores further.
func FuzzAcceptedRoundTrip(f *testing.F) {
	deep := func(n int, leaf string) string {
		return strings.Repeat("[", n) + leaf + strings.Repeat("]", n)
	}
	seeds := []struct{ task, value, text string }{
		{`{"sender":"a@x","recipient":"b@x","intent_text":"do"}`, `1`, ""},
		{`{"sender":"a@x","recipient":"b@x","intent_text":"é \u0000 \ud83d\ude00 <b>&amp;</b> \u2028"}`, `{"a":[1,2.5e300,-0,"\ud800",null,true]}`, "line\nbreak \u0000 \"q\""},
		{`{"sender":"a@x","recipient":"b@x","intent_text":"deadline","deadline_ms":253402300799999,"task_kind":"k","idempotency":{"duplicate_safety":"idempotent","key":"` + strings.Repeat("k", mailbox.MaxKeyBytes) + `"}}`, deep(mailbox.MaxValueDepth, `{}`), ""},
		{`{"sender":"` + strings.Repeat("a", mailbox.MaxAgentIDBytes) + `","recipient":"._~@:/+-0z","intent_text":"x"}`, deep(mailbox.MaxValueDepth-1, `{"a":1}`), strings.Repeat("t", 1000)},
		{`{"sender":"a@x","recipient":"b@x","intent_text":"too deep"}`, deep(mailbox.MaxValueDepth+1, "1"), ""},
		{`{"sender":"a@x","recipient":"b@x","intent_text":"x"}`, deep(9997, "1"), ""},
		{`{"sender":"a@x","recipient":"b@x","intent_text":"x","sender":"c@x"}`, `{"k":1,"k":2}`, ""},
		{`{"Sender":"a@x","recipient":"b@x","intent_text":"x"}`, `"\u00e9\\\"/"`, "\t"},
		{`{"sender":"a@x","recipient":"b@x","intent_text":"ctx","context":{"repo":"mailroom","n":[1,2.5e300,-0,"\ud800",null,true],"s":"\u0000 \u2028 é"}}`, `1`, ""},
		{`{"sender":"a@x","recipient":"b@x","intent_text":"ctx","context":{"a":` + deep(mailbox.MaxValueDepth-1, "1") + `}}`, `1`, ""},
		{`{"sender":"a@x","recipient":"b@x","intent_text":"ctx","context":{"a":` + deep(mailbox.MaxValueDepth, "1") + `}}`, `1`, ""},
		{`{"sender":"a@x","recipient":"b@x","intent_text":"ctx","context":null}`, `1`, ""},
		{`not json`, `1e400`, ""},
		{`{"sender":"a@x","recipient":"b@x","intent_text":"   "}`, `12345678901234567890123456789`, ""},
	}
	for _, s := range seeds {
		f.Add(s.task, []byte(s.value), s.text)
	}
	fuzzing := flag.Lookup("test.fuzz").Value.String() != ""
	external := !fuzzing && !testing.Short()
	f.Fuzz(func(t *testing.T, taskBody string, value []byte, text string) {
		// A daemon of its own for each input: each restarts it twice anyway.
		d := daemontest.Start(t, daemontest.Options{})
		accepted := false
		if r := request(t, d, "POST", "/a2a/tasks", "application/json", taskBody, nil); r.status == 200 {
			accepted = true
		} else if r.status != 400 && r.status != 409 {
			t.Fatalf("task %q: status %d %s", taskBody, r.status, r.body)
		}
		// A result with the fuzzed value and text, for a task of our own.
		sendTask(t, d, task("fuzz@x", "fuzz-worker@x", "answer me"))
		lease := leaseTask(t, d, "fuzz-worker@x")
		textJSON, _ := json.Marshal(text)
		result := `{"task_id":"` + lease.Task.ID + `","status":"ok","lease_id":"` + lease.Lease.LeaseID + `","content":[{"type":"json","value":` + string(value) + `},{"type":"text","text":` + string(textJSON) + `}]}`
		if r := request(t, d, "POST", "/a2a/results", "application/json", result, nil); r.status == 200 {
			accepted = true
		} else if r.status != 400 {
			t.Fatalf("result with value %q: status %d %s", value, r.status, r.body)
		} else if len(value) > 0 && json.Valid(value) && !strings.Contains(string(r.body), "content[0]") {
			t.Fatalf("valid value %q refused without naming content[0]: %s", value, r.body)
		}
		if accepted {
			checkRoundTrip(t, d, external)
		}
	})
}

// checkRoundTrip asserts the invariant for d's whole state as it stands.
func checkRoundTrip(t *testing.T, d *daemontest.Daemon, external bool) {
	t.Helper()
	live := stateOf(t, d)

	// The event stream: its first event is the whole state as a snapshot,
	// read here with the plain test reader (ssetest) and encoding/json, and restored
	// into a mailbox of its own, which must hold the same state.
	snap, streamed := daemontest.ReadSnapshot(t, d.URL())
	s := mailbox.NewState()
	if err := s.Restore(snap); err != nil {
		t.Fatalf("the SSE snapshot does not restore: %v", err)
	}
	if got := snapshotJSON(t, s); got != live {
		t.Fatalf("state through SSE differs:\nlive %s\nsse  %s", live, got)
	}

	// The queue listing, as any HTTP client reads it, agrees with the
	// snapshot on every live task and pending result.
	r := request(t, d, "GET", "/a2a/queue?limit=10000", "", "", nil)
	var q mailbox.QueueResponse
	if r.status != 200 || json.Unmarshal(r.body, &q) != nil {
		t.Fatalf("GET /a2a/queue = %d, does not decode: %.200s", r.status, r.body)
	}
	checkQueueAgrees(t, snap, &q)

	// Replay from the log, then from a snapshot after compaction. A
	// connection kept alive across a restart is dead: start afresh.
	d.Restart()
	http.DefaultClient.CloseIdleConnections()
	if got := stateOf(t, d); got != live {
		t.Fatalf("state after replay differs:\nlive   %s\nreplay %s", live, got)
	}
	call(t, d, "POST", "/a2a/compact", nil, nil)
	d.Restart()
	http.DefaultClient.CloseIdleConnections()
	if got := stateOf(t, d); got != live {
		t.Fatalf("state after compaction and replay differs:\nlive      %s\ncompacted %s", live, got)
	}

	if external {
		files := map[string][]byte{"sse.json": streamed, "queue.json": r.body}
		logs, _ := filepath.Glob(filepath.Join(d.Dir, "*"))
		for _, p := range logs {
			if b, err := os.ReadFile(p); err == nil && len(b) > 0 {
				files[filepath.Base(p)] = b
			}
		}
		decodeElsewhere(t, files)
	}
}

// stateOf is the daemon's whole state as the helper reads it (the snapshot
// opening GET /a2a/events), restored and snapshotted again at time 0 so two
// readings compare equal when the state is.
func stateOf(t *testing.T, d *daemontest.Daemon) string {
	t.Helper()
	s := mailbox.NewState()
	if err := s.Restore(d.State(t)); err != nil {
		t.Fatalf("the daemon's snapshot does not restore: %v", err)
	}
	return snapshotJSON(t, s)
}

// checkQueueAgrees compares GET /a2a/queue with the snapshot: the same
// queued and leased tasks, the same pending results.
func checkQueueAgrees(t *testing.T, snap *mailbox.Snapshot, q *mailbox.QueueResponse) {
	t.Helper()
	js := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	want := map[string]string{}
	for _, tr := range snap.Tasks {
		if tr.State == mailbox.TaskQueued || tr.State == mailbox.TaskInFlight {
			want[tr.Task.ID] = js(mailbox.QueueEntry{State: tr.State, Task: tr.Task, LeaseID: tr.LeaseID, LeasedTo: tr.LeasedTo,
				LeasedAtMs: tr.LeasedAtMs, Attempt: tr.Attempt, QueuedAtMs: tr.QueuedAtMs})
		}
	}
	for _, r := range snap.Results {
		want["result "+r.TaskID] = js(r)
	}
	got := map[string]string{}
	for _, e := range q.Tasks {
		got[e.Task.ID] = js(e)
	}
	for _, r := range q.Results {
		got["result "+r.TaskID] = js(r)
	}
	if len(got) != len(want) {
		t.Errorf("GET /a2a/queue lists %d tasks and results, the snapshot holds %d", len(got), len(want))
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s:\nsnapshot %s\nqueue    %s", k, w, got[k])
		}
	}
}

func snapshotJSON(t *testing.T, s *mailbox.State) string {
	t.Helper()
	b, err := json.Marshal(s.Snapshot(0))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// decodeElsewhere reads each file (one JSON value, or one per line) with jq
// and with node's JSON.parse. Without them it says so; on CI it fails.
func decodeElsewhere(t *testing.T, files map[string][]byte) {
	t.Helper()
	dir := t.TempDir()
	var paths []string
	for name, b := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	const js = `const fs = require("fs");
for (const p of process.argv.slice(1)) {
  for (const line of fs.readFileSync(p, "utf8").split("\n")) {
    if (line.trim() !== "") JSON.parse(line);
  }
}`
	for _, tool := range []struct {
		name string
		args []string
	}{
		{"jq", append([]string{"-c", "."}, paths...)},
		{"node", append([]string{"-e", js}, paths...)},
	} {
		if _, err := exec.LookPath(tool.name); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is not installed: .ci/run must install it", tool.name)
			}
			t.Logf("%s not installed: the stored copies were not decoded with it", tool.name)
			continue
		}
		out, err := exec.Command(tool.name, tool.args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s cannot decode what the daemon stored or served: %v\n%.2000s", tool.name, err, out)
		}
	}
}
