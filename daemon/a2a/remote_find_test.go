package a2a_test

import (
	"errors"
	"testing"

	"github.com/mailroom/mailroom/daemon/a2a/remote"
	"github.com/mailroom/mailroom/daemon/a2a/remote/clienttest"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/internal/remotetest"
	"github.com/mailroom/mailroom/mailbox"
)

// Find asks a remote which task it made of a mailbox task's first message
// (ListTasks by the context id derived from the task): another daemon's
// edge and the JS SDK 1.3.0 server, over v1.0 JSON-RPC and HTTP+JSON,
// find what was sent and answer absent for what was not; a v0.3 or legacy
// remote cannot be asked, and says why.
func TestRemoteFind(t *testing.T) {
	it := newInterop(t, daemontest.Options{})
	base := it.register("coder@local")
	check := func(t *testing.T, r *remote.Client) {
		t.Helper()
		sent := clienttest.NativeTask("keep it", "")
		got, err := r.Send(it.ctx, clienttest.Outbound(t, sent, nil), false)
		if err != nil {
			t.Fatalf("Send: %v", err)
		}
		if got.ContextID != remote.ContextIDFor(sent.ID) {
			t.Fatalf("the remote's task has context %q, want the one derived from the task, %q", got.ContextID, remote.ContextIDFor(sent.ID))
		}
		found, ok, err := r.Find(it.ctx, sent.ID)
		if err != nil || !ok || found.ID != got.ID {
			t.Fatalf("Find of a task sent: %+v %v %v, want the remote's task %s", found, ok, err, got.ID)
		}
		never := clienttest.NativeTask("never sent", "")
		if found, ok, err := r.Find(it.ctx, never.ID); err != nil || ok {
			t.Fatalf("Find of a task never sent: %+v %v %v, want absent", found, ok, err)
		}
	}
	for _, binding := range []string{mailbox.BindingJSONRPC10, mailbox.BindingHTTPJSON10} {
		t.Run("mailroom "+binding, func(t *testing.T) {
			r, _ := clienttest.Resolve(t, it.ctx, remote.Spec{URL: base, Binding: binding}, remote.Auth{})
			check(t, r)
		})
	}
	for _, binding := range []string{mailbox.BindingJSONRPC03, mailbox.BindingLegacy} {
		t.Run("mailroom "+binding, func(t *testing.T) {
			r, _ := clienttest.Resolve(t, it.ctx, remote.Spec{URL: base, Binding: binding}, remote.Auth{})
			_, ok, err := r.Find(it.ctx, clienttest.NativeTask("x", "").ID)
			if ok || !errors.Is(err, remote.ErrCannotList) {
				t.Fatalf("Find over %s: %v %v, want ErrRemoteCannotList", binding, ok, err)
			}
		})
	}
	for _, binding := range []string{mailbox.BindingJSONRPC10, mailbox.BindingHTTPJSON10} {
		t.Run("js 1.3.0 "+binding, func(t *testing.T) {
			node := remotetest.NodeRemote(t, "v1")
			r, _ := clienttest.Resolve(t, it.ctx, remote.Spec{URL: node, Binding: binding}, remote.Auth{})
			check(t, r)
		})
	}
}
