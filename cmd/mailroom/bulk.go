package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mailroom/mailroom/mailbox"
)

// Bulk repairs from the CLI: `mailroom requeue --agent A` and `mailroom
// force-error --agent A` repair every lease A holds (those held longer
// than --stale-after), each guarded by the lease listed; `mailroom move
// --agent A` and `mailroom cancel --agent A` repair every task queued for
// A (those queued longer than --stale-after), each guarded by A, the
// recipient listed. A task that changed since it was listed is a
// conflict, reported, and never repaired blindly. One line a task, then a
// summary; exit 1 when any conflicted.

// bulkListed, set by tests only, runs between the listing and the
// repairs: where a lease changes hands under an operator's feet.
var bulkListed func()

// bulkFlags are the flags that turn a repair of one task into a repair of
// an agent's leases.
type bulkFlags struct {
	agent      *string
	staleAfter *time.Duration
	dryRun     *bool
	// queued: the repair is of queued tasks (move, cancel), not leases.
	queued bool
	// debts are the kinds of debt beside leases the repair takes
	// (force-error --questions), or all it takes (hand-over).
	debts []string
}

func addBulkFlags(fs *verbFlags) *bulkFlags {
	return &bulkFlags{
		agent:      fs.String("agent", "", "instead of one TASK_ID: every lease this agent holds, each guarded by the lease listed"),
		staleAfter: fs.Duration("stale-after", 0, "with --agent: only leases held longer than this, such as 10m (default: every one)"),
		dryRun:     fs.Bool("dry-run", false, "with --agent: list what would be repaired and change nothing"),
	}
}

// addQueuedBulkFlags are the bulk flags of a repair of queued tasks.
func addQueuedBulkFlags(fs *verbFlags) *bulkFlags {
	return &bulkFlags{queued: true,
		agent:      fs.String("agent", "", "instead of one TASK_ID: every task queued for this agent, each guarded by that agent (a task leased or moved since it was listed is a conflict)"),
		staleAfter: fs.Duration("stale-after", 0, "with --agent: only tasks queued longer than this, such as 10m (default: every one)"),
		dryRun:     fs.Bool("dry-run", false, "with --agent: list what would be repaired and change nothing"),
	}
}

func (b *bulkFlags) bulk() bool { return *b.agent != "" }

// what says leases or queued tasks, by whether b selects queued tasks.
func (b *bulkFlags) what(leases, queued string) string {
	if b.queued {
		return queued
	}
	return leases
}

// guardFlag is the flag that guards a repair of one task.
func guardFlag(fs *verbFlags) string {
	if fs.Lookup("queued-for") != nil {
		return "--queued-for"
	}
	if fs.Lookup("sent-by") != nil {
		return "--sent-by"
	}
	return "--lease-id"
}

// parse parses args: one TASK_ID, or none with --agent.
func (b *bulkFlags) parse(fs *verbFlags, args []string) ([]string, error) {
	pos, err := parseArgs(fs, args)
	if err != nil {
		return nil, err
	}
	agentSet := isSet(fs, "agent")
	switch {
	case agentSet && strings.TrimSpace(*b.agent) == "":
		return nil, usagef("--agent: got %q, expected the agent whose %s to repair, such as coder@local", *b.agent, b.what("leases", "queued tasks"))
	case agentSet && len(pos) > 0:
		return nil, usagef("unexpected argument %q: give a TASK_ID or --agent, not both", pos[0])
	case agentSet && isSet(fs, "lease-id"):
		return nil, usagef("--lease-id: with --agent each task is guarded by the lease listed for it; drop --lease-id")
	case agentSet && isSet(fs, "queued-for"):
		return nil, usagef("--queued-for: with --agent each task is guarded by the agent it was listed for; drop --queued-for")
	case !agentSet && (isSet(fs, "stale-after") || isSet(fs, "dry-run")):
		return nil, usagef("--stale-after and --dry-run: only with --agent (a repair of one task is guarded by %s)", guardFlag(fs))
	case !agentSet && len(pos) == 0 && fs.Lookup("sent-by") != nil:
		return nil, usagef("missing TASK_ID (or --agent AGENT, for every task waiting on the agent as its sender)")
	case !agentSet && len(pos) == 0:
		return nil, usagef("missing TASK_ID (or --agent AGENT, for %s)", b.what("every lease the agent holds", "every task queued for the agent"))
	case len(pos) > 1:
		return nil, usagef("unexpected argument %q", pos[1])
	case *b.staleAfter < 0:
		return nil, usagef("--stale-after: got %s, expected a duration of 0 or more, such as 10m", *b.staleAfter)
	}
	return pos, nil
}

