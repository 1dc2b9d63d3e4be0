package remote_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/daemon/a2a/remote"
	"github.com/mailroom/mailroom/daemon/a2a/remote/clienttest"
	"github.com/mailroom/mailroom/daemon/a2a/wire"
	"github.com/mailroom/mailroom/internal/remotetest"
	"github.com/mailroom/mailroom/mailbox"
)

// The outbound client against a real a2a-go v0.3.3 server (JSON-RPC v0.3)
// whose executor acts on the first word of the message it gets
// (remotetest.GoExecutor).

type goRemote = remotetest.GoRemote

func startGoRemote(t *testing.T, streaming bool) *goRemote {
	t.Helper()
	return remotetest.StartGoRemote(t, "Go Coder", streaming)
}

func TestRemoteGoSendCompletesAndFails(t *testing.T) {
	ctx := clienttest.Ctx(t)
	g := startGoRemote(t, true)
	r, card := clienttest.Resolve(t, ctx, remote.Spec{URL: g.Srv.URL}, remote.Auth{})
	if card.Binding != mailbox.BindingJSONRPC03 || card.Endpoint != g.Srv.URL+"/invoke" || card.Name != "Go Coder" || !card.Streaming ||
		len(card.Skills) != 1 || card.Skills[0].Examples[0] != "fix the bug" || card.Skills[0].Tags[0] != "go" {
		t.Fatalf("card %+v", card)
	}

	// A native task: its intent as text, its context as data, its id as
	// the messageId; the echo comes back as the result.
	task := clienttest.NativeTask("echo this", `{"repo":"mailroom","n":3}`)
	sent, err := r.Send(ctx, clienttest.Outbound(t, task, nil), true)
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	if sent.State != wire.StateCompleted || sent.ID == "" || sent.ContextID == "" {
		t.Fatalf("blocking send answered %+v, want a completed task with ids", sent)
	}
	seen := g.Executor().Messages()
	if len(seen) != 1 || seen[0].ID != task.ID {
		t.Fatalf("the remote got %+v, want one message with id %s", seen, task.ID)
	}
	res := clienttest.Outcome(t, sent)
	if res.Status != mailbox.StatusOK || clienttest.ContentText(res) != `echo this|{"n":3,"repo":"mailroom"}` && clienttest.ContentText(res) != `echo this|{"repo":"mailroom","n":3}` {
		t.Fatalf("outcome %+v (%s), want ok with the text and the context", res, clienttest.ContentText(res))
	}

	// A remote may answer with a message: the work is done.
	said, err := r.Send(ctx, clienttest.Outbound(t, clienttest.NativeTask("say hello", ""), nil), true)
	if err != nil {
		t.Fatalf("Send(say): %v", err)
	}
	if res := clienttest.Outcome(t, said); !said.Direct || res.Status != mailbox.StatusOK || clienttest.ContentText(res) != "hello yourself" {
		t.Fatalf("a message answer read as %+v (%+v)", said, res)
	}

	// Failed and rejected tasks carry the remote's words.
	for _, c := range []struct{ intent, status, msg string }{
		{"fail now", mailbox.StatusError, "the disk is full"},
		{"reject this", mailbox.StatusRejected, "not my kind of work"},
	} {
		got, err := r.Send(ctx, clienttest.Outbound(t, clienttest.NativeTask(c.intent, ""), nil), true)
		if err != nil {
			t.Fatalf("Send(%s): %v", c.intent, err)
		}
		res := clienttest.Outcome(t, got)
		if res.Status != c.status || res.ErrorMessage != c.msg {
			t.Errorf("%s: outcome %+v, want %s %q", c.intent, res, c.status, c.msg)
		}
	}
}

