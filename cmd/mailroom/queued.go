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
	qf := addQueuedRepairFlags(fs, e)
	to := fs.String("to", "", "the new recipient: the task is queued for AGENT ahead of the tasks sent after it (required; needs a2a.send.AGENT)")
	newAgent := fs.Bool("new-agent", false, "AGENT is new, not yet known to the mailbox (without it a move to an agent never registered, heard from or holding tasks is refused, naming the known agents it is close to)")
	pos, err := qf.parse(fs, args, "moving", "to")
	if err != nil {
		return err
	}
	if strings.TrimSpace(*to) == "" {
		return usagef("--to: got %q, expected the agent id of the task's new recipient, such as coder2@local", *to)
	}
	if qf.bf.bulk() && *to == *qf.bf.agent {
		return usagef("--to: got %q, the agent whose tasks are moved; expected another agent", *to)
	}
	return qf.run(ctx, e, pos, mailbox.RepairCommand{Action: mailbox.ActionMove, Recipient: *to, NewAgent: *newAgent})
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
	qf := addQueuedRepairFlags(fs, e)
	message := fs.String("message", "", "the error message the sender receives (default: one naming who canceled it, the recipient and the reason)")
	pos, err := qf.parse(fs, args, "canceling")
	if err != nil {
		return err
	}
	if isSet(fs, "message") && strings.TrimSpace(*message) == "" {
		return usagef("--message: got %q, expected the error the sender should see; leave --message out for one naming the reason", *message)
	}
	return qf.run(ctx, e, pos, mailbox.RepairCommand{Action: mailbox.ActionCancel, Message: *message})
}

// queuedRepairFlags are the flags move and cancel share: the client's,
// the reason, the guard, the bulk selection and --json.
type queuedRepairFlags struct {
	cf        *clientFlags
	reason    *string
	queuedFor *string
	bf        *bulkFlags
	asJSON    *bool
}

func addQueuedRepairFlags(fs *verbFlags, e *env) *queuedRepairFlags {
	return &queuedRepairFlags{
		cf:        addClientFlags(fs, e),
		reason:    fs.String("reason", "", "why, for the audit trail (required)"),
		queuedFor: fs.String("queued-for", "", "refuse unless the task is still queued for this agent, the one you saw (recommended)"),
		bf:        addQueuedBulkFlags(fs),
		asJSON:    fs.Bool("json", false, "print the repair outcome as JSON (with --agent: one line of JSON per task, then the summary)"),
	}
}

// parse parses args (one TASK_ID, or none with --agent) and checks the
// required flags: --reason, which must say why (doing names the repair
// in its error), and the verb's own.
func (q *queuedRepairFlags) parse(fs *verbFlags, args []string, doing string, also ...string) ([]string, error) {
	pos, err := q.bf.parse(fs, args)
	if err != nil {
		return nil, err
	}
	if err := required(fs, append(also, "reason")...); err != nil {
		return nil, err
	}
	if strings.TrimSpace(*q.reason) == "" {
		return nil, usagef("--reason: got %q, expected why you are %s the task", *q.reason, doing)
	}
	return pos, nil
}

// run repairs the task in pos, or every task --agent selects, with cmd
// guarded by --queued-for.
func (q *queuedRepairFlags) run(ctx context.Context, e *env, pos []string, cmd mailbox.RepairCommand) error {
	cmd.QueuedFor = *q.queuedFor
	if q.bf.bulk() {
		return bulkRepair(ctx, e, q.cf, q.bf, *q.asJSON, *q.reason, cmd)
	}
	return repair(ctx, e, q.cf, *q.asJSON, mailbox.RepairRequest{TaskID: pos[0], Reason: *q.reason, Command: cmd})
}
