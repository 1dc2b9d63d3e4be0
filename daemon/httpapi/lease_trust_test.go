package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/mailbox"
)

// Two workers with the same rights, one of them also an operator, a
// sender and an admin: the boundary between workers is the lease.
var trustTokens = map[string]auth.Token{
	"root":          {Principal: "root", Caps: []string{auth.CapAdmin}},
	"planner@local": {Principal: "planner@local", Caps: []string{"a2a.send.*", auth.CapDrain, auth.CapRead}},
	"w1@local":      {Principal: "w1@local", Caps: []string{auth.CapRecv, "a2a.respond.*"}},
	"w2@local":      {Principal: "w2@local", Caps: []string{auth.CapRecv, "a2a.respond.*"}},
	"w3@local":      {Principal: "w3@local", Caps: []string{auth.CapRecv, "a2a.respond.*", auth.CapRequeue}},
}

func startTrust(t *testing.T) *authed {
	t.Helper()
	return startWithTokens(t, trustTokens)
}

// leasedBy sends a task from planner to worker and leases it as worker.
func (a *authed) leasedBy(t *testing.T, worker string) (taskID, leaseID string) {
	t.Helper()
	ctx := context.Background()
	out, err := a.client(t, "planner@local").Send(ctx, mailbox.Task{Sender: "planner@local", Recipient: worker, IntentText: "x"})
	if err != nil {
		t.Fatal(err)
	}
	task, lease, err := a.client(t, worker).Lease(ctx, "")
	if err != nil || task == nil || task.ID != out.TaskID {
		t.Fatalf("lease as %s = %v, %v; want %s", worker, task, err, out.TaskID)
	}
	return task.ID, lease.LeaseID
}

// seq is the mailbox's last seq, read with the admin's token.
func (a *authed) seq(t *testing.T) uint64 {
	t.Helper()
	st, err := a.client(t, "root").Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st.LastSeq
}

func (a *authed) as(t *testing.T, who, method, path, body string) (int, string) {
	t.Helper()
	return a.do(t, method, path, body, "Bearer "+a.tokens[who])
}

