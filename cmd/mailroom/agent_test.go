package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/config"
	"github.com/mailroom/mailroom/daemon/auth"
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
	if o.code != exitFailure || !strings.Contains(o.stderr, "writer@local is not registered") || !strings.Contains(o.stderr, "mailroom agent register writer@local") {
		t.Errorf("deregistering twice: exit %d, stderr %q", o.code, o.stderr)
	}
}

func TestAgentRegisterRefusals(t *testing.T) {
	addr := startDaemon(t)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no agent", []string{"agent", "register", "--name", "X"}, exitUsage, "AGENT"},
		{"capitals", []string{"agent", "register", "Coder@local", "--name", "X"}, exitUsage, "lowercase"},
		{"no name", []string{"agent", "register", "coder@local"}, exitUsage, "--name or --card"},
		{"both", []string{"agent", "register", "coder@local", "--card", writeCard(t, "name: X\n"), "--name", "Y"}, exitUsage, "not both"},
		{"bad skill", []string{"agent", "register", "coder@local", "--name", "X", "--skill", "justanid"}, exitUsage, "ID:NAME:DESCRIPTION"},
		{"unknown field", []string{"agent", "register", "coder@local", "--card", writeCard(t, "name: X\nurl: http://x\n")}, exitUsage, "field url not found"},
		{"empty file", []string{"agent", "register", "coder@local", "--card", writeCard(t, "")}, exitUsage, "empty"},
		{"missing file", []string{"agent", "register", "coder@local", "--card", filepath.Join(t.TempDir(), "nope.yaml")}, exitUsage, "no such file"},
		{"no card name", []string{"agent", "register", "coder@local", "--card", writeCard(t, "description: nameless\n")}, exitFailure, "name: got \"\""},
		{"skill without id", []string{"agent", "register", "coder@local", "--card", writeCard(t, "name: X\nskills:\n  - name: Y\n")}, exitFailure, "skills[0].id"},
		{"--all with --skill", []string{"agent", "list", "--all", "--skill", "x"}, exitUsage, "--all"},
		{"unknown sub-verb", []string{"agent", "frob"}, exitUsage, "register or list or deregister"},
	} {
		o := cli(t, addr, tc.args...)
		if o.code != tc.code || !strings.Contains(o.stderr, tc.want) {
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
	o = cliEnv(t, map[string]string{"MAILROOM_ADDR": addr, "MAILROOM_TOKEN": "tok-reg"}, "agent", "register", "coder@local", "--name", "Coder", "--json")
	var reg mailbox.AgentRegisteredResponse
	if o.code != 0 || json.Unmarshal([]byte(o.stdout), &reg) != nil || reg.Agent.Principal != "registrar" {
		t.Fatalf("register with a2a.register: exit %d, stdout %q, stderr %q", o.code, o.stdout, o.stderr)
	}
}
