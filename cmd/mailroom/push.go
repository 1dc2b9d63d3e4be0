package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/mailbox"
)

const pushSummary = "list the push notifications not yet delivered, retry dead ones, drop them (one, or in bulk)"

func runPush(ctx context.Context, e *env, args []string) error {
	return runGroup(ctx, e, "push", pushSummary,
		"  mailroom push list\n  mailroom push list --failed\n  mailroom push retry 118-1\n  mailroom push retry --receiver https://hooks.example.com/a2a --dry-run\n  mailroom push drop 118-1 --reason 'the receiver was retired'\n  mailroom push drop --all-dead --reason 'the receivers were retired'\n",
		[]subVerb{{"list", pushListSummary, runPushList}, {"retry", pushRetrySummary, runPushRetry}, {"drop", pushDropSummary, runPushDrop}}, args)
}

const pushListSummary = "list the outbox: pending, failing (with the last error and the next try) and dead-lettered notifications"

func runPushList(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, verbHelp{
		verb:    "push list",
		summary: pushListSummary,
		usage:   "[--failed] [flags]",
		example: "mailroom push list --failed",
	})
	cf := addClientFlags(fs, e)
	failed := fs.Bool("failed", false, "only the failing and dead-lettered notifications")
	asJSON := fs.Bool("json", false, "print one a2a_push_list JSON object")
	if _, err := parseExact(fs, args); err != nil {
		return err
	}
	c, ctx, cancel, err := cf.connect(ctx, e)
	if err != nil {
		return err
	}
	defer cancel()
	out, err := c.Deliveries(ctx, *failed)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(e.stdout, out)
	}
	printPush(e.stdout, out, *failed, time.Now())
	return nil
}

func printPush(w io.Writer, out mailbox.PushListing, failed bool, now time.Time) {
	if len(out.Notifications) == 0 {
		if failed {
			fmt.Fprintln(w, "no push notification is failing or dead-lettered")
		} else {
			fmt.Fprintln(w, "the outbox is empty: every push notification was delivered or dropped")
		}
		if out.Dropped > 0 {
			printPushBounds(w, out)
		}
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tTASK\tCONFIG\tEVENT\tAGE\tATTEMPTS\tNEXT TRY\tURL\tLAST ERROR")
	for _, n := range out.Notifications {
		next := "-"
		if n.NextTryMs > 0 {
			next = "in " + time.Until(time.UnixMilli(n.NextTryMs)).Round(time.Second).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", n.ID, n.State, n.TaskID, truncate(n.ConfigID, 24), n.Event,
			age(now, n.CreatedAtMs), n.Attempts, next, orDash(truncate(n.URL, 48)), orDash(truncate(n.LastError, 60)))
	}
	tw.Flush()
	if !out.Delivering {
		fmt.Fprintln(w, "this instance does not deliver (another one leads the mailbox): its attempts are shown there")
	}
	printPushBounds(w, out)
}

// printPushBounds says what the outbox is bounded by and what the bounds
// dropped, so an outbox that stopped growing is explained.
func printPushBounds(w io.Writer, out mailbox.PushListing) {
	b := out.Bounds
	if b == nil {
		return
	}
	bound := func(v int) string {
		if v == 0 {
			return "no bound"
		}
		return fmt.Sprint(v)
	}
	keep := "until an operator acts"
	if b.DeadRetentionMs > 0 {
		keep = (time.Duration(b.DeadRetentionMs) * time.Millisecond).String()
	}
	fmt.Fprintf(w, "bounds: %s per receiver (push_outbox_per_receiver), %s in all (push_outbox_max), dead letters kept %s (push_dead_retention)",
		bound(b.PerReceiver), bound(b.Max), keep)
	if out.Dropped > 0 {
		fmt.Fprintf(w, "; %d dropped by them, oldest first, since this instance began delivering (mailroom audit lists each)", out.Dropped)
	}
	fmt.Fprintln(w)
}

const pushRetrySummary = "put a dead-lettered push notification back in line, or every dead letter of a receiver, of an agent's webhook, or all (audited)"

func runPushRetry(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, verbHelp{
		verb:    "push retry",
		summary: pushRetrySummary,
		usage:   "(ID | --receiver URL | --agent AGENT | --all-dead) [--dry-run] [--reason TEXT] [flags]",
		example: "mailroom push retry 118-1 --reason 'the receiver is back'\n" +
			"mailroom push retry --receiver https://hooks.example.com/a2a --reason 'the receiver is back' --dry-run   # every dead letter to that URL\n" +
			"mailroom push retry --agent planner@local --reason 'its webhook is back'   # every dead letter of its webhook\n" +
			"mailroom push retry --all-dead --reason 'the network is back'",
	})
	cf := addClientFlags(fs, e)
	reason := fs.String("reason", "", "why, for the audit trail")
	sel := addPushBulkFlags(fs, "retry")
	asJSON := fs.Bool("json", false, "print the daemon's answer as JSON (in bulk: a line of JSON per dead letter, then the summary)")
	pos, err := sel.parse(fs, args)
	if err != nil {
		return err
	}
	c, ctx, cancel, err := cf.connect(ctx, e)
	if err != nil {
		return err
	}
	defer cancel()
	if sel.bulk() {
		return pushBulk(ctx, e, c, sel, "retry", *reason, *asJSON)
	}
	n, err := c.RetryNotification(ctx, pos[0], *reason)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(e.stdout, mailbox.PushRetried{Kind: mailbox.KindPushRetried, Notification: n})
	}
	fmt.Fprintf(e.stdout, "push notification %s of task %s is back in line for %s\n", n.ID, n.TaskID, receiverOf(n))
	return nil
}

