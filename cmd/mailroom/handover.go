package main

import (
	"context"
	"strings"

	"github.com/mailroom/mailroom/mailbox"
)

// `mailroom hand-over` makes another agent the sender of a task that waits
// on its sender: the question its worker asked, or the result it has not
// drained. It is a verb of its own, not a move: a move changes who does
// the work (the recipient); a hand-over changes who the work is for (the
// sender), the agent that answers and drains from then on.

const handOverSummary = "make another agent the sender of a task waiting on its sender (its question to answer, or its result to drain), or of every such task of an agent"

func runHandOver(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, verbHelp{
		verb:    "hand-over",
		summary: handOverSummary,
		usage:   "(TASK_ID [--sent-by AGENT] | --agent AGENT [--questions] [--results] [--stale-after D] [--dry-run]) --to AGENT --reason TEXT [--new-agent] [flags]",
		example: "mailroom hand-over 6f9619ff-8b86-4d11-b42d-00c04fc964ff --sent-by coder@local --to reviewer@local --reason 'coder@local is gone'\n" +
			"mailroom hand-over --agent coder@local --to reviewer@local --reason 'coder@local is gone' --dry-run   # its questions and undrained results, each guarded by coder@local\n" +
			"mailroom hand-over --agent coder@local --results --to reviewer@local --reason 'coder@local is gone'   # only the results it has not drained",
	})
	cf := addClientFlags(fs, e)
	reason := fs.String("reason", "", "why, for the audit trail (required)")
	sentBy := fs.String("sent-by", "", "refuse unless the task's sender is still this agent, the one you saw (recommended)")
	to := fs.String("to", "", "the new sender: the agent that answers the question or drains the result from now on (required)")
	newAgent := fs.Bool("new-agent", false, "AGENT is new, not yet known to the mailbox (without it a hand-over to an agent never registered, heard from or holding tasks is refused, naming the known agents it is close to)")
	bf := &bulkFlags{
		agent:      fs.String("agent", "", "instead of one TASK_ID: every task waiting on this agent as its sender (its questions and its undrained results; see --questions, --results), each guarded by that agent"),
		staleAfter: fs.Duration("stale-after", 0, "with --agent: only questions asked, or results posted, longer ago than this, such as 10m (default: every one)"),
		dryRun:     fs.Bool("dry-run", false, "with --agent: list what would be handed over and change nothing"),
	}
	questions := fs.Bool("questions", false, "with --agent: the questions waiting on AGENT's answer (alone: only those)")
	results := fs.Bool("results", false, "with --agent: the results waiting for AGENT to drain (alone: only those)")
	asJSON := fs.Bool("json", false, "print the outcome as JSON (with --agent: one line of JSON per task, then the summary)")
	pos, err := bf.parse(fs, args)
	if err != nil {
		return err
	}
	if bf.bulk() && isSet(fs, "sent-by") {
		return usagef("--sent-by: with --agent each task is guarded by the agent it was listed for; drop --sent-by")
	}
	if (*questions || *results) && !bf.bulk() {
		return usagef("--questions and --results: only with --agent (a TASK_ID names its task)")
	}
	if err := required(fs, "to", "reason"); err != nil {
		return err
	}
	if strings.TrimSpace(*reason) == "" {
		return usagef("--reason: got %q, expected why you are handing the task over", *reason)
	}
	if strings.TrimSpace(*to) == "" {
		return usagef("--to: got %q, expected the agent id of the task's new sender, such as reviewer@local", *to)
	}
	if bf.bulk() && *to == *bf.agent {
		return usagef("--to: got %q, the agent whose tasks are handed over; expected another agent", *to)
	}
	switch {
	case *questions && !*results:
		bf.debts = []string{debtQuestions}
	case *results && !*questions:
		bf.debts = []string{debtResults}
	default:
		bf.debts = []string{debtQuestions, debtResults}
	}
	cmd := mailbox.RepairCommand{Action: mailbox.ActionHandOver, Sender: *to, SentBy: *sentBy, NewAgent: *newAgent}
	if bf.bulk() {
		return bulkRepair(ctx, e, cf, bf, *asJSON, *reason, cmd)
	}
	return repair(ctx, e, cf, *asJSON, mailbox.RepairRequest{TaskID: pos[0], Reason: *reason, Command: cmd})
}
