package a2a_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailroom/mailroom/daemon/a2a/remote"
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

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func resolve(t *testing.T, ctx context.Context, spec remote.Spec, auth remote.Auth) (*remote.Client, remote.Card) {
	t.Helper()
	r, card, err := remote.Resolve(ctx, nil, spec, auth)
	if err != nil {
		t.Fatalf("ResolveRemote(%+v): %v", spec, err)
	}
	return r, card
}

// nativeTask is a mailbox task as a native sender sends it.
func nativeTask(intent string, context string) mailbox.Task {
	t := mailbox.Task{ID: newID(), Sender: "planner@local", Recipient: "coder@local", IntentText: intent}
	if context != "" {
		t.Context = json.RawMessage(context)
	}
	return t
}

var idSeq atomic.Uint64

func newID() string {
	n := idSeq.Add(1)
	return "6f9619ff-8b86-4d11-b42d-" + strings.Repeat("0", 12-len(itoa(n))) + itoa(n)
}

func itoa(n uint64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func outbound(t *testing.T, task mailbox.Task, ref *remote.Ref) remote.Message {
	t.Helper()
	m, err := remote.MessageFor(task, ref)
	if err != nil {
		t.Fatalf("OutboundMessageFor(%s): %v", task.ID, err)
	}
	return m
}

// poll reads the remote task until it is finished or asks something.
func poll(t *testing.T, ctx context.Context, r *remote.Client, id string) remote.Task {
	t.Helper()
	for {
		got, err := r.Get(ctx, id)
		if err != nil {
			t.Fatalf("Get(%s): %v", id, err)
		}
		if got.Terminal() || got.Interrupted() {
			return got
		}
		select {
		case <-ctx.Done():
			t.Fatalf("task %s still %s when the test gave up", id, got.State)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// outcome maps a remote task to the mailbox result and checks that the
// mailbox takes it.
func outcome(t *testing.T, rt remote.Task) mailbox.Result {
	t.Helper()
	r, final := rt.Outcome()
	if !final {
		t.Fatalf("Outcome of %+v: not final", rt)
	}
	r.TaskID = "6f9619ff-8b86-4d11-b42d-00c04fc964ff"
	if _, err := mailbox.NormalizeResult(r); err != nil {
		t.Fatalf("the mailbox refuses the outcome %+v: %v", r, err)
	}
	return r
}

// collect reads a stream to its end.
func collect(t *testing.T, s *remote.Stream) []remote.Update {
	t.Helper()
	defer s.Close()
	var ups []remote.Update
	for {
		u, err := s.Next()
		if errors.Is(err, io.EOF) {
			return ups
		}
		if err != nil {
			t.Fatalf("stream after %d updates: %v", len(ups), err)
		}
		ups = append(ups, u)
	}
}

func contentText(r mailbox.Result) string {
	var texts []string
	for _, c := range r.Content {
		if c.Type == mailbox.ContentText {
			texts = append(texts, c.Text)
		} else {
			texts = append(texts, string(c.Value))
		}
	}
	return strings.Join(texts, "|")
}

func TestRemoteGoSendCompletesAndFails(t *testing.T) {
	ctx := testCtx(t)
	g := startGoRemote(t, true)
	r, card := resolve(t, ctx, remote.Spec{URL: g.Srv.URL}, remote.Auth{})
	if card.Binding != mailbox.BindingJSONRPC03 || card.Endpoint != g.Srv.URL+"/invoke" || card.Name != "Go Coder" || !card.Streaming ||
		len(card.Skills) != 1 || card.Skills[0].Examples[0] != "fix the bug" || card.Skills[0].Tags[0] != "go" {
		t.Fatalf("card %+v", card)
	}

	// A native task: its intent as text, its context as data, its id as
	// the messageId; the echo comes back as the result.
	task := nativeTask("echo this", `{"repo":"mailroom","n":3}`)
	sent, err := r.Send(ctx, outbound(t, task, nil), true)
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
	res := outcome(t, sent)
	if res.Status != mailbox.StatusOK || contentText(res) != `echo this|{"n":3,"repo":"mailroom"}` && contentText(res) != `echo this|{"repo":"mailroom","n":3}` {
		t.Fatalf("outcome %+v (%s), want ok with the text and the context", res, contentText(res))
	}

	// A remote may answer with a message: the work is done.
	said, err := r.Send(ctx, outbound(t, nativeTask("say hello", ""), nil), true)
	if err != nil {
		t.Fatalf("Send(say): %v", err)
	}
	if res := outcome(t, said); !said.Direct || res.Status != mailbox.StatusOK || contentText(res) != "hello yourself" {
		t.Fatalf("a message answer read as %+v (%+v)", said, res)
	}

	// Failed and rejected tasks carry the remote's words.
	for _, c := range []struct{ intent, status, msg string }{
		{"fail now", mailbox.StatusError, "the disk is full"},
		{"reject this", mailbox.StatusRejected, "not my kind of work"},
	} {
		got, err := r.Send(ctx, outbound(t, nativeTask(c.intent, ""), nil), true)
		if err != nil {
			t.Fatalf("Send(%s): %v", c.intent, err)
		}
		res := outcome(t, got)
		if res.Status != c.status || res.ErrorMessage != c.msg {
			t.Errorf("%s: outcome %+v, want %s %q", c.intent, res, c.status, c.msg)
		}
	}
}

func TestRemoteGoAsksThenCompletesOnTheAnswer(t *testing.T) {
	ctx := testCtx(t)
	g := startGoRemote(t, true)
	r, _ := resolve(t, ctx, remote.Spec{URL: g.Srv.URL}, remote.Auth{})
	task := nativeTask("ask me", "")
	got, err := r.Send(ctx, outbound(t, task, nil), true)
	if err != nil {
		t.Fatal(err)
	}
	q := outcome(t, got)
	if got.State != wire.StateInputRequired || q.Status != mailbox.StatusInputRequired || contentText(q) != "which database?" {
		t.Fatalf("send answered %+v, outcome %+v; want the remote's question", got, q)
	}
	// The sender answers: the task holds the question and the answer as
	// turns; the continuation names the remote's task.
	task.Turns = []mailbox.Turn{
		{Seq: 7, Role: mailbox.RoleWorker, Agent: "coder@local", Status: q.Status, Content: q.Content},
		{Seq: 9, Role: mailbox.RoleSender, Agent: "planner@local", Content: []mailbox.Content{{Type: mailbox.ContentText, Text: "staging"}}},
	}
	ref := &remote.Ref{TaskID: got.ID, ContextID: got.ContextID}
	cont := outbound(t, task, ref)
	if cont.MessageID == task.ID || cont.TaskID != got.ID {
		t.Fatalf("continuation %+v: want a new message id and the remote's task id", cont)
	}
	if again := outbound(t, task, ref); again.MessageID != cont.MessageID {
		t.Fatalf("the same turn made message ids %s and %s; want one", cont.MessageID, again.MessageID)
	}
	done, err := r.Send(ctx, cont, true)
	if err != nil {
		t.Fatalf("Send(continuation): %v", err)
	}
	res := outcome(t, done)
	if done.ID != got.ID || res.Status != mailbox.StatusOK || contentText(res) != "using staging" {
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
	ctx := testCtx(t)
	g := startGoRemote(t, true)
	r, _ := resolve(t, ctx, remote.Spec{URL: g.Srv.URL}, remote.Auth{})
	s, err := r.Stream(ctx, outbound(t, nativeTask("stream please", ""), nil))
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	ups := collect(t, s)
	if len(ups) < 4 {
		t.Fatalf("stream gave %+v, want several updates", ups)
	}
	var working bool
	for _, u := range ups {
		working = working || u.Task.State == wire.StateWorking
	}
	last := ups[len(ups)-1]
	res := outcome(t, last.Task)
	if !working || !last.Final || last.Task.State != wire.StateCompleted || contentText(res) != "one|two|three" || len(last.Task.Artifacts) != 1 {
		t.Fatalf("stream ended on %+v (working seen: %v), want completed with one artifact one|two|three", last, working)
	}
}

func TestRemoteGoSlowPolledAndCanceled(t *testing.T) {
	ctx := testCtx(t)
	g := startGoRemote(t, true)
	r, _ := resolve(t, ctx, remote.Spec{URL: g.Srv.URL}, remote.Auth{})

	sent, err := r.Send(ctx, outbound(t, nativeTask("slow work", ""), nil), false)
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
	done := poll(t, ctx, r, sent.ID)
	if res := outcome(t, done); res.Status != mailbox.StatusOK || contentText(res) != "slowly done" {
		t.Fatalf("slow task ended %+v", done)
	}

	hung, err := r.Send(ctx, outbound(t, nativeTask("hang on", ""), nil), false)
	if err != nil {
		t.Fatal(err)
	}
	canceled, err := r.Cancel(ctx, hung.ID)
	if err != nil || canceled.State != wire.StateCanceled {
		t.Fatalf("Cancel: %+v, %v; want canceled", canceled, err)
	}
	if res := outcome(t, canceled); res.Status != mailbox.StatusError || !strings.Contains(res.ErrorMessage, "remote agent canceled") {
		t.Fatalf("canceled outcome %+v", res)
	}
}

func TestRemoteGoResubscribe(t *testing.T) {
	ctx := testCtx(t)
	g := startGoRemote(t, true)
	r, _ := resolve(t, ctx, remote.Spec{URL: g.Srv.URL}, remote.Auth{})
	sent, err := r.Send(ctx, outbound(t, nativeTask("tick tock", ""), nil), false)
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
	ups := collect(t, o.s)
	last := ups[len(ups)-1]
	if !last.Final || last.Task.State != wire.StateCompleted || last.Task.ID != sent.ID {
		t.Fatalf("resubscribe ended on %+v", last)
	}
}

func TestRemoteGoLostTaskAfterRestart(t *testing.T) {
	ctx := testCtx(t)
	g := startGoRemote(t, true)
	r, _ := resolve(t, ctx, remote.Spec{URL: g.Srv.URL}, remote.Auth{})
	sent, err := r.Send(ctx, outbound(t, nativeTask("hang around", ""), nil), false)
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
	ctx := testCtx(t)
	g := startGoRemote(t, false)
	auth := remote.Auth{Bearer: "s3cret-bearer-token", Header: "X-Api-Key", Value: "k3y-value-123"}
	r, card := resolve(t, ctx, remote.Spec{URL: g.Srv.URL}, auth)
	if _, err := r.Send(ctx, outbound(t, nativeTask("echo", ""), nil), true); err != nil {
		t.Fatal(err)
	}
	for _, c := range g.Credentials() {
		if c != "Bearer s3cret-bearer-token|k3y-value-123" {
			t.Fatalf("a request came with %q, want the bearer and the header", c)
		}
	}
	// A card without streaming: Stream is refused up front.
	if _, err := r.Stream(ctx, outbound(t, nativeTask("echo", ""), nil)); err == nil || card.Streaming {
		t.Fatalf("Stream to a remote that does not stream: %v", err)
	}
}
