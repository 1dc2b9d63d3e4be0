package main

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/mailbox"
)

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// TestTaskCycle walks one task through every client verb: send, lease,
// result post, result next, as an agent script would.
func TestTaskCycle(t *testing.T) {
	t.Parallel()
	addr := startDaemon(t)
	id := sendTask(t, addr, "planner@local", "coder@local", "fix the flaky test", "--kind", "code")
	if !uuidRE.MatchString(id) {
		t.Fatalf("send printed %q, want a task id", id)
	}

	out := mustCLI(t, addr, "lease", "--recipient", "coder@local")
	wantContains(t, "lease", out, "task       "+id, "from       planner@local", "kind       code", "intent     fix the flaky test", "attempt    1")
	leaseID := regexp.MustCompile(`lease +(\S+)`).FindStringSubmatch(out)
	if leaseID == nil || !uuidRE.MatchString(leaseID[1]) {
		t.Fatalf("lease output has no lease id:\n%s", out)
	}

	out = mustCLI(t, addr, "result", "post", id, "--status", "ok", "--text", "fixed", "--text", "see abc123",
		"--json-value", `{"files":3}`, "--lease-id", leaseID[1])
	wantContains(t, "result post", out, "posted ok result for task "+id)

	out = mustCLI(t, addr, "result", "next", "--sender", "planner@local")
	wantContains(t, "result next", out, "task       "+id, "status     ok", "from       coder@local", "text       fixed", "text       see abc123", `json       {"files":3}`)

	if out := mustCLI(t, addr, "result", "next", "--sender", "planner@local"); out != "no result pending for planner@local\n" {
		t.Errorf("second result next = %q", out)
	}
	if out := mustCLI(t, addr, "lease", "--recipient", "coder@local"); out != "nothing queued for coder@local\n" {
		t.Errorf("second lease = %q", out)
	}
}

func TestJSONOutputs(t *testing.T) {
	t.Parallel()
	addr := startDaemon(t)
	var queued mailbox.TaskQueuedResponse
	mustJSON(t, addr, &queued, "send", "--from", "a@x", "--to", "b@x", "--intent", "do", "--json")
	if queued.Kind != mailbox.KindTaskQueued || !uuidRE.MatchString(queued.TaskID) {
		t.Fatalf("send --json = %+v", queued)
	}
	l := leaseTask(t, addr, "b@x")
	if l.Kind != mailbox.KindTaskOpt || l.Task.ID != queued.TaskID || l.Lease.Attempt != 1 {
		t.Fatalf("lease --json = %+v", l)
	}
	var empty map[string]any
	mustJSON(t, addr, &empty, "lease", "--recipient", "b@x", "--json")
	if empty["kind"] != mailbox.KindTaskOpt || empty["task"] != nil || empty["lease"] != nil {
		t.Errorf("empty lease --json = %v, want task and lease null", empty)
	}
	var posted mailbox.ResultPostedResponse
	mustJSON(t, addr, &posted, "result", "post", queued.TaskID, "--status", "partial", "--text", "half", "--json")
	if posted.Kind != mailbox.KindResultPosted || posted.TaskID != queued.TaskID {
		t.Errorf("result post --json = %+v", posted)
	}
	var drained mailbox.ResultOptResponse
	mustJSON(t, addr, &drained, "result", "next", "--sender", "a@x", "--json")
	if drained.Kind != mailbox.KindResultOpt || drained.Result == nil || drained.Result.Status != "partial" || drained.Result.Content[0].Text != "half" {
		t.Errorf("result next --json = %+v", drained)
	}
	mustJSON(t, addr, &empty, "result", "next", "--sender", "a@x", "--json")
	if empty["result"] != nil {
		t.Errorf("empty result next --json = %v, want result null", empty)
	}
	var compacted map[string]any
	mustJSON(t, addr, &compacted, "compact", "--json")
	if compacted["kind"] != mailbox.KindCompacted || compacted["seq"] == nil {
		t.Errorf("compact --json = %v", compacted)
	}
}

