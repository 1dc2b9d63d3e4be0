package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/mailbox"
)

func writeCard(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "card.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestAgentRegisterListDeregister(t *testing.T) {
	addr := startDaemon(t)
	card := writeCard(t, `
name: Coder
description: writes and fixes Go
version: 1.2.0
skills:
  - id: fix
    name: Fix
    description: fixes failing tests
    tags: [go, ci]
    examples: [fix the flaky test]
  - id: review
    name: Review
    description: reviews a change
default_input_modes: [text/plain]
default_output_modes: [text/plain, application/json]
`)
	out := mustCLI(t, addr, "agent", "register", "coder@local", "--card", card)
	for _, want := range []string{"registered coder@local (Coder, 2 skills)", "A2A base URL: http://" + addr + "/agents/coder@local/", "agent-card.json"} {
		if !strings.Contains(out, want) {
			t.Errorf("register printed %q, want it to say %q", out, want)
		}
	}
	mustCLI(t, addr, "agent", "register", "writer@local", "--name", "Writer", "--skill", "notes:Release notes:drafts notes: short ones")
	// A send makes planner@local known without a card.
	mustCLI(t, addr, "send", "--from", "planner@local", "--to", "coder@local", "--intent", "fix it")

	table := mustCLI(t, addr, "agent", "list")
	if !strings.Contains(table, "coder@local") || !strings.Contains(table, "fix,review") || !strings.Contains(table, "writer@local") || strings.Contains(table, "planner@local") {
		t.Errorf("agent list:\n%s\nwant the two registered agents with their skills, not planner@local", table)
	}
	if all := mustCLI(t, addr, "agent", "list", "--all"); !strings.Contains(all, "planner@local") {
		t.Errorf("agent list --all:\n%s\nwant every known agent", all)
	}
	var listed mailbox.AgentsResponse
	mustJSON(t, addr, &listed, "agent", "list", "--skill", "notes", "--json")
	if len(listed.Agents) != 1 || listed.Agents[0].Agent != "writer@local" || listed.Agents[0].Card.Skills[0].Description != "drafts notes: short ones" {
		t.Fatalf("agent list --skill notes --json: %+v", listed.Agents)
	}

	// Registering again replaces the card.
	mustCLI(t, addr, "agent", "register", "writer@local", "--name", "Writer II")
	mustJSON(t, addr, &listed, "agent", "list", "--json")
	for _, a := range listed.Agents {
		if a.Agent == "writer@local" && (a.Card.Name != "Writer II" || len(a.Card.Skills) != 0) {
			t.Errorf("after re-registering, writer@local's card is %+v", a.Card)
		}
	}

	if out := mustCLI(t, addr, "agent", "deregister", "writer@local"); !strings.Contains(out, "its tasks stay") {
		t.Errorf("deregister printed %q", out)
	}
	o := cli(t, addr, "agent", "deregister", "writer@local")
	if o.code != exitFailure || !strings.Contains(o.stderr, "mailroom agent deregister: AGENT: writer@local is not registered") || !strings.Contains(o.stderr, "mailroom agent register writer@local") {
		t.Errorf("deregistering twice: exit %d, stderr %q", o.code, o.stderr)
	}
}