// bulkLine is one task of a bulk repair, as --json prints it.
type bulkLine struct {
	Kind    string `json:"kind"` // "a2a_bulk_repair_item"
	TaskID  string `json:"task_id"`
	LeaseID string `json:"lease_id,omitempty"` // the lease listed, the guard of a lease's repair
	// QueuedFor is the recipient listed, the guard of a queued task's.
	QueuedFor string `json:"queued_for,omitempty"`
	// SentBy is the sender listed, the guard of a hand-over.
	SentBy string `json:"sent_by,omitempty"`
	// What is the kind of debt the task is: "lease", "queued",
	// "question" (waiting on the agent's answer) or "result" (waiting
	// for the agent to drain it).
	What string `json:"what"`
	// Outcome is "repaired", "would_repair" (a dry run), "conflict" or
	// "skipped" (the task left the mailbox since it was listed).
	Outcome  string                 `json:"outcome"`
	Repaired *mailbox.RepairOutcome `json:"repaired,omitempty"`
	Error    *mailbox.Error         `json:"error,omitempty"`
}

// bulkSummary ends a bulk repair.
type bulkSummary struct {
	Kind      string `json:"kind"` // "a2a_bulk_repair"
	Action    string `json:"action"`
	Agent     string `json:"agent"`
	DryRun    bool   `json:"dry_run"`
	Listed    int    `json:"listed"`
	Repaired  int    `json:"repaired"`
	Conflicts int    `json:"conflicts"`
	Skipped   int    `json:"skipped"`
	// Listed by kind, when the repair takes more than one kind (or
	// questions or results).
	Leases    int `json:"leases,omitempty"`
	Queued    int `json:"queued,omitempty"`
	Questions int `json:"questions,omitempty"`
	Results   int `json:"results,omitempty"`
}

const (
	kindBulkItem   = "a2a_bulk_repair_item"
	kindBulkRepair = "a2a_bulk_repair"
)

// The kinds of debt a bulk repair selects.
const (
	debtLeases    = "lease"
	debtQueued    = "queued"
	debtQuestions = "question"
	debtResults   = "result"
)

// bulkItem is one task a bulk repair listed: its request, guarded by what
// was listed, and how the lines name it.
type bulkItem struct {
	what         string
	req          mailbox.RepairRequest
	line         bulkLine
	listed, seen string
}

// kinds are the kinds of debt b selects, in the order they are repaired.
func (b *bulkFlags) kinds(cmd mailbox.RepairCommand) []string {
	switch {
	case cmd.Action == mailbox.ActionHandOver:
		return b.debts
	case b.queued:
		return []string{debtQueued}
	}
	return append([]string{debtLeases}, b.debts...)
}

