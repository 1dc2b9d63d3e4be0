package mailbox

import (
	"fmt"
	"sort"
	"strconv"
	"unicode/utf8"
)

// The agent registry: which agents the daemon serves as A2A servers, each
// with the card it publishes. Registering and deregistering are events in
// the log like every other change, so the registry replays, compacts into
// snapshots and streams to every console.

// Bounds of an agent card. They keep a card (which every agents listing
// carries) small, and every copy of it readable by any JSON reader.
const (
	MaxCardTextBytes   = 256  // name, version, skill id and name, a tag, a mode
	MaxCardDescBytes   = 4096 // descriptions and examples
	MaxCardSkills      = 100
	MaxCardListEntries = 32 // tags, examples, input and output modes
)

// AgentSkill is one thing a registered agent can do, as its A2A card
// lists it.
type AgentSkill struct {
	ID          string   `json:"id" yaml:"id"`
	Name        string   `json:"name" yaml:"name"`
	Description string   `json:"description" yaml:"description"`
	Tags        []string `json:"tags" yaml:"tags"`
	Examples    []string `json:"examples" yaml:"examples"`
}

// AgentCard is what an operator registers for an agent: the parts of its
// A2A Agent Card that describe the agent. The daemon adds the rest (URLs,
// interfaces, capabilities, security) when it serves the card. The yaml
// names are those of a card file (mailroom agent register --card).
type AgentCard struct {
	Name               string       `json:"name" yaml:"name"`
	Description        string       `json:"description" yaml:"description"`
	Version            string       `json:"version" yaml:"version"`
	Skills             []AgentSkill `json:"skills" yaml:"skills"`
	DefaultInputModes  []string     `json:"default_input_modes" yaml:"default_input_modes"`
	DefaultOutputModes []string     `json:"default_output_modes" yaml:"default_output_modes"`
	// Remote, when set, makes the agent a remote A2A server the daemon
	// delivers its tasks to (see remote.go). Its name may then be left
	// out: the daemon serves the remote's own.
	Remote *RemoteSpec `json:"remote,omitempty" yaml:"remote,omitempty"`
	// Webhook, when set, is called when a result is waiting for this
	// agent as a sender (push.go): its native sends need not poll
	// results/next.
	Webhook *Webhook `json:"webhook,omitempty" yaml:"webhook,omitempty"`
}

// HasSkill reports whether the card lists a skill with id.
func (c *AgentCard) HasSkill(id string) bool {
	for _, s := range c.Skills {
		if s.ID == id {
			return true
		}
	}
	return false
}

// RegisteredAgent is an agent in the registry.
type RegisteredAgent struct {
	Agent          string    `json:"agent"`
	Card           AgentCard `json:"card"`
	RegisteredAtMs int64     `json:"registered_at_ms"`
	// Principal registered it ("" without tokens).
	Principal string `json:"principal,omitempty"`
}

// NormalizeCard validates a card as an operator registers it and returns it
// with its lists never null. Every refusal names the field.
func NormalizeCard(c AgentCard) (AgentCard, error) {
	if c.Webhook != nil {
		w, err := normalizeWebhook(*c.Webhook)
		if err != nil {
			return c, err
		}
		c.Webhook = &w
	}
	if c.Remote != nil {
		r := *c.Remote // the caller's stays as it was
		if err := normalizeRemote("remote", &r); err != nil {
			return c, err
		}
		c.Remote = &r
	}
	if err := cardField("name", c.Name, MaxCardTextBytes, c.Remote == nil, oneLine, "the agent's display name, such as \"Coder\""); err != nil {
		return c, err
	}
	if err := cardField("description", c.Description, MaxCardDescBytes, false, multiLine, "what the agent does"); err != nil {
		return c, err
	}
	if err := cardField("version", c.Version, MaxCardTextBytes, false, oneLine, "the agent's version, such as \"1.0.0\""); err != nil {
		return c, err
	}
	if len(c.Skills) > MaxCardSkills {
		return c, Invalidf("skills", "got %d, expected at most %d", len(c.Skills), MaxCardSkills)
	}
	seen := map[string]int{}
	for i := range c.Skills {
		s := &c.Skills[i]
		f := "skills[" + strconv.Itoa(i) + "]"
		if err := cardField(f+".id", s.ID, MaxCardTextBytes, true, oneLine, "the skill's id, such as \"code-review\""); err != nil {
			return c, err
		}
		if j, dup := seen[s.ID]; dup {
			return c, Invalidf(f+".id", "got %s, which skills[%d] already has; expected ids unique within the card", quote(s.ID), j)
		}
		seen[s.ID] = i
		// A skill's name may be left out (Marianne's cards have none): the
		// served card names it by its id. One that is given says something.
		if s.Name != "" {
			if err := cardField(f+".name", s.Name, MaxCardTextBytes, true, oneLine, "the skill's display name, or no name (its id then names it)"); err != nil {
				return c, err
			}
		}
		if err := cardField(f+".description", s.Description, MaxCardDescBytes, false, multiLine, "what the skill does"); err != nil {
			return c, err
		}
		var err error
		if s.Tags, err = cardList(f+".tags", s.Tags, MaxCardTextBytes, oneLine, "a tag"); err != nil {
			return c, err
		}
		if s.Examples, err = cardList(f+".examples", s.Examples, MaxCardDescBytes, multiLine, "an example request"); err != nil {
			return c, err
		}
	}
	if c.Skills == nil {
		c.Skills = []AgentSkill{}
	}
	var err error
	if c.DefaultInputModes, err = cardList("default_input_modes", c.DefaultInputModes, MaxCardTextBytes, oneLine, "a media type such as \"text/plain\""); err != nil {
		return c, err
	}
	if c.DefaultOutputModes, err = cardList("default_output_modes", c.DefaultOutputModes, MaxCardTextBytes, oneLine, "a media type such as \"text/plain\""); err != nil {
		return c, err
	}
	return c, nil
}

