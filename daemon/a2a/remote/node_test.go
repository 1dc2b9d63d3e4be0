package remote_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/internal/remotetest"

	"github.com/mailroom/mailroom/daemon/a2a/remote"
	"github.com/mailroom/mailroom/daemon/a2a/remote/clienttest"
	"github.com/mailroom/mailroom/daemon/a2a/wire"
	"github.com/mailroom/mailroom/mailbox"
)

// The outbound client against servers built on the official JavaScript
// SDK (interop/node/remote/server.mjs): @a2a-js/sdk 0.3.14 (JSON-RPC
// v0.3) and 1.3.0 (JSON-RPC and HTTP+JSON v1.0). Without node or the
// packages the test skips, except on CI (CI=true), where it fails: .ci/run
// installs both.

type nodeSeen struct {
	Path          string          `json:"path"`
	Authorization string          `json:"authorization"`
	APIKey        string          `json:"apiKey"`
	Message       json.RawMessage `json:"message"`
}

func seenBy(t *testing.T, base string) []nodeSeen {
	t.Helper()
	resp, err := http.Get(base + "/control/seen")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []nodeSeen
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRemoteNodeSDK(t *testing.T) {
	for _, c := range []struct {
		sdk, binding, want string
	}{
		{"v03", mailbox.BindingAuto, mailbox.BindingJSONRPC03},
		{"v1", mailbox.BindingAuto, mailbox.BindingJSONRPC10},
		{"v1", mailbox.BindingHTTPJSON10, mailbox.BindingHTTPJSON10},
	} {
		t.Run(c.sdk+" "+c.want, func(t *testing.T) {
			ctx := clienttest.Ctx(t)
			base := remotetest.NodeRemote(t, c.sdk)
			auth := remote.Auth{Bearer: "node-bearer", Header: "X-Api-Key", Value: "node-key"}
			r, card := clienttest.Resolve(t, ctx, remote.Spec{URL: base, Binding: c.binding}, auth)
			if card.Binding != c.want || !card.Streaming || !strings.HasPrefix(card.Name, "JS Coder") || len(card.Skills) != 1 || card.Skills[0].Tags[0] != "js" {
				t.Fatalf("card %+v, want binding %s", card, c.want)
			}

			t.Run("send completes", func(t *testing.T) {
				task := clienttest.NativeTask("echo this", `{"repo":"mailroom"}`)
				got, err := r.Send(ctx, clienttest.Outbound(t, task, nil), true)
				if err != nil {
					t.Fatalf("Send: %v", err)
				}
				if res := clienttest.Outcome(t, got); res.Status != mailbox.StatusOK || clienttest.ContentText(res) != `echo this|{"repo":"mailroom"}` {
					t.Fatalf("outcome %+v (%s)", res, clienttest.ContentText(res))
				}
				var ids []string
				for _, s := range seenBy(t, base) {
					if s.Path != "" && (s.Authorization != "Bearer node-bearer" || s.APIKey != "node-key") {
						t.Fatalf("a request reached %s with %q / %q, want the credentials", s.Path, s.Authorization, s.APIKey)
					}
					var m struct {
						MessageID string `json:"messageId"`
					}
					if len(s.Message) > 0 && json.Unmarshal(s.Message, &m) == nil {
						ids = append(ids, m.MessageID)
					}
				}
				if len(ids) != 1 || ids[0] != task.ID {
					t.Fatalf("the server got message ids %v, want the task id %s", ids, task.ID)
				}
				got, err = r.Send(ctx, clienttest.Outbound(t, clienttest.NativeTask("fail hard", ""), nil), true)
				if err != nil {
					t.Fatal(err)
				}
				if res := clienttest.Outcome(t, got); res.Status != mailbox.StatusError || res.ErrorMessage != "the disk is full" {
					t.Fatalf("failed outcome %+v", res)
				}
				got, err = r.Send(ctx, clienttest.Outbound(t, clienttest.NativeTask("reject it", ""), nil), true)
				if err != nil {
					t.Fatal(err)
				}
				if res := clienttest.Outcome(t, got); res.Status != mailbox.StatusRejected || res.ErrorMessage != "not my kind of work" {
					t.Fatalf("rejected outcome %+v", res)
				}
			})

			t.Run("an A2A-origin message", func(t *testing.T) {
				task := clienttest.NativeTask("summarize", "")
				task.A2A = &mailbox.A2AOrigin{Version: "0.3", MessageID: "caller-1", ContextID: "caller-ctx",
					Message: json.RawMessage(`{"kind":"message","role":"user","messageId":"caller-1","contextId":"caller-ctx","metadata":{"k":"v"},
						"parts":[{"kind":"text","text":"summarize"},{"kind":"data","data":{"x":1}},{"kind":"file","file":{"name":"a.pdf","mimeType":"application/pdf","uri":"https://example.test/a.pdf"}}]}`)}
				got, err := r.Send(ctx, clienttest.Outbound(t, task, nil), true)
				if err != nil {
					t.Fatalf("Send: %v", err)
				}
				res := clienttest.Outcome(t, got)
				if res.Status != mailbox.StatusOK || clienttest.ContentText(res) != `summarize|{"x":1}|{"mediaType":"application/pdf","name":"a.pdf","url":"https://example.test/a.pdf"}` {
					t.Fatalf("outcome %+v (%s)", res, clienttest.ContentText(res))
				}
			})

			t.Run("input required, then the answer", func(t *testing.T) {
				task := clienttest.NativeTask("ask me", "")
				got, err := r.Send(ctx, clienttest.Outbound(t, task, nil), true)
				if err != nil {
					t.Fatal(err)
				}
				q := clienttest.Outcome(t, got)
				if q.Status != mailbox.StatusInputRequired || clienttest.ContentText(q) != "which database?" {
					t.Fatalf("send answered %+v (%+v)", got, q)
				}
				task.Turns = []mailbox.Turn{
					{Seq: 3, Role: mailbox.RoleWorker, Status: q.Status, Content: q.Content},
					{Seq: 4, Role: mailbox.RoleSender, Content: []mailbox.Content{{Type: mailbox.ContentText, Text: "staging"}},
						// The answer came through the edge in v1.0: verbatim to
						// the 1.3.0 server, re-encoded for the 0.3.14 one.
						A2A: &mailbox.A2AOrigin{Version: "1.0", MessageID: "ans-1", ContextID: "caller-ctx",
							Message: json.RawMessage(`{"role":"ROLE_USER","messageId":"ans-1","contextId":"caller-ctx","parts":[{"text":"staging","mediaType":"text/plain"}]}`)}},
				}
				done, err := r.Send(ctx, clienttest.Outbound(t, task, &remote.Ref{TaskID: got.ID, ContextID: got.ContextID}), true)
				if err != nil {
					t.Fatalf("Send(continuation): %v", err)
				}
				if res := clienttest.Outcome(t, done); done.ID != got.ID || res.Status != mailbox.StatusOK || clienttest.ContentText(res) != "using staging" {
					t.Fatalf("continuation answered %+v (%+v)", done, res)
				}
			})

			t.Run("stream", func(t *testing.T) {
				s, err := r.Stream(ctx, clienttest.Outbound(t, clienttest.NativeTask("stream please", ""), nil))
				if err != nil {
					t.Fatalf("Stream: %v", err)
				}
				ups := clienttest.Collect(t, s)
				last := ups[len(ups)-1]
				if res := clienttest.Outcome(t, last.Task); len(ups) < 4 || !last.Final || res.Status != mailbox.StatusOK || clienttest.ContentText(res) != "one|two|three" {
					t.Fatalf("stream %+v ended on %+v", ups, last)
				}
			})

			t.Run("slow work polled", func(t *testing.T) {
				sent, err := r.Send(ctx, clienttest.Outbound(t, clienttest.NativeTask("slow work", ""), nil), false)
				if err != nil {
					t.Fatal(err)
				}
				if got, err := r.Get(ctx, sent.ID); err != nil || got.Terminal() {
					t.Fatalf("Get while slow: %+v, %v", got, err)
				}
				remotetest.Control(t, base, "release")
				if res := clienttest.Outcome(t, clienttest.Poll(t, ctx, r, sent.ID)); clienttest.ContentText(res) != "slowly done" {
					t.Fatalf("slow outcome %+v", res)
				}
			})

			t.Run("resubscribe and cancel", func(t *testing.T) {
				sent, err := r.Send(ctx, clienttest.Outbound(t, clienttest.NativeTask("hang on", ""), nil), false)
				if err != nil {
					t.Fatal(err)
				}
				s, err := r.Resubscribe(ctx, sent.ID)
				if err != nil {
					t.Fatalf("Resubscribe: %v", err)
				}
				canceled, err := r.Cancel(ctx, sent.ID)
				if err != nil || canceled.State != wire.StateCanceled {
					t.Fatalf("Cancel: %+v, %v", canceled, err)
				}
				ups := clienttest.Collect(t, s)
				if last := ups[len(ups)-1]; last.Task.State != wire.StateCanceled || last.Task.ID != sent.ID {
					t.Fatalf("the resubscribed stream ended on %+v", last)
				}
				// A finished task is past canceling (a canceled one, the
				// 1.3.0 server answers as it is).
				done, err := r.Send(ctx, clienttest.Outbound(t, clienttest.NativeTask("echo", ""), nil), true)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := r.Cancel(ctx, done.ID); !errors.Is(err, remote.ErrNotCancelable) || remote.Retryable(err) {
					t.Fatalf("Cancel of a completed task: %v; want ErrRemoteNotCancelable", err)
				}
			})

			t.Run("the server restarted", func(t *testing.T) {
				sent, err := r.Send(ctx, clienttest.Outbound(t, clienttest.NativeTask("echo", ""), nil), true)
				if err != nil {
					t.Fatal(err)
				}
				remotetest.Control(t, base, "restart")
				if _, err := r.Get(ctx, sent.ID); !errors.Is(err, remote.ErrTaskNotFound) || remote.Retryable(err) {
					t.Fatalf("Get after a restart: %v; want ErrRemoteTaskNotFound", err)
				}
				if _, err := r.Cancel(ctx, sent.ID); !errors.Is(err, remote.ErrTaskNotFound) {
					t.Fatalf("Cancel after a restart: %v; want ErrRemoteTaskNotFound", err)
				}
				if _, err := r.Resubscribe(ctx, sent.ID); !errors.Is(err, remote.ErrTaskNotFound) {
					t.Fatalf("Resubscribe after a restart: %v; want ErrRemoteTaskNotFound", err)
				}
			})
		})
	}
}
