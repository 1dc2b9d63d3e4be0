package engine

import (
	"context"
	"errors"
	"net/url"
	"testing"

	"github.com/mailroom/mailroom/mailbox"
)

// A task sent with a push config is one unit with it; a retry of the same
// task puts its config on the task it made; the URL is held to the
// daemon's configuration before anything is decided; the outbox survives
// a restart and a compaction.
func TestSendWithPush(t *testing.T) {
	dir := t.TempDir()
	refuse := func(field string, u *url.URL) error {
		if u.Hostname() == "daemon.local" {
			return mailbox.Invalidf(field, "names this daemon's own address")
		}
		return nil
	}
	e := open(t, dir, Options{CheckPushURL: refuse})
	ctx := context.Background()
	task := mailbox.Task{ID: "00000000-0000-4000-8000-000000000001", Sender: "caller@a2a", Recipient: "w@local", IntentText: "work"}

	seq := e.DurableSeq()
	if _, err := e.SendWithPush(ctx, task, mailbox.PushConfig{URL: "http://daemon.local/hook"}); mailbox.ErrorCode(err) != mailbox.CodeInvalid {
		t.Errorf("a config naming the daemon: %v, want invalid", err)
	}
	if _, err := e.SendWithPush(ctx, task, mailbox.PushConfig{URL: "gopher://x/"}); mailbox.ErrorCode(err) != mailbox.CodeInvalid {
		t.Errorf("a config with scheme gopher: %v, want invalid", err)
	}
	if e.DurableSeq() != seq {
		t.Fatalf("refused sends moved the log from seq %d to %d: the task went without its config", seq, e.DurableSeq())
	}

	out, err := e.SendWithPush(ctx, task, mailbox.PushConfig{URL: "http://127.0.0.1:9/hook", Token: "t"})
	if err != nil || out.TaskID != task.ID {
		t.Fatalf("send with push = %+v, %v", out, err)
	}
	evs, err := e.st.EventsSince(seq, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[0].Type != mailbox.EventTaskSent || evs[0].Unit != 2 || evs[1].Type != mailbox.EventPushConfigSet {
		t.Fatalf("events = %+v, want task_sent then push_config_set, one unit of 2", evs)
	}
	// The caller's retry: the same task, its config unchanged: nothing new.
	seq = e.DurableSeq()
	if _, err := e.SendWithPush(ctx, task, mailbox.PushConfig{URL: "http://127.0.0.1:9/hook", Token: "t"}); mailbox.ErrorCode(err) != mailbox.CodeConflict {
		t.Errorf("a retry: %v, want the send's conflict (the task exists)", err)
	}
	if e.DurableSeq() != seq {
		t.Errorf("a retry with the same config wrote %d events", e.DurableSeq()-seq)
	}
	// A retry with another config sets it on the task.
	if _, err := e.SendWithPush(ctx, task, mailbox.PushConfig{ID: "b", URL: "http://127.0.0.1:9/b"}); mailbox.ErrorCode(err) != mailbox.CodeConflict {
		t.Errorf("a retry with a new config: %v, want the send's conflict", err)
	}
	cs, err := e.PushConfigs(ctx, task.ID, "")
	if err != nil || len(cs) != 2 || cs[0].ID != task.ID || cs[1].ID != "b" {
		t.Fatalf("configs = %+v, %v; want the task's own and b", cs, err)
	}
	if _, err := e.SetPushConfig(ctx, task.ID, mailbox.PushConfig{URL: "https://daemon.local/x"}); mailbox.ErrorCode(err) != mailbox.CodeInvalid {
		t.Errorf("set naming the daemon: %v, want invalid", err)
	}
	mustLease(t, e, "w@local")
	before, err := e.Push().Outbox(ctx)
	if err != nil || len(before) != 4 {
		t.Fatalf("outbox = %+v, %v; want each setting and the lease told to both", before, err)
	}
	if err := e.Push().Delivered(ctx, before[0].ID, 1); err != nil {
		t.Fatal(err)
	}
	if err := e.Push().DeadLettered(ctx, before[1].ID, 5, "500 Internal Server Error"); err != nil {
		t.Fatal(err)
	}
	want, _ := e.Push().Outbox(ctx)
	if _, err := e.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = open(t, dir, Options{})
	got, err := e.Push().Outbox(ctx)
	if err != nil || len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("outbox after a compaction and a restart = %+v, %v; want %+v", got, err, want)
	}
	op := mailbox.WithPrincipal(ctx, "oncall")
	if _, err := e.RetryNotification(op, want[0].ID, ""); err != nil {
		t.Errorf("retry of the dead letter: %v", err)
	}
	if err := e.DropNotification(op, want[1].ID, "receiver gone"); err != nil {
		t.Errorf("drop: %v", err)
	}
	audit, _ := e.Audit(ctx, task.ID, 10)
	if len(audit) != 2 || audit[0].Action != mailbox.OutcomePushDropped || audit[1].Action != mailbox.OutcomePushRetried {
		t.Errorf("audit = %+v, want the drop and the retry", audit)
	}
}

// A sender's webhook is held to the daemon's configuration as a push
// config is: refused, the registration changes nothing.
func TestWebhookHeldToTheConfiguration(t *testing.T) {
	refuse := func(field string, u *url.URL) error {
		if u.Hostname() != "127.0.0.1" {
			return mailbox.Invalidf(field, "host %q is not allowed", u.Hostname())
		}
		return nil
	}
	e := open(t, t.TempDir(), Options{CheckPushURL: refuse})
	ctx := context.Background()
	seq := e.DurableSeq()
	_, err := e.RegisterAgent(ctx, "planner@local", mailbox.AgentCard{Name: "Planner", Webhook: &mailbox.Webhook{URL: "https://hooks.example.com/results"}})
	var me *mailbox.Error
	if !errors.As(err, &me) || me.Code != mailbox.CodeInvalid || me.Details == nil || me.Details.Field != "webhook.url" {
		t.Errorf("a webhook to a host not allowed: %v, want invalid naming webhook.url", err)
	}
	if e.DurableSeq() != seq {
		t.Errorf("the refusal wrote %d events", e.DurableSeq()-seq)
	}
	if _, err := e.RegisterAgent(ctx, "planner@local", mailbox.AgentCard{Name: "Planner", Webhook: &mailbox.Webhook{URL: "http://127.0.0.1:9/results"}}); err != nil {
		t.Errorf("a webhook on an allowed host: %v", err)
	}
}
