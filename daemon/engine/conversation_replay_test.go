package engine

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/internal/metrics"
	"github.com/mailroom/mailroom/mailbox"
)

func text(s string) []mailbox.Content { return []mailbox.Content{{Type: mailbox.ContentText, Text: s}} }

// ask leases the oldest task for recipient, which must be want, and ends
// the lease with a question.
func ask(t *testing.T, e *Engine, recipient, want, status, question string) {
	t.Helper()
	task, l := mustLease(t, e, recipient)
	if task.ID != want {
		t.Fatalf("leased %s for %s, want %s", task.ID, recipient, want)
	}
	if err := e.PostResult(context.Background(), mailbox.Result{TaskID: want, LeaseID: l.LeaseID, Status: status, Content: text(question)}); err != nil {
		t.Fatalf("asking on %s: %v", want, err)
	}
}

func mustReply(t *testing.T, e *Engine, sender, id, answer string) mailbox.ReplyOutcome {
	t.Helper()
	out, err := e.Reply(context.Background(), mailbox.Reply{TaskID: id, Sender: sender, Content: text(answer)})
	if err != nil || out.State != mailbox.TaskQueued || out.Duplicate {
		t.Fatalf("reply to %s = %+v, %v", id, out, err)
	}
	return out
}

// mustDrain drains sender's oldest result, which must be task want's.
func mustDrain(t *testing.T, e *Engine, sender, want string) *mailbox.PendingResult {
	t.Helper()
	r, err := e.Drain(context.Background(), sender)
	if err != nil || r == nil || r.TaskID != want {
		t.Fatalf("drain(%s) = %+v, %v; want task %s", sender, r, err, want)
	}
	return r
}

// turnsOf returns the roles and texts of a task's turns, "role:text".
func turnsOf(ts []mailbox.Turn) []string {
	out := []string{}
	for _, tu := range ts {
		s := tu.Role + ":"
		for _, c := range tu.Content {
			s += c.Text
		}
		out = append(out, s)
	}
	return out
}

