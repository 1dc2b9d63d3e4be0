package mailbox

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func (b *box) register(agent string, card AgentCard) {
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

// sendA2A sends a task as the A2A edge does: the message kept on it.
func (b *box) sendA2A(to string) string {
	b.t.Helper()
	task, err := NormalizeTask(Task{ID: b.id(), Sender: "caller@a2a", Recipient: to, IntentText: "work",
		A2A: &A2AOrigin{Version: "0.3", MessageID: "m-" + b.id(), ContextID: "ctx", Message: json.RawMessage(`{"kind":"message","parts":[]}`)}})
	if err != nil {
		b.t.Fatal(err)
	}
	ev, err := b.s.DecideSend(task, b.now)
	if err != nil {
		b.t.Fatal(err)
	}
	b.apply(ev)
	return task.ID
}

func (b *box) cancel(taskID string) error {
	b.t.Helper()
	ev, err := b.s.DecideCancel(taskID, "alice@local", "not needed", b.now)
	if err != nil {
		return err
	}
	b.apply(ev)
	return nil
}

// roundTrip requires the state to survive its own snapshot and a replay of
// its log, unchanged.
func (b *box) roundTrip() {
	b.t.Helper()
	want := b.s.Snapshot(0)
	restored := NewState()
	if err := restored.Restore(want); err != nil {
		b.t.Fatalf("restore: %v", err)
	}
	if got := restored.Snapshot(0); !reflect.DeepEqual(got, want) {
		b.t.Fatalf("snapshot round trip changed the state:\n got %+v\nwant %+v", got, want)
	}
	replayed := NewState()
	for _, ev := range b.log {
		if err := replayed.Apply(ev); err != nil {
			b.t.Fatalf("replay: %v", err)
		}
	}
	if got := replayed.Snapshot(0); !reflect.DeepEqual(got, want) {
		b.t.Fatalf("replay gave another state:\n got %+v\nwant %+v", got, want)
	}
}

func TestRegistryRegisterReplaceDeregister(t *testing.T) {
	b := newBox(t)
	b.register("coder@local", AgentCard{Name: "Coder", Skills: []AgentSkill{{ID: "fix", Name: "Fix"}}})
	b.register("writer@local", AgentCard{Name: "Writer"})
	b.register("coder@local", AgentCard{Name: "Coder II"})
	if r, ok := b.s.Registered("coder@local"); !ok || r.Card.Name != "Coder II" || len(r.Card.Skills) != 0 || r.Principal != "oncall" {
		t.Fatalf("coder@local after replacing its card: %+v %v", r, ok)
	}
	// Registered agents are in the agents listing without any task.
	agents := b.s.Agents(b.now)
	if len(agents) != 2 || agents[0].Card == nil || agents[0].Card.Name != "Coder II" || agents[0].RegisteredAtMs == 0 {
		t.Fatalf("agents listing %+v", agents)
	}
	b.roundTrip()
	ev, err := b.s.DecideDeregister("writer@local", "oncall", b.now)
	if err != nil {
		t.Fatal(err)
	}
	b.apply(ev)
	if _, ok := b.s.Registered("writer@local"); ok {
		t.Fatal("writer@local is still registered")
	}
	if _, err := b.s.DecideDeregister("writer@local", "oncall", b.now); ErrorCode(err) != CodeNotFound || !strings.Contains(err.Error(), "mailroom agent register writer@local") {
		t.Fatalf("deregistering twice: %v", err)
	}
	if got := b.s.Registry(); len(got) != 1 || got[0].Agent != "coder@local" {
		t.Fatalf("registry %+v", got)
	}
	b.roundTrip()
	// A deregistration of an agent the log never registered does not apply.
	if err := NewState().Apply(Event{Seq: 1, Type: EventAgentDeregistered, Agent: "coder@local"}); err == nil {
		t.Fatal("an agent_deregistered for no registered agent applied")
	}
}

func TestNormalizeCardRefusals(t *testing.T) {
	long := strings.Repeat("x", MaxCardTextBytes+1)
	many := make([]string, MaxCardListEntries+1)
	for i := range many {
		many[i] = "t"
	}
	for _, tc := range []struct {
		card  AgentCard
		field string
	}{
		{AgentCard{}, "name"},
		{AgentCard{Name: "  "}, "name"},
		{AgentCard{Name: long}, "name"},
		{AgentCard{Name: "A", Version: long}, "version"},
		{AgentCard{Name: "A", Description: strings.Repeat("d", MaxCardDescBytes+1)}, "description"},
		{AgentCard{Name: "A", Description: "\xff"}, "description"},
		{AgentCard{Name: "A", Skills: []AgentSkill{{Name: "S"}}}, "skills[0].id"},
		{AgentCard{Name: "A", Skills: []AgentSkill{{ID: "s", Name: " "}}}, "skills[0].name"},
		{AgentCard{Name: "A", Skills: []AgentSkill{{ID: "s", Name: "S"}, {ID: "s", Name: "T"}}}, "skills[1].id"},
		{AgentCard{Name: "A", Skills: []AgentSkill{{ID: "s", Name: "S", Tags: []string{""}}}}, "skills[0].tags[0]"},
		{AgentCard{Name: "A", Skills: []AgentSkill{{ID: "s", Name: "S", Tags: many}}}, "skills[0].tags"},
		{AgentCard{Name: "A", DefaultInputModes: []string{" "}}, "default_input_modes[0]"},
		{AgentCard{Name: "A", DefaultOutputModes: many}, "default_output_modes"},
	} {
		_, err := NormalizeCard(tc.card)
		var e *Error
		if !errorsAs(err, &e) || e.Code != CodeInvalid || e.Details == nil || e.Details.Field != tc.field || !strings.HasPrefix(e.Message, tc.field+":") {
			t.Errorf("NormalizeCard(%+v) = %v, want a refusal naming %s", tc.card, err, tc.field)
		}
	}
	c, err := NormalizeCard(AgentCard{Name: "A", Skills: []AgentSkill{{ID: "s", Name: "S"}}})
	if err != nil || c.Skills[0].Tags == nil || c.Skills[0].Examples == nil || c.DefaultInputModes == nil {
		t.Fatalf("a valid card's lists are never null: %+v, %v", c, err)
	}
}

func TestAgentTasksListsNewestFirstAPageAtATime(t *testing.T) {
	b := newBox(t)
	var ids []string
	for range 5 {
		ids = append(ids, b.sendA2A("coder@local"))
	}
	b.send("planner@local", "coder@local")
	b.sendA2A("other@local")
	q, err := AgentTasksQuery{Recipient: "coder@local", PageSize: 2, Keep: func(r *TaskRecord) bool { return r.Task.A2A != nil }}.Normalize()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		page := b.s.AgentTasks(q)
		if page.Total != 5 {
			t.Fatalf("total %d, want 5", page.Total)
		}
		for _, r := range page.Tasks {
			got = append(got, r.Task.ID)
		}
		if page.Next == 0 {
			break
		}
		q.Before = page.Next
	}
	want := []string{ids[4], ids[3], ids[2], ids[1], ids[0]}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("pages gave %v, want %v", got, want)
	}
	if _, err := (AgentTasksQuery{Recipient: "coder@local", PageSize: MaxAgentTasksPage + 1}).Normalize(); ErrorCode(err) != CodeInvalid {
		t.Fatalf("a page over the cap: %v", err)
	}
	if p := b.s.AgentTasks(AgentTasksQuery{Recipient: "coder@local", Sender: "planner@local", PageSize: 10}); p.Total != 1 {
		t.Fatalf("sender filter: %+v", p)
	}
}

