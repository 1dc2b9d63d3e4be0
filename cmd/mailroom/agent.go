package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/mailroom/mailroom/mailbox"
)

const agentSummary = "register agents as A2A servers, list them, deregister them"

func runAgent(ctx context.Context, e *env, args []string) error {
	return runGroup(ctx, e, "agent", agentSummary,
		"  mailroom agent register coder@local --name Coder --skill 'code:Code:fixes Go bugs'\n  mailroom agent register coder@local --card coder.yaml\n  mailroom agent list --skill code\n  mailroom agent deregister coder@local\n",
		[]subVerb{{"register", agentRegisterSummary, runAgentRegister}, {"list", agentListSummary, runAgentList}, {"deregister", agentDeregisterSummary, runAgentDeregister}}, args)
}

const agentRegisterSummary = "register (or replace) an agent's A2A card; the daemon serves it at /agents/AGENT/"

func runAgentRegister(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, verbHelp{
		verb:    "agent register",
		summary: agentRegisterSummary,
		usage:   "AGENT (--card FILE | --name NAME [--description D] [--version V] [--skill ID:NAME:DESCRIPTION]...) [flags]",
		example: "mailroom agent register coder@local --name Coder --description 'writes Go' --skill 'code:Code:fixes failing tests'\nmailroom agent register coder@local --card coder.yaml    # YAML or JSON: name, description, version, skills (id, name, description, tags, examples), default_input_modes, default_output_modes; - reads stdin",
	})
	cf := addClientFlags(fs, e)
	cardPath := fs.String("card", "", "read the card from this YAML or JSON file (- for stdin)")
	name := fs.String("name", "", "the agent's display name")
	description := fs.String("description", "", "what the agent does")
	version := fs.String("version", "", "the agent's version, such as 1.0.0")
	var skills repeated
	fs.Var(&skills, "skill", "a skill as ID:NAME:DESCRIPTION (repeatable; the description may hold colons)")
	asJSON := fs.Bool("json", false, "print the daemon's answer as JSON")
	pos, err := parseExact(fs, args, "AGENT")
	if err != nil {
		return err
	}
	agent := pos[0]
	if err := mailbox.ValidateAgentID("AGENT", agent); err != nil {
		return usagef("%s", errorText(err))
	}
	var card mailbox.AgentCard
	fromFlags := *name != "" || *description != "" || *version != "" || len(skills) > 0
	switch {
	case *cardPath != "" && fromFlags:
		return usagef("--card: give the card either in a file or with --name, --description, --version and --skill, not both")
	case *cardPath != "":
		if card, err = readCard(e, *cardPath); err != nil {
			return err
		}
	case *name == "":
		return usagef("--name or --card: a card needs at least the agent's name")
	default:
		card = mailbox.AgentCard{Name: *name, Description: *description, Version: *version}
		for i, s := range skills {
			id, rest, ok := strings.Cut(s, ":")
			sname, desc, _ := strings.Cut(rest, ":")
			if !ok || id == "" || sname == "" {
				return usagef("--skill (#%d): got %q, expected ID:NAME:DESCRIPTION such as 'code:Code:fixes failing tests'", i+1, s)
			}
			card.Skills = append(card.Skills, mailbox.AgentSkill{ID: id, Name: sname, Description: desc})
		}
	}
	c, ctx, cancel, err := cf.connect(ctx, e)
	if err != nil {
		return err
	}
	defer cancel()
	reg, err := c.RegisterAgent(ctx, agent, card)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(e.stdout, mailbox.AgentRegisteredResponse{Kind: mailbox.KindAgentRegistered, Agent: reg})
	}
	base := strings.TrimSuffix(c.BaseURL(), "/") + "/agents/" + agent + "/"
	fmt.Fprintf(e.stdout, "registered %s (%s, %d skill%s)\nA2A base URL: %s\nAgent Card:   %s.well-known/agent-card.json\n",
		agent, reg.Card.Name, len(reg.Card.Skills), plural(len(reg.Card.Skills)), base, base)
	return nil
}

