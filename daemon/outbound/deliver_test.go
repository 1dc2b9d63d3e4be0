package outbound_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/mailbox"
)

const secret = "s3cret-bearer-4f1d9a77"

// A native sender's task to a remote agent: leased on the agent's behalf,
// sent with the configured credential, accepted (recorded), answered; the
// remote's card replaces the registered one; the secret appears nowhere.
func TestNativeSenderGetsTheRemoteResult(t *testing.T) {
	w := start(t, config.RemoteCredential{Agent: "coder@remote", Bearer: secret})
	g := startGoRemote(t, "Go Coder", false)
	w.register("coder@remote", g.Srv.URL, 2)
	w.waitRemote("coder@remote", "healthy", func(st *mailbox.RemoteStatus) bool { return st.State == mailbox.RemoteHealthy })
	waitFor(t, "the remote's card in the registry", func() bool {
		c := w.info("coder@remote").Card
		return c != nil && c.Name == "Go Coder" && c.HasSkill("code") && c.Remote != nil && c.Remote.URL == g.Srv.URL
	}, func() string { b, _ := json.Marshal(w.info("coder@remote").Card); return string(b) })

	id := w.send("planner@local", "coder@remote", "hello there", false)
	res := w.result("planner@local", id)
	if res.Status != mailbox.StatusOK || !strings.Contains(text(res), "hello there") {
		t.Fatalf("result %+v, want ok echoing the task", res)
	}
	rec := w.record(id)
	if rec.Remote == nil || rec.Remote.TaskID == "" || rec.Remote.Binding != mailbox.BindingJSONRPC03 || rec.Remote.Agent != "coder@remote" {
		t.Fatalf("task's remote %+v, want the remote's task recorded as accepted over jsonrpc-0.3", rec.Remote)
	}
	if n := g.Executor().Sent(id); n != 1 {
		t.Fatalf("the remote got the message %d times, want once with the task id as messageId", n)
	}
	for _, a := range g.Credentials() {
		if a != "Bearer "+secret+"|" {
			t.Fatalf("a request reached the remote with credentials %q, want the configured bearer", a)
		}
	}
	list, err := w.c.Agents(w.ctx)
	if err != nil {
		t.Fatal(err)
	}
	shown, _ := json.Marshal(list)
	if strings.Contains(string(shown), secret) || strings.Contains(w.logs.String(), secret) {
		t.Fatalf("the secret shows in the listing or the log")
	}
	if n := w.d.Metric(t, "mailroom_remote_delivery_duration_seconds_count"); n != 1 {
		t.Errorf("mailroom_remote_delivery_duration_seconds_count = %v, want 1", n)
	}
	if n := w.d.Metric(t, `mailroom_remote_deliveries_total{outcome="ok"}`); n != 1 {
		t.Errorf(`mailroom_remote_deliveries_total{outcome="ok"} = %v, want 1`, n)
	}
}

// Each of the remote's final states becomes the mailbox's result.
func TestRemoteOutcomes(t *testing.T) {
	w := start(t)
	g := startGoRemote(t, "Go Coder", false)
	w.register("coder@remote", g.Srv.URL, 4)
	for _, c := range []struct{ intent, status, says string }{
		{"fail now", mailbox.StatusError, "the disk is full"},
		{"reject this", mailbox.StatusRejected, "not my kind of work"},
	} {
		id := w.send("planner@local", "coder@remote", c.intent, false)
		if res := w.result("planner@local", id); res.Status != c.status || !strings.Contains(res.ErrorMessage, c.says) {
			t.Errorf("%q: result %+v, want %s saying %q", c.intent, res, c.status, c.says)
		}
	}
}

// A remote that asks: the question reaches the sender, the task waits;
// the sender's answer goes to the same remote task, which completes.
func TestRemoteAsksAndTheSenderAnswers(t *testing.T) {
	w := start(t)
	g := startGoRemote(t, "Go Coder", false)
	w.register("coder@remote", g.Srv.URL, 1)
	id := w.send("planner@local", "coder@remote", "ask me", false)
	q := w.result("planner@local", id)
	if q.Status != mailbox.StatusInputRequired || text(q) != "which database?" {
		t.Fatalf("result %+v, want the remote's question", q)
	}
	first := w.record(id).Remote
	if _, err := w.c.Reply(w.ctx, mailbox.Reply{TaskID: id, Sender: "planner@local", Content: []mailbox.Content{{Type: mailbox.ContentText, Text: "postgres"}}}); err != nil {
		t.Fatalf("reply: %v", err)
	}
	res := w.result("planner@local", id)
	if res.Status != mailbox.StatusOK || text(res) != "using postgres" {
		t.Fatalf("result %+v, want the remote's answer to the reply\nlog:\n%s", res, w.logs)
	}
	if again := w.record(id).Remote; again == nil || first == nil || again.TaskID != first.TaskID || again.LeaseID == first.LeaseID {
		t.Fatalf("remote before %+v, after %+v: want the same remote task, accepted again under the new lease", first, again)
	}
}

