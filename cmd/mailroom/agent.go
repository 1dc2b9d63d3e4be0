package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/mailroom/mailroom/mailbox"
	"github.com/mailroom/mailroom/tui"
)

const agentSummary = "register agents as A2A servers, list them, deregister them"

func runAgent(ctx context.Context, e *env, args []string) error {
	return runGroup(ctx, e, "agent", agentSummary,
		"  mailroom agent register coder@local --name Coder --skill 'code:Code:fixes Go bugs'\n  mailroom agent register coder@local --card coder.yaml\n  mailroom agent register echo@remote --remote http://127.0.0.1:9999/\n  mailroom agent list --skill code\n  mailroom agent deregister coder@local\n",
		[]subVerb{{"register", agentRegisterSummary, runAgentRegister}, {"list", agentListSummary, runAgentList}, {"deregister", agentDeregisterSummary, runAgentDeregister}}, args)
}

const agentRegisterSummary = "register (or replace) an agent's A2A card, or a remote A2A server the daemon delivers to; the daemon serves it at /agents/AGENT/"

func runAgentRegister(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, verbHelp{
		verb:    "agent register",
		summary: agentRegisterSummary,
		usage:   "AGENT (--card FILE | --name NAME [--description D] [--version V] [--skill ID[:NAME[:DESCRIPTION]]]...) [--remote URL [--binding B] [--concurrency N]] [--webhook URL [--webhook-token T]] [flags]\n  mailroom agent register AGENT --remote URL [--binding B] [--concurrency N] [flags]    # a remote needs no card: the daemon serves the remote's",
		example: "mailroom agent register coder@local --name Coder --description 'writes Go' --skill 'code:Code:fixes failing tests'\nmailroom agent register coder@local --card coder.yaml    # YAML or JSON: name, description, version, skills (id, name, description, tags, examples), default_input_modes, default_output_modes, remote (url, binding, concurrency); - reads stdin\n" + remoteRegisterExamples,
	})
	cf := addClientFlags(fs, e)
	var f registerFlags
	f.bind(fs)
	remote := addRemoteFlags(fs)
	pos, err := parseExact(fs, args, "AGENT")
	if err != nil {
		return err
	}
	if f.webhook == "" && f.webhookToken != "" {
		return usagef("--webhook-token: applies with --webhook only; add --webhook URL")
	}
	spec, err := remote.spec(fs)
	if err != nil {
		return err
	}
	agent := pos[0]
	if err := mailbox.ValidateAgentID("AGENT", agent); err != nil {
		return usagef("%s", errorText(err))
	}
	card, err := f.card(e, spec)
	if err != nil {
		return err
	}
	c, ctx, cancel, err := cf.connect(ctx, e)
	if err != nil {
		return err
	}
	defer cancel()
	reg, err := c.RegisterAgent(ctx, agent, card)
	if err != nil {
		return cardRefusal(err, f.cardPath, spec != nil)
	}
	if f.json {
		return writeJSON(e.stdout, mailbox.AgentRegisteredResponse{Kind: mailbox.KindAgentRegistered, Agent: reg})
	}
	base := strings.TrimSuffix(c.BaseURL(), "/") + "/agents/" + agent + "/"
	if reg.Card.Remote != nil {
		printRemoteRegistered(e.stdout, agent, reg.Card)
	} else {
		fmt.Fprintf(e.stdout, "registered %s (%s, %d skill%s)\n", agent, visible(reg.Card.Name), len(reg.Card.Skills), plural(len(reg.Card.Skills)))
	}
	fmt.Fprintf(e.stdout, "A2A base URL: %s\nAgent Card:   %s.well-known/agent-card.json\n", base, base)
	return nil
}

// registerFlags are agent register's flags for the card, as parsed.
type registerFlags struct {
	cardPath, name, description, version, webhook, webhookToken string
	skills                                                      repeated
	json                                                        bool
}

func (f *registerFlags) bind(fs *verbFlags) {
	fs.StringVar(&f.cardPath, "card", "", "read the card from this YAML or JSON file (- for stdin)")
	fs.StringVar(&f.name, "name", "", "the agent's display name")
	fs.StringVar(&f.description, "description", "", "what the agent does")
	fs.StringVar(&f.version, "version", "", "the agent's version, such as 1.0.0")
	fs.Var(&f.skills, "skill", "a skill as ID[:NAME[:DESCRIPTION]] (repeatable; the description may hold colons; without a name the card shows the id)")
	fs.StringVar(&f.webhook, "webhook", "", "call this URL when a result is waiting for the agent as a sender (a push notification: it need not poll results/next)")
	fs.StringVar(&f.webhookToken, "webhook-token", "", "with --webhook: the token sent with each call (X-A2A-Notification-Token) for the receiver to check")
	fs.BoolVar(&f.json, "json", false, "print the daemon's answer as JSON")
}