// TestWaitingTasksSurviveRestartAndCompaction builds every stage of a
// conversation (a question drained and one not, a task replied to and
// queued again, one leased again with its turns, one finished after a
// reply, one refused) and checks that the state, and every answer that
// depends on it, is the same after a restart, after a compaction, and
// after a restart from the snapshot; then that the conversations go on
// from there: a reply to each waiting task, and a task replied to keeps
// its place ahead of tasks sent after it; and a question asked after the
// snapshot replays from the snapshot and the log after it.
func TestWaitingTasksSurviveRestartAndCompaction(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	e := open(t, dir, Options{})

	drained := mustSend(t, e, "p", "a")
	ask(t, e, "a", drained, mailbox.StatusInputRequired, "which branch?")
	mustDrain(t, e, "p", drained)
	undrained := mustSend(t, e, "p", "b")
	ask(t, e, "b", undrained, mailbox.StatusAuthRequired, "I need a token")
	replied := mustSend(t, e, "p", "c")
	later := mustSend(t, e, "p", "c") // sent after replied, leased after it
	ask(t, e, "c", replied, mailbox.StatusInputRequired, "staging or production?")
	if out := mustReply(t, e, "p", replied, "staging"); out.Turns != 2 || out.Attempt != 1 {
		t.Fatalf("reply answered %+v, want 2 turns at attempt 1", out)
	}
	released := mustSend(t, e, "p", "d")
	ask(t, e, "d", released, mailbox.StatusInputRequired, "how many?")
	mustReply(t, e, "p", released, "three")
	task, relLease := mustLease(t, e, "d")
	if task.ID != released || relLease.Attempt != 2 || !reflect.DeepEqual(turnsOf(task.Turns), []string{"worker:how many?", "sender:three"}) {
		t.Fatalf("the second lease of %s: task %s, attempt %d, turns %q", released, task.ID, relLease.Attempt, turnsOf(task.Turns))
	}
	finished := mustSend(t, e, "p", "f")
	ask(t, e, "f", finished, mailbox.StatusInputRequired, "which format?")
	mustReply(t, e, "p", finished, "csv")
	task, l := mustLease(t, e, "f")
	if err := e.PostResult(ctx, mailbox.Result{TaskID: task.ID, LeaseID: l.LeaseID, Status: mailbox.StatusOK, Content: text("exported")}); err != nil {
		t.Fatal(err)
	}
	refused := mustSend(t, e, "p", "g")
	task, l = mustLease(t, e, "g")
	if err := e.PostResult(ctx, mailbox.Result{TaskID: task.ID, LeaseID: l.LeaseID, Status: mailbox.StatusRejected, Content: []mailbox.Content{}, ErrorMessage: "not mine"}); err != nil {
		t.Fatal(err)
	}

	before := snapshotOf(e)
	check := func(stage string, e *Engine) {
		t.Helper()
		if got := snapshotOf(e); !reflect.DeepEqual(got, before) {
			t.Fatalf("%s: the state differs:\n got %+v\nwant %+v", stage, got, before)
		}
		if c := e.Status().Counts; c.Waiting != 2 || c.Queued != 2 || c.InFlight != 1 || c.ResultsPending != 3 {
			t.Errorf("%s: counts %+v; want 2 waiting, 2 queued, 1 in flight, 3 results pending (a question, a result, a refusal)", stage, c)
		}
		want := map[string]struct {
			state string
			turns []string
		}{
			drained:   {mailbox.TaskWaiting, []string{"worker:which branch?"}},
			undrained: {mailbox.TaskWaiting, []string{"worker:I need a token"}},
			replied:   {mailbox.TaskQueued, []string{"worker:staging or production?", "sender:staging"}},
			later:     {mailbox.TaskQueued, []string{}},
			released:  {mailbox.TaskInFlight, []string{"worker:how many?", "sender:three"}},
			finished:  {mailbox.TaskResultPending, []string{"worker:which format?", "sender:csv"}},
			refused:   {mailbox.TaskResultPending, []string{}},
		}
		for id, w := range want {
			r, err := e.Task(ctx, id)
			if err != nil || r.State != w.state || !reflect.DeepEqual(turnsOf(r.Task.Turns), w.turns) {
				t.Errorf("%s: task %s is %s with turns %q (%v); want %s with %q", stage, id, r.State, turnsOf(r.Task.Turns), err, w.state, w.turns)
			}
		}
		var m metrics.Writer
		e.WriteMetrics(&m)
		var exposition strings.Builder
		if err := m.WriteText(&exposition); err != nil || !strings.Contains(exposition.String(), "\nmailroom_tasks_waiting 2\n") {
			t.Errorf("%s: metrics %v, want mailroom_tasks_waiting 2 in:\n%s", stage, err, exposition.String())
		}
		all, err := e.Queue(ctx, mailbox.QueueFilter{})
		if err != nil || len(all.Results) != 3 || all.Results[0].TaskID != undrained || all.Results[0].Status != mailbox.StatusAuthRequired {
			t.Errorf("%s: pending results %+v, %v; want the undrained question first", stage, all.Results, err)
		}
		view, err := e.Queue(ctx, mailbox.QueueFilter{State: mailbox.TaskWaiting})
		if err != nil || len(view.Tasks) != 2 || view.Tasks[0].Task.ID != drained || view.Tasks[1].Task.ID != undrained ||
			view.Tasks[0].WaitingSinceMs == 0 || view.Tasks[1].WaitingSinceMs < view.Tasks[0].WaitingSinceMs {
			t.Errorf("%s: the waiting tasks listed as %+v, %v; want %s then %s, each with the time it asked", stage, view.Tasks, err, drained, undrained)
		}
		// A waiting task takes no second reply from another agent, and
		// a retried reply to the replied task changes nothing.
		seq := e.Status().LastSeq
		if out, err := e.Reply(ctx, mailbox.Reply{TaskID: replied, Sender: "p", Content: text("staging")}); err != nil || !out.Duplicate || out.Turns != 2 {
			t.Errorf("%s: the retried reply answered %+v, %v; want a duplicate", stage, out, err)
		}
		if _, err := e.Reply(ctx, mailbox.Reply{TaskID: drained, Sender: "intruder", Content: text("x")}); mailbox.ErrorCode(err) != mailbox.CodeForbidden {
			t.Errorf("%s: a reply from another sender: %v", stage, err)
		}
		if got := e.Status().LastSeq; got != seq {
			t.Errorf("%s: refused and repeated replies appended events: seq %d, was %d", stage, got, seq)
		}
	}
	check("before a restart", e)
	e.Close()
	e = open(t, dir, Options{})
	check("after a restart", e)
	if _, err := e.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	check("after a compaction", e)
	e.Close()
	e = open(t, dir, Options{})
	check("after a compaction and a restart", e)

	// The conversations go on from the snapshot: the undrained question
	// goes with its reply, the replied task is leased before the task sent
	// after it, with its turns, and the lease after a drained question's
	// reply carries both turns.
	mustReply(t, e, "p", drained, "main")
	mustReply(t, e, "p", undrained, "here is a token")
	task, l = mustLease(t, e, "c")
	if task.ID != replied || l.Attempt != 2 || len(task.Turns) != 2 {
		t.Fatalf("after the restarts, c leased %s at attempt %d with %d turns; want %s (replied, in its old place) at attempt 2 with 2 turns", task.ID, l.Attempt, len(task.Turns), replied)
	}
	task, _ = mustLease(t, e, "a")
	if task.ID != drained || !reflect.DeepEqual(turnsOf(task.Turns), []string{"worker:which branch?", "sender:main"}) {
		t.Fatalf("a leased %s with turns %q", task.ID, turnsOf(task.Turns))
	}
	mustDrain(t, e, "p", finished)
	if r := mustDrain(t, e, "p", refused); r.Status != mailbox.StatusRejected {
		t.Fatalf("the refusal drained as %+v", r)
	}
	if r, err := e.Drain(ctx, "p"); err != nil || r != nil {
		t.Fatalf("drain after the replies = %+v, %v; want nothing (the undrained question went with its reply)", r, err)
	}
	if c := e.Status().Counts; c.Waiting != 0 {
		t.Fatalf("counts %+v after every waiting task was answered", c)
	}

	// A question asked after the snapshot: the snapshot and the log after
	// it replay to the same state, the task waiting on its new question.
	if err := e.PostResult(ctx, mailbox.Result{TaskID: replied, LeaseID: l.LeaseID, Status: mailbox.StatusInputRequired, Content: text("which region?")}); err != nil {
		t.Fatal(err)
	}
	before = snapshotOf(e)
	e.Close()
	e = open(t, dir, Options{})
	if got := snapshotOf(e); !reflect.DeepEqual(got, before) {
		t.Fatalf("the snapshot and the log after it replay to another state:\n got %+v\nwant %+v", got, before)
	}
	r, err := e.Task(ctx, replied)
	if err != nil || r.State != mailbox.TaskWaiting || !reflect.DeepEqual(turnsOf(r.Task.Turns), []string{"worker:staging or production?", "sender:staging", "worker:which region?"}) {
		t.Fatalf("task %s after the last restart: %s with turns %q (%v)", replied, r.State, turnsOf(r.Task.Turns), err)
	}
}