// Whether a card field may hold line breaks and tabs: descriptions and
// examples may (real cards describe their agents in paragraphs); names,
// ids, versions, tags and modes are one line.
const (
	oneLine   = false
	multiLine = true
)

// cardField checks one text field of a card: cardText, and no character
// that could take over a terminal.
func cardField(field, v string, maxBytes int, required, multiline bool, what string) error {
	if err := cardText(field, v, maxBytes, required, what); err != nil {
		return err
	}
	return cardChars(field, v, multiline)
}

func cardText(field, v string, maxBytes int, required bool, what string) error {
	if required {
		if err := nonBlank(field, v, what); err != nil {
			return err
		}
	} else if !utf8.ValidString(v) {
		return Invalidf(field, "got invalid UTF-8, expected %s", what)
	}
	if len(v) > maxBytes {
		return Invalidf(field, "got %d bytes, expected at most %d", len(v), maxBytes)
	}
	return nil
}

// cardChars refuses the characters that would let a card take over the
// terminal of whoever reads it (mailroom agent, the console, a log
// viewer, any A2A client's UI): control characters (C0 but, in
// descriptions, line feed and tab; DEL; C1), the bidi embeddings,
// overrides and isolates that reorder what is shown (Trojan Source), and
// the Unicode line and paragraph separators. The card is checked once,
// here; replay never checks it again.
func cardChars(field, v string, multiline bool) error {
	for i, r := range v {
		switch {
		case multiline && (r == '\n' || r == '\t'):
			continue
		case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f,
			r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069,
			r == 0x2028, r == 0x2029:
		default:
			continue
		}
		want := "one line of text"
		if multiline {
			want = "text whose only control characters are line feeds (\\n) and tabs (\\t)"
		}
		return Invalidf(field, "got %s at byte %d, expected %s, without control characters or bidi overrides", runeName(r), i, want)
	}
	return nil
}

// runeName writes a refused character as U+XXXX with its name, where it
// has a well-known one.
func runeName(r rune) string {
	s := fmt.Sprintf("U+%04X", r)
	names := map[rune]string{0: "NUL", '\t': "TAB", '\n': "LINE FEED", '\r': "CARRIAGE RETURN", 0x1b: "ESCAPE", 0x7f: "DELETE",
		0x202a: "LEFT-TO-RIGHT EMBEDDING", 0x202b: "RIGHT-TO-LEFT EMBEDDING", 0x202c: "POP DIRECTIONAL FORMATTING",
		0x202d: "LEFT-TO-RIGHT OVERRIDE", 0x202e: "RIGHT-TO-LEFT OVERRIDE", 0x2066: "LEFT-TO-RIGHT ISOLATE",
		0x2067: "RIGHT-TO-LEFT ISOLATE", 0x2068: "FIRST STRONG ISOLATE", 0x2069: "POP DIRECTIONAL ISOLATE",
		0x2028: "LINE SEPARATOR", 0x2029: "PARAGRAPH SEPARATOR"}
	if n, ok := names[r]; ok {
		s += " (" + n + ")"
	}
	return s
}

func cardList(field string, vs []string, maxBytes int, multiline bool, what string) ([]string, error) {
	if len(vs) > MaxCardListEntries {
		return vs, Invalidf(field, "got %d entries, expected at most %d", len(vs), MaxCardListEntries)
	}
	for i, v := range vs {
		if err := cardField(field+"["+strconv.Itoa(i)+"]", v, maxBytes, true, multiline, what); err != nil {
			return vs, err
		}
	}
	if vs == nil {
		vs = []string{}
	}
	return vs, nil
}

// DecideRegister returns the agent_registered event that registers (or
// replaces) agent's card. The card must be normalized.
func (s *State) DecideRegister(agent string, card AgentCard, principal string, nowMs int64) (Event, error) {
	if err := ValidateAgentID("agent", agent); err != nil {
		return Event{}, err
	}
	return Event{AtMs: nowMs, Type: EventAgentRegistered, Agent: agent, Card: &card, Principal: principal}, nil
}

