package mailbox

import (
	"reflect"
	"strings"
	"testing"
)

func (b *box) registerAs(agent string, card AgentCard, principal string) Event {
	b.t.Helper()
	card, err := NormalizeCard(card)
	if err != nil {
		b.t.Fatal(err)
	}
	ev, err := b.s.DecideRegister(agent, card, principal, b.now)
	if err != nil {
		b.t.Fatal(err)
	}
	return b.apply(ev)
}

func (b *box) deregister(agent string) Event {
	b.t.Helper()
	ev, err := b.s.DecideDeregister(agent, "oncall", b.now)
	if err != nil {
		b.t.Fatal(err)
	}
	return b.apply(ev)
}

func wantInvalid(t *testing.T, what string, err error, field string) {
	t.Helper()
	var e *Error
	if !errorsAs(err, &e) || e.Code != CodeInvalid || e.Details == nil || e.Details.Field != field || !strings.HasPrefix(e.Message, field+":") {
		t.Errorf("%s: got %v, want an invalid-input refusal naming %s", what, err, field)
	}
}

func TestRegistryEntriesRecordCardPrincipalAndTime(t *testing.T) {
	b := newBox(t)
	if got := b.s.Registry(); got == nil || len(got) != 0 {
		t.Fatalf("a new state's registry = %#v, want empty and not nil", got)
	}
	first := b.registerAs("zed@local", AgentCard{Name: "Zed"}, "alice")
	b.registerAs("amy@local", AgentCard{Name: "Amy"}, "")
	b.registerAs("max@local", AgentCard{Name: "Max"}, "bob")
	if first.Type != EventAgentRegistered || first.Agent != "zed@local" || first.Card == nil || first.Card.Name != "Zed" || first.Principal != "alice" {
		t.Fatalf("registration decided %+v", first)
	}
	r, ok := b.s.Registered("zed@local")
	if !ok || r.Agent != "zed@local" || r.Card.Name != "Zed" || r.RegisteredAtMs != first.AtMs || r.Principal != "alice" {
		t.Fatalf("zed@local's entry %+v %v", r, ok)
	}
	var order []string
	for _, r := range b.s.Registry() {
		order = append(order, r.Agent)
	}
	if want := []string{"amy@local", "max@local", "zed@local"}; !reflect.DeepEqual(order, want) {
		t.Fatalf("registry order %v, want %v (by agent id)", order, want)
	}
	// Replacing a card replaces the entry: new card, time and principal.
	again := b.registerAs("zed@local", AgentCard{Name: "Zed 2", Skills: []AgentSkill{{ID: "s", Name: "S"}}}, "carol")
	r, _ = b.s.Registered("zed@local")
	if r.Card.Name != "Zed 2" || !r.Card.HasSkill("s") || r.RegisteredAtMs != again.AtMs || r.RegisteredAtMs == first.AtMs || r.Principal != "carol" {
		t.Fatalf("zed@local after replacing its card: %+v", r)
	}
	if n := len(b.s.Registry()); n != 3 {
		t.Fatalf("replacing a card made %d entries, want 3", n)
	}
	if _, ok := b.s.Registered("nobody@local"); ok {
		t.Fatal("an unregistered agent has an entry")
	}
	dereg := b.deregister("max@local")
	if dereg.Type != EventAgentDeregistered || dereg.Agent != "max@local" || dereg.Principal != "oncall" || dereg.Card != nil {
		t.Fatalf("deregistration decided %+v", dereg)
	}
	if _, ok := b.s.Registered("max@local"); ok {
		t.Fatal("max@local still registered")
	}
	// A deregistered agent may register again.
	b.registerAs("max@local", AgentCard{Name: "Max"}, "bob")
	b.roundTrip()
	b.jsonRoundTrip()
}

func TestDecideRegistryRefusals(t *testing.T) {
	b := newBox(t)
	card, _ := NormalizeCard(AgentCard{Name: "C"})
	for _, agent := range []string{"", "Coder@local", "coder local", strings.Repeat("a", MaxAgentIDBytes+1)} {
		_, err := b.s.DecideRegister(agent, card, "", b.now)
		wantInvalid(t, "register "+agent, err, "agent")
		_, err = b.s.DecideDeregister(agent, "", b.now)
		wantInvalid(t, "deregister "+agent, err, "agent")
	}
	_, err := b.s.DecideDeregister("coder@local", "", b.now)
	var e *Error
	if !errorsAs(err, &e) || e.Code != CodeNotFound || e.Details == nil || e.Details.Field != "agent" ||
		!strings.Contains(e.Message, "coder@local is not registered") || !strings.Contains(e.Message, "PUT /a2a/agents/coder@local") {
		t.Fatalf("deregistering an unregistered agent: %v", err)
	}
	if b.s.Seq != 0 {
		t.Fatalf("refusals moved the state to seq %d", b.s.Seq)
	}
}

