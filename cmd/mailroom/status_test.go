package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/internal/testclock"
	"github.com/mailroom/mailroom/mailbox"
)

// busyMailbox is a daemon on a hand-set clock holding 25 queued tasks, 4
// in-flight leases of which 3 were taken 10 minutes ago, and 1 pending
// result: more queued tasks than the limits the tests list with.
func busyMailbox(t *testing.T) (addr string, leases []string) {
	t.Helper()
	clock := testclock.New(time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC))
	addr = daemontest.Start(t, daemontest.Options{Now: clock.Now}).Addr()
	c, err := client.New(addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for i := range 30 {
		if _, err := c.Send(ctx, mailbox.Task{Sender: "planner@local", Recipient: "coder@local", IntentText: fmt.Sprintf("task %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	lease := func() (mailbox.Task, mailbox.Lease) {
		task, l, err := c.Lease(ctx, "coder@local")
		if err != nil || task == nil {
			t.Fatalf("lease: %v, %v", task, err)
		}
		return *task, *l
	}
	for range 3 {
		_, l := lease()
		leases = append(leases, l.LeaseID)
	}
	clock.Advance(10 * time.Minute)
	_, l := lease()
	leases = append(leases, l.LeaseID)
	task, l := lease()
	if err := c.PostResult(ctx, mailbox.Result{TaskID: task.ID, LeaseID: l.LeaseID, Status: mailbox.StatusOK, Content: []mailbox.Content{}}); err != nil {
		t.Fatal(err)
	}
	return addr, leases
}

// TestStatusTotalsAreTheDaemons: the header counts the whole mailbox, not
// the rows printed, and leases are listed even when queued tasks alone
// exceed -n (the trial's "100 queued, 0 in flight" with 15,000 queued and
// 5,000 in flight).
func TestStatusTotalsAreTheDaemons(t *testing.T) {
	t.Parallel()
	addr, leases := busyMailbox(t)
	const header = "25 queued, 4 in flight, 3 stale (leased over 5m0s), 1 results pending"

	out := mustCLI(t, addr, "status", "-n", "3")
	lines := strings.Split(out, "\n")
	if lines[0] != header {
		t.Errorf("status -n 3 header = %q, want %q", lines[0], header)
	}
	if want := "listed: 3 in flight, 0 queued, 1 results (showing at most 3, leases first; raise -n for more)"; lines[1] != want {
		t.Errorf("status -n 3 second line = %q, want %q", lines[1], want)
	}
	if n := len(regexp.MustCompile(`(?m)^in_flight `).FindAllString(out, -1)); n != 3 {
		t.Errorf("status -n 3 lists %d leases, want 3 (leases first):\n%s", n, out)
	}

	out = mustCLI(t, addr, "status", "-n", "10")
	wantContains(t, "status -n 10", out, header+"\n", "listed: 4 in flight, 6 queued, 1 results (showing at most 10")
	rows := regexp.MustCompile(`(?m)^(in_flight|queued) `).FindAllStringSubmatch(out, -1)
	var states []string
	for _, r := range rows {
		states = append(states, r[1])
	}
	if got := strings.Join(states, ","); got != "in_flight,in_flight,in_flight,in_flight,queued,queued,queued,queued,queued,queued" {
		t.Errorf("status -n 10 rows in the order %s, want the 4 leases before 6 queued tasks", got)
	}
	for _, l := range leases {
		if strings.Contains(out, l) {
			t.Errorf("status shows lease id %s; the table has no lease column", l)
		}
	}

	if out := mustCLI(t, addr, "status", "--stale-after", "15m", "-n", "100"); !strings.HasPrefix(out, "25 queued, 4 in flight, 0 stale (leased over 15m0s), 1 results pending\n\n") {
		t.Errorf("status --stale-after 15m with everything listed:\n%s\nwant 0 stale and no listed: line", out)
	}
	out = mustCLI(t, addr, "status", "--state", "in_flight", "--min-lease-age-ms", "300000")
	wantContains(t, "filtered status", out, header+"\n", "listed: 3 in flight, 0 queued, 1 results matching the filters\n")
}

func TestStatusJSONCounts(t *testing.T) {
	t.Parallel()
	addr, _ := busyMailbox(t)
	var st statusReport
	mustJSON(t, addr, &st, "status", "--json", "-n", "2", "--stale-after", "90s")
	want := statusCounts{Queued: 25, InFlight: 4, Stale: 3, StaleAfterMs: 90000, ResultsPending: 1}
	if st.Counts != want {
		t.Errorf("status --json counts = %+v, want %+v", st.Counts, want)
	}
	if len(st.Tasks) != 2 || st.Tasks[0].State != mailbox.TaskInFlight || st.Tasks[1].State != mailbox.TaskInFlight {
		t.Errorf("status --json -n 2 tasks = %+v, want the two oldest leases", st.Tasks)
	}
	var raw struct {
		Counts map[string]any `json:"counts"`
	}
	mustJSON(t, addr, &raw, "status", "--json", "--state", "queued")
	keys := strings.Join(slices.Sorted(maps.Keys(raw.Counts)), ",")
	if keys != "in_flight,queued,results_pending,stale,stale_after_ms,stale_capped,waiting" {
		t.Errorf("counts keys = %s", keys)
	}
}

// TestStatusSaysWhenTheStaleCountIsCapped: the stale count stops at the
// largest list the daemon returns, and the header says so rather than
// passing the cap off as the count.
func TestStatusSaysWhenTheStaleCountIsCapped(t *testing.T) {
	var b strings.Builder
	printStatus(&b, statusReport{Limit: 100, Counts: statusCounts{Queued: 15000, InFlight: 12000, Stale: mailbox.MaxLimit, StaleCapped: true, StaleAfterMs: 120000}}, time.Now())
	want := "15000 queued, 12000 in flight, at least 10000 stale (leased over 2m0s), 0 results pending\nlisted: 0 in flight, 0 queued, 0 results\n"
	if b.String() != want {
		t.Errorf("capped status = %q, want %q", b.String(), want)
	}
}

func TestStatusStaleAfterUsage(t *testing.T) {
	t.Parallel()
	addr := startDaemon(t)
	for _, tt := range []struct{ arg, want string }{
		{"abc", `--stale-after: got "abc", expected a duration such as 90s, 5m or 1h30m`},
		{"0s", "--stale-after: got 0s, expected a positive duration"},
	} {
		o := cli(t, addr, "status", "--stale-after", tt.arg)
		if o.code != 2 {
			t.Errorf("status --stale-after %s: exit %d, want 2", tt.arg, o.code)
		}
		wantContains(t, "status --stale-after "+tt.arg, o.stderr, "mailroom status: "+tt.want)
	}
}

func TestStatusJSONHasExactlyTheDocumentedKeys(t *testing.T) {
	t.Parallel()
	addr := startDaemon(t)
	sendTask(t, addr, "a@x", "b@x", "one")
	sendTask(t, addr, "a@x", "b@x", "two")
	leaseTask(t, addr, "b@x")

	tests := []struct {
		args                  []string
		limit                 float64
		minAge, within, state any
		tasks                 int
		agent                 any
	}{
		{[]string{"status", "--json"}, 100, nil, nil, nil, 2, nil},
		{[]string{"status", "--json", "-n", "1"}, 1, nil, nil, nil, 1, nil},
		{[]string{"status", "--json", "--state", "in_flight", "--min-lease-age-ms", "0", "--deadline-within-ms", "60000"}, 100, float64(0), float64(60000), "in_flight", 0, nil},
		{[]string{"status", "--json", "--state", "in_flight", "--min-lease-age-ms", "0"}, 100, float64(0), nil, "in_flight", 1, nil},
		{[]string{"status", "--json", "--state", "queued"}, 100, nil, nil, "queued", 1, nil},
		{[]string{"status", "--json", "--agent", "b@x"}, 100, nil, nil, nil, 2, "b@x"},
		{[]string{"status", "--json", "--agent", "a@x"}, 100, nil, nil, nil, 0, "a@x"}, // known, as a sender: nothing sent to it
	}
	wantKeys := []string{"agent_filter", "counts", "deadline_within_ms", "kind", "limit", "min_lease_age_ms", "results", "state_filter", "tasks"}
	for _, tt := range tests {
		name := strings.Join(tt.args, " ")
		var got map[string]json.RawMessage
		mustJSON(t, addr, &got, tt.args...)
		keys := slices.Sorted(maps.Keys(got))
		if strings.Join(keys, ",") != strings.Join(wantKeys, ",") {
			t.Errorf("%s: keys %v, want exactly %v", name, keys, wantKeys)
		}
		var v struct {
			Kind             string            `json:"kind"`
			Limit            float64           `json:"limit"`
			MinLeaseAgeMs    any               `json:"min_lease_age_ms"`
			DeadlineWithinMs any               `json:"deadline_within_ms"`
			StateFilter      any               `json:"state_filter"`
			AgentFilter      any               `json:"agent_filter"`
			Tasks            []json.RawMessage `json:"tasks"`
			Results          []json.RawMessage `json:"results"`
		}
		mustJSON(t, addr, &v, tt.args...)
		if v.Kind != "a2a_status" || v.Limit != tt.limit || v.MinLeaseAgeMs != tt.minAge || v.DeadlineWithinMs != tt.within || v.StateFilter != tt.state || v.AgentFilter != tt.agent || len(v.Tasks) != tt.tasks {
			t.Errorf("%s: got %+v, want limit %v, min age %v, within %v, state %v, agent %v, %d tasks", name, v, tt.limit, tt.minAge, tt.within, tt.state, tt.agent, tt.tasks)
		}
		if string(got["results"]) != "[]" {
			t.Errorf("%s: results = %s, want []", name, got["results"])
		}
	}
}

func TestStatusTable(t *testing.T) {
	t.Parallel()
	addr := startDaemon(t)
	if out := mustCLI(t, addr, "status"); out != "0 queued, 0 in flight, 0 stale (leased over 5m0s), 0 results pending\n" {
		t.Errorf("empty status = %q", out)
	}
	waiting := sendTask(t, addr, "planner@local", "coder@local", "write the release notes for version two", "--kind", "docs")
	sendTask(t, addr, "planner@local", "coder@local", "first")
	done := sendTask(t, addr, "planner@local", "reviewer@local", "review")
	l := leaseTask(t, addr, "coder@local") // leases the oldest: waiting
	if l.Task.ID != waiting {
		t.Fatalf("leased %s, want the oldest task %s", l.Task.ID, waiting)
	}
	leaseTask(t, addr, "reviewer@local")
	mustCLI(t, addr, "result", "post", done, "--status", "error", "--error-message", "does not build")

	out := mustCLI(t, addr, "status")
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if lines[0] != "1 queued, 1 in flight, 0 stale (leased over 5m0s), 1 results pending" {
		t.Errorf("status header = %q", lines[0])
	}
	wantContains(t, "status table", out,
		"STATE", "TASK", "SENDER -> RECIPIENT", "ATTEMPT", "LEASE AGE", "LEASED TO", "INTENT",
		"planner@local -> coder@local", "docs", "write the release notes for version two",
		"RESULT FOR TASK", done, "error", "reviewer@local -> planner@local", "does not build")
	inFlight := regexp.MustCompile(`(?m)^in_flight +` + waiting + ` +planner@local -> coder@local +docs +1 +\d+s +coder@local +write`)
	if !inFlight.MatchString(out) {
		t.Errorf("status has no in-flight row with attempt 1, a lease age and the holder:\n%s", out)
	}
	if o := mustCLI(t, addr, "status", "-n", "1"); !strings.Contains(o, "showing at most 1") {
		t.Errorf("status -n 1 does not say the list was cut:\n%s", o)
	}
}