// DecideDeregister returns the agent_deregistered event, or not_found when
// agent is not registered.
func (s *State) DecideDeregister(agent, principal string, nowMs int64) (Event, error) {
	if err := ValidateStoredAgentID("agent", agent); err != nil {
		return Event{}, err
	}
	if _, ok := s.registry[agent]; !ok {
		return Event{}, NotRegistered(agent)
	}
	return Event{AtMs: nowMs, Type: EventAgentDeregistered, Agent: agent, Principal: principal}, nil
}

// NotRegistered is the error for an agent that has no card.
func NotRegistered(agent string) *Error {
	return &Error{Code: CodeNotFound,
		Message: "agent: " + agent + " is not registered; register it with `mailroom agent register " + agent + " --card card.yaml` (PUT /a2a/agents/" + agent + ")",
		Details: &ErrorDetails{Field: "agent"}}
}

// Registered returns the registry entry of agent.
func (s *State) Registered(agent string) (RegisteredAgent, bool) {
	r, ok := s.registry[agent]
	if !ok {
		return RegisteredAgent{}, false
	}
	return *r, true
}

// Registry lists every registered agent, sorted by agent id.
func (s *State) Registry() []RegisteredAgent {
	out := make([]RegisteredAgent, 0, len(s.registry))
	for _, r := range s.registry {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Agent < out[j].Agent })
	return out
}

func (s *State) applyRegistry(ev Event) error {
	if err := validAgentIDChars("agent", ev.Agent); err != nil {
		return err
	}
	switch ev.Type {
	case EventAgentRegistered:
		if ev.Card == nil {
			return errorString("agent_registered without a card")
		}
		s.registry[ev.Agent] = &RegisteredAgent{Agent: ev.Agent, Card: *ev.Card, RegisteredAtMs: ev.AtMs, Principal: ev.Principal}
		if ev.Card.Webhook == nil {
			s.dropAgentNotifications(ev.Agent)
		}
	case EventAgentDeregistered:
		if _, ok := s.registry[ev.Agent]; !ok {
			return errorString("agent " + ev.Agent + " is not registered")
		}
		delete(s.registry, ev.Agent)
		s.dropAgentNotifications(ev.Agent)
	}
	return nil
}

type errorString string

func (e errorString) Error() string { return string(e) }

// Page sizes of AgentTasks.
const (
	DefaultAgentTasksPage = 50
	MaxAgentTasksPage     = 100
)

// AgentTasksQuery selects the tasks of one recipient, newest first.
type AgentTasksQuery struct {
	Recipient string
	// Sender, when set, keeps only the tasks it sent.
	Sender string
	// ContextID, when set, keeps only A2A tasks of that context.
	ContextID string
	// Keep, when set, is a further filter; it runs under the state's lock
	// and must not keep the record.
	Keep func(*TaskRecord) bool
	// PageSize: 0 means DefaultAgentTasksPage.
	PageSize int
	// Before continues a listing below this send seq (0: from the newest).
	Before uint64
}

// AgentTasksPage is one page of an AgentTasks listing.
type AgentTasksPage struct {
	Tasks []TaskRecord
	// Next continues the listing (Before of the next query); 0 on the
	// last page.
	Next uint64
	// Total counts every task the query selects, on every page.
	Total int
}

// Normalize checks the query's bounds.
func (q AgentTasksQuery) Normalize() (AgentTasksQuery, error) {
	if err := ValidateAgentID("agent", q.Recipient); err != nil {
		return q, err
	}
	switch {
	case q.PageSize == 0:
		q.PageSize = DefaultAgentTasksPage
	case q.PageSize < 0 || q.PageSize > MaxAgentTasksPage:
		return q, Invalidf("pageSize", "got %d, expected 1 to %d", q.PageSize, MaxAgentTasksPage)
	}
	return q, nil
}

// AgentTasks answers a normalized query.
func (s *State) AgentTasks(q AgentTasksQuery) AgentTasksPage {
	var recs []*taskRec
	for _, t := range s.tasks {
		switch {
		case t.Task.Recipient != q.Recipient,
			q.Sender != "" && t.Task.Sender != q.Sender,
			q.ContextID != "" && (t.Task.A2A == nil || t.Task.A2A.ContextID != q.ContextID),
			q.Keep != nil && !q.Keep(&t.TaskRecord):
			continue
		}
		recs = append(recs, t)
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].SendSeq > recs[j].SendSeq })
	page := AgentTasksPage{Tasks: []TaskRecord{}, Total: len(recs)}
	for _, t := range recs {
		if q.Before != 0 && t.SendSeq >= q.Before {
			continue
		}
		if len(page.Tasks) == q.PageSize {
			page.Next = page.Tasks[len(page.Tasks)-1].SendSeq
			break
		}
		page.Tasks = append(page.Tasks, t.copyRecord())
	}
	return page
}
