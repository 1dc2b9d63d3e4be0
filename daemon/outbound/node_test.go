package outbound_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/internal/remotetest"

	a2aremote "github.com/mailroom/mailroom/daemon/a2a/remote"
	"github.com/mailroom/mailroom/daemon/a2a/wire"
	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/mailbox"
)

// Remote agents built on the official JavaScript SDK
// (interop/node/remote/server.mjs): @a2a-js/sdk 0.3.14 (JSON-RPC v0.3)
// and 1.3.0 (JSON-RPC and HTTP+JSON v1.0), both streaming. Without node
// or the packages the test skips, except on CI (CI=true), where it fails.

// nodeCredentials are the credentials each request reached the node
// server with.
func nodeCredentials(t *testing.T, base string) []string {
	t.Helper()
	resp, err := http.Get(base + "/control/seen")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var seen []struct {
		Path, Authorization, APIKey string
	}
	if err := json.NewDecoder(resp.Body).Decode(&seen); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range seen {
		if s.Path != "" {
			out = append(out, s.Authorization+"|"+s.APIKey)
		}
	}
	return out
}

func TestNodeSDKRemotes(t *testing.T) {
	for _, c := range []struct{ sdk, binding, want string }{
		{"v03", mailbox.BindingAuto, mailbox.BindingJSONRPC03},
		{"v1", mailbox.BindingAuto, mailbox.BindingJSONRPC10},
		{"v1", mailbox.BindingHTTPJSON10, mailbox.BindingHTTPJSON10},
	} {
		t.Run(c.sdk+" "+c.want, func(t *testing.T) {
			base := remotetest.NodeRemote(t, c.sdk)
			w := start(t, config.RemoteCredential{Agent: "js@remote", Header: "X-Api-Key", Value: "node-key-s3cret"})
			if _, err := w.c.RegisterAgent(w.ctx, "js@remote", mailbox.AgentCard{Remote: &mailbox.RemoteSpec{URL: base, Binding: c.binding, Concurrency: 4}}); err != nil {
				t.Fatal(err)
			}
			st := w.waitRemote("js@remote", "healthy", func(st *mailbox.RemoteStatus) bool { return st.State == mailbox.RemoteHealthy })
			if st.Binding != c.want {
				t.Fatalf("status %+v, want binding %s", st, c.want)
			}

			// A native sender.
			id := w.send("planner@local", "js@remote", "echo this", false)
			if res := w.result("planner@local", id); res.Status != mailbox.StatusOK || !strings.Contains(text(res), "echo this") {
				t.Fatalf("result %+v", res)
			}
			if rec := w.record(id); rec.Remote == nil || rec.Remote.Binding != c.want {
				t.Fatalf("remote %+v, want accepted over %s", rec.Remote, c.want)
			}
			// A failure.
			id = w.send("planner@local", "js@remote", "fail please", false)
			if res := w.result("planner@local", id); res.Status != mailbox.StatusError || !strings.Contains(res.ErrorMessage, "the disk is full") {
				t.Fatalf("result %+v", res)
			}
			// A question and its answer.
			id = w.send("planner@local", "js@remote", "ask me", false)
			if q := w.result("planner@local", id); q.Status != mailbox.StatusInputRequired || text(q) != "which database?" {
				t.Fatalf("result %+v, want the question", q)
			}
			if _, err := w.c.Reply(w.ctx, mailbox.Reply{TaskID: id, Sender: "planner@local", Content: []mailbox.Content{{Type: mailbox.ContentText, Text: "mysql"}}}); err != nil {
				t.Fatal(err)
			}
			if res := w.result("planner@local", id); res.Status != mailbox.StatusOK || text(res) != "using mysql" {
				t.Fatalf("result %+v, want the answer used", res)
			}
			// Slow work, then released.
			id = w.send("planner@local", "js@remote", "slow work", false)
			w.waitDelivery("js@remote", id, "accepted", func(d mailbox.DeliveryStatus) bool { return d.RemoteTaskID != "" })
			remotetest.Control(t, base, "release")
			if res := w.result("planner@local", id); res.Status != mailbox.StatusOK || text(res) != "slowly done" {
				t.Fatalf("result %+v", res)
			}
			// An A2A sender, and its cancel passed on.
			e := w.edge("js@remote")
			sent := w.edgeSend(e, "echo through the edge")
			if got := w.edgePoll(e, sent.ID, a2aremote.Task.Terminal); got.State != wire.StateCompleted {
				t.Fatalf("the edge's task %+v", got)
			}
			sent = w.edgeSend(e, "hang on")
			w.waitDelivery("js@remote", sent.ID, "accepted", func(d mailbox.DeliveryStatus) bool { return d.RemoteTaskID != "" })
			if _, err := e.Cancel(w.ctx, sent.ID); err != nil {
				t.Fatalf("cancel: %v", err)
			}
			w.waitRemote("js@remote", "the canceled delivery gone", func(st *mailbox.RemoteStatus) bool { return delivery(st, sent.ID) == nil })
			waitFor(t, "the cancel passed on", func() bool { return strings.Contains(w.logs.String(), "cancel passed on to the remote") },
				func() string { return w.logs.String() })

			// Killed mid-task: the remote comes back without the task it
			// accepted. Its lease stays, marked lost, until the operator
			// requeues it to an agent that polls.
			id = w.send("planner@local", "js@remote", "hang on", false)
			w.waitDelivery("js@remote", id, "accepted", func(d mailbox.DeliveryStatus) bool { return d.RemoteTaskID != "" })
			remotetest.Control(t, base, "restart")
			lost := w.waitDelivery("js@remote", id, "lost", func(d mailbox.DeliveryStatus) bool { return d.State == mailbox.DeliveryLost })
			if e := w.entry(id); e == nil || e.State != mailbox.TaskInFlight || e.LeaseID != lost.LeaseID {
				t.Fatalf("queue entry %+v, want the lease left for the operator", e)
			}
			w.requeueTo(id, lost.LeaseID, "worker@local", "done here")

			// Failing: the circuit opens, the next task stays queued, and
			// both are delivered once the remote answers again.
			remotetest.Control(t, base, "down")
			a := w.send("planner@local", "js@remote", "echo first", false)
			w.waitRemote("js@remote", "circuit open", func(st *mailbox.RemoteStatus) bool { return st.State == mailbox.RemoteCircuitOpen })
			b := w.send("planner@local", "js@remote", "echo second", false)
			if e := w.entry(b); e == nil || e.State != mailbox.TaskQueued {
				t.Fatalf("a task sent while the circuit is open: %+v, want it queued", e)
			}
			remotetest.Control(t, base, "up")
			for _, id := range []string{a, b} {
				if res := w.result("planner@local", id); res.Status != mailbox.StatusOK {
					t.Fatalf("result %+v after the circuit closed", res)
				}
			}
			w.waitRemote("js@remote", "healthy again", func(st *mailbox.RemoteStatus) bool { return st.State == mailbox.RemoteHealthy })

			for _, cr := range nodeCredentials(t, base) {
				if cr != "|node-key-s3cret" {
					t.Fatalf("a request reached the remote with %q, want the configured header", cr)
				}
			}
			if strings.Contains(w.logs.String(), "node-key-s3cret") {
				t.Fatalf("the secret is in the log")
			}
		})
	}
}
