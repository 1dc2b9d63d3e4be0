package httpapi_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/daemon/httpapi"
	"github.com/mailroom/mailroom/mailbox"
)

// TestCycle walks one task through every route on the wire: send, list,
// lease (GET and POST), queue, post, list results, drain (GET and POST),
// repair, compact; each answer has its kind and empty lists are [].
func TestCycle(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Options{})

	empty := request(t, d, "GET", "/a2a/queue", "", "", nil)
	if got := strings.TrimSpace(string(empty.body)); got != `{"kind":"a2a_queue","tasks":[],"results":[]}` {
		t.Errorf("empty queue = %s", got)
	}
	var none mailbox.TaskOptResponse
	call(t, d, "GET", "/a2a/tasks/next?recipient=w@x", nil, &none)
	if none.Kind != mailbox.KindTaskOpt || none.Task != nil || none.Lease != nil {
		t.Errorf("lease with nothing queued = %+v, want kind with null task and lease", none)
	}

	kind := "summarize"
	given := sendTask(t, d, mailbox.Task{ID: strings.ToUpper(id1), Sender: "p@x", Recipient: "w@x", IntentText: "one", TaskKind: &kind})
	if given != id1 {
		t.Errorf("send with an upper-case id answered %q, want the canonical %q", given, id1)
	}
	assigned := sendTask(t, d, task("p@x", "w@x", "two"))
	if _, err := mailbox.CanonicalUUID("task_id", assigned); err != nil {
		t.Errorf("assigned id %q is not a UUID: %v", assigned, err)
	}

	var recent mailbox.TasksResponse
	call(t, d, "GET", "/a2a/tasks/recent?limit=1", nil, &recent)
	if recent.Kind != mailbox.KindTasks || len(recent.Tasks) != 1 || recent.Tasks[0].ID != id1 {
		t.Errorf("recent tasks limit=1 = %+v, want only %s", recent, id1)
	}

	var leased mailbox.TaskOptResponse
	call(t, d, "GET", "/a2a/tasks/next?recipient=w@x", nil, &leased)
	if leased.Task == nil || leased.Task.ID != id1 || leased.Lease == nil || leased.Lease.Attempt != 1 || leased.Lease.LeaseID == "" {
		t.Fatalf("GET lease = %+v, want %s at attempt 1", leased, id1)
	}
	second := leaseTask(t, d, "w@x")
	if second.Task == nil || second.Task.ID != assigned {
		t.Fatalf("POST lease = %+v, want %s", second, assigned)
	}

	var q mailbox.QueueResponse
	call(t, d, "GET", "/a2a/queue?state=in_flight&min_lease_age_ms=0&deadline_within_ms=0&limit=10", nil, &q)
	if q.Kind != mailbox.KindQueue {
		t.Errorf("queue kind = %q", q.Kind)
	}
	// The agent filter: w@x's leases; nothing of another agent.
	call(t, d, "GET", "/a2a/queue?agent=w@x&state=in_flight", nil, &q)
	if len(q.Tasks) != 2 || q.Tasks[0].LeasedTo != "w@x" || q.Tasks[1].LeasedTo != "w@x" {
		t.Errorf("queue for w@x = %+v, want its two leases", q.Tasks)
	}
	call(t, d, "GET", "/a2a/queue?agent=someone-else@x", nil, &q)
	if len(q.Tasks) != 0 || len(q.Results) != 0 {
		t.Errorf("queue for an agent with nothing = %+v", q)
	}

	var posted mailbox.ResultPostedResponse
	call(t, d, "POST", "/a2a/results", mailbox.Result{TaskID: id1, Status: mailbox.StatusOK,
		Content: []mailbox.Content{{Type: "text", Text: "done"}, {Type: "json", Value: json.RawMessage(`{"n":1}`)}},
		LeaseID: leased.Lease.LeaseID}, &posted)
	if posted.Kind != mailbox.KindResultPosted || posted.TaskID != id1 {
		t.Errorf("post result = %+v", posted)
	}
	var results mailbox.ResultsResponse
	call(t, d, "GET", "/a2a/results/recent", nil, &results)
	if results.Kind != mailbox.KindResults || len(results.Results) != 1 || results.Results[0].TaskID != id1 {
		t.Errorf("recent results = %+v", results)
	}

	var repaired mailbox.RepairedResponse
	call(t, d, "POST", "/a2a/repair", mailbox.RepairRequest{TaskID: assigned, Reason: "worker died",
		Command: mailbox.RepairCommand{Action: mailbox.ActionForceError, LeaseID: second.Lease.LeaseID, Message: "gave up"}}, &repaired)
	if repaired.Kind != mailbox.KindRepaired || repaired.Outcome.Action != mailbox.OutcomeForcedError || repaired.Outcome.Attempt != 1 {
		t.Errorf("repair = %+v", repaired)
	}

	var drained mailbox.ResultOptResponse
	call(t, d, "GET", "/a2a/results/next?sender=p@x", nil, &drained)
	if drained.Result == nil || drained.Result.TaskID != id1 || drained.Result.Sender != "p@x" || len(drained.Result.Content) != 2 {
		t.Fatalf("GET drain = %+v, want the result of %s", drained, id1)
	}
	call(t, d, "POST", "/a2a/results/next?sender=p@x", nil, &drained)
	if drained.Result == nil || drained.Result.TaskID != assigned || drained.Result.ErrorMessage != "gave up" {
		t.Fatalf("POST drain = %+v, want the forced error of %s", drained, assigned)
	}
	call(t, d, "POST", "/a2a/results/next", nil, &drained)
	if drained.Kind != mailbox.KindResultOpt || drained.Result != nil {
		t.Errorf("drain with nothing pending = %+v, want a null result", drained)
	}

	var compacted mailbox.CompactedResponse
	call(t, d, "POST", "/a2a/compact", nil, &compacted)
	if compacted.Kind != mailbox.KindCompacted || compacted.Seq == 0 {
		t.Errorf("compact = %+v", compacted)
	}

	var health httpapi.HealthResponse
	call(t, d, "GET", "/healthz", nil, &health)
	if health.Kind != mailbox.KindHealth || health.Status != "ok" || health.LastSeq != compacted.Seq {
		t.Errorf("health = %+v, want ok at seq %d", health, compacted.Seq)
	}
}