// card is the card to register: from --card's file or from the flags,
// with the remote (spec, nil for none) and the webhook the flags give.
func (f *registerFlags) card(e *env, spec *mailbox.RemoteSpec) (mailbox.AgentCard, error) {
	var card mailbox.AgentCard
	var err error
	fromFlags := f.name != "" || f.description != "" || f.version != "" || len(f.skills) > 0
	switch {
	case f.cardPath != "" && fromFlags:
		return card, usagef("--card: give the card either in a file or with --name, --description, --version and --skill, not both")
	case f.cardPath != "":
		if card, err = readCard(e, f.cardPath); err != nil {
			return card, err
		}
		if spec != nil && card.Remote != nil {
			return card, usagef("--remote: the card %s has a remote already; give it either in the file or with --remote, not both", f.cardPath)
		}
	case f.name == "" && spec == nil:
		return card, usagef("--name, --card or --remote: a card needs at least the agent's name, unless the agent is remote (the daemon then serves the remote's own)")
	default:
		if card, err = f.flagCard(); err != nil {
			return card, err
		}
	}
	if spec != nil {
		card.Remote = spec
	}
	if f.webhook != "" {
		if f.cardPath != "" && card.Webhook != nil {
			return card, usagef("--webhook: the card %s has a webhook already; give it either in the file or with --webhook, not both", f.cardPath)
		}
		card.Webhook = &mailbox.Webhook{URL: f.webhook, Token: f.webhookToken}
	}
	return card, nil
}

