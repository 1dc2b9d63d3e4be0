package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/mailbox"
)

func TestLeaseAndDrainSeveralWithWait(t *testing.T) {
	addr := startDaemon(t)
	for _, intent := range []string{"one", "two", "three"} {
		mustCLI(t, addr, "send", "--from", "planner@local", "--to", "coder@local", "--intent", intent)
	}
	var leased mailbox.TasksLeasedResponse
	mustJSON(t, addr, &leased, "lease", "--recipient", "coder@local", "--max", "2", "--json")
	if len(leased.Leases) != 2 || leased.Leases[0].Task.IntentText != "one" || leased.Leases[1].Task.IntentText != "two" {
		t.Fatalf("lease --max 2: %+v", leased.Leases)
	}
	out := mustCLI(t, addr, "lease", "--recipient", "coder@local", "--max", "5", "--wait", "20ms")
	if !strings.Contains(out, "three") || strings.Count(out, "lease      ") != 1 {
		t.Fatalf("lease --max 5 with one task left printed:\n%s", out)
	}
	if out := mustCLI(t, addr, "lease", "--recipient", "coder@local", "--wait", "20ms"); !strings.Contains(out, "nothing queued for coder@local") {
		t.Fatalf("a long poll that found nothing printed %q", out)
	}
	for _, l := range leased.Leases {
		mustCLI(t, addr, "result", "post", l.Task.ID, "--status", "ok", "--text", "done", "--lease-id", l.Lease.LeaseID)
	}
	var drained mailbox.ResultsDrainedResponse
	mustJSON(t, addr, &drained, "result", "next", "--sender", "planner@local", "--max", "10", "--wait", "1s", "--json")
	if len(drained.Results) != 2 {
		t.Fatalf("result next --max 10: %+v", drained.Results)
	}
	// The daemon holds --max to its batch_max.
	if o := cli(t, addr, "lease", "--recipient", "coder@local", "--max", "101"); o.code != exitFailure || !strings.Contains(o.stderr, "batch_max") {
		t.Errorf("lease --max 101 against the default batch_max: exit %d, stderr %q", o.code, o.stderr)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"lease", "--recipient", "coder@local", "--max", "0"}, "--max: got 0"},
		{[]string{"lease", "--recipient", "coder@local", "--max", "1001"}, "1 to 1000"},
		{[]string{"lease", "--recipient", "coder@local", "--wait", "30s"}, "--wait: got 30s"},
		{[]string{"result", "next", "--sender", "planner@local", "--wait", "-1s"}, "--wait"},
	} {
		if o := cli(t, addr, tc.args...); o.code != exitUsage || !strings.Contains(o.stderr, tc.want) {
			t.Errorf("mailroom %s: exit %d, stderr %q; want a usage error naming %q", strings.Join(tc.args, " "), o.code, o.stderr, tc.want)
		}
	}
}

func TestSendFileSendsInBatches(t *testing.T) {
	addr := startDaemon(t)
	var lines []string
	for i := range 150 {
		lines = append(lines, fmt.Sprintf(`{"sender":"planner@local","recipient":"coder@local","intent_text":"task %d"}`, i))
	}
	lines[3] = `{"sender":"planner@local","recipient":"Coder@local","intent_text":"refused by the daemon"}`
	lines[7] = `{"sender":"planner@local","colour":"red"}`
	lines[120] = `not json`
	path := filepath.Join(t.TempDir(), "tasks.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o := cli(t, addr, "send", "--file", path)
	if o.code != exitFailure || !strings.Contains(o.stderr, "3 of the tasks were refused") {
		t.Fatalf("send --file: exit %d, stderr %q", o.code, o.stderr)
	}
	out := strings.Split(strings.TrimSpace(o.stdout), "\n")
	if len(out) != 150 {
		t.Fatalf("send --file printed %d lines, want one a task (150):\n%s", len(out), o.stdout)
	}
	for i, l := range out {
		switch i {
		case 3:
			if !strings.HasPrefix(l, "error: line 4: task.recipient: got \"Coder@local\"") {
				t.Errorf("line 4: %q", l)
			}
		case 7:
			if !strings.HasPrefix(l, "error: line 8: not a task") || !strings.Contains(l, "colour") {
				t.Errorf("line 8: %q", l)
			}
		case 120:
			if !strings.HasPrefix(l, "error: line 121: not a task") {
				t.Errorf("line 121: %q", l)
			}
		default:
			if _, err := mailbox.CanonicalUUID("id", l); err != nil {
				t.Errorf("line %d printed %q, want the task's id", i+1, l)
			}
		}
	}
	var st struct {
		Counts struct {
			Queued int `json:"queued"`
		} `json:"counts"`
	}
	mustJSON(t, addr, &st, "status", "--json")
	if st.Counts.Queued != 147 {
		t.Errorf("%d tasks queued, want 147", st.Counts.Queued)
	}
	if o := cli(t, addr, "send", "--file", path, "--from", "x@local"); o.code != exitUsage || !strings.Contains(o.stderr, "--from") {
		t.Errorf("--file with --from: exit %d, stderr %q", o.code, o.stderr)
	}
}
