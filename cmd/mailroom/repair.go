package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/mailroom/mailroom/mailbox"
)

const requeueSummary = "put an in-flight task back at the head of its recipient's queue, or hand it to another recipient"

func runRequeue(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, verbHelp{
		verb:    "requeue",
		summary: requeueSummary,
		usage:   "(TASK_ID | --agent AGENT [--stale-after D] [--dry-run]) --reason TEXT --duplicate-risk idempotent|operator-accepted [--to AGENT] [flags]",
		example: "mailroom requeue 6f9619ff-8b86-4d11-b42d-00c04fc964ff --reason 'worker crashed' --duplicate-risk operator-accepted --lease-id 0b5c...\n" +
			"mailroom requeue 6f9619ff-8b86-4d11-b42d-00c04fc964ff --reason 'coder@local is down' --duplicate-risk operator-accepted --to coder2@local\n" +
			"mailroom requeue --agent coder@local --stale-after 10m --to coder2@local --reason 'coder@local is down' --operator-accepted --dry-run   # every lease it holds, each guarded by the lease listed",
	})
	cf := addClientFlags(fs, e)
	reason := fs.String("reason", "", "why, for the audit trail (required)")
	risk := fs.String("duplicate-risk", "", "idempotent (the task says it is safe to run twice) or operator-accepted (you accept the work may run twice) (required)")
	leaseID := fs.String("lease-id", "", "refuse unless this is still the current lease (recommended); a unique prefix of 6+ characters will do")
	to := fs.String("to", "", "hand the task to this agent: it is queued for AGENT, ahead of the tasks sent after it, and the audit trail records the move (needs a2a.send.AGENT)")
	newAgent := fs.Bool("new-agent", false, "with --to: AGENT is new, not yet known to the mailbox (without it a move to an agent never registered, heard from or holding tasks is refused, naming the known agents it is close to)")
	idem := fs.Bool("idempotent", false, "short for --duplicate-risk idempotent")
	accepted := fs.Bool("operator-accepted", false, "short for --duplicate-risk operator-accepted")
	bf := addBulkFlags(fs)
	asJSON := fs.Bool("json", false, "print the repair outcome as JSON (with --agent: one line of JSON per task, then the summary)")
	pos, err := bf.parse(fs, args)
	if err != nil {
		return err
	}
	switch {
	case *idem && *accepted, (*idem || *accepted) && isSet(fs, "duplicate-risk"):
		return usagef("--idempotent, --operator-accepted and --duplicate-risk: give one of them")
	case *idem:
		*risk = "idempotent"
	case *accepted:
		*risk = "operator-accepted"
	case !isSet(fs, "duplicate-risk"):
		return usagef("--duplicate-risk is required (or --idempotent, or --operator-accepted): say whether the work may run twice")
	}
	if err := required(fs, "reason"); err != nil {
		return err
	}
	if strings.TrimSpace(*reason) == "" {
		return usagef("--reason: got %q, expected why you are requeueing", *reason)
	}
	if *newAgent && !isSet(fs, "to") {
		return usagef("--new-agent: only with --to AGENT (it confirms that AGENT is new)")
	}
	if isSet(fs, "to") && strings.TrimSpace(*to) == "" {
		return usagef("--to: got %q, expected the agent id of the task's new recipient, such as coder2@local; leave --to out to requeue for the same recipient", *to)
	}
	var wireRisk string
	switch *risk {
	case "idempotent":
		wireRisk = mailbox.RiskIdempotent
	case "operator-accepted", "operator_accepted":
		wireRisk = mailbox.RiskOperatorAccepted
	default:
		return usagef("--duplicate-risk: got %q, expected idempotent or operator-accepted", *risk)
	}
	cmd := mailbox.RepairCommand{Action: mailbox.ActionRequeue, LeaseID: *leaseID, DuplicateRisk: wireRisk, Recipient: *to, NewAgent: *newAgent}
	if bf.bulk() {
		return bulkRepair(ctx, e, cf, bf, *asJSON, *reason, cmd)
	}
	return repair(ctx, e, cf, *asJSON, mailbox.RepairRequest{TaskID: pos[0], Reason: *reason, Command: cmd})
}

