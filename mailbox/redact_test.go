package mailbox

import (
	"encoding/json"
	"strings"
	"testing"
)

// What leaves the daemon shows a set secret as *** and an unset one as
// absent; the value it was made from, the state's or the log's, keeps
// its secrets, and redacting twice changes nothing more.
func TestRedactShowsThatASecretIsSetWithoutItsValue(t *testing.T) {
	cfg := PushConfig{ID: "c", URL: "http://127.0.0.1:9/hook", Token: "tok-1", Authentication: &PushAuth{Schemes: []string{"Bearer"}, Credentials: "cred-1"}}
	bare := PushConfig{ID: "b", URL: "http://127.0.0.1:9/bare"}
	card := AgentCard{Name: "Planner", Webhook: &Webhook{URL: "http://127.0.0.1:9/results", Token: "tok-2", Authentication: &PushAuth{Schemes: []string{"Bearer"}, Credentials: "cred-2"}}}
	rec := TaskRecord{Task: Task{ID: "t"}, Push: []PushConfig{cfg, bare}}
	snap := &Snapshot{Seq: 9, Tasks: []TaskRecord{{Task: Task{ID: "plain"}}, rec}, Registry: []RegisteredAgent{{Agent: "planner@local", Card: card}}}
	logBytes := []byte(`{"seq":3,"type":"push_config_set","push":{"token":"tok-1"}}`)
	cases := []struct {
		name string
		in   any
		want []string // substrings of the redacted JSON
	}{
		{"push_config_set", Event{Seq: 3, Type: EventPushConfigSet, TaskID: "t", Push: &cfg, Encoded: logBytes}, []string{`"token":"***"`, `"credentials":"***"`, `"schemes":["Bearer"]`}},
		{"agent_registered", Event{Seq: 4, Type: EventAgentRegistered, Agent: "planner@local", Card: &card}, []string{`"webhook":{"url":"http://127.0.0.1:9/results","token":"***"`, `"credentials":"***"`}},
		{"snapshot", Event{Seq: 9, Type: EventSnapshot, Snapshot: snap}, []string{`"id":"plain"`, `"token":"***"`, `"id":"b","url":"http://127.0.0.1:9/bare"}`}},
		{"task read", TaskResponse{Kind: KindTask, TaskRecord: rec}, []string{`"token":"***"`}},
		{"agents listing", AgentsUpdate{Type: EventAgents, Agents: []AgentInfo{{Agent: "a@local"}, {Agent: "planner@local", Card: &card}}, Encoded: []byte(`{"tok-2":1}`)}, []string{`"token":"***"`}},
		{"agents answer", AgentsResponse{Kind: KindAgents, Agents: []AgentInfo{{Agent: "planner@local", Card: &card}}}, []string{`"token":"***"`}},
		{"registration", AgentRegisteredResponse{Kind: KindAgentRegistered, Agent: RegisteredAgent{Agent: "planner@local", Card: card}}, []string{`"token":"***"`}},
		{"configs", []PushConfig{cfg, bare}, []string{`"token":"***"`, `{"id":"b","url":"http://127.0.0.1:9/bare"}`}},
	}
	for _, c := range cases {
		before, _ := json.Marshal(c.in)
		out := Redact(c.in)
		for _, enc := range []any{out, Redact(out)} {
			b := encoded(t, enc)
			for _, secret := range []string{"tok-1", "cred-1", "tok-2", "cred-2"} {
				if strings.Contains(b, secret) {
					t.Errorf("%s: redacted = %s, shows %s", c.name, b, secret)
				}
			}
			for _, w := range c.want {
				if !strings.Contains(b, w) {
					t.Errorf("%s: redacted = %s, want %s in it", c.name, b, w)
				}
			}
		}
		if after, _ := json.Marshal(c.in); string(after) != string(before) {
			t.Errorf("%s: redacting changed the value it was given:\n%s\n%s", c.name, before, after)
		}
	}
	if cfg.Token != "tok-1" || cfg.Authentication.Credentials != "cred-1" || card.Webhook.Token != "tok-2" || snap.Tasks[1].Push[0].Token != "tok-1" {
		t.Errorf("redacting changed the state's values: %+v %+v", cfg, card.Webhook)
	}
	plain := Event{Seq: 5, Type: EventTaskSent, Task: &Task{ID: "t"}, Encoded: []byte("{}")}
	if got := plain.Redacted(); string(got.Encoded) != "{}" {
		t.Errorf("an event without secrets lost its encoding: %q", got.Encoded)
	}
}

// encoded is what the daemon writes of v: an event or listing's
// pre-encoded bytes when it has them, else its JSON.
func encoded(t *testing.T, v any) string {
	t.Helper()
	switch x := v.(type) {
	case Event:
		if x.Encoded != nil {
			return string(x.Encoded)
		}
	case AgentsUpdate:
		if x.Encoded != nil {
			return string(x.Encoded)
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A secret given as the placeholder is refused, naming the field: a
// config read back and set again would otherwise lose its secret.
func TestThePlaceholderIsNoSecret(t *testing.T) {
	for _, c := range []struct {
		cfg   PushConfig
		field string
	}{
		{PushConfig{URL: "http://127.0.0.1:9/hook", Token: RedactedSecret}, "push.token"},
		{PushConfig{URL: "http://127.0.0.1:9/hook", Authentication: &PushAuth{Schemes: []string{"Bearer"}, Credentials: RedactedSecret}}, "push.authentication.credentials"},
	} {
		_, err := NormalizePushConfig("push", "t", c.cfg)
		if err == nil || !strings.HasPrefix(ErrorMessage(err), c.field+`: got "***"`) {
			t.Errorf("NormalizePushConfig(%+v) = %v; want a refusal naming %s and the placeholder", c.cfg, err, c.field)
		}
	}
	_, err := NormalizeCard(AgentCard{Name: "P", Webhook: &Webhook{URL: "http://127.0.0.1:9/r", Token: RedactedSecret}})
	if err == nil || !strings.Contains(ErrorMessage(err), "webhook.token") {
		t.Errorf("a webhook with the placeholder as its token = %v; want a refusal naming webhook.token", err)
	}
}