// readCard reads a card file (or stdin for -), refusing fields it does
// not know so a misspelt key is not silently dropped. YAML is a superset of
// JSON, so one decoder reads both.
func readCard(e *env, path string) (mailbox.AgentCard, error) {
	var data []byte
	var err error
	if path == "-" {
		in := e.stdin
		if in == nil {
			in = os.Stdin
		}
		data, err = io.ReadAll(in)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return mailbox.AgentCard{}, usagef("--card: %v", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var card mailbox.AgentCard
	if err := dec.Decode(&card); err != nil {
		if errors.Is(err, io.EOF) {
			return mailbox.AgentCard{}, usagef("--card %s: the file is empty, expected a card with at least name", path)
		}
		return mailbox.AgentCard{}, usagef("--card %s: %v (expected name, description, version, skills, default_input_modes, default_output_modes)", path, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	return card, nil
}

const agentListSummary = "list the registered agents: name, skills, queue and leases"

func runAgentList(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, verbHelp{
		verb:    "agent list",
		summary: agentListSummary,
		usage:   "[--skill ID] [--all] [--json] [flags]",
		example: "mailroom agent list --skill code",
	})
	cf := addClientFlags(fs, e)
	skill := fs.String("skill", "", "only agents whose card lists this skill id")
	all := fs.Bool("all", false, "also every agent the mailbox knows without a card")
	asJSON := fs.Bool("json", false, "print one a2a_agents JSON object")
	if _, err := parseExact(fs, args); err != nil {
		return err
	}
	if *skill != "" && *all {
		return usagef("--all: agents without a card have no skills; drop --all or --skill")
	}
	c, ctx, cancel, err := cf.connect(ctx, e)
	if err != nil {
		return err
	}
	defer cancel()
	var list []mailbox.AgentInfo
	if *skill != "" {
		list, err = c.AgentsWithSkill(ctx, *skill)
	} else {
		list, err = c.Agents(ctx)
	}
	if err != nil {
		return err
	}
	shown := []mailbox.AgentInfo{}
	for _, a := range list {
		if *all || a.Card != nil {
			shown = append(shown, a)
		}
	}
	if *asJSON {
		return writeJSON(e.stdout, mailbox.AgentsResponse{Kind: mailbox.KindAgents, Agents: shown})
	}
	if len(shown) == 0 {
		switch {
		case *skill != "":
			fmt.Fprintf(e.stdout, "no registered agent has skill %q\n", *skill)
		default:
			fmt.Fprintln(e.stdout, "no agents registered; register one with 'mailroom agent register AGENT --name NAME'")
		}
		return nil
	}
	now := time.Now()
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tNAME\tSKILLS\tREGISTERED\tQUEUED\tIN FLIGHT")
	for _, a := range shown {
		name, skills, registered := "-", "-", "-"
		if a.Card != nil {
			name = a.Card.Name
			ids := make([]string, len(a.Card.Skills))
			for i, s := range a.Card.Skills {
				ids[i] = s.ID
			}
			if skills = strings.Join(ids, ","); skills == "" {
				skills = "-"
			}
			if len(skills) > 40 {
				skills = skills[:37] + "..."
			}
			registered = age(now, a.RegisteredAtMs) + " ago"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\n", a.Agent, name, skills, registered, a.Queued, a.InFlight)
	}
	return tw.Flush()
}

const agentDeregisterSummary = "remove an agent's A2A card (its tasks stay)"

func runAgentDeregister(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, verbHelp{
		verb:    "agent deregister",
		summary: agentDeregisterSummary,
		usage:   "AGENT [flags]",
		example: "mailroom agent deregister coder@local",
	})
	cf := addClientFlags(fs, e)
	asJSON := fs.Bool("json", false, "print the daemon's answer as JSON")
	pos, err := parseExact(fs, args, "AGENT")
	if err != nil {
		return err
	}
	c, ctx, cancel, err := cf.connect(ctx, e)
	if err != nil {
		return err
	}
	defer cancel()
	if err := c.DeregisterAgent(ctx, pos[0]); err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(e.stdout, mailbox.AgentDeregisteredResponse{Kind: mailbox.KindAgentDeregistered, Agent: pos[0]})
	}
	fmt.Fprintf(e.stdout, "deregistered %s: its A2A server is gone; its tasks stay in the mailbox\n", pos[0])
	return nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