func TestAgentRegisterRefusals(t *testing.T) {
	addr := startDaemon(t)
	nameless := writeCard(t, "description: nameless\n")
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no agent", []string{"agent", "register", "--name", "X"}, exitUsage, "AGENT"},
		{"capitals", []string{"agent", "register", "Coder@local", "--name", "X"}, exitUsage, "lowercase"},
		{"no name", []string{"agent", "register", "coder@local"}, exitUsage, "--name, --card or --remote"},
		{"both", []string{"agent", "register", "coder@local", "--card", writeCard(t, "name: X\n"), "--name", "Y"}, exitUsage, "not both"},
		{"skill without an id", []string{"agent", "register", "coder@local", "--name", "X", "--skill", ":Name:desc"}, exitUsage, "ID[:NAME[:DESCRIPTION]]"},
		{"unknown field", []string{"agent", "register", "coder@local", "--card", writeCard(t, "name: X\nurl: http://x\n")}, exitUsage, `line 2: unknown key "url", expected name, description, version, skills`},
		{"unknown skill field", []string{"agent", "register", "coder@local", "--card", writeCard(t, "name: X\nskills:\n  - id: a\n    name: A\n    tag: [x]\n")}, exitUsage, `line 5: unknown key "tag" in a skill, expected id, name, description, tags, examples`},
		{"wrong type", []string{"agent", "register", "coder@local", "--card", writeCard(t, "name: X\nskills: fix\n")}, exitUsage, "line 2: cannot unmarshal !!str `fix` into skills, expected a list of skills"},
		{"not YAML", []string{"agent", "register", "coder@local", "--card", writeCard(t, "name: [X\n")}, exitUsage, "--card "},
		{"empty file", []string{"agent", "register", "coder@local", "--card", writeCard(t, "")}, exitUsage, "empty"},
		{"missing file", []string{"agent", "register", "coder@local", "--card", filepath.Join(t.TempDir(), "nope.yaml")}, exitUsage, "no such file"},
		// The daemon refuses these values; the card file is where they were typed.
		{"no card name", []string{"agent", "register", "coder@local", "--card", nameless}, exitUsage, "mailroom agent register: --card " + nameless + ": name: got \"\""},
		{"skill without id", []string{"agent", "register", "coder@local", "--card", writeCard(t, "name: X\nskills:\n  - name: Y\n")}, exitUsage, "skills[0].id: got \"\""},
		// ... and these the flags they were typed into.
		{"blank name", []string{"agent", "register", "coder@local", "--name", " "}, exitUsage, "mailroom agent register: --name: got \" \", expected the agent's display name"},
		{"long description", []string{"agent", "register", "coder@local", "--name", "X", "--description", strings.Repeat("d", 5000)}, exitUsage, "--description: got 5000 bytes"},
		{"same skill twice", []string{"agent", "register", "coder@local", "--name", "X", "--skill", "a:A:", "--skill", "a:B:"}, exitUsage, "--skill #2 (id): got \"a\", which --skill #1 already has"},
		{"blank skill id", []string{"agent", "register", "coder@local", "--name", "X", "--skill", " :A:"}, exitUsage, "--skill #1 (id): got \" \""},
		{"deregister capitals", []string{"agent", "deregister", "Coder@local"}, exitUsage, "AGENT: got \"Coder@local\", expected lowercase"},
		{"deregister nothing", []string{"agent", "deregister"}, exitUsage, "missing AGENT"},
		{"--all with --skill", []string{"agent", "list", "--all", "--skill", "x"}, exitUsage, "--all"},
		{"unknown sub-verb", []string{"agent", "frob"}, exitUsage, "register or list or deregister"},
	} {
		o := cli(t, addr, tc.args...)
		if o.code != tc.code || !strings.Contains(o.stderr, tc.want) || o.stdout != "" {
			t.Errorf("%s: mailroom %s: exit %d, stderr %q; want exit %d naming %q", tc.name, strings.Join(tc.args, " "), o.code, o.stderr, tc.code, tc.want)
		}
	}
	var listed mailbox.AgentsResponse
	mustJSON(t, addr, &listed, "agent", "list", "--all", "--json")
	if len(listed.Agents) != 0 {
		t.Fatalf("refused registrations registered %+v", listed.Agents)
	}
}

func TestAgentRegisterNeedsTheCapability(t *testing.T) {
	addr := startDaemonWith(t, func(c *config.Config) {
		c.Tokens = []auth.Token{
			{Principal: "reader", Token: "tok-read", Caps: []string{auth.CapRead}},
			{Principal: "registrar", Token: "tok-reg", Caps: []string{auth.CapRegister, auth.CapRead}},
		}
	}, nil)
	o := cliEnv(t, map[string]string{"MAILROOM_ADDR": addr, "MAILROOM_TOKEN": "tok-read"}, "agent", "register", "coder@local", "--name", "Coder")
	if o.code != exitFailure || !strings.Contains(o.stderr, "a2a.register") {
		t.Fatalf("register with a2a.read only: exit %d, stderr %q; want a refusal naming a2a.register", o.code, o.stderr)
	}
	if o.stdout != "" || !strings.HasPrefix(o.stderr, "mailroom agent register: ") {
		t.Errorf("register with a2a.read only: stdout %q, stderr %q; want the refusal printed as other verbs print it", o.stdout, o.stderr)
	}
	o = cliEnv(t, map[string]string{"MAILROOM_ADDR": addr, "MAILROOM_TOKEN": "tok-reg"}, "agent", "register", "coder@local", "--name", "Coder", "--json")
	var reg mailbox.AgentRegisteredResponse
	if o.code != 0 || json.Unmarshal([]byte(o.stdout), &reg) != nil || reg.Agent.Principal != "registrar" {
		t.Fatalf("register with a2a.register: exit %d, stdout %q, stderr %q", o.code, o.stdout, o.stderr)
	}
	o = cliEnv(t, map[string]string{"MAILROOM_ADDR": addr, "MAILROOM_TOKEN": "tok-read"}, "agent", "deregister", "coder@local")
	if o.code != exitFailure || !strings.Contains(o.stderr, "mailroom agent deregister: ") || !strings.Contains(o.stderr, "a2a.register") {
		t.Errorf("deregister with a2a.read only: exit %d, stderr %q; want a refusal naming a2a.register", o.code, o.stderr)
	}
	// Listing needs only a2a.read and shows the card registered above.
	o = cliEnv(t, map[string]string{"MAILROOM_ADDR": addr, "MAILROOM_TOKEN": "tok-read"}, "agent", "list")
	if o.code != 0 || !strings.Contains(o.stdout, "coder@local") {
		t.Errorf("agent list with a2a.read: exit %d, stdout %q, stderr %q", o.code, o.stdout, o.stderr)
	}
}