func TestRestoreRefusesABadRegistry(t *testing.T) {
	card := AgentCard{Name: "C", Skills: []AgentSkill{}}
	for name, reg := range map[string][]RegisteredAgent{
		"a bad agent id":  {{Agent: "Coder", Card: card}},
		"an empty id":     {{Agent: "", Card: card}},
		"the same agent2": {{Agent: "coder@local", Card: card}, {Agent: "coder@local", Card: card}},
	} {
		s := NewState()
		if err := s.Restore(&Snapshot{Seq: 7, Registry: reg}); err == nil {
			t.Errorf("a snapshot with %s restored", name)
		}
		if s.Seq != 0 || len(s.Registry()) != 0 {
			t.Errorf("a refused snapshot with %s changed the state", name)
		}
	}
}

func TestEmptyRegistryIsLeftOutOfTheSnapshot(t *testing.T) {
	b := newBox(t)
	b.registerAs("coder@local", AgentCard{Name: "C"}, "")
	if !strings.Contains(stateJSON(t, b.s, true), `"registry":[{"agent":"coder@local","card":{"name":"C","description":"","version":"","skills":[],"default_input_modes":[],"default_output_modes":[]},"registered_at_ms":`) {
		t.Fatalf("snapshot %s does not carry the registry as the wire has it", stateJSON(t, b.s, true))
	}
	b.deregister("coder@local")
	if s := stateJSON(t, b.s, true); strings.Contains(s, "registry") {
		t.Fatalf("a snapshot with nothing registered carries a registry: %s", s)
	}
}

// The agents listing holds every registered agent, with its card, whether
// or not it has tasks; an agent with tasks stays listed, without its card,
// once deregistered.
func TestAgentsListsRegisteredAgents(t *testing.T) {
	b := newBox(t)
	reg := b.registerAs("coder@local", AgentCard{Name: "Coder", Skills: []AgentSkill{{ID: "fix", Name: "Fix"}}}, "")
	b.registerAs("idle@local", AgentCard{Name: "Idle"}, "")
	b.send("planner@local", "coder@local")
	byID := func() map[string]AgentInfo {
		m := map[string]AgentInfo{}
		for _, a := range b.s.Agents(b.now) {
			m[a.Agent] = a
		}
		return m
	}
	got := byID()
	if len(got) != 3 {
		t.Fatalf("agents %+v, want coder@local, idle@local and planner@local", got)
	}
	if c := got["coder@local"]; c.Card == nil || c.Card.Name != "Coder" || !c.Card.HasSkill("fix") || c.RegisteredAtMs != reg.AtMs || c.Queued != 1 {
		t.Errorf("coder@local listed as %+v", c)
	}
	if i := got["idle@local"]; i.Card == nil || i.Card.Name != "Idle" || i.RegisteredAtMs == 0 || i.Queued != 0 || i.InFlight != 0 || i.ResultsPending != 0 {
		t.Errorf("idle@local (registered, no tasks) listed as %+v", i)
	}
	if p := got["planner@local"]; p.Card != nil || p.RegisteredAtMs != 0 {
		t.Errorf("planner@local (never registered) listed as %+v", p)
	}
	// The listing's card is a copy: changing it changes nothing.
	got["coder@local"].Card.Name = "changed"
	if r, _ := b.s.Registered("coder@local"); r.Card.Name != "Coder" {
		t.Errorf("changing the listed card changed the registry: %+v", r.Card)
	}
	b.deregister("coder@local")
	b.deregister("idle@local")
	got = byID()
	if _, ok := got["idle@local"]; ok {
		t.Errorf("idle@local is listed after its deregistration though it has no tasks")
	}
	if c, ok := got["coder@local"]; !ok || c.Card != nil || c.RegisteredAtMs != 0 || c.Queued != 1 {
		t.Errorf("coder@local after its deregistration: %+v %v; want listed for its task, without a card", c, ok)
	}
}

