package a2a_test

import (
	"testing"

	a2apkg "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"

	"github.com/mailroom/mailroom/daemon/daemontest"
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
		list[0].Config.Token != "tok-send" || list[0].Config.ID != string(task.ID) {
		t.Fatalf("configs after the send = %+v, %v; want the send's config, its id the task's", list, err)
	}

	second := a2apkg.PushConfig{ID: "audit", URL: "http://127.0.0.1:9/audit",
		Auth: &a2apkg.PushAuthInfo{Schemes: []string{"Bearer"}, Credentials: "s3cret"}}
	set, err := c.SetTaskPushConfig(it.ctx, &a2apkg.TaskPushConfig{TaskID: task.ID, Config: second})
	if err != nil || set.Config.ID != "audit" || set.Config.Auth == nil || set.Config.Auth.Credentials != "s3cret" {
		t.Fatalf("SetTaskPushConfig = %+v, %v", set, err)
	}
	got, err := c.GetTaskPushConfig(it.ctx, &a2apkg.GetTaskPushConfigParams{TaskID: task.ID, ConfigID: "audit"})
	if err != nil || got.Config.URL != second.URL || got.Config.Auth == nil || got.Config.Auth.Schemes[0] != "Bearer" {
		t.Fatalf("GetTaskPushConfig = %+v, %v; want the audit config", got, err)
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