func TestRemoteGoAsksThenCompletesOnTheAnswer(t *testing.T) {
	ctx := clienttest.Ctx(t)
	g := startGoRemote(t, true)
	r, _ := clienttest.Resolve(t, ctx, remote.Spec{URL: g.Srv.URL}, remote.Auth{})
	task := clienttest.NativeTask("ask me", "")
	got, err := r.Send(ctx, clienttest.Outbound(t, task, nil), true)
	if err != nil {
		t.Fatal(err)
	}
	q := clienttest.Outcome(t, got)
	if got.State != wire.StateInputRequired || q.Status != mailbox.StatusInputRequired || clienttest.ContentText(q) != "which database?" {
		t.Fatalf("send answered %+v, outcome %+v; want the remote's question", got, q)
	}
	// The sender answers: the task holds the question and the answer as
	// turns; the continuation names the remote's task.
	task.Turns = []mailbox.Turn{
		{Seq: 7, Role: mailbox.RoleWorker, Agent: "coder@local", Status: q.Status, Content: q.Content},
		{Seq: 9, Role: mailbox.RoleSender, Agent: "planner@local", Content: []mailbox.Content{{Type: mailbox.ContentText, Text: "staging"}}},
	}
	ref := &remote.Ref{TaskID: got.ID, ContextID: got.ContextID}
	cont := clienttest.Outbound(t, task, ref)
	if cont.MessageID == task.ID || cont.TaskID != got.ID {
		t.Fatalf("continuation %+v: want a new message id and the remote's task id", cont)
	}
	if again := clienttest.Outbound(t, task, ref); again.MessageID != cont.MessageID {
		t.Fatalf("the same turn made message ids %s and %s; want one", cont.MessageID, again.MessageID)
	}
	done, err := r.Send(ctx, cont, true)
	if err != nil {
		t.Fatalf("Send(continuation): %v", err)
	}
	res := clienttest.Outcome(t, done)
	if done.ID != got.ID || res.Status != mailbox.StatusOK || clienttest.ContentText(res) != "using staging" {
		t.Fatalf("continuation answered %+v (%+v), want task %s completed using the answer", done, res, got.ID)
	}
	seen := g.Executor().Messages()
	if last := seen[len(seen)-1]; string(last.TaskID) != got.ID || last.ContextID != got.ContextID || last.ID != cont.MessageID {
		t.Fatalf("the remote got the continuation %+v", last)
	}
	// With nothing new to say, a continuation is refused.
	task.Turns = task.Turns[:1]
	if _, err := remote.MessageFor(task, ref); err == nil {
		t.Fatal("a continuation without a new answer was built")
	}
}

func TestRemoteGoStreams(t *testing.T) {
	ctx := clienttest.Ctx(t)
	g := startGoRemote(t, true)
	r, _ := clienttest.Resolve(t, ctx, remote.Spec{URL: g.Srv.URL}, remote.Auth{})
	s, err := r.Stream(ctx, clienttest.Outbound(t, clienttest.NativeTask("stream please", ""), nil))
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	ups := clienttest.Collect(t, s)
	if len(ups) < 4 {
		t.Fatalf("stream gave %+v, want several updates", ups)
	}
	var working bool
	for _, u := range ups {
		working = working || u.Task.State == wire.StateWorking
	}
	last := ups[len(ups)-1]
	res := clienttest.Outcome(t, last.Task)
	if !working || !last.Final || last.Task.State != wire.StateCompleted || clienttest.ContentText(res) != "one|two|three" || len(last.Task.Artifacts) != 1 {
		t.Fatalf("stream ended on %+v (working seen: %v), want completed with one artifact one|two|three", last, working)
	}
}

func TestRemoteGoSlowPolledAndCanceled(t *testing.T) {
	ctx := clienttest.Ctx(t)
	g := startGoRemote(t, true)
	r, _ := clienttest.Resolve(t, ctx, remote.Spec{URL: g.Srv.URL}, remote.Auth{})

	sent, err := r.Send(ctx, clienttest.Outbound(t, clienttest.NativeTask("slow work", ""), nil), false)
	if err != nil {
		t.Fatal(err)
	}
	if sent.Terminal() {
		t.Fatalf("a non-blocking send of slow work answered %+v", sent)
	}
	got, err := r.Get(ctx, sent.ID)
	if err != nil || got.Terminal() {
		t.Fatalf("Get while the work goes on: %+v, %v", got, err)
	}
	if _, final := got.Outcome(); final {
		t.Fatalf("the outcome of %s task is final", got.State)
	}
	close(g.Executor().Release)
	done := clienttest.Poll(t, ctx, r, sent.ID)
	if res := clienttest.Outcome(t, done); res.Status != mailbox.StatusOK || clienttest.ContentText(res) != "slowly done" {
		t.Fatalf("slow task ended %+v", done)
	}

	hung, err := r.Send(ctx, clienttest.Outbound(t, clienttest.NativeTask("hang on", ""), nil), false)
	if err != nil {
		t.Fatal(err)
	}
	canceled, err := r.Cancel(ctx, hung.ID)
	if err != nil || canceled.State != wire.StateCanceled {
		t.Fatalf("Cancel: %+v, %v; want canceled", canceled, err)
	}
	if res := clienttest.Outcome(t, canceled); res.Status != mailbox.StatusError || !strings.Contains(res.ErrorMessage, "remote agent canceled") {
		t.Fatalf("canceled outcome %+v", res)
	}
}

