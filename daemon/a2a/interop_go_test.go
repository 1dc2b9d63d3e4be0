package a2a_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	a2apkg "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/a2aproject/a2a-go/a2aclient/agentcard"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/mailbox"
)

// The official a2a-go client (v0.3 wire) against a real daemon: it finds
// the agent by its card, sends, follows and cancels tasks, while a worker
// leases and answers them through the native API. Each test runs twice
// (overEachHop): over plain HTTP, and over HTTPS with a certificate from
// the test's own CA, which the clients trust as an operator's --ca-file
// would make them.

type interop struct {
	t      *testing.T
	ctx    context.Context
	native *client.Client
	base   string // http://host:port, https:// with Options.TLS
	d      *daemontest.Daemon
	// hc trusts the daemon's CA with Options.TLS; nil over plain HTTP,
	// where every client keeps its own default.
	hc *http.Client
}

// overEachHop runs test against a daemon over plain HTTP, then over HTTPS
// (HTTP/2 by ALPN) with the test's CA: the SDK must behave the same on
// both, as the A2A specification requires HTTPS in production.
func overEachHop(t *testing.T, test func(t *testing.T, opts daemontest.Options)) {
	for _, hop := range []struct {
		name string
		tls  bool
	}{{"http", false}, {"https", true}} {
		t.Run(hop.name, func(t *testing.T) { test(t, daemontest.Options{TLS: hop.tls}) })
	}
}

func newInterop(t *testing.T, opts daemontest.Options) *interop {
	t.Helper()
	d := daemontest.Start(t, opts)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	it := &interop{t: t, ctx: ctx, base: d.URL(), d: d}
	var copts []client.Option
	if len(opts.Tokens) > 0 {
		copts = append(copts, client.WithToken(opts.Tokens[0].Token))
	}
	if opts.TLS {
		it.hc = d.Client()
		copts = append(copts, client.WithHTTPClient(it.hc))
		// Before the daemon stops (cleanups run last first): an HTTP/2
		// server's shutdown waits a second for open connections to go.
		t.Cleanup(it.hc.CloseIdleConnections)
	}
	c, err := client.New(d.URL(), copts...)
	if err != nil {
		t.Fatal(err)
	}
	it.native = c
	return it
}

// register registers agent and returns its A2A base URL (with the trailing
// slash the JS SDKs need).
func (it *interop) register(agent string) string {
	it.t.Helper()
	_, err := it.native.RegisterAgent(it.ctx, agent, mailbox.AgentCard{Name: "Coder", Description: "writes code", Version: "1.2.3",
		Skills: []mailbox.AgentSkill{{ID: "code", Name: "Code", Description: "writes Go", Tags: []string{"go"}}}})
	if err != nil {
		it.t.Fatalf("registering %s: %v", agent, err)
	}
	return it.base + "/agents/" + agent + "/"
}

// a2aClient resolves the agent's card from its base URL and makes a client
// from it, as any a2a-go user would: over HTTPS with an http.Client
// trusting the daemon's CA, for the card and the calls alike.
func (it *interop) a2aClient(base string, cfg a2aclient.Config, opts ...a2aclient.FactoryOption) (*a2aclient.Client, *a2apkg.AgentCard) {
	it.t.Helper()
	resolver := agentcard.DefaultResolver
	if it.hc != nil {
		resolver = agentcard.NewResolver(it.hc)
		opts = append(opts, a2aclient.WithJSONRPCTransport(it.hc))
	}
	card, err := resolver.Resolve(it.ctx, base)
	if err != nil {
		it.t.Fatalf("resolving the card at %s: %v", base, err)
	}
	c, err := a2aclient.NewFromCard(it.ctx, card, append(opts, a2aclient.WithConfig(cfg))...)
	if err != nil {
		it.t.Fatalf("a client from the card: %v", err)
	}
	return c, card
}