// listBulk lists what b selects of agent's debts, oldest first per kind.
func listBulk(ctx context.Context, c bulkClient, b *bulkFlags, kinds []string, reason string, cmd mailbox.RepairCommand, now time.Time) ([]bulkItem, bool, error) {
	agent, minAge := *b.agent, b.staleAfter.Milliseconds()
	var items []bulkItem
	cut := false
	for _, kind := range kinds {
		var filter mailbox.QueueFilter
		switch kind {
		case debtLeases:
			filter = mailbox.QueueFilter{State: mailbox.TaskInFlight, Agent: agent, MinLeaseAgeMs: &minAge, Limit: mailbox.MaxLimit}
		case debtQueued:
			filter = mailbox.QueueFilter{State: mailbox.TaskQueued, Agent: agent, Limit: mailbox.MaxLimit}
		case debtQuestions:
			// The agent filter keeps the tasks sent to it: the ones it
			// sent are picked here.
			filter = mailbox.QueueFilter{State: mailbox.TaskWaiting, Limit: mailbox.MaxLimit}
		case debtResults:
			filter = mailbox.QueueFilter{State: mailbox.TaskWaiting, Agent: agent, Limit: mailbox.MaxLimit}
		}
		view, err := c.Queue(ctx, filter)
		if err != nil {
			return nil, false, err
		}
		if kind == debtResults {
			cut = cut || len(view.Results) >= mailbox.MaxLimit
			for _, r := range view.Results {
				if r.Sender != agent || mailbox.Asks(r.Status) || now.UnixMilli()-r.PostedAtMs < minAge {
					continue // sent to the agent, a question (one of the questions), or too young
				}
				it := bulkItem{what: kind, req: mailbox.RepairRequest{TaskID: r.TaskID, Reason: reason, Command: cmd}}
				it.req.Command.SentBy, it.line.SentBy = agent, agent
				it.listed = fmt.Sprintf("%s result from %s, waiting %s", r.Status, r.Recipient, age(now, r.PostedAtMs))
				it.seen = "sent by " + agent
				items = append(items, it)
			}
			continue
		}
		cut = cut || len(view.Tasks) >= mailbox.MaxLimit
		for _, t := range view.Tasks {
			it := bulkItem{what: kind, req: mailbox.RepairRequest{TaskID: t.Task.ID, Reason: reason, Command: cmd}}
			switch kind {
			case debtQueued:
				if t.Task.Recipient != agent || now.UnixMilli()-t.QueuedAtMs < minAge {
					continue // sent by the agent, or not queued long enough
				}
				it.line.QueuedFor, it.req.Command.QueuedFor = agent, agent
				it.listed = fmt.Sprintf("queued %s, attempt %d", age(now, t.QueuedAtMs), t.Attempt)
				it.seen = "queued for " + agent
			case debtLeases:
				if t.LeasedTo != agent {
					continue // sent to the agent, but held by another
				}
				it.line.LeaseID, it.req.Command.LeaseID = t.LeaseID, t.LeaseID
				it.listed = fmt.Sprintf("lease %s, attempt %d, held %s", t.LeaseID, t.Attempt, age(now, t.LeasedAtMs))
				it.seen = "lease " + t.LeaseID
			case debtQuestions:
				q, ok := t.Task.Question()
				if t.Task.Sender != agent || !ok || now.UnixMilli()-q.AtMs < minAge {
					continue // another sender's, or not waiting long enough
				}
				if cmd.Action == mailbox.ActionHandOver && t.Task.A2A != nil {
					continue // its A2A caller reads it by id: never handed over
				}
				if cmd.Action == mailbox.ActionHandOver {
					it.line.SentBy, it.req.Command.SentBy = agent, agent
					it.seen = "sent by " + agent
				} else {
					// Guarded by the lease that asked: a question
					// answered and leased again since is a conflict.
					it.line.LeaseID, it.req.Command.LeaseID = q.LeaseID, q.LeaseID
					it.seen = "the question asked under lease " + q.LeaseID
				}
				it.listed = fmt.Sprintf("%s asked by %s, waiting %s", q.Status, q.Agent, age(now, q.AtMs))
			}
			items = append(items, it)
		}
	}
	return items, cut, nil
}

// bulkClient is what a bulk repair asks of the daemon.
type bulkClient interface {
	Queue(context.Context, mailbox.QueueFilter) (mailbox.QueueView, error)
	Repair(context.Context, mailbox.RepairRequest) (mailbox.RepairOutcome, error)
	Agents(context.Context) ([]mailbox.AgentInfo, error)
}