// Cards are checked when registered, never when applied: a log or
// snapshot holding a card from before the character checks replays, and
// round-trips unchanged.
func TestRegistryReplaysCardsItWouldNowRefuse(t *testing.T) {
	b := newBox(t)
	card := AgentCard{Name: "Old\x1b[31m\u202e", Description: "a\r\nb\x00", Skills: []AgentSkill{{ID: "legacy", Tags: []string{}, Examples: []string{}}},
		DefaultInputModes: []string{}, DefaultOutputModes: []string{}}
	if _, err := NormalizeCard(card); err == nil {
		t.Fatal("NormalizeCard accepted a name with an escape and a bidi override")
	}
	b.apply(Event{AtMs: b.now, Type: EventAgentRegistered, Agent: "old@local", Card: &card, Principal: "oncall"})
	if r, ok := b.s.Registered("old@local"); !ok || r.Card.Name != card.Name || r.Card.Description != card.Description {
		t.Fatalf("replayed card %+v %v; want it as the log holds it", r, ok)
	}
	b.roundTrip()
}

// Ids with dot segments are refused from now on, but a log written before
// may hold them: it replays, its snapshot restores, and the agent can
// still be deregistered.
func TestOldDotSegmentIDsStillReplay(t *testing.T) {
	if err := ValidateAgentID("agent", "a/../b"); err == nil {
		t.Fatal("a/../b is accepted as a new agent id")
	}
	b := newBox(t)
	card := AgentCard{Name: "Up", Skills: []AgentSkill{}}
	b.apply(Event{Type: EventAgentRegistered, Agent: "..", Card: &card, AtMs: b.now})
	b.roundTrip()
	if _, ok := b.s.Registered(".."); !ok {
		t.Fatal("the old agent .. is gone after a snapshot round trip")
	}
	ev, err := b.s.DecideDeregister("..", "oncall", b.now)
	if err != nil {
		t.Fatalf("deregistering an old dot-segment agent: %v", err)
	}
	b.apply(ev)
}