func TestOnlyTheLeaseHolderPostsItsResult(t *testing.T) {
	t.Parallel()
	a := startTrust(t)
	id, lease := a.leasedBy(t, "w2@local")
	wrong := "6f9619ff-8b86-4d11-b42d-00c04fc964ff"
	state := a.seq(t)

	// w1, with every right a worker has, cannot end w2's lease: not with
	// a made-up lease id (409, which does not say what the lease is), not
	// without one (403), not in a batch.
	status, body := a.as(t, "w1@local", "POST", "/a2a/results", fmt.Sprintf(`{"task_id":%q,"status":"ok","content":[],"lease_id":%q}`, id, wrong))
	if status != http.StatusConflict || strings.Contains(body, lease) || strings.Contains(body, "w2@local") || !strings.Contains(body, "not the task's current lease") {
		t.Errorf("w1 with a wrong lease id = %d %s; want 409 without w2's lease or name", status, body)
	}
	status, body = a.as(t, "w1@local", "POST", "/a2a/results", fmt.Sprintf(`{"task_id":%q,"status":"ok","content":[{"type":"text","text":"forged"}]}`, id))
	if status != http.StatusForbidden || strings.Contains(body, lease) || strings.Contains(body, "w2@local") || !strings.Contains(body, "only the lease's holder") {
		t.Errorf("w1 without a lease id = %d %s; want 403 without w2's lease or name", status, body)
	}
	status, body = a.as(t, "w1@local", "POST", "/a2a/results/batch", fmt.Sprintf(`{"results":[{"task_id":%q,"status":"ok","content":[]},{"task_id":%q,"status":"ok","content":[],"lease_id":%q}]}`, id, id, wrong))
	if status != http.StatusOK || strings.Contains(body, lease) || strings.Contains(body, "w2@local") ||
		!strings.Contains(body, `"index":0,"kind":"error","code":"forbidden"`) || !strings.Contains(body, `"index":1,"kind":"error","code":"conflict"`) {
		t.Errorf("w1's batch = %d %s; want each item refused, without w2's lease or name", status, body)
	}
	if got := a.seq(t); got != state {
		t.Fatalf("refused results changed the mailbox: seq %d -> %d", state, got)
	}
	if r, err := a.client(t, "planner@local").Drain(context.Background(), ""); err != nil || r != nil {
		t.Fatalf("the sender drained %+v, %v after the forgeries; want nothing", r, err)
	}

	// The holder hears the whole conflict, and so does one who may repair
	// the lease; the holder's own result is taken.
	status, body = a.as(t, "w2@local", "POST", "/a2a/results", fmt.Sprintf(`{"task_id":%q,"status":"ok","content":[],"lease_id":%q}`, id, wrong))
	if status != http.StatusConflict || !strings.Contains(body, lease) || !strings.Contains(body, `"leased_to":"w2@local"`) {
		t.Errorf("the holder with a wrong lease id = %d %s; want 409 naming its lease", status, body)
	}
	status, body = a.as(t, "w3@local", "POST", "/a2a/results", fmt.Sprintf(`{"task_id":%q,"status":"ok","content":[],"lease_id":%q}`, id, wrong))
	if status != http.StatusConflict || !strings.Contains(body, lease) || !strings.Contains(body, `"leased_to":"w2@local"`) {
		t.Errorf("a requeue-capable worker with a wrong lease id = %d %s; want 409 naming the lease", status, body)
	}
	status, body = a.as(t, "w3@local", "POST", "/a2a/results", fmt.Sprintf(`{"task_id":%q,"status":"ok","content":[]}`, id))
	if status != http.StatusForbidden {
		t.Errorf("a requeue-capable worker posting for w2's lease = %d %s; want 403 (repairs are the way to end another's lease)", status, body)
	}
	status, body = a.as(t, "w2@local", "POST", "/a2a/results", fmt.Sprintf(`{"task_id":%q,"status":"ok","content":[{"type":"text","text":"real"}]}`, id))
	if status != http.StatusOK {
		t.Fatalf("the holder's result = %d %s", status, body)
	}
	r, err := a.client(t, "planner@local").Drain(context.Background(), "")
	if err != nil || r == nil || r.TaskID != id || r.Content[0].Text != "real" || r.LeaseID != lease {
		t.Fatalf("the sender drained %+v, %v; want the holder's result", r, err)
	}

	// A repair's conflict names the lease: only those who may repair get
	// that far, and they need it to look again.
	id, lease = a.leasedBy(t, "w2@local")
	status, body = a.as(t, "w3@local", "POST", "/a2a/repair", fmt.Sprintf(`{"task_id":%q,"reason":"stuck","command":{"action":"requeue","lease_id":%q,"duplicate_risk":"operator_accepted"}}`, id, wrong))
	if status != http.StatusConflict || !strings.Contains(body, lease) || !strings.Contains(body, `"leased_to":"w2@local"`) {
		t.Errorf("a repair under a stale lease id = %d %s; want 409 naming the current lease", status, body)
	}
	status, body = a.as(t, "w1@local", "POST", "/a2a/repair", fmt.Sprintf(`{"task_id":%q,"reason":"stuck","command":{"action":"requeue","lease_id":%q,"duplicate_risk":"operator_accepted"}}`, id, wrong))
	if status != http.StatusForbidden || strings.Contains(body, lease) {
		t.Errorf("a repair by a worker without the right = %d %s; want 403 without the lease", status, body)
	}

	// An admin may end any lease.
	id, _ = a.leasedBy(t, "w2@local")
	if status, body := a.as(t, "root", "POST", "/a2a/results", fmt.Sprintf(`{"task_id":%q,"status":"error","content":[],"error_message":"ended by root"}`, id)); status != http.StatusOK {
		t.Fatalf("admin's result = %d %s", status, body)
	}
}