// bulkRepair lists the debts of the agent b names that b selects (its
// leases, the tasks queued for it, the questions waiting on its answer,
// the results waiting for it to drain) and repairs each with cmd, guarded
// by what was listed.
func bulkRepair(ctx context.Context, e *env, cf *clientFlags, b *bulkFlags, asJSON bool, reason string, cmd mailbox.RepairCommand) error {
	c, ctx, cancel, err := cf.connect(ctx, e)
	if err != nil {
		return err
	}
	defer cancel()
	if err := checkBulkAgents(ctx, c, b, cmd); err != nil {
		return err
	}
	now := time.Now()
	kinds := b.kinds(cmd)
	items, cut, err := listBulk(ctx, c, b, kinds, reason, cmd, now)
	if err != nil {
		return err
	}
	if bulkListed != nil {
		bulkListed()
	}
	sum := bulkSummary{Kind: kindBulkRepair, Action: cmd.Action, Agent: *b.agent, DryRun: *b.dryRun}
	for _, it := range items {
		sum.count(it.what)
		if *b.dryRun {
			line := it.bulkLine()
			line.Outcome = "would_repair"
			what := ""
			if it.what == debtQuestions || it.what == debtResults {
				what = it.what + " "
			}
			emitBulk(e.stdout, asJSON, line, fmt.Sprintf("would %s %s%s (%s)%s", verbOf(cmd), what, it.req.TaskID, it.listed, toWhom(cmd)))
			continue
		}
		if err := repairBulkItem(ctx, c, e, asJSON, &sum, it); err != nil {
			return err
		}
	}
	if asJSON {
		if err := json.NewEncoder(e.stdout).Encode(sum); err != nil {
			return err
		}
	} else {
		printBulkSummary(e.stdout, sum, kinds, cut)
	}
	if sum.Conflicts > 0 {
		return &lineError{msg: fmt.Sprintf("mailroom %s: %d of %d %s changed since they were listed and were not repaired; look again with mailroom status --agent %s",
			verbOf(cmd), sum.Conflicts, sum.Listed, listedNoun(kinds), *b.agent)}
	}
	return nil
}

// checkBulkAgents refuses a typo in --agent, or in --to without
// --new-agent, before anything is listed: by a dry run as by the real one.
func checkBulkAgents(ctx context.Context, c bulkClient, b *bulkFlags, cmd mailbox.RepairCommand) error {
	known, err := c.Agents(ctx)
	if err != nil {
		return err
	}
	if err := knownAgent(known, "--agent", *b.agent, ""); err != nil {
		return err
	}
	if to := cmd.Recipient + cmd.Sender; to != "" && !cmd.NewAgent {
		if err := knownAgent(known, "--to", to, "--new-agent"); err != nil {
			return err
		}
	}
	return nil
}

// count counts one item listed, of its kind.
func (sum *bulkSummary) count(what string) {
	sum.Listed++
	switch what {
	case debtLeases:
		sum.Leases++
	case debtQueued:
		sum.Queued++
	case debtQuestions:
		sum.Questions++
	case debtResults:
		sum.Results++
	}
}

// bulkLine is the item's line of output, before its outcome.
func (it bulkItem) bulkLine() bulkLine {
	line := it.line
	line.Kind, line.TaskID, line.What = kindBulkItem, it.req.TaskID, it.what
	return line
}

// repairBulkItem repairs one item guarded by what was listed and prints
// its outcome; an error not about this task (the daemon unreachable, the
// token lacking the right) stops the repair, saying how far it got.
func repairBulkItem(ctx context.Context, c bulkClient, e *env, asJSON bool, sum *bulkSummary, it bulkItem) error {
	line := it.bulkLine()
	out, err := c.Repair(ctx, it.req)
	var me *mailbox.Error
	switch code := mailbox.ErrorCode(err); {
	case err == nil:
		sum.Repaired++
		line.Outcome, line.Repaired = "repaired", &out
		var text strings.Builder
		printOutcome(&text, out)
		emitBulk(e.stdout, asJSON, line, strings.TrimSuffix(text.String(), "\n"))
	case code == mailbox.CodeConflict && asMailboxError(err, &me):
		sum.Conflicts++
		line.Outcome, line.Error = "conflict", me
		emitBulk(e.stdout, asJSON, line, strings.TrimSuffix(fmt.Sprintf("conflict on %s (%s listed): %s\n%s", it.req.TaskID, it.seen, errorText(err), conflictDetails(err)), "\n"))
	case code == mailbox.CodeNotFound && asMailboxError(err, &me),
		code == mailbox.CodeConflict && asMailboxError(err, &me) && me.Details != nil && me.Details.Field == "task_id":
		// Gone since it was listed, or never to be repaired so (an
		// A2A task's result is not handed over): not a change to
		// look at again.
		sum.Skipped++
		line.Outcome, line.Error = "skipped", me
		emitBulk(e.stdout, asJSON, line, fmt.Sprintf("skipped %s: %s", it.req.TaskID, errorText(err)))
	default:
		return fmt.Errorf("after %d of %d repaired: %w", sum.Repaired, sum.Listed, err)
	}
	return nil
}