// TestMetrics checks the Prometheus exposition: mailbox figures, a
// cumulative fsync histogram, and requests counted by route and status.
func TestMetrics(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Options{})
	for i := range 3 {
		sendTask(t, d, task("p@x", "w@x", fmt.Sprint("t", i)))
	}
	leaseTask(t, d, "w@x")
	request(t, d, "GET", "/a2a/nope", "", "", nil)
	request(t, d, "POST", "/a2a/tasks", "application/json", "{", nil)

	r := request(t, d, "GET", "/metrics", "", "", nil)
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Fatalf("metrics = %d %q", r.status, r.header.Get("Content-Type"))
	}
	text := string(r.body)
	samples := map[string]float64{}
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		samples[line[:i]] = v
	}
	want := map[string]float64{
		"mailroom_tasks_queued":          2,
		"mailroom_tasks_in_flight":       1,
		"mailroom_results_pending":       0,
		"mailroom_last_seq":              4,
		"mailroom_events_appended_total": 4,
		`mailroom_http_requests_total{route="POST /a2a/tasks",code="200"}`:      3,
		`mailroom_http_requests_total{route="POST /a2a/tasks",code="400"}`:      1,
		`mailroom_http_requests_total{route="POST /a2a/tasks/next",code="200"}`: 1,
		`mailroom_http_requests_total{route="unmatched",code="404"}`:            1,
	}
	for k, v := range want {
		if got, ok := samples[k]; !ok || got != v {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, v)
		}
	}
	for _, name := range []string{"mailroom_fsync_batches_total", "mailroom_log_write_errors_total", "mailroom_compactions_total",
		"mailroom_log_bytes", "mailroom_sse_subscribers", "mailroom_fsync_duration_seconds_sum", "mailroom_fsync_duration_seconds_count"} {
		if _, ok := samples[name]; !ok {
			t.Errorf("metrics lack %s", name)
		}
	}
	// Buckets are cumulative, end with +Inf, and +Inf equals the count.
	bucket := regexp.MustCompile(`(?m)^mailroom_fsync_duration_seconds_bucket\{le="([^"]+)"\} (\d+)$`)
	var prev float64
	var last string
	for _, m := range bucket.FindAllStringSubmatch(text, -1) {
		n, _ := strconv.ParseFloat(m[2], 64)
		if n < prev {
			t.Errorf("bucket le=%s = %v after %v: not cumulative", m[1], n, prev)
		}
		prev, last = n, m[1]
	}
	if last != "+Inf" || prev != samples["mailroom_fsync_duration_seconds_count"] || prev < 1 {
		t.Errorf("last bucket le=%s = %v, count %v: want +Inf equal to a non-zero count", last, prev, samples["mailroom_fsync_duration_seconds_count"])
	}
}
