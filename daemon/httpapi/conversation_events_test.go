package httpapi_test

import (
	"strconv"
	"testing"

	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/mailbox"
)

// TestEventStreamResumesAcrossReplies resumes GET /a2a/events from before
// a worker's question and its sender's reply: once from the running
// daemon, once from a restarted one replaying its log. Both streams carry
// the question and task_replied with the sender's turn, and /metrics
// counts the task waiting and then not.
func TestEventStreamResumesAcrossReplies(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Options{})
	id := sendTask(t, d, task("p@x", "w@x", "deploy"))
	from := d.State(t).Seq

	l := leaseTask(t, d, "w@x")
	call(t, d, "POST", "/a2a/results", mailbox.Result{TaskID: id, LeaseID: l.Lease.LeaseID, Status: mailbox.StatusInputRequired,
		Content: []mailbox.Content{{Type: mailbox.ContentText, Text: "staging or production?"}}}, nil)
	if got := d.Metric(t, "mailroom_tasks_waiting"); got != 1 {
		t.Fatalf("mailroom_tasks_waiting = %v with the task waiting, want 1", got)
	}
	var out mailbox.TaskRepliedResponse
	call(t, d, "POST", "/a2a/tasks/"+id+"/reply", mailbox.Reply{Sender: "p@x", Content: []mailbox.Content{{Type: mailbox.ContentText, Text: "staging"}}}, &out)
	if out.Kind != mailbox.KindTaskReplied || out.State != mailbox.TaskQueued || out.Turns != 2 {
		t.Fatalf("reply answered %+v", out)
	}
	if got := d.Metric(t, "mailroom_tasks_waiting"); got != 0 {
		t.Fatalf("mailroom_tasks_waiting = %v after the reply, want 0", got)
	}

	read := func(stage string) {
		t.Helper()
		s := openStream(t, testContext(t), d, "", map[string]string{"Last-Event-ID": strconv.FormatUint(from, 10)})
		want := []string{mailbox.EventTaskLeased, mailbox.EventResultPosted, mailbox.EventTaskReplied}
		for i, typ := range want {
			ev := s.nextEvent(t)
			if ev.Seq != from+uint64(i)+1 || ev.Type != typ || ev.TaskID != id {
				t.Fatalf("%s: event %d = seq %d %s for %s; want seq %d %s for %s", stage, i, ev.Seq, ev.Type, ev.TaskID, from+uint64(i)+1, typ, id)
			}
			switch typ {
			case mailbox.EventResultPosted:
				if ev.Result == nil || ev.Result.Status != mailbox.StatusInputRequired {
					t.Errorf("%s: the question carries %+v", stage, ev.Result)
				}
			case mailbox.EventTaskReplied:
				if ev.Turn == nil || ev.Turn.Role != mailbox.RoleSender || ev.Turn.Agent != "p@x" || len(ev.Turn.Content) != 1 || ev.Turn.Content[0].Text != "staging" {
					t.Errorf("%s: task_replied carries turn %+v", stage, ev.Turn)
				}
			}
		}
	}
	read("live")
	d.Restart()
	read("after a restart")
}