// listedNoun names what a bulk repair of kinds listed.
func listedNoun(kinds []string) string {
	if len(kinds) == 1 {
		switch kinds[0] {
		case debtLeases:
			return "lease(s)"
		case debtQueued:
			return "queued task(s)"
		case debtQuestions:
			return "question(s)"
		case debtResults:
			return "result(s)"
		}
	}
	return "task(s)"
}

// knownAgent refuses (a usage error, exit 2) an agent the mailbox does not
// know, naming the known agents it is close to; confirm, when not "", is
// the flag that would confirm a new one.
func knownAgent(known []mailbox.AgentInfo, flag, agent, confirm string) error {
	ids := make([]string, 0, len(known))
	for _, a := range known {
		if a.Agent == agent {
			return nil
		}
		ids = append(ids, a.Agent)
	}
	msg := fmt.Sprintf("%s: got %q, an agent the mailbox does not know (never registered, heard from, or holding tasks)", flag, agent)
	if close := mailbox.CloseMatches(agent, ids, 5); len(close) > 0 {
		msg += "; did you mean " + strings.Join(close, ", ")
	}
	if confirm != "" {
		return usagef("%s; expected a known agent, or %s to confirm a new one", msg, confirm)
	}
	return usagef("%s; expected a known agent", msg)
}

func asMailboxError(err error, me **mailbox.Error) bool {
	e, ok := err.(*mailbox.Error)
	if !ok {
		return false
	}
	*me = e
	return true
}

// emitBulk prints one task's line: its JSON, or the text.
func emitBulk(w io.Writer, asJSON bool, line bulkLine, text string) {
	if asJSON {
		_ = json.NewEncoder(w).Encode(line)
		return
	}
	fmt.Fprintln(w, text)
}

func printBulkSummary(w io.Writer, s bulkSummary, kinds []string, cut bool) {
	var parts []string
	for _, k := range kinds {
		switch k {
		case debtLeases:
			parts = append(parts, fmt.Sprintf("%d lease(s) held by %s", s.Leases, s.Agent))
		case debtQueued:
			parts = append(parts, fmt.Sprintf("%d task(s) queued for %s", s.Queued, s.Agent))
		case debtQuestions:
			parts = append(parts, fmt.Sprintf("%d question(s) waiting on %s's answer", s.Questions, s.Agent))
		case debtResults:
			parts = append(parts, fmt.Sprintf("%d result(s) waiting for %s to drain", s.Results, s.Agent))
		}
	}
	what := strings.Join(parts, " and ")
	if s.DryRun {
		fmt.Fprintf(w, "dry run: would %s %s; nothing changed\n", verbOfAction(s.Action), what)
	} else {
		fmt.Fprintf(w, "%s: %d repaired, %d conflicts, %d skipped, of %s\n", verbOfAction(s.Action), s.Repaired, s.Conflicts, s.Skipped, what)
	}
	if cut {
		fmt.Fprintf(w, "only the %d oldest were listed; run it again for the rest\n", mailbox.MaxLimit)
	}
}

func verbOf(cmd mailbox.RepairCommand) string { return verbOfAction(cmd.Action) }

func verbOfAction(action string) string {
	switch action {
	case mailbox.ActionForceError:
		return "force-error"
	case mailbox.ActionMove, mailbox.ActionCancel:
		return action
	case mailbox.ActionHandOver:
		return "hand-over"
	}
	return "requeue"
}

func toWhom(cmd mailbox.RepairCommand) string {
	switch {
	case cmd.Recipient != "":
		return " to " + cmd.Recipient
	case cmd.Sender != "":
		return " to " + cmd.Sender
	}
	return ""
}
