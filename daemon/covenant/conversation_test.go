package covenant_test

import (
	"context"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/mailbox"
)

// Covenant's client knows no conversation: its result statuses are ok,
// error and partial, and its queue states queued and in_flight. So a
// worker may not ask a Covenant task's sender a question, a refusal reads
// as an error that says so, and a native task waiting on its sender is
// left out of the dialect's queue listing rather than breaking it.
func TestConversationsStayOutOfCovenantsWire(t *testing.T) {
	d := daemontest.Start(t, daemontest.Options{})
	cv := newPeer(t, d, "")
	ctx := context.Background()
	c, err := client.New(d.URL())
	if err != nil {
		t.Fatal(err)
	}

	const asked, refused = "a2a5eede-0000-4000-8000-00000000a5c0", "a2a5eede-0000-4000-8000-00000000a5c1"
	for _, id := range []string{asked, refused} {
		call[cvTaskQueued](cv, "POST", "/a2a/tasks", covenantTask(id, "fetch papers"), "a2_a_task_queued")
		call[cvTaskOpt](cv, "GET", "/a2a/tasks/next", "", "a2_a_task_opt")
	}
	_, _, raw := cv.do("POST", "/a2a/results", `{"task_id":"`+asked+`","status":"input_required","content":[{"type":"text","text":"which year?"}]}`)
	e := strict[cvError](t, raw)
	if e.Kind != "error" || !strings.Contains(e.Message, "Covenant's dialect, whose senders cannot answer a question") {
		t.Errorf("a question on a Covenant task answered %s, want a refusal saying its sender cannot answer", raw)
	}
	// Natively too: the refusal is the mailbox's, not the dialect's.
	err = c.PostResult(ctx, mailbox.Result{TaskID: asked, Status: mailbox.StatusInputRequired, Content: []mailbox.Content{{Type: mailbox.ContentText, Text: "which year?"}}})
	if mailbox.ErrorCode(err) != mailbox.CodeInvalid || !strings.Contains(err.Error(), "status") {
		t.Errorf("the same question natively: %v, want 400 naming status", err)
	}

	call[cvResultPosted](cv, "POST", "/a2a/results", `{"task_id":"`+refused+`","status":"rejected","content":[],"error_message":"out of scope"}`, "a2_a_result_posted")
	got := call[cvResultOpt](cv, "GET", "/a2a/results/next", "", "a2_a_result_opt")
	if got.Result == nil || got.Result.Status != "error" || got.Result.ErrorMessage == nil || *got.Result.ErrorMessage != "rejected: out of scope" {
		t.Errorf("a rejected result drained through the dialect = %+v, want status error saying rejected", got.Result)
	}

	// A native task waiting on its sender: absent from the dialect's queue.
	sent, err := c.Send(ctx, mailbox.Task{Sender: "planner@local", Recipient: "coder@local", IntentText: "migrate"})
	if err != nil {
		t.Fatal(err)
	}
	_, lease, err := c.Lease(ctx, "coder@local")
	if err != nil || lease == nil {
		t.Fatalf("lease: %v", err)
	}
	if err := c.PostResult(ctx, mailbox.Result{TaskID: sent.TaskID, Status: mailbox.StatusInputRequired, LeaseID: lease.LeaseID,
		Content: []mailbox.Content{{Type: mailbox.ContentText, Text: "which database?"}}}); err != nil {
		t.Fatal(err)
	}
	q := call[cvQueue](cv, "GET", "/a2a/queue", "", "a2_a_queue")
	for _, e := range q.Tasks {
		if e.Task.ID == sent.TaskID {
			t.Errorf("the dialect's queue lists the waiting task %+v", e)
		}
	}
}