// A remote that does not stream and works slowly is polled until done.
func TestSlowRemoteIsPolled(t *testing.T) {
	w := start(t)
	g := startGoRemote(t, "Go Coder", false)
	w.register("coder@remote", g.Srv.URL, 1)
	id := w.send("planner@local", "coder@remote", "slow work", false)
	dl := w.waitDelivery("coder@remote", id, "polled", func(d mailbox.DeliveryStatus) bool {
		return d.State == mailbox.DeliveryPolling && d.RemoteTaskID != ""
	})
	if rec := w.record(id); rec.State != mailbox.TaskInFlight || rec.Remote == nil || rec.Remote.TaskID != dl.RemoteTaskID {
		t.Fatalf("task %s remote %+v, want in flight, accepted as %s", rec.State, rec.Remote, dl.RemoteTaskID)
	}
	close(g.Executor().Release)
	if res := w.result("planner@local", id); res.Status != mailbox.StatusOK || text(res) != "slowly done" {
		t.Fatalf("result %+v", res)
	}
}

// A remote that streams is followed on its stream.
func TestStreamingRemote(t *testing.T) {
	w := start(t)
	g := startGoRemote(t, "Go Streamer", true)
	w.register("streamer@remote", g.Srv.URL, 1)
	id := w.send("planner@local", "streamer@remote", "stream it", false)
	if res := w.result("planner@local", id); res.Status != mailbox.StatusOK || text(res) != "one two three" {
		t.Fatalf("result %+v, want the streamed artifact", res)
	}
}

// A remote that streams asks on its stream; the answer is sent on a new
// stream of the same remote task.
func TestStreamingRemoteAsks(t *testing.T) {
	w := start(t)
	g := startGoRemote(t, "Go Streamer", true)
	w.register("streamer@remote", g.Srv.URL, 1)
	id := w.send("planner@local", "streamer@remote", "ask me", false)
	if q := w.result("planner@local", id); q.Status != mailbox.StatusInputRequired || text(q) != "which database?" {
		t.Fatalf("result %+v, want the remote's question", q)
	}
	if _, err := w.c.Reply(w.ctx, mailbox.Reply{TaskID: id, Sender: "planner@local", Content: []mailbox.Content{{Type: mailbox.ContentText, Text: "sqlite"}}}); err != nil {
		t.Fatalf("reply: %v", err)
	}
	if res := w.result("planner@local", id); res.Status != mailbox.StatusOK || text(res) != "using sqlite" {
		t.Fatalf("result %+v, want the remote's answer to the reply\nlog:\n%s", res, w.logs)
	}
}

// A remote that forgot the task whose question the sender answered: the
// answer is not taken as a new task; the lease is left for the operator,
// marked lost.
func TestRemoteLostTheTaskItAsked(t *testing.T) {
	w := start(t)
	g := startGoRemote(t, "Go Coder", false)
	w.register("coder@remote", g.Srv.URL, 1)
	id := w.send("planner@local", "coder@remote", "ask me", false)
	if q := w.result("planner@local", id); q.Status != mailbox.StatusInputRequired {
		t.Fatalf("result %+v, want the question", q)
	}
	g.Restart(false)
	if _, err := w.c.Reply(w.ctx, mailbox.Reply{TaskID: id, Sender: "planner@local", Content: []mailbox.Content{{Type: mailbox.ContentText, Text: "postgres"}}}); err != nil {
		t.Fatal(err)
	}
	dl := w.waitDelivery("coder@remote", id, "lost", func(d mailbox.DeliveryStatus) bool { return d.State == mailbox.DeliveryLost })
	if e := w.entry(id); e == nil || e.State != mailbox.TaskInFlight || e.LeaseID != dl.LeaseID {
		t.Fatalf("entry %+v, want the lease left for the operator", e)
	}
}