// receiverOf names where a notification goes: its task's push config, or
// its sender's webhook.
func receiverOf(n mailbox.Notification) string {
	if n.ConfigID == "" && n.Agent != "" {
		return n.Agent + "'s webhook"
	}
	return "push config " + n.ConfigID
}

const pushDropSummary = "drop a push notification, pending or dead-lettered, or every dead letter of a receiver, of an agent's webhook, or all, with a reason (audited)"

func runPushDrop(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, verbHelp{
		verb:    "push drop",
		summary: pushDropSummary,
		usage:   "(ID | --receiver URL | --agent AGENT | --all-dead) [--dry-run] --reason TEXT [flags]",
		example: "mailroom push drop 118-1 --reason 'the receiver was retired'\n" +
			"mailroom push drop --receiver https://hooks.example.com/a2a --reason 'the receiver was retired' --dry-run   # every dead letter to that URL",
	})
	cf := addClientFlags(fs, e)
	reason := fs.String("reason", "", "why, for the audit trail (required)")
	sel := addPushBulkFlags(fs, "drop")
	asJSON := fs.Bool("json", false, "print the daemon's answer as JSON (in bulk: a line of JSON per dead letter, then the summary)")
	pos, err := sel.parse(fs, args)
	if err != nil {
		return err
	}
	if err := required(fs, "reason"); err != nil {
		return err
	}
	if strings.TrimSpace(*reason) == "" {
		return usagef("--reason: got %q, expected why you are dropping it", *reason)
	}
	c, ctx, cancel, err := cf.connect(ctx, e)
	if err != nil {
		return err
	}
	defer cancel()
	if sel.bulk() {
		return pushBulk(ctx, e, c, sel, "drop", *reason, *asJSON)
	}
	if err := c.DropNotification(ctx, pos[0], *reason); err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(e.stdout, mailbox.PushDropped{Kind: mailbox.KindPushDropped, ID: pos[0]})
	}
	fmt.Fprintf(e.stdout, "push notification %s dropped\n", pos[0])
	return nil
}

// pushBulkListed, set by tests only, runs between the listing and the
// retries or drops: where an operator acts on one under another's feet.
var pushBulkListed func()

// pushBulkFlags select the dead letters a bulk retry or drop acts on.
type pushBulkFlags struct {
	receiver, agent *string
	allDead, dryRun *bool
}

func addPushBulkFlags(fs *verbFlags, verb string) *pushBulkFlags {
	return &pushBulkFlags{
		receiver: fs.String("receiver", "", "instead of one ID: every dead letter to this receiver URL (as push list shows it)"),
		agent:    fs.String("agent", "", "instead of one ID: every dead letter of this agent's webhook (its card's)"),
		allDead:  fs.Bool("all-dead", false, "instead of one ID: every dead letter"),
		dryRun:   fs.Bool("dry-run", false, "with --receiver, --agent or --all-dead: list what would be "+map[string]string{"retry": "retried", "drop": "dropped"}[verb]+" and change nothing"),
	}
}

func (p *pushBulkFlags) bulk() bool { return *p.receiver != "" || *p.agent != "" || *p.allDead }

// parse parses args: one ID, or none with exactly one selection.
func (p *pushBulkFlags) parse(fs *verbFlags, args []string) ([]string, error) {
	pos, err := parseArgs(fs, args)
	if err != nil {
		return nil, err
	}
	var given []string
	for _, f := range []string{"receiver", "agent", "all-dead"} {
		if isSet(fs, f) {
			given = append(given, "--"+f)
		}
	}
	switch {
	case isSet(fs, "receiver") && strings.TrimSpace(*p.receiver) == "":
		return nil, usagef("--receiver: got %q, expected a receiver URL as push list shows it", *p.receiver)
	case isSet(fs, "agent") && strings.TrimSpace(*p.agent) == "":
		return nil, usagef("--agent: got %q, expected the agent whose webhook's dead letters to act on, such as planner@local", *p.agent)
	case len(given) > 1:
		return nil, usagef("%s: give one of them", strings.Join(given, " and "))
	case len(given) == 1 && len(pos) > 0:
		return nil, usagef("unexpected argument %q: give an ID or %s, not both", pos[0], given[0])
	case len(given) == 0 && isSet(fs, "dry-run"):
		return nil, usagef("--dry-run: only with --receiver, --agent or --all-dead")
	case len(given) == 0 && len(pos) == 0:
		return nil, usagef("missing ID (or --receiver URL, --agent AGENT or --all-dead, for many dead letters)")
	case len(pos) > 1:
		return nil, usagef("unexpected argument %q", pos[1])
	}
	return pos, nil
}

