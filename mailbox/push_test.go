package mailbox

import (
	"strings"
	"testing"
)

func (b *box) setPush(taskID string, c PushConfig) (Event, error) {
	b.t.Helper()
	ev, err := b.s.DecidePushConfigSet(taskID, c, "caller@a2a", b.now)
	if err != nil {
		return Event{}, err
	}
	return b.apply(ev), nil
}

// outboxOf lists the outbox as "event config dead" rows, in order.
func outboxOf(s *State) []string {
	var out []string
	for _, n := range s.Outbox() {
		row := n.Event + " " + n.ConfigID
		if n.Dead {
			row += " dead"
		}
		out = append(out, row)
	}
	return out
}

func sameRows(got, want []string) bool {
	return strings.Join(got, "|") == strings.Join(want, "|")
}

// Every change of a task with push configs puts one notification per
// config in the outbox, in the order of the changes, each with an id that
// does not change; the config's own setting tells its receiver of the
// task as it stands.
func TestPushNotificationsFollowTheTask(t *testing.T) {
	b := newBox(t)
	id := b.send("caller@a2a", "worker@local")
	if _, err := b.setPush(id, PushConfig{URL: "http://127.0.0.1:9/hook", Token: "tok-1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.setPush(id, PushConfig{ID: "second", URL: "https://hooks.example.com/a2a"}); err != nil {
		t.Fatal(err)
	}
	_, l := b.lease("worker@local")
	if err := b.post(id, l.LeaseID); err != nil {
		t.Fatal(err)
	}
	want := []string{"push_config_set " + id, "push_config_set second",
		"task_leased " + id, "task_leased second", "result_posted " + id, "result_posted second"}
	if got := outboxOf(b.s); !sameRows(got, want) {
		t.Fatalf("outbox = %q, want %q", got, want)
	}
	first := b.s.Outbox()[0]
	if first.ID != notificationID(first.Seq, 1) || first.TaskID != id {
		t.Errorf("first notification = %+v, want id %s for task %s", first, notificationID(first.Seq, 1), id)
	}
	// A replay of the log makes the same outbox, ids and all.
	r := NewState()
	for _, ev := range b.log {
		if err := r.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := stateJSON(t, r, true), stateJSON(t, b.s, true); got != want {
		t.Errorf("replay made another state:\n got %s\nwant %s", got, want)
	}
	b.jsonRoundTrip()
}

// Delivered leaves the outbox; dead stays, shown, until an operator
// retries (back in line) or drops it (gone); both are audited.
func TestPushOutboxLife(t *testing.T) {
	b := newBox(t)
	id := b.send("caller@a2a", "worker@local")
	if _, err := b.setPush(id, PushConfig{URL: "http://127.0.0.1:9/hook"}); err != nil {
		t.Fatal(err)
	}
	b.lease("worker@local")
	ns := b.s.Outbox()
	if len(ns) != 2 {
		t.Fatalf("outbox = %+v, want 2 notifications", ns)
	}
	ev, err := b.s.DecidePushDelivered(ns[0].ID, 1, b.now)
	if err != nil {
		t.Fatal(err)
	}
	b.apply(ev)
	if _, err := b.s.DecidePushDelivered(ns[0].ID, 1, b.now); !isCode(err, CodeNotFound) {
		t.Errorf("delivered twice: %v, want not_found", err)
	}
	if _, err := b.s.DecidePushRetry(ns[1].ID, "oncall", "", b.now); !isCode(err, CodeConflict) {
		t.Errorf("retry of a pending notification: %v, want conflict", err)
	}
	ev, err = b.s.DecidePushDeadLettered(ns[1].ID, 8, "POST http://127.0.0.1:9/hook: connection refused", b.now)
	if err != nil {
		t.Fatal(err)
	}
	b.apply(ev)
	dead, _ := b.s.Notification(ns[1].ID)
	if !dead.Dead || dead.Attempts != 8 || !strings.Contains(dead.LastError, "refused") {
		t.Errorf("dead letter = %+v, want dead after 8 attempts with the error", dead)
	}
	if _, err := b.s.DecidePushDelivered(ns[1].ID, 9, b.now); !isCode(err, CodeConflict) {
		t.Errorf("a dead letter delivered: %v, want conflict", err)
	}
	b.jsonRoundTrip()
	ev, err = b.s.DecidePushRetry(ns[1].ID, "oncall", "the receiver is back", b.now)
	if err != nil {
		t.Fatal(err)
	}
	b.apply(ev)
	if n, _ := b.s.Notification(ns[1].ID); n.Dead || n.Attempts != 0 || n.LastError != "" {
		t.Errorf("retried = %+v, want pending again with no attempts", n)
	}
	// A bulk drop of the dead listed it dead; retried since, it is kept.
	if _, err := b.s.DecidePushDrop(ns[1].ID, "oncall", "receiver retired", true, b.now); !isCode(err, CodeConflict) || !strings.Contains(err.Error(), "not dead-lettered any more") {
		t.Errorf("a dead-only drop of a retried notification: %v, want a conflict saying it is pending again", err)
	}
	if _, err := b.s.DecidePushDrop(ns[1].ID, "oncall", "  ", false, b.now); !isCode(err, CodeInvalid) {
		t.Errorf("a drop without a reason: %v, want invalid", err)
	}
	ev, err = b.s.DecidePushDrop(ns[1].ID, "oncall", "receiver retired", false, b.now)
	if err != nil {
		t.Fatal(err)
	}
	b.apply(ev)
	if len(b.s.Outbox()) != 0 {
		t.Errorf("outbox after the drop = %+v, want empty", b.s.Outbox())
	}
	audit := b.s.Audit("", 10)
	if len(audit) != 2 || audit[0].Action != OutcomePushDropped || audit[0].Reason != "receiver retired" || audit[0].Notification != ns[1].ID ||
		audit[1].Action != OutcomePushRetried || audit[1].Principal != "oncall" {
		t.Errorf("audit = %+v, want the drop then the retry, by oncall, naming the notification", audit)
	}
}

// A deleted config takes its undelivered notifications with it; a task
// forgotten with notifications pending leaves them dead, for the operator
// to see.
func TestPushConfigDeleteAndForget(t *testing.T) {
	b := newBox(t)
	b.s.Limits.RetainDone = 1
	id := b.send("caller@a2a", "worker@local")
	for _, c := range []PushConfig{{ID: "a", URL: "http://127.0.0.1:9/a"}, {ID: "b", URL: "http://127.0.0.1:9/b"}} {
		if _, err := b.setPush(id, c); err != nil {
			t.Fatal(err)
		}
	}
	ev, err := b.s.DecidePushConfigDelete(id, "a", "caller@a2a", b.now)
	if err != nil {
		t.Fatal(err)
	}
	b.apply(ev)
	if _, err := b.s.DecidePushConfigDelete(id, "a", "caller@a2a", b.now); !isCode(err, CodeNotFound) {
		t.Errorf("deleting it again: %v, want not_found", err)
	}
	if got, want := outboxOf(b.s), []string{"push_config_set b"}; !sameRows(got, want) {
		t.Errorf("outbox = %q, want %q", got, want)
	}
	if cs, _ := b.s.PushConfigs(id, ""); len(cs) != 1 || cs[0].ID != "b" {
		t.Errorf("configs = %+v, want b alone", cs)
	}
	// Finish and drain it, then another task: the first is forgotten.
	_, l := b.lease("worker@local")
	if err := b.post(id, l.LeaseID); err != nil {
		t.Fatal(err)
	}
	b.drain("caller@a2a")
	other := b.send("caller@a2a", "worker@local")
	_, l = b.lease("worker@local")
	if err := b.post(other, l.LeaseID); err != nil {
		t.Fatal(err)
	}
	b.drain("caller@a2a")
	if _, ok := b.s.Task(id); ok {
		t.Fatal("the first task is still remembered; the test needs it forgotten")
	}
	for _, n := range b.s.Outbox() {
		if !n.Dead || !strings.Contains(n.LastError, "forgotten") {
			t.Errorf("notification of a forgotten task = %+v, want dead, saying why", n)
		}
	}
	if len(b.s.Outbox()) != 3 {
		t.Errorf("outbox = %q, want the three notifications of b (set, leased, posted) kept dead", outboxOf(b.s))
	}
	if _, err := b.s.DecidePushRetry(b.s.Outbox()[0].ID, "oncall", "", b.now); !isCode(err, CodeConflict) {
		t.Errorf("retry of a forgotten task's notification: %v, want conflict (nothing to post)", err)
	}
	b.jsonRoundTrip()
}

// Every refusal names its field and changes nothing.
func TestPushConfigRefusals(t *testing.T) {
	b := newBox(t)
	id := b.send("caller@a2a", "worker@local")
	for _, tc := range []struct {
		c     PushConfig
		field string
		says  string
	}{
		{PushConfig{}, "push.url", "absolute http or https URL"},
		{PushConfig{URL: "ftp://host/x"}, "push.url", `scheme "ftp"`},
		{PushConfig{URL: "/hook"}, "push.url", "absolute http or https"},
		{PushConfig{URL: "http://u:p@host/"}, "push.url", "credentials"},
		{PushConfig{URL: "http://host/#x"}, "push.url", "fragment"},
		{PushConfig{URL: "http://" + strings.Repeat("h", MaxPushURLBytes) + "/"}, "push.url", "at most 2048 bytes"},
		{PushConfig{URL: "http://host/", Token: "a\r\nX-Evil: 1"}, "push.token", "printable ASCII"},
		{PushConfig{URL: "http://host/", Token: strings.Repeat("t", MaxPushTokenBytes+1)}, "push.token", "at most 1024"},
		{PushConfig{URL: "http://host/", ID: strings.Repeat("i", MaxPushIDBytes+1)}, "push.id", "at most 256"},
		{PushConfig{URL: "http://host/", Authentication: &PushAuth{}}, "push.authentication.schemes", "1 to 8"},
		{PushConfig{URL: "http://host/", Authentication: &PushAuth{Schemes: []string{"Bear er"}}}, "push.authentication.schemes[0]", "no spaces"},
		{PushConfig{URL: "http://host/", Authentication: &PushAuth{Schemes: []string{"Bearer"}, Credentials: "x\n"}}, "push.authentication.credentials", "printable ASCII"},
	} {
		before := stateJSON(t, b.s, true)
		_, err := b.setPush(id, tc.c)
		var e *Error
		if !isCode(err, CodeInvalid) || !asError(err, &e) || e.Details == nil || e.Details.Field != tc.field || !strings.Contains(e.Message, tc.says) {
			t.Errorf("config %+v: %v, want invalid %s saying %q", tc.c, err, tc.field, tc.says)
		}
		if stateJSON(t, b.s, true) != before {
			t.Errorf("config %+v: the refusal changed the state", tc.c)
		}
	}
	if _, err := b.setPush("00000000-0000-4000-8000-999999999999", PushConfig{URL: "http://host/"}); !isCode(err, CodeNotFound) {
		t.Errorf("a config for a task never sent: %v, want not_found", err)
	}
	for i := range MaxPushConfigs {
		if _, err := b.setPush(id, PushConfig{ID: string(rune('a' + i)), URL: "http://host/"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.setPush(id, PushConfig{ID: "one-more", URL: "http://host/"}); !isCode(err, CodeConflict) {
		t.Errorf("config %d: %v, want conflict", MaxPushConfigs+1, err)
	}
	if _, err := b.setPush(id, PushConfig{ID: "a", URL: "http://host/replaced"}); err != nil {
		t.Errorf("replacing a config by its id at the bound: %v", err)
	}
}

func (b *box) registerCard(agent string, card AgentCard) {
	b.t.Helper()
	card, err := NormalizeCard(card)
	if err != nil {
		b.t.Fatal(err)
	}
	ev, err := b.s.DecideRegister(agent, card, "oncall", b.now)
	if err != nil {
		b.t.Fatal(err)
	}
	b.apply(ev)
}

// A native sender with a webhook on its registry entry gets a notification
// when a result is waiting for it (a question too); registered without
// one, or deregistered, its undelivered notifications go.
func TestNativeWebhook(t *testing.T) {
	b := newBox(t)
	b.registerCard("planner@local", AgentCard{Name: "Planner", Webhook: &Webhook{URL: "http://127.0.0.1:9/results", Token: "tok"}})
	id := b.send("planner@local", "worker@local")
	_, l := b.lease("worker@local")
	if len(b.s.Outbox()) != 0 {
		t.Fatalf("outbox before the result = %q, want empty (only results are told)", outboxOf(b.s))
	}
	if err := b.post(id, l.LeaseID); err != nil {
		t.Fatal(err)
	}
	ns := b.s.Outbox()
	if len(ns) != 1 || ns[0].Agent != "planner@local" || ns[0].ConfigID != "" || ns[0].Event != EventResultPosted || ns[0].TaskID != id {
		t.Fatalf("outbox = %+v, want one notification of the result for planner@local's webhook", ns)
	}
	if l := b.s.PushListingOf(nil, false); len(l) != 1 || l[0].URL != "http://127.0.0.1:9/results" {
		t.Errorf("listing = %+v, want the webhook's URL", l)
	}
	b.jsonRoundTrip()
	b.registerCard("planner@local", AgentCard{Name: "Planner"})
	if len(b.s.Outbox()) != 0 {
		t.Errorf("outbox after the webhook was removed = %q, want empty", outboxOf(b.s))
	}
	if _, err := NormalizeCard(AgentCard{Name: "P", Webhook: &Webhook{URL: "ftp://x/"}}); !isCode(err, CodeInvalid) || !strings.Contains(err.Error(), "webhook.url") {
		t.Errorf("a card with an ftp webhook: %v, want invalid naming webhook.url", err)
	}
}
