package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mailroom/mailroom/mailbox"
)

const pushSummary = "list the push notifications not yet delivered, retry a dead one, drop one"

func runPush(ctx context.Context, e *env, args []string) error {
	return runGroup(ctx, e, "push", pushSummary,
		"  mailroom push list\n  mailroom push list --failed\n  mailroom push retry 118-1\n  mailroom push drop 118-1 --reason 'the receiver was retired'\n",
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

const pushRetrySummary = "put a dead-lettered push notification back in line (audited)"

func runPushRetry(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, verbHelp{
		verb:    "push retry",
		summary: pushRetrySummary,
		usage:   "ID [--reason TEXT] [flags]",
		example: "mailroom push retry 118-1 --reason 'the receiver is back'",
	})
	cf := addClientFlags(fs, e)
	reason := fs.String("reason", "", "why, for the audit trail")
	asJSON := fs.Bool("json", false, "print the daemon's answer as JSON")
	pos, err := parseExact(fs, args, "ID")
	if err != nil {
		return err
	}
	c, ctx, cancel, err := cf.connect(ctx, e)
	if err != nil {
		return err
	}
	defer cancel()
	n, err := c.RetryNotification(ctx, pos[0], *reason)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(e.stdout, mailbox.PushRetried{Kind: mailbox.KindPushRetried, Notification: n})
	}
	fmt.Fprintf(e.stdout, "push notification %s of task %s is back in line for %s\n", n.ID, n.TaskID, n.ConfigID)
	return nil
}

const pushDropSummary = "drop a push notification, pending or dead-lettered, with a reason (audited)"

func runPushDrop(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, verbHelp{
		verb:    "push drop",
		summary: pushDropSummary,
		usage:   "ID --reason TEXT [flags]",
		example: "mailroom push drop 118-1 --reason 'the receiver was retired'",
	})
	cf := addClientFlags(fs, e)
	reason := fs.String("reason", "", "why, for the audit trail (required)")
	asJSON := fs.Bool("json", false, "print the daemon's answer as JSON")
	pos, err := parseExact(fs, args, "ID")
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
	if err := c.DropNotification(ctx, pos[0], *reason); err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(e.stdout, mailbox.PushDropped{Kind: mailbox.KindPushDropped, ID: pos[0]})
	}
	fmt.Fprintf(e.stdout, "push notification %s dropped\n", pos[0])
	return nil
}
