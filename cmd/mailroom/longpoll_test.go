package main

import (
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
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"lease", "--recipient", "coder@local", "--max", "0"}, "--max: got 0"},
		{[]string{"lease", "--recipient", "coder@local", "--max", "101"}, "1 to 100"},
		{[]string{"lease", "--recipient", "coder@local", "--wait", "30s"}, "--wait: got 30s"},
		{[]string{"result", "next", "--sender", "planner@local", "--wait", "-1s"}, "--wait"},
	} {
		if o := cli(t, addr, tc.args...); o.code != exitUsage || !strings.Contains(o.stderr, tc.want) {
			t.Errorf("mailroom %s: exit %d, stderr %q; want a usage error naming %q", strings.Join(tc.args, " "), o.code, o.stderr, tc.want)
		}
	}
}
