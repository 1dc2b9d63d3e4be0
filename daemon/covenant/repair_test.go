package covenant_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/mailroom/mailroom/daemon/covenant"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/mailbox"
)

// An operator repairs a stuck lease with Covenant's repair request: a
// requeue guarded by the lease it inspected in the queue, then a
// force_error whose result the sender drains. A guard naming a lease that
// is no longer current is refused and changes nothing.
func TestRepairRequeueThenForceError(t *testing.T) {
	d := daemontest.Start(t, daemontest.Options{})
	p := newPeer(t, d, "")
	const id = "a2a5eede-0000-4000-8000-0000000000b1"
	call[cvTaskQueued](p, "POST", "/a2a/tasks", covenantTask(id, "index the docs"), "a2_a_task_queued")
	call[cvTaskOpt](p, "GET", "/a2a/tasks/next", "", "a2_a_task_opt")

	q := call[cvQueue](p, "GET", "/a2a/queue?limit=25&state_filter=in_flight", "", "a2_a_queue")
	if len(q.Tasks) != 1 || q.Tasks[0].LeaseID == nil {
		t.Fatalf("queue %+v", q)
	}
	lease := *q.Tasks[0].LeaseID
	if q2 := call[cvQueue](p, "GET", "/a2a/queue?state_filter=queued", "", "a2_a_queue"); len(q2.Tasks) != 0 {
		t.Fatalf("state_filter=queued listed %+v", q2.Tasks)
	}

	before := d.State(t).Seq
	stale := `{"task_id":"` + id + `","command":{"action":"requeue","lease_id":"0badc0de-0bad-40de-8bad-c0de0badc0de","duplicate_risk":"operator_accepted"},"reason":"stale lease"}`
	status, h, b := p.do("POST", "/a2a/repair", stale)
	if e := strict[cvError](t, b); status != http.StatusOK || e.Kind != "error" || h.Get(covenant.HeaderErrorCode) != mailbox.CodeConflict {
		t.Fatalf("a repair guarded by another lease = %d %s", status, b)
	}
	if after := d.State(t).Seq; after != before {
		t.Fatalf("the refused repair appended %d events", after-before)
	}

	_, _, raw := p.do("POST", "/a2a/repair", `{"task_id":"`+id+`","command":{"action":"requeue","lease_id":"`+lease+`","duplicate_risk":"operator_accepted"},"reason":"worker died"}`)
	req := strict[cvRepaired](t, raw)
	if o := req.Outcome; req.Kind != "a2_a_repaired" || o.TaskID != id || o.Action != "requeued" || o.State != "queued" || o.Attempt != 1 || o.Result != nil {
		t.Fatalf("requeue answered %s", raw)
	}
	if ks := keys(t, raw, "outcome"); !slices.Equal(ks, []string{"action", "attempt", "state", "task_id"}) {
		t.Errorf("the requeue's outcome has keys %v, want no result", ks)
	}

	// Leased again, then given up on: the sender gets the error.
	call[cvTaskOpt](p, "GET", "/a2a/tasks/next", "", "a2_a_task_opt")
	_, _, raw = p.do("POST", "/a2a/repair", `{"task_id":"`+id+`","command":{"action":"force_error","message":"the index is gone"},"reason":"operator gave up"}`)
	forced := strict[cvRepaired](t, raw)
	o := forced.Outcome
	if forced.Kind != "a2_a_repaired" || o.Action != "forced_error" || o.State != "result_pending" || o.Attempt != 2 || o.Result == nil ||
		o.Result.Status != "error" || o.Result.ErrorMessage == nil || *o.Result.ErrorMessage != "the index is gone" || o.Result.Content == nil {
		t.Fatalf("force_error answered %s", raw)
	}
	got := call[cvResultOpt](p, "GET", "/a2a/results/next", "", "a2_a_result_opt")
	if got.Result == nil || got.Result.TaskID != id || got.Result.Status != "error" || *got.Result.ErrorMessage != "the index is gone" {
		t.Fatalf("the sender drained %+v", got.Result)
	}
}