func TestNormalizeCardNamesEachField(t *testing.T) {
	text := func(n int) string { return strings.Repeat("t", n) }
	list := func(n int) []string {
		l := make([]string, n)
		for i := range l {
			l[i] = "x"
		}
		return l
	}
	skills := func(n int) []AgentSkill {
		s := make([]AgentSkill, n)
		for i := range s {
			s[i] = AgentSkill{ID: "s" + text(i), Name: "S"}
		}
		return s
	}
	skill := func(f func(*AgentSkill)) AgentCard {
		c := AgentCard{Name: "A", Skills: []AgentSkill{{ID: "ok", Name: "OK"}, {ID: "s", Name: "S"}}}
		f(&c.Skills[1])
		return c
	}
	for _, tc := range []struct {
		name  string
		card  AgentCard
		field string
	}{
		{"no name", AgentCard{}, "name"},
		{"blank name", AgentCard{Name: " \t\n"}, "name"},
		{"name not UTF-8", AgentCard{Name: "a\xffb"}, "name"},
		{"long name", AgentCard{Name: text(MaxCardTextBytes + 1)}, "name"},
		{"description not UTF-8", AgentCard{Name: "A", Description: "\xc3"}, "description"},
		{"long description", AgentCard{Name: "A", Description: text(MaxCardDescBytes + 1)}, "description"},
		{"version not UTF-8", AgentCard{Name: "A", Version: "\xff"}, "version"},
		{"long version", AgentCard{Name: "A", Version: text(MaxCardTextBytes + 1)}, "version"},
		{"too many skills", AgentCard{Name: "A", Skills: skills(MaxCardSkills + 1)}, "skills"},
		{"skill without id", skill(func(s *AgentSkill) { s.ID = "" }), "skills[1].id"},
		{"skill with blank id", skill(func(s *AgentSkill) { s.ID = "  " }), "skills[1].id"},
		{"skill with long id", skill(func(s *AgentSkill) { s.ID = text(MaxCardTextBytes + 1) }), "skills[1].id"},
		{"skill id taken", skill(func(s *AgentSkill) { s.ID = "ok" }), "skills[1].id"},
		{"skill with a blank name", skill(func(s *AgentSkill) { s.Name = "  " }), "skills[1].name"},
		{"skill with long name", skill(func(s *AgentSkill) { s.Name = text(MaxCardTextBytes + 1) }), "skills[1].name"},
		{"skill description not UTF-8", skill(func(s *AgentSkill) { s.Description = "\xff" }), "skills[1].description"},
		{"skill with long description", skill(func(s *AgentSkill) { s.Description = text(MaxCardDescBytes + 1) }), "skills[1].description"},
		{"too many tags", skill(func(s *AgentSkill) { s.Tags = list(MaxCardListEntries + 1) }), "skills[1].tags"},
		{"blank tag", skill(func(s *AgentSkill) { s.Tags = []string{"go", " "} }), "skills[1].tags[1]"},
		{"long tag", skill(func(s *AgentSkill) { s.Tags = []string{text(MaxCardTextBytes + 1)} }), "skills[1].tags[0]"},
		{"too many examples", skill(func(s *AgentSkill) { s.Examples = list(MaxCardListEntries + 1) }), "skills[1].examples"},
		{"empty example", skill(func(s *AgentSkill) { s.Examples = []string{""} }), "skills[1].examples[0]"},
		{"long example", skill(func(s *AgentSkill) { s.Examples = []string{"e", text(MaxCardDescBytes + 1)} }), "skills[1].examples[1]"},
		{"too many input modes", AgentCard{Name: "A", DefaultInputModes: list(MaxCardListEntries + 1)}, "default_input_modes"},
		{"blank input mode", AgentCard{Name: "A", DefaultInputModes: []string{""}}, "default_input_modes[0]"},
		{"input mode not UTF-8", AgentCard{Name: "A", DefaultInputModes: []string{"text/plain", "\xff"}}, "default_input_modes[1]"},
		{"long input mode", AgentCard{Name: "A", DefaultInputModes: []string{text(MaxCardTextBytes + 1)}}, "default_input_modes[0]"},
		{"too many output modes", AgentCard{Name: "A", DefaultOutputModes: list(MaxCardListEntries + 1)}, "default_output_modes"},
		{"blank output mode", AgentCard{Name: "A", DefaultOutputModes: []string{"\t"}}, "default_output_modes[0]"},
		{"long output mode", AgentCard{Name: "A", DefaultOutputModes: []string{text(MaxCardTextBytes + 1)}}, "default_output_modes[0]"},
	} {
		_, err := NormalizeCard(tc.card)
		wantInvalid(t, tc.name, err, tc.field)
	}
	_, err := NormalizeCard(skill(func(s *AgentSkill) { s.ID = "ok" }))
	if err == nil || !strings.Contains(err.Error(), "skills[0] already has") {
		t.Errorf("a taken skill id: %v, want it to name the skill that has it", err)
	}
}

