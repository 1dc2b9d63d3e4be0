package a2a_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/daemon/a2a/remote"
	"github.com/mailroom/mailroom/daemon/a2a/remote/clienttest"
	"github.com/mailroom/mailroom/daemon/a2a/wire"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/mailbox"
)

// Mailroom in front of Mailroom: the outbound client calls another
// daemon's A2A edge, which serves every binding the client speaks, the
// legacy dialect included. A native worker on that daemon leases what the
// client sent, so the test sees the message exactly as it arrived.

func TestRemoteMailroomEdge(t *testing.T) {
	it := newInterop(t, daemontest.Options{})
	base := it.register("coder@local")
	for _, c := range []struct{ binding, version string }{
		{mailbox.BindingAuto, "1.0"},
		{mailbox.BindingHTTPJSON10, "1.0"},
		{mailbox.BindingJSONRPC03, "0.3"},
		{mailbox.BindingLegacy, "legacy"},
	} {
		t.Run(c.binding, func(t *testing.T) {
			r, card := clienttest.Resolve(t, it.ctx, remote.Spec{URL: base, Binding: c.binding}, remote.Auth{})
			if card.Name != "Coder" || (c.binding == mailbox.BindingAuto && card.Binding != mailbox.BindingJSONRPC10) {
				t.Fatalf("card %+v", card)
			}

			// A native task, sent without blocking (the legacy dialect
			// always blocks, so the worker runs beside the send), leased by
			// the worker as the A2A message it is, answered, polled to its
			// end.
			task := clienttest.NativeTask("fix the flaky test", `{"repo":"mailroom"}`)
			leased := make(chan *mailbox.Task, 1)
			failed := make(chan error, 1)
			go func() {
				for {
					got, err := it.native.LeaseN(it.ctx, "coder@local", 1, 5*time.Second)
					if err == nil && len(got) == 0 {
						continue // a long poll that ended empty
					}
					if err == nil {
						err = it.native.PostResult(it.ctx, mailbox.Result{TaskID: got[0].Task.ID, Status: mailbox.StatusOK, LeaseID: got[0].Lease.LeaseID,
							Content: []mailbox.Content{{Type: mailbox.ContentText, Text: "fixed"}}})
					}
					if err != nil {
						failed <- err
						return
					}
					leased <- &got[0].Task
					return
				}
			}()
			sent, err := r.Send(it.ctx, clienttest.Outbound(t, task, nil), false)
			if err != nil {
				t.Fatalf("Send: %v", err)
			}
			if sent.ID == "" {
				t.Fatalf("send answered %+v", sent)
			}
			var held *mailbox.Task
			select {
			case held = <-leased:
			case err := <-failed:
				t.Fatalf("the worker: %v", err)
			}
			if held.A2A == nil || held.A2A.Version != c.version || held.A2A.MessageID != task.ID || held.IntentText != "fix the flaky test" ||
				(c.version != "legacy" && string(held.Context) != `{"repo":"mailroom"}`) {
				t.Fatalf("the worker leased %+v (a2a %+v), want the message as sent in %s, its id the task id", held, held.A2A, c.version)
			}
			if res := clienttest.Outcome(t, clienttest.Poll(t, it.ctx, r, sent.ID)); res.Status != mailbox.StatusOK || clienttest.ContentText(res) != "fixed" {
				t.Fatalf("outcome %+v", res)
			}

			// The edge does not know a task it never had, and does not
			// continue tasks.
			if _, err := r.Get(it.ctx, "6f9619ff-8b86-4d11-b42d-00c04fc964ff"); !errors.Is(err, remote.ErrTaskNotFound) {
				t.Fatalf("Get of an unknown task: %v; want ErrRemoteTaskNotFound", err)
			}
			if c.version == "legacy" {
				return
			}
			task.Turns = []mailbox.Turn{{Seq: 2, Role: mailbox.RoleSender, Content: []mailbox.Content{{Type: mailbox.ContentText, Text: "more"}}}}
			if _, err := r.Send(it.ctx, clienttest.Outbound(t, task, &remote.Ref{TaskID: sent.ID, ContextID: sent.ContextID}), false); !errors.Is(err, remote.ErrUnsupported) {
				t.Fatalf("a continuation to the edge: %v; want ErrRemoteUnsupported", err)
			}

			// A stream, the worker answering while it runs; then a cancel.
			wait := it.worker("coder@local", mailbox.StatusError, "the repository is gone")
			s, err := r.Stream(it.ctx, clienttest.Outbound(t, clienttest.NativeTask("stream me", ""), nil))
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			ups := clienttest.Collect(t, s)
			wait()
			if res := clienttest.Outcome(t, ups[len(ups)-1].Task); res.Status != mailbox.StatusError || res.ErrorMessage != "the repository is gone" {
				t.Fatalf("stream ended on %+v", ups[len(ups)-1])
			}
			queued, err := r.Send(it.ctx, clienttest.Outbound(t, clienttest.NativeTask("never mind", ""), nil), false)
			if err != nil {
				t.Fatal(err)
			}
			canceled, err := r.Cancel(it.ctx, queued.ID)
			if err != nil || canceled.State != wire.StateCanceled {
				t.Fatalf("Cancel: %+v, %v", canceled, err)
			}
			if _, err := r.Cancel(it.ctx, queued.ID); !errors.Is(err, remote.ErrNotCancelable) {
				t.Fatalf("a second Cancel: %v; want ErrRemoteNotCancelable", err)
			}
		})
	}
}

func TestRemoteMailroomEdgeTakesAV03MessageAsV10(t *testing.T) {
	it := newInterop(t, daemontest.Options{})
	base := it.register("coder@local")
	r, _ := clienttest.Resolve(t, it.ctx, remote.Spec{URL: base}, remote.Auth{})
	task := clienttest.NativeTask("summarize", "")
	task.A2A = &mailbox.A2AOrigin{Version: "0.3", MessageID: "caller-1", ContextID: "caller-ctx",
		Message: json.RawMessage(`{"kind":"message","role":"user","messageId":"caller-1","contextId":"caller-ctx","metadata":{"k":"v"},
			"parts":[{"kind":"text","text":"summarize"},{"kind":"data","data":{"x":1}},{"kind":"file","file":{"name":"a.pdf","mimeType":"application/pdf","uri":"https://example.test/a.pdf"}}]}`)}
	if _, err := r.Send(it.ctx, clienttest.Outbound(t, task, nil), false); err != nil {
		t.Fatalf("Send: %v", err)
	}
	held, _ := it.lease("coder@local")
	want := `{"role":"ROLE_USER","messageId":"` + task.ID + `","contextId":"` + remote.ContextIDFor(task.ID) + `","metadata":{"k":"v"},"parts":[{"text":"summarize"},{"data":{"x":1}},{"url":"https://example.test/a.pdf","filename":"a.pdf","mediaType":"application/pdf"}]}`
	if held.A2A == nil || held.A2A.Version != "1.0" || !clienttest.SameJSON(t, held.A2A.Message, want) || string(held.Context) != `{"x":1}` {
		t.Fatalf("the edge received %+v, want %s", held.A2A, want)
	}
	if strings.Contains(string(held.A2A.Message), "caller-ctx") {
		t.Fatalf("the caller's context id went to the remote: %s", held.A2A.Message)
	}
}
