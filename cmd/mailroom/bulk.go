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
}

const (
	kindBulkItem   = "a2a_bulk_repair_item"
	kindBulkRepair = "a2a_bulk_repair"
)

// bulkRepair lists the leases (or queued tasks) b selects and repairs each
// with cmd, guarded by what was listed.
func bulkRepair(ctx context.Context, e *env, cf *clientFlags, b *bulkFlags, asJSON bool, reason string, cmd mailbox.RepairCommand) error {
	c, ctx, cancel, err := cf.connect(ctx, e)
	if err != nil {
		return err
	}
	defer cancel()
	minAge := b.staleAfter.Milliseconds()
	filter := mailbox.QueueFilter{State: mailbox.TaskInFlight, Agent: *b.agent, MinLeaseAgeMs: &minAge, Limit: mailbox.MaxLimit}
	if b.queued {
		filter = mailbox.QueueFilter{State: mailbox.TaskQueued, Agent: *b.agent, Limit: mailbox.MaxLimit}
	}
	view, err := c.Queue(ctx, filter)
	if err != nil {
		return err
	}
	if bulkListed != nil {
		bulkListed()
	}
	sum := bulkSummary{Kind: kindBulkRepair, Action: cmd.Action, Agent: *b.agent, DryRun: *b.dryRun}
	now := time.Now()
	for _, t := range view.Tasks {
		line := bulkLine{Kind: kindBulkItem, TaskID: t.Task.ID}
		req := mailbox.RepairRequest{TaskID: t.Task.ID, Reason: reason, Command: cmd}
		var listed, seen string
		if b.queued {
			if t.Task.Recipient != *b.agent || now.UnixMilli()-t.QueuedAtMs < minAge {
				continue // sent by the agent, or not queued long enough
			}
			line.QueuedFor, req.Command.QueuedFor = *b.agent, *b.agent
			listed = fmt.Sprintf("queued %s, attempt %d", age(now, t.QueuedAtMs), t.Attempt)
			seen = "queued for " + *b.agent
		} else {
			if t.LeasedTo != *b.agent {
				continue // sent to the agent, but held by another
			}
			line.LeaseID, req.Command.LeaseID = t.LeaseID, t.LeaseID
			listed = fmt.Sprintf("lease %s, attempt %d, held %s", t.LeaseID, t.Attempt, age(now, t.LeasedAtMs))
			seen = "lease " + t.LeaseID
		}
		sum.Listed++
		if *b.dryRun {
			line.Outcome = "would_repair"
			emitBulk(e.stdout, asJSON, line, fmt.Sprintf("would %s %s (%s)%s", verbOf(cmd), t.Task.ID, listed, toWhom(cmd)))
			continue
		}
		out, err := c.Repair(ctx, req)
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
			emitBulk(e.stdout, asJSON, line, strings.TrimSuffix(fmt.Sprintf("conflict on %s (%s listed): %s\n%s", t.Task.ID, seen, errorText(err), conflictDetails(err)), "\n"))
		case code == mailbox.CodeNotFound && asMailboxError(err, &me):
			sum.Skipped++
			line.Outcome, line.Error = "skipped", me
			emitBulk(e.stdout, asJSON, line, fmt.Sprintf("skipped %s: %s", t.Task.ID, errorText(err)))
		default:
			// Not about this task (the daemon unreachable, the token
			// lacking the right, a move to an agent nobody knows): stop,
			// saying how far it got.
			return fmt.Errorf("after %d of %d repaired: %w", sum.Repaired, sum.Listed, err)
		}
	}
	noun := b.what("lease(s) held by", "task(s) queued for")
	if asJSON {
		if err := json.NewEncoder(e.stdout).Encode(sum); err != nil {
			return err
		}
	} else {
		printBulkSummary(e.stdout, sum, noun, len(view.Tasks) >= mailbox.MaxLimit)
	}
	if sum.Conflicts > 0 {
		return &lineError{msg: fmt.Sprintf("mailroom %s: %d of %d %s changed since they were listed and were not repaired; look again with mailroom status --agent %s",
			verbOf(cmd), sum.Conflicts, sum.Listed, b.what("lease(s)", "queued task(s)"), *b.agent)}
	}
	return nil
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

func printBulkSummary(w io.Writer, s bulkSummary, noun string, cut bool) {
	if s.DryRun {
		fmt.Fprintf(w, "dry run: would %s %d %s %s; nothing changed\n", verbOfAction(s.Action), s.Listed, noun, s.Agent)
	} else {
		fmt.Fprintf(w, "%s: %d repaired, %d conflicts, %d skipped, of %d %s %s\n", verbOfAction(s.Action), s.Repaired, s.Conflicts, s.Skipped, s.Listed, noun, s.Agent)
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
	}
	return "requeue"
}

func toWhom(cmd mailbox.RepairCommand) string {
	if cmd.Recipient != "" {
		return " to " + cmd.Recipient
	}
	return ""
}