// The bounds are inclusive, and a card's lists are never null.
func TestNormalizeCardAcceptsTheBounds(t *testing.T) {
	text := func(n int) string { return strings.Repeat("t", n) }
	many := make([]string, MaxCardListEntries)
	for i := range many {
		many[i] = text(MaxCardTextBytes)
	}
	skills := make([]AgentSkill, MaxCardSkills)
	for i := range skills {
		skills[i] = AgentSkill{ID: text(i + 1), Name: text(MaxCardTextBytes)}
	}
	skills[0].Description = text(MaxCardDescBytes)
	skills[0].Tags = many
	skills[0].Examples = []string{text(MaxCardDescBytes)}
	in := AgentCard{Name: text(MaxCardTextBytes), Description: text(MaxCardDescBytes), Version: text(MaxCardTextBytes),
		Skills: skills, DefaultInputModes: many, DefaultOutputModes: many}
	out, err := NormalizeCard(in)
	if err != nil {
		t.Fatalf("a card at every bound: %v", err)
	}
	if !reflect.DeepEqual(out.Skills[0], in.Skills[0]) || out.Name != in.Name || len(out.Skills) != MaxCardSkills {
		t.Fatal("normalizing changed a valid card's values")
	}
	for i, s := range out.Skills[1:] {
		if s.Tags == nil || s.Examples == nil {
			t.Fatalf("skills[%d] has a null list after normalizing: %+v", i+1, s)
		}
	}
	empty, err := NormalizeCard(AgentCard{Name: "A"})
	if err != nil || empty.Skills == nil || empty.DefaultInputModes == nil || empty.DefaultOutputModes == nil {
		t.Fatalf("a card with no lists: %+v, %v; want every list empty, not null", empty, err)
	}
}

// sendA2ATo sends an A2A task from sender to recipient in context ctxID.
func (b *box) sendA2ATo(sender, to, ctxID string) string {
	b.t.Helper()
	return b.sendA2AWith(sender, to, ctxID, "")
}

func pageIDs(p AgentTasksPage) []string {
	out := []string{}
	for _, r := range p.Tasks {
		out = append(out, r.Task.ID)
	}
	return out
}

func TestAgentTasksFiltersAndPages(t *testing.T) {
	b := newBox(t)
	a1 := b.sendA2ATo("alice@local", "coder@local", "c1")
	n1 := b.send("alice@local", "coder@local")
	b1 := b.sendA2ATo("bob@local", "coder@local", "c1")
	b.sendA2ATo("alice@local", "writer@local", "c1")
	a2 := b.sendA2ATo("alice@local", "coder@local", "c2")
	b2 := b.sendA2ATo("bob@local", "coder@local", "c2")
	a3 := b.sendA2ATo("alice@local", "coder@local", "c1")
	// Finished tasks are listed too: one canceled, one drained.
	if _, err := b.cancelAs(a2, "alice@local", ""); err != nil {
		t.Fatal(err)
	}
	_, l := b.lease("coder@local") // a1
	if err := b.post(a1, l.LeaseID); err != nil {
		t.Fatal(err)
	}
	b.drain("alice@local")

	query := func(q AgentTasksQuery) AgentTasksPage {
		t.Helper()
		q, err := q.Normalize()
		if err != nil {
			t.Fatal(err)
		}
		return b.s.AgentTasks(q)
	}
	for _, tc := range []struct {
		name string
		q    AgentTasksQuery
		want []string
	}{
		{"every task of coder@local", AgentTasksQuery{Recipient: "coder@local"}, []string{a3, b2, a2, b1, n1, a1}},
		{"alice's", AgentTasksQuery{Recipient: "coder@local", Sender: "alice@local"}, []string{a3, a2, n1, a1}},
		{"context c1", AgentTasksQuery{Recipient: "coder@local", ContextID: "c1"}, []string{a3, b1, a1}},
		{"alice's in c2", AgentTasksQuery{Recipient: "coder@local", Sender: "alice@local", ContextID: "c2"}, []string{a2}},
		{"kept by the caller", AgentTasksQuery{Recipient: "coder@local", Keep: func(r *TaskRecord) bool { return r.State == TaskQueued }}, []string{a3, b2, b1, n1}},
		{"an unknown sender", AgentTasksQuery{Recipient: "coder@local", Sender: "carol@local"}, []string{}},
		{"an unknown recipient", AgentTasksQuery{Recipient: "nobody@local"}, []string{}},
	} {
		p := query(tc.q)
		if got := pageIDs(p); !reflect.DeepEqual(got, tc.want) || p.Total != len(tc.want) || p.Next != 0 {
			t.Errorf("%s: %v total %d next %d, want %v on one page", tc.name, got, p.Total, p.Next, tc.want)
		}
	}

	// Pages of 2: every task once, newest first; Total is the whole count
	// on every page, Next the send seq of the page's last task.
	want := []string{a3, b2, a2, b1, n1, a1}
	q := AgentTasksQuery{Recipient: "coder@local", PageSize: 2}
	var got []string
	for pages := 1; ; pages++ {
		p := query(q)
		if p.Total != 6 || len(p.Tasks) != 2 {
			t.Fatalf("page %d: %d tasks of total %d, want 2 of 6", pages, len(p.Tasks), p.Total)
		}
		got = append(got, pageIDs(p)...)
		if p.Next == 0 {
			if pages != 3 {
				t.Fatalf("the listing ended after %d pages, want 3", pages)
			}
			break
		}
		if last := p.Tasks[len(p.Tasks)-1]; p.Next != last.SendSeq {
			t.Fatalf("page %d: next %d, want the last task's send seq %d", pages, p.Next, last.SendSeq)
		}
		q.Before = p.Next
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("paged %v, want %v", got, want)
	}
	// A page that ends the listing exactly has no Next; one past the
	// oldest task is empty.
	rec, _ := b.s.Task(a1)
	if p := query(AgentTasksQuery{Recipient: "coder@local", Before: rec.SendSeq}); len(p.Tasks) != 0 || p.Next != 0 || p.Total != 6 {
		t.Errorf("before the oldest task: %+v", p)
	}
	if p := query(AgentTasksQuery{Recipient: "coder@local", PageSize: 6}); len(p.Tasks) != 6 || p.Next != 0 {
		t.Errorf("a page exactly the listing's size: %d tasks, next %d", len(p.Tasks), p.Next)
	}

	// The records are copies.
	p := query(AgentTasksQuery{Recipient: "coder@local", PageSize: 1})
	p.Tasks[0].History[0].Type = "changed"
	p.Tasks[0].State = "changed"
	if rec, _ := b.s.Task(a3); rec.History[0].Type != EventTaskSent || rec.State != TaskQueued {
		t.Errorf("changing a listed record changed the state: %+v", rec)
	}
}

