package a2a_test

import (
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailroom/mailroom/daemon/a2a"
	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/internal/sse/ssetest"
	"github.com/mailroom/mailroom/mailbox"
)

// How mailbox tasks read as A2A tasks, beyond what the SDK tests cover.

type a2aTask struct {
	ID        string `json:"id"`
	ContextID string `json:"contextId"`
	Status    struct {
		State   string `json:"state"`
		Message *struct {
			Parts []map[string]any `json:"parts"`
		} `json:"message"`
	} `json:"status"`
	Artifacts []struct {
		Parts []map[string]any `json:"parts"`
	} `json:"artifacts"`
	History  []json.RawMessage `json:"history"`
	Metadata map[string]any    `json:"metadata"`
}

// call03 makes a v0.3 JSON-RPC call and decodes the task it answers.
func call03(t *testing.T, base, method, params string) a2aTask {
	t.Helper()
	r := post(t, base, nil, `{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":`+params+`}`)
	var rep rpcReply
	var task a2aTask
	if r.status != 200 || json.Unmarshal(r.body, &rep) != nil || rep.Error != nil || json.Unmarshal(rep.Result, &task) != nil {
		t.Fatalf("%s: %d %s", method, r.status, r.body)
	}
	return task
}

func msg03(id, parts, extra string) string {
	return `{"message":{"kind":"message","role":"user","messageId":"` + id + `","parts":` + parts + extra + `},"configuration":{"blocking":false}}`
}

func TestProjectionOfResultsAndRequeues(t *testing.T) {
	it := newInterop(t, daemontest.Options{})
	base := it.register("coder@local")

	// The whole message reaches the worker; json content becomes data
	// parts, a value that is no object wrapped; partial is completed with
	// metadata saying so.
	sent := call03(t, base, "message/send", msg03("p1", `[{"kind":"text","text":"line one"},{"kind":"text","text":"line two"},{"kind":"data","data":{"ticket":42}}]`, ``))
	task, lease := it.lease("coder@local")
	if task.IntentText != "line one\nline two" || task.A2A == nil || !strings.Contains(string(task.A2A.Message), `"ticket":42`) || task.A2A.ContextID != sent.ContextID {
		t.Fatalf("the worker leased %+v", task)
	}
	if err := it.native.PostResult(it.ctx, mailbox.Result{TaskID: task.ID, LeaseID: lease.LeaseID, Status: mailbox.StatusPartial,
		Content: []mailbox.Content{{Type: mailbox.ContentJSON, Value: json.RawMessage(`{"files":3}`)}, {Type: mailbox.ContentJSON, Value: json.RawMessage(`[1,2]`)}}}); err != nil {
		t.Fatal(err)
	}
	got := call03(t, base, "tasks/get", `{"id":"`+sent.ID+`","historyLength":0}`)
	if got.Status.State != "completed" || got.Metadata["mailroom"].(map[string]any)["status"] != "partial" {
		t.Fatalf("a partial result reads %+v", got)
	}
	parts := got.Artifacts[0].Parts
	if len(parts) != 2 || parts[0]["kind"] != "data" || parts[0]["data"].(map[string]any)["files"] != float64(3) || parts[1]["data"].(map[string]any)["value"] == nil {
		t.Fatalf("json content as data parts: %+v", parts)
	}
	if len(got.History) != 0 {
		t.Fatalf("historyLength 0 still gave %d messages", len(got.History))
	}
	if got := call03(t, base, "tasks/get", `{"id":"`+sent.ID+`"}`); len(got.History) != 1 || !strings.Contains(string(got.History[0]), `"taskId":"`+sent.ID+`"`) {
		t.Fatalf("history %s, want the original message with its task id", got.History)
	}

	// A requeue is submitted again, the status message naming who and why,
	// on a stream as on a get.
	sent = call03(t, base, "message/send", msg03("p2", `[{"kind":"text","text":"again"}]`, ``))
	task, lease = it.lease("coder@local")
	if _, err := it.native.Repair(it.ctx, mailbox.RepairRequest{TaskID: task.ID, Reason: "worker restarted",
		Command: mailbox.RepairCommand{Action: mailbox.ActionRequeue, LeaseID: lease.LeaseID, DuplicateRisk: mailbox.RiskOperatorAccepted}}); err != nil {
		t.Fatal(err)
	}
	got = call03(t, base, "tasks/get", `{"id":"`+sent.ID+`"}`)
	if got.Status.State != "submitted" || got.Status.Message == nil || !strings.Contains(got.Status.Message.Parts[0]["text"].(string), "worker restarted") {
		t.Fatalf("a requeued task reads %+v", got)
	}
}