// isSet reports whether the flag name was given, even as "".
func isSet(fs *verbFlags, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

const forceErrorSummary = "end an in-flight task with an error result for its sender"

func runForceError(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, verbHelp{
		verb:    "force-error",
		summary: forceErrorSummary,
		usage:   "(TASK_ID | --agent AGENT [--questions] [--stale-after D] [--dry-run]) --reason TEXT --message TEXT [flags]",
		example: "mailroom force-error 6f9619ff-8b86-4d11-b42d-00c04fc964ff --reason 'agent gone' --message 'coder@local stopped responding' --lease-id 0b5c...\n" +
			"mailroom force-error --agent coder@local --reason 'agent gone' --message 'coder@local stopped responding'   # every lease it holds\n" +
			"mailroom force-error --agent coder@local --questions --reason 'agent gone' --message 'coder@local will not answer' --dry-run   # its leases, and the questions waiting on its answer",
	})
	cf := addClientFlags(fs, e)
	reason := fs.String("reason", "", "why, for the audit trail (required)")
	message := fs.String("message", "", "the error message the sender receives (required)")
	leaseID := fs.String("lease-id", "", "refuse unless this is still the current lease (recommended); a unique prefix of 6+ characters will do")
	bf := addBulkFlags(fs)
	questions := fs.Bool("questions", false, "with --agent: also end the questions waiting on AGENT's answer (tasks it sent whose workers asked it something), each guarded by the lease that asked; the error goes to AGENT as their sender (hand them over first with mailroom hand-over to have another agent get it)")
	asJSON := fs.Bool("json", false, "print the repair outcome as JSON (with --agent: one line of JSON per task, then the summary)")
	pos, err := bf.parse(fs, args)
	if err != nil {
		return err
	}
	if *questions {
		if !bf.bulk() {
			return usagef("--questions: only with --agent (a task waiting on its sender is force-errored by its TASK_ID alone)")
		}
		bf.debts = []string{debtQuestions}
	}
	if err := required(fs, "reason", "message"); err != nil {
		return err
	}
	if strings.TrimSpace(*reason) == "" {
		return usagef("--reason: got %q, expected why you are forcing an error", *reason)
	}
	if strings.TrimSpace(*message) == "" {
		return usagef("--message: got %q, expected the error the sender should see", *message)
	}
	cmd := mailbox.RepairCommand{Action: mailbox.ActionForceError, LeaseID: *leaseID, Message: *message}
	if bf.bulk() {
		return bulkRepair(ctx, e, cf, bf, *asJSON, *reason, cmd)
	}
	return repair(ctx, e, cf, *asJSON, mailbox.RepairRequest{TaskID: pos[0], Reason: *reason, Command: cmd})
}

// repair sends one repair and prints its outcome; a lease-guard conflict is
// an error whose details report prints.
func repair(ctx context.Context, e *env, cf *clientFlags, asJSON bool, req mailbox.RepairRequest) error {
	c, ctx, cancel, err := cf.connect(ctx, e)
	if err != nil {
		return err
	}
	defer cancel()
	if req.TaskID, err = resolveTaskID(ctx, c, req.TaskID, "TASK_ID"); err != nil {
		return err
	}
	if req.Command.LeaseID != "" {
		full, err := resolveLeaseID(ctx, c, req.Command.LeaseID, "--lease-id")
		if err != nil {
			// The lease the operator looked at may have ended since: a
			// prefix of one of the task's past leases is sent whole, and
			// the daemon's conflict report says which lease is current.
			past, ok := pastLease(ctx, c, req.TaskID, req.Command.LeaseID)
			if !ok {
				return err
			}
			full = past
		}
		req.Command.LeaseID = full
	}
	out, err := c.Repair(ctx, req)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(e.stdout, mailbox.RepairedResponse{Kind: mailbox.KindRepaired, Outcome: out})
	}
	printOutcome(e.stdout, out)
	return nil
}

func printOutcome(w io.Writer, out mailbox.RepairOutcome) {
	switch out.Action {
	case mailbox.OutcomeRequeued:
		to := ""
		if out.Recipient != "" {
			to = " for " + out.Recipient
		}
		fmt.Fprintf(w, "requeued task %s: %s again%s after %d attempt(s); the next lease is attempt %d\n", out.TaskID, out.State, to, out.Attempt, out.Attempt+1)
	case mailbox.OutcomeMoved:
		fmt.Fprintf(w, "moved task %s: %s for %s, in its old place\n", out.TaskID, out.State, out.Recipient)
	case mailbox.OutcomeHandedOver:
		what := "its result waits for " + out.Sender + " to drain it"
		if out.State == mailbox.TaskWaiting {
			what = "its question waits on " + out.Sender + "'s answer"
		}
		fmt.Fprintf(w, "handed task %s over to sender %s: %s\n", out.TaskID, out.Sender, what)
	case mailbox.OutcomeCanceled:
		fmt.Fprintf(w, "canceled task %s: %s", out.TaskID, out.State)
		if out.Result != nil {
			fmt.Fprintf(w, " for %s (%q)", out.Result.Sender, out.Result.ErrorMessage)
		}
		fmt.Fprintln(w)
	case mailbox.OutcomeForcedError:
		fmt.Fprintf(w, "forced an error on task %s after %d attempt(s): %s", out.TaskID, out.Attempt, out.State)
		if out.Result != nil {
			fmt.Fprintf(w, " for %s (%q)", out.Result.Sender, out.Result.ErrorMessage)
		}
		fmt.Fprintln(w)
	default:
		fmt.Fprintf(w, "task %s: %s, now %s, attempt %d\n", out.TaskID, out.Action, out.State, out.Attempt)
	}
}

const compactSummary = "fold the log into a snapshot now and start a new log segment"

func runCompact(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, verbHelp{
		verb:    "compact",
		summary: compactSummary,
		usage:   "[flags]",
		example: "mailroom compact --addr 127.0.0.1:7717",
	})
	cf := addClientFlags(fs, e)
	asJSON := fs.Bool("json", false, "print the compaction outcome as JSON")
	if _, err := parseExact(fs, args); err != nil {
		return err
	}
	c, ctx, cancel, err := cf.connect(ctx, e)
	if err != nil {
		return err
	}
	defer cancel()
	out, err := c.Compact(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(e.stdout, mailbox.CompactedResponse{Kind: mailbox.KindCompacted, CompactOutcome: out})
	}
	printCompacted(e.stdout, out)
	return nil
}