func TestAgentTasksDefaultPageAndBounds(t *testing.T) {
	b := newBox(t)
	for range DefaultAgentTasksPage + 1 {
		b.send("p", "coder@local")
	}
	q, err := AgentTasksQuery{Recipient: "coder@local"}.Normalize()
	if err != nil || q.PageSize != DefaultAgentTasksPage {
		t.Fatalf("normalized %+v, %v; want page size %d", q, err, DefaultAgentTasksPage)
	}
	p := b.s.AgentTasks(q)
	if len(p.Tasks) != DefaultAgentTasksPage || p.Total != DefaultAgentTasksPage+1 || p.Next == 0 {
		t.Fatalf("default page: %d tasks, total %d, next %d", len(p.Tasks), p.Total, p.Next)
	}
	q.Before = p.Next
	if p := b.s.AgentTasks(q); len(p.Tasks) != 1 || p.Next != 0 {
		t.Fatalf("second page: %d tasks, next %d; want the last one", len(p.Tasks), p.Next)
	}
	if q, err := (AgentTasksQuery{Recipient: "coder@local", PageSize: MaxAgentTasksPage}).Normalize(); err != nil || q.PageSize != MaxAgentTasksPage {
		t.Errorf("page size %d: %+v, %v", MaxAgentTasksPage, q, err)
	}
	for _, n := range []int{-1, MaxAgentTasksPage + 1} {
		_, err := AgentTasksQuery{Recipient: "coder@local", PageSize: n}.Normalize()
		wantInvalid(t, "page size", err, "pageSize")
	}
	for _, r := range []string{"", "Coder@local"} {
		_, err := AgentTasksQuery{Recipient: r}.Normalize()
		wantInvalid(t, "recipient "+r, err, "agent")
	}
}

// A task handed to another recipient is listed under its new one.
func TestAgentTasksFollowARequeueToAnotherRecipient(t *testing.T) {
	b := newBox(t)
	id := b.sendA2A("coder@local")
	_, l := b.lease("coder@local")
	if _, err := b.requeueTo(id, l.LeaseID, "coder2@local"); err != nil {
		t.Fatal(err)
	}
	list := func(r string) []string {
		q, _ := AgentTasksQuery{Recipient: r}.Normalize()
		return pageIDs(b.s.AgentTasks(q))
	}
	if got := list("coder@local"); len(got) != 0 {
		t.Errorf("coder@local still lists %v", got)
	}
	if got := list("coder2@local"); !reflect.DeepEqual(got, []string{id}) {
		t.Errorf("coder2@local lists %v, want [%s]", got, id)
	}
}