// flagCard is the card --name, --description, --version and --skill give.
func (f *registerFlags) flagCard() (mailbox.AgentCard, error) {
	card := mailbox.AgentCard{Name: f.name, Description: f.description, Version: f.version}
	for i, s := range f.skills {
		// The name and description may be left out: the card then
		// shows the skill's id as its name.
		id, rest, _ := strings.Cut(s, ":")
		sname, desc, _ := strings.Cut(rest, ":")
		if id == "" {
			return card, usagef("--skill (#%d): got %q, expected ID[:NAME[:DESCRIPTION]] such as 'code:Code:fixes failing tests' or 'code'", i+1, s)
		}
		card.Skills = append(card.Skills, mailbox.AgentSkill{ID: id, Name: sname, Description: desc})
	}
	return card, nil
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
		var te *yaml.TypeError
		if errors.As(err, &te) {
			// Say which key is unknown and which ones there are, in the
			// file's words rather than the Go type's.
			return mailbox.AgentCard{}, usagef("--card %s: %s", path, strings.Join(cardKeyErrors(te.Errors), "; "))
		}
		return mailbox.AgentCard{}, usagef("--card %s: %s", path, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if err := zeroConcurrency(path, data); err != nil {
		return mailbox.AgentCard{}, err
	}
	return card, nil
}

// zeroConcurrency refuses a card file whose remote says concurrency: 0.
// The card holds an int, in which 0 also means "left out" (the default,
// 4), so the file is read once more for whether the key was written.
func zeroConcurrency(path string, data []byte) error {
	var written struct {
		Remote *struct {
			Concurrency *int `yaml:"concurrency"`
		} `yaml:"remote"`
	}
	if yaml.Unmarshal(data, &written) == nil && written.Remote != nil && written.Remote.Concurrency != nil && *written.Remote.Concurrency == 0 {
		return usagef("--card %s: remote.concurrency: got 0, expected 1 to %d tasks in flight at once; leave it out for the default, %d", path, mailbox.MaxRemoteConcurrency, mailbox.DefaultRemoteConcurrency)
	}
	return nil
}

// unknownKey is yaml.v3's words for a key KnownFields refuses.
var unknownKey = regexp.MustCompile(`^(line \d+: )field (.+) not found in type mailbox\.(AgentCard|AgentSkill|RemoteSpec)$`)

// cardTypes names the Go types yaml.v3 mentions as what a card file holds.
var cardTypes = strings.NewReplacer(
	"into []mailbox.AgentSkill", "into skills, expected a list of skills (each id, name, description, tags, examples)",
	"into mailbox.AgentSkill", "into a skill, expected id, name, description, tags, examples",
	"into mailbox.AgentCard", "into a card, expected name, description, version, skills, default_input_modes, default_output_modes, remote, webhook",
	"into mailbox.Webhook", "into webhook, expected url, token, authentication",
	"into mailbox.RemoteSpec", "into remote, expected url, binding, concurrency",
	"into []string", "into a list",
)

func cardKeyErrors(errs []string) []string {
	out := make([]string, len(errs))
	for i, msg := range errs {
		m := unknownKey.FindStringSubmatch(msg)
		switch {
		case m == nil:
			out[i] = cardTypes.Replace(msg)
		case m[3] == "AgentSkill":
			out[i] = fmt.Sprintf("%sunknown key %q in a skill, expected id, name, description, tags, examples", m[1], m[2])
		case m[3] == "RemoteSpec":
			out[i] = fmt.Sprintf("%sunknown key %q in remote, expected url, binding, concurrency (the remote's credentials go in the daemon's configuration)", m[1], m[2])
		case m[3] == "Webhook":
			out[i] = fmt.Sprintf("%sunknown key %q in webhook, expected url, token, authentication", m[1], m[2])
		default:
			out[i] = fmt.Sprintf("%sunknown key %q, expected name, description, version, skills, default_input_modes, default_output_modes, remote, webhook", m[1], m[2])
		}
	}
	return out
}

// skillIndex is a skill's place in the daemon's field names, skills[1].
var skillIndex = regexp.MustCompile(`skills\[(\d+)\]`)

// cardRefusal turns the daemon's refusal of a card value into a usage error
// naming where the user typed it: the card file (whose keys are the
// daemon's field names), or the flag, --skill #2 for skills[1].
func cardRefusal(err error, cardPath string, remoteFlags bool) error {
	var me *mailbox.Error
	if !errors.As(err, &me) || me.Code != mailbox.CodeInvalid || me.Details == nil || me.Details.Field == "" {
		return err
	}
	if arg, ok := remoteFlag(me.Details.Field); ok && remoteFlags {
		msg, _ := strings.CutPrefix(me.Message, me.Details.Field+": ")
		return usagef("%s: %s", arg, msg)
	}
	if f, ok := strings.CutPrefix(me.Details.Field, "webhook."); ok && cardPath == "" {
		msg, _ := strings.CutPrefix(me.Message, me.Details.Field+": ")
		arg := "--webhook"
		if f == "token" {
			arg = "--webhook-token"
		}
		return usagef("%s: %s", arg, msg)
	}
	if cardPath != "" {
		return usagef("--card %s: %s", cardPath, me.Message)
	}
	field := me.Details.Field
	msg, _ := strings.CutPrefix(me.Message, field+": ")
	var arg string
	switch {
	case field == "name" || field == "description" || field == "version":
		arg = "--" + field
	case field == "skills":
		arg = "--skill"
	default:
		m := skillIndex.FindStringSubmatchIndex(field)
		if m == nil || m[0] != 0 {
			return err
		}
		i, _ := strconv.Atoi(field[m[2]:m[3]])
		arg = fmt.Sprintf("--skill #%d", i+1)
		if rest := strings.TrimPrefix(field[m[1]:], "."); rest != "" {
			arg += " (" + rest + ")"
		}
	}
	msg = skillIndex.ReplaceAllStringFunc(msg, func(s string) string {
		i, _ := strconv.Atoi(s[len("skills[") : len(s)-1])
		return fmt.Sprintf("--skill #%d", i+1)
	})
	return usagef("%s: %s", arg, msg)
}

const agentListSummary = "list the registered agents (--all: every agent): when each was last seen, whether it is live or probably gone, what it owes (queue, leases, questions, undrained results), a failing webhook; remote agents' URL, binding, state and deliveries"

func runAgentList(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, verbHelp{
		verb:    "agent list",
		summary: agentListSummary,
		usage:   "[--skill ID] [--all] [--stale-after D] [--json] [flags]",
		example: "mailroom agent list --all   # every agent: who is probably gone, holding what\nmailroom agent list --skill code\nmailroom agent list --json    # a remote agent's card.remote (url, binding, concurrency) and remote (state, since_ms, last_error, in_flight, limit, deliveries)",
	})
	cf := addClientFlags(fs, e)
	skill := fs.String("skill", "", "only agents whose card lists this skill id")
	all := fs.Bool("all", false, "also every agent the mailbox knows without a card")
	asJSON := fs.Bool("json", false, "print one a2a_agents JSON object")
	staleAfter := fs.Duration("stale-after", tui.DefaultStaleAfter, "an agent that owes anything (leases, queued tasks, questions, undrained results) and was not seen for this long is probably gone, as the console says")
	if _, err := parseExact(fs, args); err != nil {
		return err
	}
	if *staleAfter <= 0 {
		return usagef("--stale-after: got %s, expected a positive duration such as 5m", *staleAfter)
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
	if err := printAgents(e.stdout, shown, now, *staleAfter); err != nil {
		return err
	}
	return printRemoteAgents(e.stdout, shown, now)
}

// printAgents writes the agents' table: who each is, when it was last
// seen, whether it is probably gone, what it owes, its webhook.
func printAgents(w io.Writer, shown []mailbox.AgentInfo, now time.Time, staleAfter time.Duration) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tNAME\tSKILLS\tREGISTERED\tLAST SEEN\tSTATE\tQUEUED\tLEASES\tOLDEST LEASE\tQUESTIONS\tUNDRAINED\tWEBHOOK")
	for _, a := range shown {
		name, skills, registered := "-", "-", "-"
		if a.Card != nil {
			name = orDash(truncate(a.Card.Name, 30)) // a remote's may be left to the remote
			skills = skillList(a.Card.Skills, 40)
			registered = age(now, a.RegisteredAtMs) + " ago"
		}
		oldest := "-"
		if a.InFlight > 0 {
			oldest = (time.Duration(a.OldestLeaseAgeMs) * time.Millisecond).Truncate(time.Second).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t%d\t%d\t%s\n", a.Agent, name, skills, registered, lastSeen(a, now), agentState(a, now, staleAfter),
			a.Queued, a.InFlight, oldest, a.Waiting, a.Undrained, webhookState(a))
	}
	return tw.Flush()
}