func TestIdempotencyMetadataAndSender(t *testing.T) {
	it := newInterop(t, daemontest.Options{})
	base := it.register("coder@local")
	meta := `,"metadata":{"mailroom.sender":"planner@local","mailroom":{"idempotent":true,"idempotency_key":"build-7"}}`
	first := call03(t, base, "message/send", msg03("i1", `[{"kind":"text","text":"build 7"}]`, meta))
	// Another message id, same key: the mailbox's idempotency answers it
	// with the live twin.
	second := call03(t, base, "message/send", msg03("i2", `[{"kind":"text","text":"build 7"}]`, meta))
	if second.ID != first.ID {
		t.Fatalf("an idempotent duplicate made task %s beside %s", second.ID, first.ID)
	}
	q, err := it.native.Queue(it.ctx, mailbox.QueueFilter{})
	if err != nil || len(q.Tasks) != 1 {
		t.Fatalf("queue %+v %v", q.Tasks, err)
	}
	got := q.Tasks[0].Task
	if got.Sender != "planner@local" || !got.Idempotent() || got.Idempotency.Key != "build-7" {
		t.Fatalf("the task %+v: want sent by planner@local, idempotent under build-7", got)
	}
	// A sender that is no agent id is not trusted: anonymous@a2a.
	call03(t, base, "message/send", msg03("i3", `[{"kind":"text","text":"who"}]`, `,"metadata":{"mailroom.sender":"Not An Agent"}`))
	q, _ = it.native.Queue(it.ctx, mailbox.QueueFilter{})
	if q.Tasks[1].Task.Sender != "anonymous@a2a" {
		t.Fatalf("sender %q, want anonymous@a2a", q.Tasks[1].Task.Sender)
	}
}

// A blocking send whose task does not finish in a2a_blocking_timeout is
// answered with the task as it stands.
func TestBlockingSendAnswersAtTheBound(t *testing.T) {
	it := newInterop(t, daemontest.Options{Config: func(c *config.Config) { c.A2ABlockingTimeout = 200 * time.Millisecond }})
	base := it.register("coder@local")
	r := post(t, base, map[string]string{"A2A-Version": "1.0"}, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"role":"ROLE_USER","messageId":"b1","parts":[{"text":"nobody will answer"}]}}}`)
	var rep rpcReply
	var res struct {
		Task a2aTask `json:"task"`
	}
	if r.status != 200 || json.Unmarshal(r.body, &rep) != nil || rep.Error != nil || json.Unmarshal(rep.Result, &res) != nil {
		t.Fatalf("blocking send: %d %s", r.status, r.body)
	}
	if res.Task.Status.State != "TASK_STATE_SUBMITTED" {
		t.Fatalf("after the bound the task is %+v, want it submitted as it stands", res.Task)
	}
}

// A follower cut off for falling behind (a tiny buffer, held while its
// task changes many times) resumes from where it was, and its stream
// still shows every change of its task. Other tasks' events never reach
// it: a flood of them does not make it fall behind.
func TestAFollowerCutOffResumes(t *testing.T) {
	defer a2a.SetFollowBuffer(a2a.SetFollowBuffer(2))
	it := newInterop(t, daemontest.Options{})
	base := it.register("coder@local")
	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	defer a2a.HoldFollowers(func() {
		once.Do(func() {
			close(held)
			<-release
		})
	})()
	resp := openStream(t, base, `{"jsonrpc":"2.0","id":9,"method":"message/stream","params":{"message":{"kind":"message","role":"user","messageId":"f1","parts":[{"kind":"text","text":"follow me"}]}}}`)
	defer resp.Body.Close()
	// Many writers at once, to other agents: none of it is the
	// follower's to take.
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := range 20 {
				if _, err := it.native.Send(it.ctx, mailbox.Task{Sender: "planner@local", Recipient: "other@local", IntentText: "noise " + strconv.Itoa(w*100+i)}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	cutBefore := it.metric("mailroom_sse_subscribers_cut_total")
	// The task's first change holds its follower; three more leases and
	// requeues pile up behind it, past its buffer of two.
	task, lease := it.lease("coder@local")
	<-held
	for range 3 {
		if _, err := it.native.Repair(it.ctx, mailbox.RepairRequest{TaskID: task.ID, Reason: "test: churn", Command: mailbox.RepairCommand{Action: mailbox.ActionRequeue, LeaseID: lease.LeaseID, DuplicateRisk: mailbox.RiskOperatorAccepted}}); err != nil {
			t.Fatal(err)
		}
		task, lease = it.lease("coder@local")
	}
	it.answer(task, lease, mailbox.StatusOK, "followed")
	if got := it.metric("mailroom_sse_subscribers_cut_total"); got != cutBefore+1 {
		t.Fatalf("subscribers cut: %v, then %v; want the held follower cut off once (and nothing cut by the flood)", cutBefore, got)
	}
	close(release)
	rd := ssetest.NewReader(resp.Body)
	var states []string
	for {
		b, err := rd.NextEvent()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var ev struct {
			Result struct {
				Kind   string `json:"kind"`
				Status struct {
					State string `json:"state"`
				} `json:"status"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(b.Data), &ev); err != nil {
			t.Fatalf("event %s: %v", b.Data, err)
		}
		states = append(states, ev.Result.Kind+":"+ev.Result.Status.State)
	}
	want := "task:submitted" + strings.Repeat(" status-update:working status-update:submitted", 3) + " status-update:working artifact-update: status-update:completed"
	if strings.Join(states, " ") != want {
		t.Fatalf("stream of a follower that fell behind:\n%v\nwant\n%s", strings.Join(states, " "), want)
	}
}