// TestSendFlags checks that every send flag reaches the daemon, read back
// through status --json.
func TestSendFlags(t *testing.T) {
	t.Parallel()
	addr := startDaemon(t)
	parent := sendTask(t, addr, "a@x", "b@x", "parent")
	const id = "0f8fad5b-d9cb-469f-a165-70867728950e"
	before := time.Now()
	got := sendTask(t, addr, "a@x", "b@x", "child", "--id", id, "--kind", "review", "--parent", parent,
		"--deadline", "10m", "--idempotency-key", "k1", "--idempotent")
	if got != id {
		t.Fatalf("send --id %s printed %q", id, got)
	}
	sendTask(t, addr, "a@x", "b@x", "absolute", "--deadline", "2030-01-02T15:04:05Z", "--idempotency-key", "k2")

	var st statusReport
	mustJSON(t, addr, &st, "status", "--json")
	if len(st.Tasks) != 3 {
		t.Fatalf("status --json has %d tasks, want 3", len(st.Tasks))
	}
	child := st.Tasks[1].Task
	if child.ID != id || child.Kind() != "review" || child.Parent != parent || !child.Idempotent() || child.Idempotency.Key != "k1" {
		t.Errorf("child task = %+v", child)
	}
	if child.DeadlineMs == nil || *child.DeadlineMs < before.Add(10*time.Minute).UnixMilli() || *child.DeadlineMs > time.Now().Add(10*time.Minute).UnixMilli() {
		t.Errorf("child deadline = %v, want 10 minutes from the send", child.DeadlineMs)
	}
	abs := st.Tasks[2].Task
	if abs.DeadlineMs == nil || *abs.DeadlineMs != time.Date(2030, 1, 2, 15, 4, 5, 0, time.UTC).UnixMilli() {
		t.Errorf("absolute deadline = %v", abs.DeadlineMs)
	}
	if abs.Idempotency == nil || abs.Idempotency.DuplicateSafety != mailbox.DuplicateUnsafe || abs.Idempotency.Key != "k2" {
		t.Errorf("key without --idempotent = %+v, want unsafe with key k2", abs.Idempotency)
	}
}

func TestAgeAndTruncate(t *testing.T) {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	ages := []struct {
		ago  time.Duration
		want string
	}{
		{4*time.Minute + 12*time.Second + 900*time.Millisecond, "4m12s"},
		{500 * time.Millisecond, "0s"},
		{2*time.Hour + 3*time.Second, "2h0m3s"},
		{-time.Minute, "0s"}, // clock skew never shows a negative age
	}
	for _, tt := range ages {
		if got := age(now, now.Add(-tt.ago).UnixMilli()); got != tt.want {
			t.Errorf("age(%v ago) = %q, want %q", tt.ago, got, tt.want)
		}
	}
	if got := age(now, 0); got != "-" {
		t.Errorf("age(0) = %q, want -", got)
	}
	if got := truncate("a  b\nc", 10); got != "a b c" {
		t.Errorf("truncate joins whitespace: %q", got)
	}
	if got := truncate("abcdefghij", 5); got != "abcd…" {
		t.Errorf("truncate = %q", got)
	}
}

func TestParseDeadline(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want int64
		err  bool
	}{
		{"10m", now.Add(10 * time.Minute).UnixMilli(), false},
		{"2030-01-02T00:00:00Z", now.Add(24 * time.Hour).UnixMilli(), false},
		{"2030-01-02T01:00:00+01:00", now.Add(24 * time.Hour).UnixMilli(), false},
		{"0s", 0, true},
		{"tomorrow", 0, true},
	}
	for _, tt := range tests {
		got, err := parseDeadline(tt.in, now)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("parseDeadline(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.err)
		}
	}
}

// TestCompactSaysWhyTheDataDirGrew: the first compaction of a young log
// writes a snapshot larger than the log it replaces; the output says why
// that is expected. One that shrinks the data dir says nothing more.
func TestCompactSaysWhyTheDataDirGrew(t *testing.T) {
	t.Parallel()
	addr := startDaemon(t)
	sendTask(t, addr, "planner@local", "coder@local", "a task the snapshot must hold")
	c, err := client.New(addr)
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.Compact(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if out.BytesAfter <= out.BytesBefore {
		t.Fatalf("compacting a one-task log went from %d to %d bytes; the test needs one that grows", out.BytesBefore, out.BytesAfter)
	}
	var b strings.Builder
	printCompacted(&b, out)
	wantContains(t, "compact that grew", b.String(), "log and snapshot ", " bytes -> ",
		"the data dir grew by ", "a snapshot holds the whole live state", "pays off once the\nlog outgrows the state", "compact_factor")

	b.Reset()
	printCompacted(&b, mailbox.CompactOutcome{Seq: 9, BytesBefore: 5000, BytesAfter: 800})
	if want := "compacted at seq 9: log and snapshot 5000 bytes -> 800 bytes\n"; b.String() != want {
		t.Errorf("compact that shrank = %q, want %q", b.String(), want)
	}
}

// The daemon will not start with a MAILROOM_* variable that names no
// setting: the typo is named, with the variable meant.
func TestDaemonRefusesAnUnknownVariable(t *testing.T) {
	o := cliEnv(t, map[string]string{"MAILROOM_DATA_DRI": t.TempDir()}, "daemon", "--addr", "127.0.0.1:0", "--data-dir", t.TempDir())
	if o.code != exitUsage || !strings.Contains(o.stderr, "MAILROOM_DATA_DRI") || !strings.Contains(o.stderr, "did you mean MAILROOM_DATA_DIR?") {
		t.Fatalf("daemon with MAILROOM_DATA_DRI set: exit %d, stderr %q", o.code, o.stderr)
	}
}
