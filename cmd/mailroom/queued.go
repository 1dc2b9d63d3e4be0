package main

import (
	"context"
	"strings"

	"github.com/mailroom/mailroom/mailbox"
)

// The repairs of queued tasks: `mailroom move` hands a task nobody has
// leased to another recipient, `mailroom cancel` ends it with an error
// result for its sender. Each is guarded by the recipient the operator saw
// it queued for (--queued-for, or the agent listed with --agent).

const moveSummary = "hand a queued task (or every task queued for an agent) to another recipient, keeping its place"

func runMove(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, verbHelp{
		verb:    "move",
		summary: moveSummary,
		usage:   "(TASK_ID [--queued-for AGENT] | --agent AGENT [--stale-after D] [--dry-run]) --to AGENT --reason TEXT [flags]",
		example: "mailroom move 6f9619ff-8b86-4d11-b42d-00c04fc964ff --queued-for coder@local --to coder2@local --reason 'coder@local is gone'\n" +
			"mailroom move --agent coder@local --to coder2@local --reason 'coder@local is gone' --dry-run   # every task queued for it, each guarded by coder@local",
	})
	cf := addClientFlags(fs, e)
	reason := fs.String("reason", "", "why, for the audit trail (required)")
	to := fs.String("to", "", "the new recipient: the task is queued for AGENT ahead of the tasks sent after it (required; needs a2a.send.AGENT)")
	newAgent := fs.Bool("new-agent", false, "AGENT is new, not yet known to the mailbox (without it a move to an agent never registered, heard from or holding tasks is refused, naming the known agents it is close to)")
	queuedFor := fs.String("queued-for", "", "refuse unless the task is still queued for this agent, the one you saw (recommended)")
	bf := addQueuedBulkFlags(fs)
	asJSON := fs.Bool("json", false, "print the repair outcome as JSON (with --agent: one line of JSON per task, then the summary)")
	pos, err := bf.parse(fs, args)
	if err != nil {
		return err
	}
	if err := required(fs, "to", "reason"); err != nil {
		return err
	}
	if strings.TrimSpace(*reason) == "" {
		return usagef("--reason: got %q, expected why you are moving the task", *reason)
	}
	if strings.TrimSpace(*to) == "" {
		return usagef("--to: got %q, expected the agent id of the task's new recipient, such as coder2@local", *to)
	}
	if bf.bulk() && *to == *bf.agent {
		return usagef("--to: got %q, the agent whose tasks are moved; expected another agent", *to)
	}
	cmd := mailbox.RepairCommand{Action: mailbox.ActionMove, Recipient: *to, NewAgent: *newAgent, QueuedFor: *queuedFor}
	if bf.bulk() {
		return bulkRepair(ctx, e, cf, bf, *asJSON, *reason, cmd)
	}
	return repair(ctx, e, cf, *asJSON, mailbox.RepairRequest{TaskID: pos[0], Reason: *reason, Command: cmd})
}

const cancelSummary = "end a queued task (or every task queued for an agent) with an error result for its sender"

func runCancel(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, verbHelp{
		verb:    "cancel",
		summary: cancelSummary,
		usage:   "(TASK_ID [--queued-for AGENT] | --agent AGENT [--stale-after D] [--dry-run]) --reason TEXT [--message TEXT] [flags]",
		example: "mailroom cancel 6f9619ff-8b86-4d11-b42d-00c04fc964ff --queued-for coder@local --reason 'coder@local is gone'\n" +
			"mailroom cancel --agent coder@local --stale-after 1h --reason 'coder@local is gone' --message 'nobody will do this; send it again to coder2@local'",
	})
	cf := addClientFlags(fs, e)
	reason := fs.String("reason", "", "why, for the audit trail (required)")
	message := fs.String("message", "", "the error message the sender receives (default: one naming who canceled it, the recipient and the reason)")
	queuedFor := fs.String("queued-for", "", "refuse unless the task is still queued for this agent, the one you saw (recommended)")
	bf := addQueuedBulkFlags(fs)
	asJSON := fs.Bool("json", false, "print the repair outcome as JSON (with --agent: one line of JSON per task, then the summary)")
	pos, err := bf.parse(fs, args)
	if err != nil {
		return err
	}
	if err := required(fs, "reason"); err != nil {
		return err
	}
	if strings.TrimSpace(*reason) == "" {
		return usagef("--reason: got %q, expected why you are canceling the task", *reason)
	}
	if isSet(fs, "message") && strings.TrimSpace(*message) == "" {
		return usagef("--message: got %q, expected the error the sender should see; leave --message out for one naming the reason", *message)
	}
	cmd := mailbox.RepairCommand{Action: mailbox.ActionCancel, Message: *message, QueuedFor: *queuedFor}
	if bf.bulk() {
		return bulkRepair(ctx, e, cf, bf, *asJSON, *reason, cmd)
	}
	return repair(ctx, e, cf, *asJSON, mailbox.RepairRequest{TaskID: pos[0], Reason: *reason, Command: cmd})
}