// lease waits for a task queued for agent and leases it.
func (it *interop) lease(agent string) (*mailbox.Task, *mailbox.Lease) {
	it.t.Helper()
	for {
		task, lease, err := it.native.Lease(it.ctx, agent)
		if err != nil {
			it.t.Fatalf("leasing for %s: %v", agent, err)
		}
		if task != nil {
			return task, lease
		}
		select {
		case <-it.ctx.Done():
			it.t.Fatalf("no task reached %s", agent)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (it *interop) answer(task *mailbox.Task, lease *mailbox.Lease, status, text string) {
	it.t.Helper()
	r := mailbox.Result{TaskID: task.ID, Status: status, LeaseID: lease.LeaseID, Content: []mailbox.Content{{Type: mailbox.ContentText, Text: text}}}
	if status == mailbox.StatusError {
		r.ErrorMessage = text
		r.Content = nil
	}
	if err := it.native.PostResult(it.ctx, r); err != nil {
		it.t.Fatalf("posting the result of %s: %v", task.ID, err)
	}
}

// worker leases the next task for agent and answers it, in the background;
// the func it returns waits for it and fails the test if it failed. Every
// test waits for its worker before it ends, so no call of it outlives the
// test's context.
func (it *interop) worker(agent, status, text string) (wait func()) {
	errc := make(chan error, 1)
	go func() {
		errc <- func() error {
			for {
				task, lease, err := it.native.Lease(it.ctx, agent)
				if err != nil {
					return err
				}
				if task == nil {
					select {
					case <-it.ctx.Done():
						return it.ctx.Err()
					case <-time.After(10 * time.Millisecond):
					}
					continue
				}
				r := mailbox.Result{TaskID: task.ID, Status: status, LeaseID: lease.LeaseID, Content: []mailbox.Content{{Type: mailbox.ContentText, Text: text}}}
				if status == mailbox.StatusError {
					r.ErrorMessage, r.Content = text, nil
				}
				return it.native.PostResult(it.ctx, r)
			}
		}()
	}()
	return func() {
		it.t.Helper()
		if err := <-errc; err != nil {
			it.t.Fatalf("the worker for %s: %v", agent, err)
		}
	}
}

func textMessage(text string) *a2apkg.MessageSendParams {
	return &a2apkg.MessageSendParams{Message: a2apkg.NewMessage(a2apkg.MessageRoleUser, a2apkg.TextPart{Text: text})}
}

func artifactText(t *testing.T, task *a2apkg.Task) string {
	t.Helper()
	if len(task.Artifacts) != 1 || len(task.Artifacts[0].Parts) != 1 {
		t.Fatalf("task %s: artifacts %+v, want one with one part", task.ID, task.Artifacts)
	}
	p, ok := task.Artifacts[0].Parts[0].(a2apkg.TextPart)
	if !ok {
		t.Fatalf("task %s: artifact part %T, want a text part", task.ID, task.Artifacts[0].Parts[0])
	}
	return p.Text
}

func TestA2AGoClientSendGetComplete(t *testing.T) {
	overEachHop(t, func(t *testing.T, opts daemontest.Options) {
		it := newInterop(t, opts)
		base := it.register("coder@local")
		c, card := it.a2aClient(base, a2aclient.Config{Polling: true})
		if card.Name != "Coder" || len(card.Skills) != 1 || card.Skills[0].ID != "code" || !card.Capabilities.Streaming {
			t.Fatalf("card: %+v", card)
		}

		res, err := c.SendMessage(it.ctx, textMessage("fix the flaky test"))
		if err != nil {
			t.Fatalf("SendMessage: %v", err)
		}
		sent, ok := res.(*a2apkg.Task)
		if !ok || sent.Status.State != a2apkg.TaskStateSubmitted || sent.ContextID == "" {
			t.Fatalf("SendMessage answered %#v, want a submitted task with a context id", res)
		}
		task, lease := it.lease("coder@local")
		if task.ID != string(sent.ID) || task.IntentText != "fix the flaky test" || task.A2A == nil || task.A2A.ContextID != sent.ContextID {
			t.Fatalf("leased %+v, want the A2A task %s with its text and context", task, sent.ID)
		}
		got, err := c.GetTask(it.ctx, &a2apkg.TaskQueryParams{ID: sent.ID})
		if err != nil || got.Status.State != a2apkg.TaskStateWorking {
			t.Fatalf("GetTask while leased: %+v, %v; want working", got, err)
		}
		it.answer(task, lease, mailbox.StatusOK, "fixed: the clock was injected")
		got, err = c.GetTask(it.ctx, &a2apkg.TaskQueryParams{ID: sent.ID})
		if err != nil || got.Status.State != a2apkg.TaskStateCompleted {
			t.Fatalf("GetTask after the result: %+v, %v; want completed", got, err)
		}
		if txt := artifactText(t, got); txt != "fixed: the clock was injected" {
			t.Fatalf("artifact text %q", txt)
		}
		// The caller has its result: it is marked delivered, not left for a
		// sender agent to drain.
		if rs, err := it.native.RecentResults(it.ctx, 0); err != nil || len(rs) != 0 {
			t.Fatalf("pending results after the caller read the task: %+v, %v; want none", rs, err)
		}
	})
}

func TestA2AGoClientBlockingSendWaitsForTheWorker(t *testing.T) {
	overEachHop(t, func(t *testing.T, opts daemontest.Options) {
		it := newInterop(t, opts)
		base := it.register("coder@local")
		c, _ := it.a2aClient(base, a2aclient.Config{})
		wait := it.worker("coder@local", mailbox.StatusError, "the repository is gone")
		res, err := c.SendMessage(it.ctx, textMessage("tag a release"))
		wait()
		if err != nil {
			t.Fatalf("blocking SendMessage: %v", err)
		}
		task, ok := res.(*a2apkg.Task)
		if !ok || task.Status.State != a2apkg.TaskStateFailed {
			t.Fatalf("blocking SendMessage answered %#v, want the failed task", res)
		}
		if m := task.Status.Message; m == nil || len(m.Parts) != 1 || m.Parts[0].(a2apkg.TextPart).Text != "the repository is gone" {
			t.Fatalf("failed status message %+v, want the worker's error", task.Status.Message)
		}
	})
}

func TestA2AGoClientStreamsToCompletion(t *testing.T) {
	overEachHop(t, func(t *testing.T, opts daemontest.Options) {
		it := newInterop(t, opts)
		base := it.register("coder@local")
		c, _ := it.a2aClient(base, a2aclient.Config{})
		wait := it.worker("coder@local", mailbox.StatusOK, "streamed")
		var events []a2apkg.Event
		for ev, err := range c.SendStreamingMessage(it.ctx, textMessage("stream me")) {
			if err != nil {
				t.Fatalf("stream: %v (after %d events)", err, len(events))
			}
			events = append(events, ev)
		}
		wait()
		if len(events) < 3 {
			t.Fatalf("stream events %#v, want task, working, artifact, completed", events)
		}
		first, ok := events[0].(*a2apkg.Task)
		if !ok || first.Status.State != a2apkg.TaskStateSubmitted {
			t.Fatalf("first event %#v, want the submitted task", events[0])
		}
		var sawWorking, sawArtifact bool
		for _, ev := range events[1 : len(events)-1] {
			switch e := ev.(type) {
			case *a2apkg.TaskStatusUpdateEvent:
				sawWorking = sawWorking || e.Status.State == a2apkg.TaskStateWorking
			case *a2apkg.TaskArtifactUpdateEvent:
				sawArtifact = e.Artifact != nil && len(e.Artifact.Parts) == 1 && e.Artifact.Parts[0].(a2apkg.TextPart).Text == "streamed"
			}
		}
		last, ok := events[len(events)-1].(*a2apkg.TaskStatusUpdateEvent)
		if !sawWorking || !sawArtifact || !ok || !last.Final || last.Status.State != a2apkg.TaskStateCompleted || last.TaskID != first.ID {
			t.Fatalf("stream %#v: working %v, artifact %v; want it to end on a final completed status", events, sawWorking, sawArtifact)
		}
	})
}

func TestA2AGoClientCancel(t *testing.T) {
	overEachHop(t, func(t *testing.T, opts daemontest.Options) {
		it := newInterop(t, opts)
		base := it.register("coder@local")
		c, _ := it.a2aClient(base, a2aclient.Config{Polling: true})

		// A queued task leaves the queue.
		res, err := c.SendMessage(it.ctx, textMessage("never mind"))
		if err != nil {
			t.Fatal(err)
		}
		queued := res.(*a2apkg.Task)
		got, err := c.CancelTask(it.ctx, &a2apkg.TaskIDParams{ID: queued.ID})
		if err != nil || got.Status.State != a2apkg.TaskStateCanceled {
			t.Fatalf("CancelTask of a queued task: %+v, %v; want canceled", got, err)
		}
		if q, err := it.native.Queue(it.ctx, mailbox.QueueFilter{}); err != nil || len(q.Tasks) != 0 {
			t.Fatalf("queue after the cancel: %+v, %v; want empty", q, err)
		}

		// An in-flight task: the lease ends and the worker's late result is
		// refused, naming the cancel.
		res, err = c.SendMessage(it.ctx, textMessage("long job"))
		if err != nil {
			t.Fatal(err)
		}
		inflight := res.(*a2apkg.Task)
		task, lease := it.lease("coder@local")
		if got, err := c.CancelTask(it.ctx, &a2apkg.TaskIDParams{ID: inflight.ID}); err != nil || got.Status.State != a2apkg.TaskStateCanceled {
			t.Fatalf("CancelTask of a leased task: %+v, %v; want canceled", got, err)
		}
		err = it.native.PostResult(it.ctx, mailbox.Result{TaskID: task.ID, Status: mailbox.StatusOK, LeaseID: lease.LeaseID, Content: []mailbox.Content{}})
		if mailbox.ErrorCode(err) != mailbox.CodeConflict || !strings.Contains(err.Error(), "canceled") {
			t.Fatalf("late result after the cancel: %v; want a 409 naming the cancel", err)
		}
		audit, err := it.native.Audit(it.ctx, task.ID, 0)
		if err != nil || len(audit) != 1 || audit[0].Action != mailbox.OutcomeCanceled || audit[0].Principal != "anonymous@a2a" {
			t.Fatalf("audit of the canceled task: %+v, %v; want one cancel record", audit, err)
		}

		// A finished task cannot be canceled.
		_, err = c.CancelTask(it.ctx, &a2apkg.TaskIDParams{ID: inflight.ID})
		if !errors.Is(err, a2apkg.ErrTaskNotCancelable) {
			t.Fatalf("CancelTask of a canceled task: %v; want ErrTaskNotCancelable", err)
		}
	})
}

func TestA2AGoClientTaskNotFound(t *testing.T) {
	overEachHop(t, func(t *testing.T, opts daemontest.Options) {
		it := newInterop(t, opts)
		base := it.register("coder@local")
		c, _ := it.a2aClient(base, a2aclient.Config{Polling: true})
		for _, id := range []string{"6f9619ff-8b86-4d11-b42d-00c04fc964ff", "not-a-uuid"} {
			if _, err := c.GetTask(it.ctx, &a2apkg.TaskQueryParams{ID: a2apkg.TaskID(id)}); !errors.Is(err, a2apkg.ErrTaskNotFound) {
				t.Errorf("GetTask(%s): %v; want ErrTaskNotFound", id, err)
			}
			if _, err := c.CancelTask(it.ctx, &a2apkg.TaskIDParams{ID: a2apkg.TaskID(id)}); !errors.Is(err, a2apkg.ErrTaskNotFound) {
				t.Errorf("CancelTask(%s): %v; want ErrTaskNotFound", id, err)
			}
			// A resubscribe refused before its first event is a stream holding
			// the error, which the client reads as the typed error.
			var streamErr error
			for _, err := range c.ResubscribeToTask(it.ctx, &a2apkg.TaskIDParams{ID: a2apkg.TaskID(id)}) {
				if err != nil {
					streamErr = err
					break
				}
			}
			if !errors.Is(streamErr, a2apkg.ErrTaskNotFound) {
				t.Errorf("ResubscribeToTask(%s): %v; want ErrTaskNotFound", id, streamErr)
			}
		}
	})
}

func TestA2AGoClientRetryOfAMessageIsTheSameTask(t *testing.T) {
	overEachHop(t, func(t *testing.T, opts daemontest.Options) {
		it := newInterop(t, opts)
		base := it.register("coder@local")
		c, _ := it.a2aClient(base, a2aclient.Config{Polling: true})
		msg := textMessage("only once")
		first, err := c.SendMessage(it.ctx, msg)
		if err != nil {
			t.Fatal(err)
		}
		again, err := c.SendMessage(it.ctx, msg)
		if err != nil {
			t.Fatal(err)
		}
		if first.(*a2apkg.Task).ID != again.(*a2apkg.Task).ID {
			t.Fatalf("a retry of message %s made task %s beside %s", msg.Message.ID, again.(*a2apkg.Task).ID, first.(*a2apkg.Task).ID)
		}
		if q, err := it.native.Queue(it.ctx, mailbox.QueueFilter{}); err != nil || len(q.Tasks) != 1 {
			t.Fatalf("queue after a retried message: %+v, %v; want one task", q, err)
		}
	})
}

func TestA2AGoClientResubscribe(t *testing.T) {
	overEachHop(t, func(t *testing.T, opts daemontest.Options) {
		it := newInterop(t, opts)
		base := it.register("coder@local")
		c, _ := it.a2aClient(base, a2aclient.Config{Polling: true})
		res, err := c.SendMessage(it.ctx, textMessage("watch me"))
		if err != nil {
			t.Fatal(err)
		}
		sent := res.(*a2apkg.Task)
		wait := it.worker("coder@local", mailbox.StatusOK, "watched")
		var last a2apkg.Event
		n := 0
		for ev, err := range c.ResubscribeToTask(it.ctx, &a2apkg.TaskIDParams{ID: sent.ID}) {
			if err != nil {
				t.Fatalf("resubscribe: %v", err)
			}
			last, n = ev, n+1
		}
		wait()
		st, ok := last.(*a2apkg.TaskStatusUpdateEvent)
		if !ok || !st.Final || st.Status.State != a2apkg.TaskStateCompleted {
			t.Fatalf("resubscribe ended on %#v after %d events, want a final completed status", last, n)
		}
	})
}

// The whole loop of a conversation with a2a-go: a blocking send answered
// at the worker's question (input-required), the answer sent with the
// task's id, and the completed task with every turn in its history.
func TestA2AGoClientConversation(t *testing.T) {
	overEachHop(t, func(t *testing.T, opts daemontest.Options) {
		it := newInterop(t, opts)
		base := it.register("coder@local")
		c, _ := it.a2aClient(base, a2aclient.Config{})
		wait := it.worker("coder@local", mailbox.StatusInputRequired, "which database?")
		res, err := c.SendMessage(it.ctx, textMessage("migrate the schema"))
		wait()
		asked, ok := res.(*a2apkg.Task)
		if err != nil || !ok || asked.Status.State != a2apkg.TaskStateInputRequired {
			t.Fatalf("blocking SendMessage whose worker asked: %#v, %v; want an input-required task", res, err)
		}
		if m := asked.Status.Message; m == nil || m.Role != a2apkg.MessageRoleAgent || len(m.Parts) != 1 || m.Parts[0].(a2apkg.TextPart).Text != "which database?" {
			t.Fatalf("input-required status message %+v, want the worker's question", asked.Status.Message)
		}

		wait = it.worker("coder@local", mailbox.StatusOK, "migrated on staging")
		res, err = c.SendMessage(it.ctx, &a2apkg.MessageSendParams{Message: a2apkg.NewMessageForTask(a2apkg.MessageRoleUser, asked, a2apkg.TextPart{Text: "use staging"})})
		wait()
		done, ok := res.(*a2apkg.Task)
		if err != nil || !ok || done.ID != asked.ID || done.Status.State != a2apkg.TaskStateCompleted {
			t.Fatalf("the answer with taskId: %#v, %v; want task %s completed", res, err, asked.ID)
		}
		if txt := artifactText(t, done); txt != "migrated on staging" {
			t.Fatalf("artifact text %q", txt)
		}
		var turns []string
		for _, m := range done.History {
			turns = append(turns, string(m.Role)+":"+m.Parts[0].(a2apkg.TextPart).Text)
		}
		if want := "user:migrate the schema agent:which database? user:use staging"; strings.Join(turns, " ") != want {
			t.Fatalf("history %v, want %s", turns, want)
		}
	})
}

// A stream follows two turns: the first ends at the question (final),
// the answer's stream runs the next turn to completed; a resubscribe to
// the waiting task shows it and ends.
func TestA2AGoClientStreamFollowsTwoTurns(t *testing.T) {
	overEachHop(t, func(t *testing.T, opts daemontest.Options) {
		it := newInterop(t, opts)
		base := it.register("coder@local")
		c, _ := it.a2aClient(base, a2aclient.Config{})
		stream := func(msg *a2apkg.MessageSendParams) []a2apkg.Event {
			var events []a2apkg.Event
			for ev, err := range c.SendStreamingMessage(it.ctx, msg) {
				if err != nil {
					t.Fatalf("stream: %v (after %d events)", err, len(events))
				}
				events = append(events, ev)
			}
			return events
		}
		lastStatus := func(events []a2apkg.Event) *a2apkg.TaskStatusUpdateEvent {
			t.Helper()
			st, ok := events[len(events)-1].(*a2apkg.TaskStatusUpdateEvent)
			if !ok || !st.Final {
				t.Fatalf("stream %#v: want it to end on a final status update", events)
			}
			return st
		}
		wait := it.worker("coder@local", mailbox.StatusInputRequired, "which database?")
		first := stream(textMessage("migrate the schema"))
		wait()
		asked := lastStatus(first)
		if asked.Status.State != a2apkg.TaskStateInputRequired || asked.Status.Message == nil || asked.Status.Message.Parts[0].(a2apkg.TextPart).Text != "which database?" {
			t.Fatalf("the first stream ended on %+v; want input-required with the question", asked.Status)
		}
		var resub []a2apkg.Event
		for ev, err := range c.ResubscribeToTask(it.ctx, &a2apkg.TaskIDParams{ID: asked.TaskID}) {
			if err != nil {
				t.Fatalf("resubscribe: %v", err)
			}
			resub = append(resub, ev)
		}
		if st := lastStatus(resub); st.Status.State != a2apkg.TaskStateInputRequired {
			t.Fatalf("resubscribe to the waiting task ended on %+v; want input-required", st.Status)
		}

		wait = it.worker("coder@local", mailbox.StatusOK, "migrated")
		second := stream(&a2apkg.MessageSendParams{Message: a2apkg.NewMessageForTask(a2apkg.MessageRoleUser, asked, a2apkg.TextPart{Text: "use staging"})})
		wait()
		if task, ok := second[0].(*a2apkg.Task); !ok || task.ID != asked.TaskID || task.Status.State != a2apkg.TaskStateSubmitted || len(task.History) != 3 {
			t.Fatalf("the answer's stream began with %#v; want the task submitted again, with three turns", second[0])
		}
		if st := lastStatus(second); st.Status.State != a2apkg.TaskStateCompleted || st.TaskID != asked.TaskID {
			t.Fatalf("the answer's stream ended on %+v; want task %s completed", st, asked.TaskID)
		}
	})
}

// An answer to a task that is not waiting is ErrUnsupportedOperation; to
// a task that is not there, ErrTaskNotFound.
func TestA2AGoClientContinuationRefused(t *testing.T) {
	overEachHop(t, func(t *testing.T, opts daemontest.Options) {
		it := newInterop(t, opts)
		base := it.register("coder@local")
		c, _ := it.a2aClient(base, a2aclient.Config{Polling: true})
		res, err := c.SendMessage(it.ctx, textMessage("queued work"))
		if err != nil {
			t.Fatal(err)
		}
		queued := res.(*a2apkg.Task)
		before := it.seq()
		_, err = c.SendMessage(it.ctx, &a2apkg.MessageSendParams{Message: a2apkg.NewMessageForTask(a2apkg.MessageRoleUser, queued, a2apkg.TextPart{Text: "more"})})
		// (a2a-go keeps the code, not the message: TestConversationRefusals
		// reads the message.)
		if !errors.Is(err, a2apkg.ErrUnsupportedOperation) {
			t.Fatalf("an answer to a queued task: %v; want ErrUnsupportedOperation", err)
		}
		unknown := a2apkg.NewMessage(a2apkg.MessageRoleUser, a2apkg.TextPart{Text: "more"})
		unknown.TaskID = "6f9619ff-8b86-4d11-b42d-00c04fc964ff"
		if _, err := c.SendMessage(it.ctx, &a2apkg.MessageSendParams{Message: unknown}); !errors.Is(err, a2apkg.ErrTaskNotFound) {
			t.Fatalf("an answer to an unknown task: %v; want ErrTaskNotFound", err)
		}
		if after := it.seq(); after != before {
			t.Fatalf("refused answers changed the mailbox: seq %d -> %d", before, after)
		}
	})
}