// metric reads one plain figure of the daemon's /metrics.
func (it *interop) metric(name string) float64 {
	it.t.Helper()
	m, err := it.native.MetricsJSON(it.ctx)
	if err != nil {
		it.t.Fatal(err)
	}
	var v float64
	if err := json.Unmarshal(m[name], &v); err != nil {
		it.t.Fatalf("metric %s = %s: %v", name, m[name], err)
	}
	return v
}

// An operator's repairs of a queued A2A task, as its caller reads them: a
// move leaves it submitted, the status message naming the new recipient,
// who and why; a cancel fails it with the error its sender gets.
func TestProjectionOfQueuedRepairs(t *testing.T) {
	it := newInterop(t, daemontest.Options{})
	base := it.register("coder@local")
	it.register("coder2@local")

	moved := call03(t, base, "message/send", msg03("q1", `[{"kind":"text","text":"move me"}]`, ``))
	if _, err := it.native.Repair(it.ctx, mailbox.RepairRequest{TaskID: moved.ID, Reason: "coder@local is gone",
		Command: mailbox.RepairCommand{Action: mailbox.ActionMove, QueuedFor: "coder@local", Recipient: "coder2@local"}}); err != nil {
		t.Fatal(err)
	}
	got := call03(t, base, "tasks/get", `{"id":"`+moved.ID+`"}`)
	if got.Status.State != "submitted" || got.Status.Message == nil {
		t.Fatalf("a moved task reads %+v", got)
	}
	if text := got.Status.Message.Parts[0]["text"].(string); !strings.Contains(text, "moved to coder2@local") || !strings.Contains(text, "coder@local is gone") {
		t.Fatalf("a moved task's status message = %q, want the new recipient and the reason", text)
	}
	if task, _ := it.lease("coder2@local"); task.ID != moved.ID {
		t.Fatalf("coder2@local leased %s, want the moved task %s", task.ID, moved.ID)
	}

	canceled := call03(t, base, "message/send", msg03("q2", `[{"kind":"text","text":"cancel me"}]`, ``))
	if _, err := it.native.Repair(it.ctx, mailbox.RepairRequest{TaskID: canceled.ID, Reason: "nobody will do it",
		Command: mailbox.RepairCommand{Action: mailbox.ActionCancel, QueuedFor: "coder@local"}}); err != nil {
		t.Fatal(err)
	}
	got = call03(t, base, "tasks/get", `{"id":"`+canceled.ID+`"}`)
	if got.Status.State != "failed" || got.Status.Message == nil || !strings.Contains(got.Status.Message.Parts[0]["text"].(string), "nobody will do it") {
		t.Fatalf("a canceled queued task reads %+v, want failed with the reason", got)
	}
}