// pushBulkLine is one dead letter of a bulk retry or drop, as --json
// prints it.
type pushBulkLine struct {
	Kind    string `json:"kind"` // "a2a_push_bulk_item"
	ID      string `json:"id"`
	TaskID  string `json:"task_id"`
	URL     string `json:"url,omitempty"`
	Agent   string `json:"agent,omitempty"`
	Outcome string `json:"outcome"` // retried, dropped, would_retry, would_drop, skipped
	Error   string `json:"error,omitempty"`
}

// pushBulkSummary ends a bulk retry or drop.
type pushBulkSummary struct {
	Kind     string `json:"kind"` // "a2a_push_bulk"
	Action   string `json:"action"`
	Selected string `json:"selected"`
	DryRun   bool   `json:"dry_run"`
	Listed   int    `json:"listed"`
	Done     int    `json:"done"`
	Skipped  int    `json:"skipped"`
}

// pushBulk lists the dead letters sel selects and retries or drops each,
// one line each; one retried, delivered or dropped meanwhile is skipped
// and said so.
func pushBulk(ctx context.Context, e *env, c *client.Client, sel *pushBulkFlags, action, reason string, asJSON bool) error {
	what := "dead letters"
	switch {
	case *sel.receiver != "":
		what = "dead letters to " + *sel.receiver
	case *sel.agent != "":
		known, err := c.Agents(ctx)
		if err != nil {
			return err
		}
		if err := knownAgent(known, "--agent", *sel.agent, ""); err != nil {
			return err
		}
		what = "dead letters of " + *sel.agent + "'s webhook"
	}
	listing, err := c.Deliveries(ctx, true)
	if err != nil {
		return err
	}
	if pushBulkListed != nil {
		pushBulkListed()
	}
	sum := pushBulkSummary{Kind: "a2a_push_bulk", Action: action, Selected: what, DryRun: *sel.dryRun}
	done := map[string]string{"retry": "retried", "drop": "dropped"}[action]
	for _, n := range listing.Notifications {
		if n.State != mailbox.DeliveryDead || *sel.receiver != "" && n.URL != *sel.receiver || *sel.agent != "" && (n.Agent != *sel.agent || n.ConfigID != "") {
			continue
		}
		sum.Listed++
		line := pushBulkLine{Kind: "a2a_push_bulk_item", ID: n.ID, TaskID: n.TaskID, URL: n.URL, Agent: n.Agent}
		to := orDash(n.URL)
		if *sel.dryRun {
			line.Outcome = "would_" + action
			emitPushBulk(e.stdout, asJSON, line, fmt.Sprintf("would %s %s (task %s, to %s, %d attempt(s): %s)", action, n.ID, n.TaskID, to, n.Attempts, n.LastError))
			continue
		}
		if action == "retry" {
			_, err = c.RetryNotification(ctx, n.ID, reason)
		} else {
			// Only while it is still dead: one retried since it was
			// listed is pending again, and kept.
			err = c.DropDeadNotification(ctx, n.ID, reason)
		}
		switch code := mailbox.ErrorCode(err); {
		case err == nil:
			sum.Done++
			line.Outcome = done
			emitPushBulk(e.stdout, asJSON, line, fmt.Sprintf("%s %s (task %s, to %s)", done, n.ID, n.TaskID, to))
		case code == mailbox.CodeConflict || code == mailbox.CodeNotFound:
			// Retried, delivered or dropped since it was listed.
			sum.Skipped++
			line.Outcome, line.Error = "skipped", errorText(err)
			emitPushBulk(e.stdout, asJSON, line, fmt.Sprintf("skipped %s: %s", n.ID, errorText(err)))
		default:
			return fmt.Errorf("after %d of %d %s: %w", sum.Done, sum.Listed, done, err)
		}
	}
	if asJSON {
		return json.NewEncoder(e.stdout).Encode(sum)
	}
	if sum.DryRun {
		fmt.Fprintf(e.stdout, "dry run: would %s %d of the %s; nothing changed\n", action, sum.Listed, what)
	} else {
		fmt.Fprintf(e.stdout, "push %s: %d %s, %d skipped (changed since they were listed), of %d of the %s\n", action, sum.Done, done, sum.Skipped, sum.Listed, what)
	}
	return nil
}

func emitPushBulk(w io.Writer, asJSON bool, line pushBulkLine, text string) {
	if asJSON {
		_ = json.NewEncoder(w).Encode(line)
		return
	}
	fmt.Fprintln(w, text)
}
