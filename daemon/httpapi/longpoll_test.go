package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/internal/testlog"
	"github.com/mailroom/mailroom/mailbox"
)

// Long polls: a lease or drain with wait_ms waits for work, in arrival
// order per recipient, and is woken by a send, a requeue or a result; a
// waiter whose client hung up takes nothing; shutdown answers them all.

// poll starts a long-poll request in the background; its answer arrives
// on the channel (status and body).
func poll(t *testing.T, ctx context.Context, d *daemontest.Daemon, path string) <-chan reply {
	t.Helper()
	out := make(chan reply, 1)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.URL()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			out <- reply{status: -1, body: []byte(err.Error())}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		out <- reply{status: resp.StatusCode, body: b}
	}()
	return out
}

// waitForWaiters waits until n long polls wait in the daemon (the
// daemon's own gauge, so no sleep stands in for it).
func waitForWaiters(t *testing.T, d *daemontest.Daemon, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second) // a watchdog, not synchronisation
	for d.Metric(t, "mailroom_long_polls_waiting") != float64(n) {
		if time.Now().After(deadline) {
			t.Fatalf("%v long polls waiting, want %d", d.Metric(t, "mailroom_long_polls_waiting"), n)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func sendTo(t *testing.T, d *daemontest.Daemon, recipient, intent string) string {
	t.Helper()
	var out mailbox.TaskQueuedResponse
	call(t, d, "POST", "/a2a/tasks", mailbox.Task{Sender: "planner@local", Recipient: recipient, IntentText: intent}, &out)
	return out.TaskID
}

func leased(t *testing.T, r reply) (*mailbox.Task, *mailbox.Lease) {
	t.Helper()
	var out mailbox.TaskOptResponse
	if r.status != 200 || json.Unmarshal(r.body, &out) != nil || out.Kind != mailbox.KindTaskOpt {
		t.Fatalf("lease answered %d %s", r.status, r.body)
	}
	return out.Task, out.Lease
}

func TestLongPollWokenBySendAndRequeue(t *testing.T) {
	d := daemontest.Start(t, daemontest.Options{})
	ctx := t.Context()
	waiting := poll(t, ctx, d, "/a2a/tasks/next?recipient=coder@local&wait_ms=10000")
	waitForWaiters(t, d, 1)
	id := sendTo(t, d, "coder@local", "woken by a send")
	task, lease := leased(t, <-waiting)
	if task == nil || task.ID != id || lease.Attempt != 1 {
		t.Fatalf("the waiter got %+v %+v, want task %s", task, lease, id)
	}
	waitForWaiters(t, d, 0)

	// A requeue wakes a waiter too, and it gets the task again.
	waiting = poll(t, ctx, d, "/a2a/tasks/next?recipient=coder@local&wait_ms=10000")
	waitForWaiters(t, d, 1)
	call(t, d, "POST", "/a2a/repair", mailbox.RepairRequest{TaskID: id, Reason: "worker died",
		Command: mailbox.RepairCommand{Action: mailbox.ActionRequeue, LeaseID: lease.LeaseID, DuplicateRisk: mailbox.RiskOperatorAccepted}}, nil)
	task, lease = leased(t, <-waiting)
	if task == nil || task.ID != id || lease.Attempt != 2 {
		t.Fatalf("after the requeue the waiter got %+v %+v, want task %s at attempt 2", task, lease, id)
	}

	// A wait that ends with nothing answers nothing.
	r := request(t, d, "POST", "/a2a/tasks/next?recipient=coder@local&wait_ms=30&max=5", "", "", nil)
	var list mailbox.TasksLeasedResponse
	if r.status != 200 || json.Unmarshal(r.body, &list) != nil || list.Kind != mailbox.KindTasksLeased || list.Leases == nil || len(list.Leases) != 0 {
		t.Fatalf("an empty long poll answered %d %s, want an empty list", r.status, r.body)
	}
}

func TestLongPollWaitersAreServedInArrivalOrder(t *testing.T) {
	d := daemontest.Start(t, daemontest.Options{})
	var waiters []<-chan reply
	for i := range 3 {
		waiters = append(waiters, poll(t, t.Context(), d, "/a2a/tasks/next?recipient=coder@local&wait_ms=10000"))
		waitForWaiters(t, d, i+1)
	}
	for i, w := range waiters {
		id := sendTo(t, d, "coder@local", fmt.Sprintf("task %d", i))
		if task, _ := leased(t, <-w); task == nil || task.ID != id {
			t.Fatalf("waiter %d got %+v, want task %d (%s): waiters are served first come, first served", i, task, i, id)
		}
	}
}

func TestLongPollLeasesSeveralAndDrains(t *testing.T) {
	d := daemontest.Start(t, daemontest.Options{})
	var ids []string
	for i := range 3 {
		ids = append(ids, sendTo(t, d, "coder@local", fmt.Sprintf("task %d", i)))
	}
	var list mailbox.TasksLeasedResponse
	call(t, d, "POST", "/a2a/tasks/next?recipient=coder@local&max=2", nil, &list)
	if len(list.Leases) != 2 || list.Leases[0].Task.ID != ids[0] || list.Leases[1].Task.ID != ids[1] || list.Leases[0].Lease.LeaseID == list.Leases[1].Lease.LeaseID {
		t.Fatalf("max=2 leased %+v, want the two oldest under two leases", list.Leases)
	}

	// A drain waiting for the planner's results is woken by a result.
	drain := poll(t, t.Context(), d, "/a2a/results/next?sender=planner@local&wait_ms=10000&max=10")
	waitForWaiters(t, d, 1)
	l := list.Leases[0]
	call(t, d, "POST", "/a2a/results", mailbox.Result{TaskID: l.Task.ID, LeaseID: l.Lease.LeaseID, Status: mailbox.StatusOK, Content: []mailbox.Content{}}, nil)
	r := <-drain
	var drained mailbox.ResultsDrainedResponse
	if r.status != 200 || json.Unmarshal(r.body, &drained) != nil || len(drained.Results) != 1 || drained.Results[0].TaskID != l.Task.ID {
		t.Fatalf("the waiting drain answered %d %s", r.status, r.body)
	}
}

// A client that hangs up while waiting takes nothing: the task it would
// have been woken for is still there for the next caller.
func TestLongPollOfAGoneClientTakesNothing(t *testing.T) {
	d := daemontest.Start(t, daemontest.Options{})
	ctx, cancel := context.WithCancel(t.Context())
	gone := poll(t, ctx, d, "/a2a/tasks/next?recipient=coder@local&wait_ms=10000")
	waitForWaiters(t, d, 1)
	cancel()
	<-gone
	waitForWaiters(t, d, 0)
	id := sendTo(t, d, "coder@local", "for whoever is still there")
	task, lease := leased(t, request(t, d, "POST", "/a2a/tasks/next?recipient=coder@local", "", "", nil))
	if task == nil || task.ID != id || lease.Attempt != 1 {
		t.Fatalf("after the waiter left, a lease got %+v %+v, want task %s at its first attempt", task, lease, id)
	}
}

// A client that hangs up on its long poll is not a failure of the daemon:
// nothing is logged as an error, and /metrics counts the request as
// closed by its client (499), not as a 5xx.
func TestAGoneLongPollIsNotAnError(t *testing.T) {
	logs := &testlog.Buffer{}
	d := daemontest.Start(t, daemontest.Options{Logger: logs.Logger()})
	for _, path := range []string{"/a2a/tasks/next?recipient=coder@local&wait_ms=10000", "/a2a/results/next?sender=planner@local&wait_ms=10000"} {
		ctx, cancel := context.WithCancel(t.Context())
		gone := poll(t, ctx, d, path)
		waitForWaiters(t, d, 1)
		cancel()
		<-gone
		waitForWaiters(t, d, 0)
	}
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("a client that hung up was logged as an error:\n%s", logs.String())
	}
	text := string(request(t, d, "GET", "/metrics", "", "", nil).body)
	for _, route := range []string{"POST /a2a/tasks/next", "POST /a2a/results/next"} {
		if want := `mailroom_http_requests_total{route="` + route + `",code="499"} 1`; !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s:\n%s", want, grepLines(text, "mailroom_http_requests_total"))
		}
	}
	if strings.Contains(text, `code="500"`) {
		t.Errorf("a gone client was counted as a 500:\n%s", grepLines(text, "mailroom_http_requests_total"))
	}
}

func grepLines(text, prefix string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// Shutdown answers every waiter at once, with nothing.
func TestShutdownAnswersLongPolls(t *testing.T) {
	d := daemontest.Start(t, daemontest.Options{})
	a := poll(t, t.Context(), d, "/a2a/tasks/next?recipient=coder@local&wait_ms=20000")
	b := poll(t, t.Context(), d, "/a2a/results/next?sender=planner@local&wait_ms=20000&max=3")
	waitForWaiters(t, d, 2)
	start := time.Now()
	d.Stop()
	for _, w := range []<-chan reply{a, b} {
		r := <-w
		if r.status != 200 {
			t.Fatalf("a long poll at shutdown answered %d %s, want 200 with nothing", r.status, r.body)
		}
	}
	if waited := time.Since(start); waited > 15*time.Second {
		t.Fatalf("shutdown held the long polls for %v", waited)
	}
}