func TestRemoteGoResubscribe(t *testing.T) {
	ctx := clienttest.Ctx(t)
	g := startGoRemote(t, true)
	r, _ := clienttest.Resolve(t, ctx, remote.Spec{URL: g.Srv.URL}, remote.Auth{})
	sent, err := r.Send(ctx, clienttest.Outbound(t, clienttest.NativeTask("tick tock", ""), nil), false)
	if err != nil {
		t.Fatal(err)
	}
	type opened struct {
		s   *remote.Stream
		err error
	}
	done := make(chan opened, 1)
	go func() {
		s, err := r.Resubscribe(ctx, sent.ID)
		done <- opened{s, err}
	}()
	// Tick until the resubscriber has its first event: a2a-go sends it
	// only the events after it joined.
	var o opened
wait:
	for {
		select {
		case g.Executor().Tick <- struct{}{}:
		case o = <-done:
			break wait
		}
	}
	if o.err != nil {
		t.Fatalf("Resubscribe: %v", o.err)
	}
	close(g.Executor().Release)
	ups := clienttest.Collect(t, o.s)
	last := ups[len(ups)-1]
	if !last.Final || last.Task.State != wire.StateCompleted || last.Task.ID != sent.ID {
		t.Fatalf("resubscribe ended on %+v", last)
	}
}

func TestRemoteGoLostTaskAfterRestart(t *testing.T) {
	ctx := clienttest.Ctx(t)
	g := startGoRemote(t, true)
	r, _ := clienttest.Resolve(t, ctx, remote.Spec{URL: g.Srv.URL}, remote.Auth{})
	sent, err := r.Send(ctx, clienttest.Outbound(t, clienttest.NativeTask("hang around", ""), nil), false)
	if err != nil {
		t.Fatal(err)
	}
	g.Restart(true)
	_, err = r.Get(ctx, sent.ID)
	if !errors.Is(err, remote.ErrTaskNotFound) || remote.Retryable(err) {
		t.Fatalf("Get after the remote restarted: %v; want ErrRemoteTaskNotFound, not retryable", err)
	}
	if _, err := r.Resubscribe(ctx, sent.ID); !errors.Is(err, remote.ErrTaskNotFound) {
		t.Fatalf("Resubscribe after the remote restarted: %v; want ErrRemoteTaskNotFound", err)
	}
	if _, err := r.Cancel(ctx, sent.ID); !errors.Is(err, remote.ErrTaskNotFound) {
		t.Fatalf("Cancel after the remote restarted: %v; want ErrRemoteTaskNotFound", err)
	}
}

func TestRemoteGoCredentialsReachTheServer(t *testing.T) {
	ctx := clienttest.Ctx(t)
	g := startGoRemote(t, false)
	auth := remote.Auth{Bearer: "s3cret-bearer-token", Header: "X-Api-Key", Value: "k3y-value-123"}
	r, card := clienttest.Resolve(t, ctx, remote.Spec{URL: g.Srv.URL}, auth)
	if _, err := r.Send(ctx, clienttest.Outbound(t, clienttest.NativeTask("echo", ""), nil), true); err != nil {
		t.Fatal(err)
	}
	for _, c := range g.Credentials() {
		if c != "Bearer s3cret-bearer-token|k3y-value-123" {
			t.Fatalf("a request came with %q, want the bearer and the header", c)
		}
	}
	// A card without streaming: Stream is refused up front.
	if _, err := r.Stream(ctx, clienttest.Outbound(t, clienttest.NativeTask("echo", ""), nil)); err == nil || card.Streaming {
		t.Fatalf("Stream to a remote that does not stream: %v", err)
	}
}
