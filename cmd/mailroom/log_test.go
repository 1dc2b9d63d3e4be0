package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/daemon"
	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/daemon/store/logstore"
	"github.com/mailroom/mailroom/daemon/store/storetest"
	"github.com/mailroom/mailroom/mailbox"
)

// writeLog writes evs to a new data dir with the real store and returns it.
func writeLog(t *testing.T, evs ...mailbox.Event) string {
	t.Helper()
	dir := t.TempDir()
	s, err := logstore.Open(dir, logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	storetest.AppendAll(t, s, evs...)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// sentTwiceLog is a data dir whose third event sends a queued task again:
// every record decodes, but replay refuses that one, so the daemon cannot
// start.
func sentTwiceLog(t *testing.T) string {
	t.Helper()
	const at = int64(1_767_225_600_000)
	task := func(id string) *mailbox.Task {
		return &mailbox.Task{ID: id, Sender: "planner@local", Recipient: "coder@local", IntentText: "do " + id}
	}
	return writeLog(t,
		mailbox.Event{Seq: 1, AtMs: at, Type: mailbox.EventTaskSent, Task: task("task-a")},
		mailbox.Event{Seq: 2, AtMs: at + 1, Type: mailbox.EventTaskSent, Task: task("task-b")},
		mailbox.Event{Seq: 3, AtMs: at + 2, Type: mailbox.EventTaskSent, Task: task("task-a")},
		mailbox.Event{Seq: 4, AtMs: at + 3, Type: mailbox.EventTaskLeased, TaskID: "task-b", LeaseID: "lease-1", LeasedTo: "coder@local", Attempt: 1},
	)
}

func segmentOf(dir string) string { return filepath.Join(dir, "log-00000000000000000001.jsonl") }

// TestLogCheckAndRepairGetTheDaemonUp walks the operator's path: the daemon
// refuses to start and names the record; log check shows it and exits 1;
// a repair of the wrong seq is refused; the right one exits 0 and the
// daemon starts with everything else intact.
func TestLogCheckAndRepairGetTheDaemonUp(t *testing.T) {
	t.Parallel()
	dir := sentTwiceLog(t)
	seg := segmentOf(dir)
	repairCmd := "mailroom log repair --data-dir " + dir + " --seq 3"

	// The daemon names the record and the way out.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var stdout, stderr strings.Builder
	code := run(ctx, []string{"daemon", "--data-dir", dir, "--addr", "127.0.0.1:0"}, &stdout, &stderr, func(string) string { return "" })
	if code != 1 {
		t.Fatalf("daemon on the refused log: exit %d, want 1\nstderr: %s", code, stderr.String())
	}
	wantContains(t, "daemon stderr", stderr.String(), "record seq 3 (task_sent, task task-a; line 3, byte offset ", seg,
		"sent twice", "'mailroom log check --data-dir "+dir+"'", "'"+repairCmd+"'")

	// Through the engine's and the daemon's wrapping, the error is still
	// the store's typed one.
	cfg := config.DefaultFor(func(string) string { return "" })
	cfg.Addr, cfg.DataDir = "127.0.0.1:0", dir
	var re *logstore.RecordError
	if _, err := daemon.Open(cfg, nil); !errors.As(err, &re) || re.Seq != 3 || re.Path != seg || re.Line != 3 || !re.Refused {
		t.Fatalf("daemon.Open: %v; want a *logstore.RecordError for seq 3 at line 3 of %s", err, seg)
	}

	o := cliEnv(t, nil, "log", "check", "--data-dir", dir)
	if o.code != 1 {
		t.Fatalf("log check: exit %d, want 1\nstdout: %s\nstderr: %s", o.code, o.stdout, o.stderr)
	}
	wantContains(t, "log check", o.stdout, "the daemon cannot start", "events     2 replayed", "last seq   2",
		"cannot replay record seq 3 (task_sent, task task-a):", "file       "+seg, "line       3, byte offset ",
		"sent twice", "repair     "+repairCmd, ".broken")
	wantContains(t, "log check stderr", o.stderr, "mailroom log check: the daemon cannot start on data dir "+dir, "'"+repairCmd+"'")

	var report struct {
		Healthy bool
		Problem *struct {
			File          string
			Line          int
			Seq           uint64
			Type          string
			TaskID        string `json:"task_id"`
			Refused       bool
			RepairCommand string `json:"repair_command"`
		}
	}
	o = cliEnv(t, nil, "log", "check", "--data-dir", dir, "--json")
	if err := json.Unmarshal([]byte(o.stdout), &report); o.code != 1 || err != nil {
		t.Fatalf("log check --json: exit %d, %v\n%s", o.code, err, o.stdout)
	}
	if p := report.Problem; report.Healthy || p == nil || p.Seq != 3 || p.Line != 3 || p.File != seg || p.Type != "task_sent" || p.TaskID != "task-a" || !p.Refused || p.RepairCommand != repairCmd {
		t.Errorf("log check --json = %+v (problem %+v)", report, report.Problem)
	}

	before, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	o = cliEnv(t, nil, "log", "repair", "--data-dir", dir, "--seq", "4")
	if o.code != 1 {
		t.Fatalf("log repair --seq 4: exit %d, want 1", o.code)
	}
	wantContains(t, "log repair --seq 4 stderr", o.stderr, "mailroom log repair: refusing to move seq 4 aside", "the first record that cannot be replayed is record seq 3 (task_sent", repairCmd)
	if after, _ := os.ReadFile(seg); string(after) != string(before) {
		t.Fatalf("a refused repair changed %s", seg)
	}

	o = cliEnv(t, nil, "log", "repair", "--data-dir", dir, "--seq", "3", "--reason", "duplicate send from the 1.4.0 bug")
	if o.code != 0 {
		t.Fatalf("log repair --seq 3: exit %d, want 0\nstdout: %s\nstderr: %s", o.code, o.stdout, o.stderr)
	}
	wantContains(t, "log repair", o.stdout, "moved record seq 3 (task_sent, task task-a) aside", "now a record_skipped event",
		"original   "+seg+".broken", "duplicate send from the 1.4.0 bug", "checking the log again:", "the daemon can start", "last seq   4")
	if kept, _ := os.ReadFile(seg + ".broken"); string(kept) != string(before) {
		t.Errorf("%s.broken is not the segment as it was", seg)
	}
	if o := cliEnv(t, nil, "log", "check", "--data-dir", dir); o.code != 0 {
		t.Errorf("log check after the repair: exit %d\n%s%s", o.code, o.stdout, o.stderr)
	}

	addr := startDaemonIn(t, dir)
	l := leaseTask(t, addr, "coder@local")
	if l.Task.ID != "task-a" {
		t.Errorf("after the repair the queue holds %s, want task-a", l.Task.ID)
	}
}

// TestLogCheckHealthy: a log the daemon can start on exits 0 with its
// summary, in text and in JSON.
func TestLogCheckHealthy(t *testing.T) {
	dir := writeLog(t, storetest.NewWorkload(7).Events(t, 12)...)
	o := cliEnv(t, nil, "log", "check", "--data-dir", dir)
	if o.code != 0 {
		t.Fatalf("log check: exit %d\n%s%s", o.code, o.stdout, o.stderr)
	}
	wantContains(t, "log check", o.stdout, "log in "+dir+": the daemon can start", "snapshot   none", "segments   "+segmentOf(dir), "events     12 replayed", "last seq   12")
	var report map[string]any
	o = cliEnv(t, nil, "log", "check", "--data-dir", dir, "--json")
	if err := json.Unmarshal([]byte(o.stdout), &report); o.code != 0 || err != nil {
		t.Fatalf("log check --json: exit %d, %v\n%s", o.code, err, o.stdout)
	}
	if report["healthy"] != true || report["last_seq"] != float64(12) || report["problem"] != nil || report["damage"] != nil {
		t.Errorf("log check --json = %v", report)
	}
}

// TestLogVerbsRefuseWhileTheDaemonRuns: both take the data dir's lock.
func TestLogVerbsRefuseWhileTheDaemonRuns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	startDaemonIn(t, dir)
	for _, args := range [][]string{
		{"log", "check", "--data-dir", dir},
		{"log", "repair", "--data-dir", dir, "--seq", "1"},
	} {
		o := cliEnv(t, nil, args...)
		if o.code != 1 {
			t.Errorf("mailroom %s while the daemon runs: exit %d, want 1", strings.Join(args, " "), o.code)
		}
		wantContains(t, strings.Join(args[:2], " ")+" stderr", o.stderr, "mailroom "+strings.Join(args[:2], " ")+": ",
			"while no daemon has it open", "data dir "+dir+" is in use", "stop that daemon")
	}
}

func TestLogUsage(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		args []string
		verb string
		want string
	}{
		{[]string{"log"}, "log", "missing sub-command: check or repair"},
		{[]string{"log", "fix"}, "log", `unknown sub-command "fix"`},
		{[]string{"log", "check"}, "log check", "--data-dir is required"},
		{[]string{"log", "check", "--data-dir", " "}, "log check", `--data-dir: got " "`},
		{[]string{"log", "check", "--data-dir", dir, "extra"}, "log check", `unexpected argument "extra"`},
		{[]string{"log", "repair", "--data-dir", dir}, "log repair", "--seq is required"},
		{[]string{"log", "repair", "--seq", "3"}, "log repair", "--data-dir is required"},
		{[]string{"log", "repair", "--data-dir", dir, "--seq", "three"}, "log repair", `--seq: got "three", expected a whole number of 0 or more`},
		{[]string{"log", "repair", "--data-dir", dir, "--seq", "0"}, "log repair", "--seq: got 0"},
	} {
		o := cliEnv(t, nil, tt.args...)
		name := strings.Join(tt.args, " ")
		if o.code != 2 {
			t.Errorf("mailroom %s: exit %d, want 2 (stderr %q)", name, o.code, o.stderr)
		}
		wantContains(t, "mailroom "+name, o.stderr, "mailroom "+tt.verb+": "+tt.want, "run 'mailroom "+tt.verb+" --help'")
	}
	if names, _ := os.ReadDir(dir); len(names) != 0 {
		t.Errorf("a usage error touched the data dir: %v", names)
	}
}

func TestLogHelp(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"log", "--help"}, []string{"mailroom log check", "mailroom log repair", "Example:\n  mailroom log check --data-dir "}},
		{[]string{"log", "check", "--help"}, []string{"Usage:\n  mailroom log check --data-dir DIR [--json]", "Example:\n  mailroom log check --data-dir ", "exit 1", "-data-dir", "-json"}},
		{[]string{"log", "repair", "-h"}, []string{"Usage:\n  mailroom log repair --data-dir DIR --seq N", "Example:\n  mailroom log check --data-dir ", "mailroom log repair --data-dir /var/lib/mailroom --seq 3", "-seq", "-reason", "-json", ".broken"}},
		{[]string{"help", "log"}, []string{"mailroom log check", "mailroom log repair"}},
	} {
		o := cliEnv(t, nil, tt.args...)
		name := strings.Join(tt.args, " ")
		if o.code != 0 {
			t.Errorf("mailroom %s: exit %d, want 0 (stderr %q)", name, o.code, o.stderr)
		}
		wantContains(t, "mailroom "+name, o.stdout, tt.want...)
	}
}
