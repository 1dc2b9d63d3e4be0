package a2a_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	a2apkg "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"

	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/mailbox"
)

// The official a2a-go client sends with a push config inside the message
// and sets, gets, lists and deletes a task's configs; every change is in
// the daemon's state (the configs on the task, the outbox beside it).
func TestA2AGoClientPushConfigs(t *testing.T) {
	it := newInterop(t, daemontest.Options{})
	base := it.register("coder@local")
	c, _ := it.a2aClient(base, a2aclient.Config{Polling: true,
		PushConfig: &a2apkg.PushConfig{URL: "http://127.0.0.1:9/hooks/a2a", Token: "tok-send"}})
	res, err := c.SendMessage(it.ctx, textMessage("fix the flaky test"))
	if err != nil {
		t.Fatalf("SendMessage with a push config: %v", err)
	}
	task, ok := res.(*a2apkg.Task)
	if !ok {
		t.Fatalf("SendMessage answered %#v, want a task", res)
	}
	list, err := c.ListTaskPushConfig(it.ctx, &a2apkg.ListTaskPushConfigParams{TaskID: task.ID})
	if err != nil || len(list) != 1 || list[0].TaskID != task.ID || list[0].Config.URL != "http://127.0.0.1:9/hooks/a2a" ||
		list[0].Config.Token != mailbox.RedactedSecret || list[0].Config.ID != string(task.ID) {
		t.Fatalf("configs after the send = %+v, %v; want the send's config, its id the task's, its token redacted", list, err)
	}

	second := a2apkg.PushConfig{ID: "audit", URL: "http://127.0.0.1:9/audit",
		Auth: &a2apkg.PushAuthInfo{Schemes: []string{"Bearer"}, Credentials: "s3cret"}}
	set, err := c.SetTaskPushConfig(it.ctx, &a2apkg.TaskPushConfig{TaskID: task.ID, Config: second})
	if err != nil || set.Config.ID != "audit" || set.Config.Auth == nil || set.Config.Auth.Credentials != mailbox.RedactedSecret {
		t.Fatalf("SetTaskPushConfig = %+v, %v; want the config, its credentials redacted", set, err)
	}
	got, err := c.GetTaskPushConfig(it.ctx, &a2apkg.GetTaskPushConfigParams{TaskID: task.ID, ConfigID: "audit"})
	if err != nil || got.Config.URL != second.URL || got.Config.Auth == nil || got.Config.Auth.Schemes[0] != "Bearer" ||
		got.Config.Auth.Credentials != mailbox.RedactedSecret {
		t.Fatalf("GetTaskPushConfig = %+v, %v; want the audit config, its credentials redacted", got, err)
	}
	// A config read back and set again is refused (invalid params) rather
	// than its credentials replaced by the placeholder.
	before := it.seq()
	if _, err := c.SetTaskPushConfig(it.ctx, &a2apkg.TaskPushConfig{TaskID: task.ID, Config: got.Config}); err == nil {
		t.Errorf("setting a config read back was accepted; want a refusal")
	}
	if after := it.seq(); after != before {
		t.Errorf("the refused set changed the mailbox: seq %d -> %d", before, after)
	}
	if list, err = c.ListTaskPushConfig(it.ctx, &a2apkg.ListTaskPushConfigParams{TaskID: task.ID}); err != nil || len(list) != 2 {
		t.Fatalf("configs = %+v, %v; want two", list, err)
	}
	snap := it.d.State(t)
	if n := len(snap.Outbox); n != 2 {
		t.Errorf("outbox = %+v, want a notification of each config's setting", snap.Outbox)
	}
	if err := c.DeleteTaskPushConfig(it.ctx, &a2apkg.DeleteTaskPushConfigParams{TaskID: task.ID, ConfigID: "audit"}); err != nil {
		t.Fatalf("DeleteTaskPushConfig: %v", err)
	}
	if list, err = c.ListTaskPushConfig(it.ctx, &a2apkg.ListTaskPushConfigParams{TaskID: task.ID}); err != nil || len(list) != 1 || list[0].Config.ID != string(task.ID) {
		t.Fatalf("configs after the delete = %+v, %v; want the send's alone", list, err)
	}
	if _, err := c.GetTaskPushConfig(it.ctx, &a2apkg.GetTaskPushConfigParams{TaskID: task.ID, ConfigID: "audit"}); err == nil {
		t.Error("GetTaskPushConfig of the deleted config answered it")
	}
	// The lease is told to the config left.
	it.lease("coder@local")
	var leased int
	for _, n := range it.d.State(t).Outbox {
		if n.Event == "task_leased" && n.ConfigID == string(task.ID) {
			leased++
		}
	}
	if leased != 1 {
		t.Errorf("outbox = %+v, want the lease told to the send's config only", it.d.State(t).Outbox)
	}
}

// A webhook receiver sees every state change of a task sent by a2a-go
// with a push config, in order, each with the config's token, in the v0.3
// form the client sent it in (the Task).
func TestA2AGoClientReceiverSeesEveryChange(t *testing.T) {
	type got struct{ state, token, id string }
	seen := make(chan got, 16)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var task a2apkg.Task
		if err := json.NewDecoder(r.Body).Decode(&task); err != nil {
			t.Errorf("a notification a2a-go cannot read as a Task: %v", err)
		}
		seen <- got{string(task.Status.State), r.Header.Get("X-A2A-Notification-Token"), r.Header.Get("Mailroom-Notification-Id")}
	}))
	defer rcv.Close()
	it := newInterop(t, daemontest.Options{})
	base := it.register("coder@local")
	c, _ := it.a2aClient(base, a2aclient.Config{Polling: true, PushConfig: &a2apkg.PushConfig{URL: rcv.URL + "/hook", Token: "tok-e2e"}})
	if _, err := c.SendMessage(it.ctx, textMessage("fix the flaky test")); err != nil {
		t.Fatal(err)
	}
	task, lease := it.lease("coder@local")
	it.answer(task, lease, mailbox.StatusOK, "fixed")
	var states []string
	ids := map[string]bool{}
	for len(states) < 3 {
		select {
		case g := <-seen:
			if g.token != "tok-e2e" {
				t.Errorf("notification with token %q, want the config's", g.token)
			}
			ids[g.id] = true
			states = append(states, g.state)
		case <-it.ctx.Done():
			t.Fatalf("the receiver saw %v, want submitted, working, completed", states)
		}
	}
	if strings.Join(states, " ") != "submitted working completed" || len(ids) != 3 {
		t.Errorf("the receiver saw %v with ids %v, want submitted, working, completed, each its own id", states, ids)
	}
}
