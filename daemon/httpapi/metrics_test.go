package httpapi_test

import (
	"encoding/json"
	"testing"

	"github.com/mailroom/mailroom/daemon/daemontest"
)

// /metrics?format=json carries the same figures as the text exposition,
// written by the components that own them, for scripts and the bench.
func TestMetricsAsJSON(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Options{})
	sendTask(t, d, task("p@x", "w@x", "one"))
	sendTask(t, d, task("p@x", "w@x", "two"))
	leaseTask(t, d, "w@x")

	r := request(t, d, "GET", "/metrics?format=json", "", "", nil)
	if r.status != 200 || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("metrics as JSON = %d %q %s", r.status, r.header.Get("Content-Type"), r.body)
	}
	var m struct {
		Queued   float64 `json:"mailroom_tasks_queued"`
		InFlight float64 `json:"mailroom_tasks_in_flight"`
		Appended float64 `json:"mailroom_events_appended_total"`
		Syncs    struct {
			Count float64 `json:"count"`
			Sum   float64 `json:"sum"`
		} `json:"mailroom_fsync_duration_seconds"`
		Requests []struct {
			Labels map[string]string `json:"labels"`
			Value  float64           `json:"value"`
		} `json:"mailroom_http_requests_total"`
	}
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("%v: %s", err, r.body)
	}
	if m.Queued != 1 || m.InFlight != 1 || m.Appended != 3 || m.Syncs.Count < 1 || m.Syncs.Count > 3 || m.Syncs.Sum <= 0 {
		t.Fatalf("figures %+v, want 1 queued, 1 in flight, 3 appended in 1 to 3 syncs", m)
	}
	sends := 0.0
	for _, s := range m.Requests {
		if s.Labels["route"] == "POST /a2a/tasks" && s.Labels["code"] == "200" {
			sends = s.Value
		}
	}
	if sends != 2 {
		t.Fatalf("requests %+v, want 2 sends answered 200", m.Requests)
	}

	r = request(t, d, "GET", "/metrics?format=xml", "", "", nil)
	if e := errorBody(t, r); r.status != 400 || e.Details == nil || e.Details.Field != "format" {
		t.Fatalf("format=xml = %d %+v, want 400 naming format", r.status, e)
	}
}