func TestAResultForAQueuedTaskIsALeaseAndAResult(t *testing.T) {
	t.Parallel()
	a := startTrust(t)
	ctx := context.Background()
	c := a.client(t, "planner@local")
	out, err := c.Send(ctx, mailbox.Task{Sender: "planner@local", Recipient: "w2@local", IntentText: "done before leased"})
	if err != nil {
		t.Fatal(err)
	}
	sub, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	events := a.client(t, "root").Subscribe(sub, a.seq(t), nil)

	// Another worker may not; a guard naming a lease the task never had is
	// the conflict it always was.
	body := fmt.Sprintf(`{"task_id":%q,"status":"ok","content":[]}`, out.TaskID)
	if status, got := a.as(t, "w1@local", "POST", "/a2a/results", body); status != http.StatusForbidden || !strings.Contains(got, "only its recipient") {
		t.Errorf("another worker's result for a queued task = %d %s; want 403", status, got)
	}
	guarded := fmt.Sprintf(`{"task_id":%q,"status":"ok","content":[],"lease_id":"6f9619ff-8b86-4d11-b42d-00c04fc964ff"}`, out.TaskID)
	if status, got := a.as(t, "w2@local", "POST", "/a2a/results", guarded); status != http.StatusConflict || !strings.Contains(got, "queued and not leased") {
		t.Errorf("a guarded result for a queued task = %d %s; want 409", status, got)
	}
	if status, got := a.as(t, "w2@local", "POST", "/a2a/results", body); status != http.StatusOK {
		t.Fatalf("the recipient's result for its queued task = %d %s", status, got)
	}

	// The log holds a lease and its result, one unit, and the stream
	// shows both.
	var leased mailbox.Event
	for _, want := range []string{mailbox.EventTaskLeased, mailbox.EventResultPosted} {
		select {
		case ev := <-events:
			if ev.Type == mailbox.EventSnapshot {
				ev = <-events
			}
			if ev.Type != want || ev.TaskID != out.TaskID {
				t.Fatalf("event %d is %s for %s; want %s for %s", ev.Seq, ev.Type, ev.TaskID, want, out.TaskID)
			}
			if want == mailbox.EventTaskLeased {
				leased = ev
				if ev.Unit != 2 || ev.LeasedTo != "w2@local" || ev.Attempt != 1 || ev.LeaseID == "" {
					t.Fatalf("the lease event = %+v; want the first of a unit of 2, held by w2@local, attempt 1", ev)
				}
			} else if ev.LeaseID != leased.LeaseID || ev.Result == nil || ev.Result.LeaseID != leased.LeaseID {
				t.Fatalf("the result event = %+v; want it under lease %s", ev, leased.LeaseID)
			}
		case <-sub.Done():
			t.Fatalf("no %s event", want)
		}
	}
	r, err := c.Drain(ctx, "")
	if err != nil || r == nil || r.TaskID != out.TaskID || r.Recipient != "w2@local" {
		t.Fatalf("drain = %+v, %v", r, err)
	}

	// It survives a restart.
	a.d.Restart()
	v, err := a.client(t, "root").Queue(ctx, mailbox.QueueFilter{})
	if err != nil || len(v.Tasks) != 0 || len(v.Results) != 0 {
		t.Fatalf("after a restart the queue is %+v, %v; want the task resolved and drained", v, err)
	}
}

// Without tokens the daemon trusts its loopback callers, as before: any
// caller may post a result without a guard, and a result for a queued task
// from anyone is a lease and a result.
func TestWithoutTokensResultsAreTrusted(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Options{})
	ctx := context.Background()
	c, err := client.New(d.URL())
	if err != nil {
		t.Fatal(err)
	}
	queued, _ := c.Send(ctx, mailbox.Task{Sender: "p@local", Recipient: "w@local", IntentText: "q"})
	if err := c.PostResult(ctx, mailbox.Result{TaskID: queued.TaskID, Status: mailbox.StatusOK}); err != nil {
		t.Fatalf("result for a queued task without tokens: %v", err)
	}
	leased, _ := c.Send(ctx, mailbox.Task{Sender: "p@local", Recipient: "w@local", IntentText: "l"})
	if task, _, err := c.Lease(ctx, "w@local"); err != nil || task == nil || task.ID != leased.TaskID {
		t.Fatalf("lease = %v, %v", task, err)
	}
	err = c.PostResult(ctx, mailbox.Result{TaskID: leased.TaskID, Status: mailbox.StatusOK, LeaseID: "6f9619ff-8b86-4d11-b42d-00c04fc964ff"})
	if e, ok := err.(*mailbox.Error); !ok || e.Code != mailbox.CodeConflict || e.Details == nil || e.Details.LeasedTo != "w@local" || e.Details.ActualLeaseID == "" {
		t.Fatalf("a wrong lease id without tokens = %#v; want 409 naming the lease and its holder", err)
	}
	if err := c.PostResult(ctx, mailbox.Result{TaskID: leased.TaskID, Status: mailbox.StatusOK}); err != nil {
		t.Fatalf("an unguarded result without tokens: %v", err)
	}
}