// TestSubscriberResumesAcrossReplies resumes a subscription from before a
// question and its reply: from the live stream, from the log after a
// restart, and after a compaction, where the snapshot holds the task
// waiting or replied as it was.
func TestSubscriberResumesAcrossReplies(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	e := open(t, dir, Options{})
	id := mustSend(t, e, "p", "a")
	from := e.Status().LastSeq
	live, err := e.Subscribe(ctx, &from)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	ask(t, e, "a", id, mailbox.StatusInputRequired, "which branch?")
	mustReply(t, e, "p", id, "main")
	waiting := mustSend(t, e, "p", "b")
	ask(t, e, "b", waiting, mailbox.StatusAuthRequired, "a token?")

	wantTypes := []string{mailbox.EventTaskLeased, mailbox.EventResultPosted, mailbox.EventTaskReplied,
		mailbox.EventTaskSent, mailbox.EventTaskLeased, mailbox.EventResultPosted}
	checkEvents := func(stage string, evs []mailbox.Event) {
		t.Helper()
		for i, ev := range evs {
			if ev.Seq != from+uint64(i)+1 || ev.Type != wantTypes[i] {
				t.Fatalf("%s: event %d is seq %d %s; want seq %d %s", stage, i, ev.Seq, ev.Type, from+uint64(i)+1, wantTypes[i])
			}
		}
		r := evs[2]
		if r.TaskID != id || r.Turn == nil || r.Turn.Role != mailbox.RoleSender || r.Turn.Agent != "p" || r.Turn.Content[0].Text != "main" {
			t.Fatalf("%s: task_replied carries task %s, turn %+v", stage, r.TaskID, r.Turn)
		}
	}
	checkEvents("live", collect(t, live, len(wantTypes)))
	live.Close()

	e.Close()
	e = open(t, dir, Options{})
	replay, err := e.Subscribe(ctx, &from)
	if err != nil {
		t.Fatal(err)
	}
	checkEvents("replayed after a restart", collect(t, replay, len(wantTypes)))
	replay.Close()

	if _, err := e.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	snap, err := e.Subscribe(ctx, &from)
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	first := collect(t, snap, 1)[0]
	if first.Type != mailbox.EventSnapshot {
		t.Fatalf("resuming after a compaction got %s, want the snapshot", first.Type)
	}
	states := map[string]string{}
	for _, tr := range first.Snapshot.Tasks {
		states[tr.Task.ID] = fmt.Sprintf("%s/%d", tr.State, len(tr.Task.Turns))
	}
	if states[id] != "queued/2" || states[waiting] != "waiting/1" {
		t.Fatalf("the snapshot holds %v; want %s queued with 2 turns and %s waiting with 1", states, id, waiting)
	}
	// And the stream goes on after the snapshot with the next reply.
	mustReply(t, e, "p", waiting, "here")
	if ev := collect(t, snap, 1)[0]; ev.Type != mailbox.EventTaskReplied || ev.TaskID != waiting {
		t.Fatalf("after the snapshot: %s for %s, want task_replied for %s", ev.Type, ev.TaskID, waiting)
	}
}