// TestAgentRegisterFromStdin reads a JSON card from stdin with --card -.
func TestAgentRegisterFromStdin(t *testing.T) {
	addr := startDaemon(t)
	var stdout, stderr strings.Builder
	e := &env{stdout: &stdout, stderr: &stderr, stdin: strings.NewReader(`{"name": "Coder", "skills": [{"id": "fix", "name": "Fix", "description": "fixes: tests"}]}`),
		getenv: func(k string) string { return map[string]string{"MAILROOM_ADDR": addr}[k] }}
	if code := runEnv(t.Context(), e, []string{"agent", "register", "coder@local", "--card", "-"}); code != 0 {
		t.Fatalf("register --card - with a JSON card: exit %d, stderr %q", code, stderr.String())
	}
	wantContains(t, "register --card -", stdout.String(), "registered coder@local (Coder, 1 skill)\n", "A2A base URL: http://"+addr+"/agents/coder@local/\n",
		"Agent Card:   http://"+addr+"/agents/coder@local/.well-known/agent-card.json\n")
	var listed mailbox.AgentsResponse
	mustJSON(t, addr, &listed, "agent", "list", "--skill", "fix", "--json")
	if len(listed.Agents) != 1 || listed.Agents[0].Card.Skills[0].Description != "fixes: tests" {
		t.Fatalf("agent list --skill fix --json: %+v", listed.Agents)
	}
	if out := mustCLI(t, addr, "agent", "list", "--skill", "nope"); !strings.Contains(out, `no registered agent has skill "nope"`) {
		t.Errorf("agent list --skill nope printed %q", out)
	}
}

func TestAgentHelp(t *testing.T) {
	o := cliEnv(t, nil, "agent", "--help")
	if o.code != 0 {
		t.Fatalf("mailroom agent --help: exit %d, stderr %q", o.code, o.stderr)
	}
	wantContains(t, "mailroom agent --help", o.stdout, "mailroom agent register", "mailroom agent list", "mailroom agent deregister", "Example:\n  mailroom agent ")
	for _, tt := range []struct {
		sub   string
		flags []string
	}{
		{"register", []string{"-card", "-name", "-description", "-version", "-skill", "-json", "default_input_modes",
			"-remote", "-binding", "-concurrency", "auto, jsonrpc-0.3, jsonrpc-1.0, http+json-1.0, legacy", "--remote http://127.0.0.1:9999/"}},
		{"list", []string{"-skill", "-all", "-json"}},
		{"deregister", []string{"-json"}},
	} {
		name := "mailroom agent " + tt.sub + " --help"
		o := cliEnv(t, nil, "agent", tt.sub, "--help")
		if o.code != 0 {
			t.Errorf("%s: exit %d, stderr %q", name, o.code, o.stderr)
			continue
		}
		wantContains(t, name, o.stdout, append(tt.flags, "Usage:", "Example:\n  mailroom agent "+tt.sub, "Flags:", "-addr", "-token", "-timeout")...)
	}
}

func TestSkillList(t *testing.T) {
	skills := func(ids ...string) []mailbox.AgentSkill {
		out := make([]mailbox.AgentSkill, len(ids))
		for i, id := range ids {
			out[i] = mailbox.AgentSkill{ID: id}
		}
		return out
	}
	long := strings.Repeat("é", 50)
	for _, tt := range []struct {
		skills []mailbox.AgentSkill
		want   string
	}{
		{nil, "-"},
		{skills("fix"), "fix"},
		{skills("fix", "review"), "fix,review"},
		{skills("skill-one", "skill-two", "skill-three", "skill-four", "skill-five"), "skill-one,skill-two,skill-three +2 more"},
		{skills(long), strings.Repeat("é", 39) + "…"},
		{skills(long, "b"), strings.Repeat("é", 31) + "…,b"},
		{skills(long, long), strings.Repeat("é", 31) + "… +1 more"},
		{skills("a", long, "c"), "a +2 more"},
	} {
		got := skillList(tt.skills, 40)
		if got != tt.want {
			t.Errorf("skillList(%d skills) = %q, want %q", len(tt.skills), got, tt.want)
		}
		if n := utf8.RuneCountInString(got); n > 40 {
			t.Errorf("skillList(%d skills) = %q, %d characters, want at most 40", len(tt.skills), got, n)
		}
	}
}

// A skill given by its id alone (as Marianne's cards have it) is
// registered without a name, and the served card names it by its id.
func TestAgentRegisterSkillByIDAlone(t *testing.T) {
	t.Parallel()
	addr := startDaemon(t)
	mustCLI(t, addr, "agent", "register", "marianne@local", "--name", "Marianne", "--skill", "triage", "--skill", "plan::breaks work down")
	resp, err := http.Get("http://" + addr + "/agents/marianne@local/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var card struct {
		Skills []struct{ ID, Name, Description string } `json:"skills"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&card); err != nil || len(card.Skills) != 2 ||
		card.Skills[0].ID != "triage" || card.Skills[0].Name != "triage" || card.Skills[1].Name != "plan" || card.Skills[1].Description != "breaks work down" {
		t.Fatalf("the served card's skills: %+v, %v", card.Skills, err)
	}
}