// lastSeen says when the agent was last seen: now while its long poll
// waits, else an age and, since an age alone is stale once read, the time.
func lastSeen(a mailbox.AgentInfo, now time.Time) string {
	switch {
	case a.Polling:
		return "now (polling)"
	case a.LastSeenMs > 0:
		return age(now, a.LastSeenMs) + " ago (" + time.UnixMilli(a.LastSeenMs).UTC().Format(time.RFC3339) + ")"
	}
	return "never"
}

// webhookState says whether the agent's webhook answers.
func webhookState(a mailbox.AgentInfo) string {
	switch {
	case a.WebhookIsFailing():
		return fmt.Sprintf("failing: %d dead, %d retrying", a.WebhookDead, a.WebhookFailing)
	case a.Card != nil && a.Card.Webhook != nil:
		return "ok"
	}
	return "-"
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
	if err := mailbox.ValidateAgentID("AGENT", pos[0]); err != nil {
		return usagef("%s", errorText(err))
	}
	c, ctx, cancel, err := cf.connect(ctx, e)
	if err != nil {
		return err
	}
	defer cancel()
	if err := c.DeregisterAgent(ctx, pos[0]); err != nil {
		// The daemon names its field, agent; the user typed AGENT.
		var me *mailbox.Error
		if errors.As(err, &me) && me.Details != nil && me.Details.Field == "agent" {
			renamed := *me
			renamed.Message = "AGENT: " + strings.TrimPrefix(me.Message, "agent: ")
			return &renamed
		}
		return err
	}
	if *asJSON {
		return writeJSON(e.stdout, mailbox.AgentDeregisteredResponse{Kind: mailbox.KindAgentDeregistered, Agent: pos[0]})
	}
	fmt.Fprintf(e.stdout, "deregistered %s: its A2A server is gone; its tasks stay in the mailbox\n", pos[0])
	return nil
}

// skillList is a card's skill ids for a table cell of at most width
// characters: whole ids, and how many more did not fit.
func skillList(skills []mailbox.AgentSkill, width int) string {
	if len(skills) == 0 {
		return "-"
	}
	var b strings.Builder
	for i, s := range skills {
		more := ""
		if rest := len(skills) - i - 1; rest > 0 {
			more = fmt.Sprintf(" +%d more", rest)
		}
		if i == 0 {
			// The first id is always shown, cut short if it must be.
			b.WriteString(truncate(s.ID, width-len(more)))
			continue
		}
		id := truncate(s.ID, width)
		if utf8.RuneCountInString(b.String()+","+id+more) > width {
			return fmt.Sprintf("%s +%d more", b.String(), len(skills)-i)
		}
		b.WriteString("," + id)
	}
	return b.String()
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// agentState says, as the console does, whether an agent is live (seen
// within staleAfter, or in a long poll now), probably gone (owing
// anything: leases, work queued for it, questions waiting on its answer,
// results waiting for it to drain; and not seen for staleAfter, or never
// since its last action the log knows), quiet (seen before, owing
// nothing) or never seen; a remote agent never calls, so its state is the
// dispatcher's (its own table).
func agentState(a mailbox.AgentInfo, now time.Time, staleAfter time.Duration) string {
	if a.Card != nil && a.Card.Remote != nil {
		return "remote"
	}
	recent := a.Polling || a.LastSeenMs > 0 && now.Sub(time.UnixMilli(a.LastSeenMs)) <= staleAfter
	switch {
	case recent:
		return "live"
	case a.Owes() > 0:
		return "probably gone"
	case a.LastSeenMs > 0:
		return "quiet"
	}
	return "never seen"
}
