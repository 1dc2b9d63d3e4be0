package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/mailroom/mailroom/mailbox"
)

const retryStaleSummary = "requeue stale leases of idempotent tasks (a dry run unless --enable)"

func runRetryStale(ctx context.Context, e *env, args []string) error {
	def := mailbox.DefaultRetryPolicy()
	fs := newFlagSet(e, verbHelp{
		verb:    "retry-stale",
		summary: retryStaleSummary,
		usage:   "[--enable] [--min-lease-age-ms N] [--max-attempts N] [--max-requeues N] [--scan-limit N] [flags]",
		example: "mailroom retry-stale                                   # dry run: what would be requeued\nmailroom retry-stale --enable --min-lease-age-ms 600000  # requeue leases held over 10 minutes",
	})
	cf := addClientFlags(fs, e)
	enable := fs.Bool("enable", false, "requeue for real; without it nothing changes and the report says what would happen")
	minAge := fs.Int64("min-lease-age-ms", def.MinLeaseAgeMs, "only leases held at least this many milliseconds")
	maxAttempts := fs.Int("max-attempts", def.MaxAttempts, "leave tasks alone that have been attempted this many times")
	maxRequeues := fs.Int("max-requeues", def.MaxRequeues, "requeue at most this many leases in this run")
	scanLimit := fs.Int("scan-limit", def.ScanLimit, fmt.Sprintf("look at most at this many in-flight leases, oldest first (1 to %d)", mailbox.MaxLimit))
	asJSON := fs.Bool("json", false, `print {"kind":"a2a_auto_retry","report":{...}}`)
	if _, err := parseExact(fs, args); err != nil {
		return err
	}
	// The daemon checks the same bounds; checking here names the flag and
	// makes a mistake a usage error rather than a refused request.
	switch {
	case *minAge < 0:
		return usagef("--min-lease-age-ms: got %d, expected 0 or more", *minAge)
	case *maxAttempts < 1:
		return usagef("--max-attempts: got %d, expected 1 or more", *maxAttempts)
	case *maxRequeues < 0:
		return usagef("--max-requeues: got %d, expected 0 or more", *maxRequeues)
	case *scanLimit < 1 || *scanLimit > mailbox.MaxLimit:
		return usagef("--scan-limit: got %d, expected a number from 1 to %d", *scanLimit, mailbox.MaxLimit)
	}
	p := mailbox.RetryPolicy{Enabled: *enable, MinLeaseAgeMs: *minAge, MaxAttempts: *maxAttempts, MaxRequeues: *maxRequeues, ScanLimit: *scanLimit}
	c, ctx, cancel, err := cf.connect(ctx, e)
	if err != nil {
		return err
	}
	defer cancel()
	rep, err := c.RetryStale(ctx, p)
	if err != nil {
		return err
	}
	// Empty lists are [] so scripts can iterate without a null check.
	if rep.Requeued == nil {
		rep.Requeued = []mailbox.RetryRequeued{}
	}
	if rep.Skipped == nil {
		rep.Skipped = []mailbox.RetrySkipped{}
	}
	if *asJSON {
		return writeJSON(e.stdout, mailbox.AutoRetryResponse{Kind: mailbox.KindAutoRetry, Report: rep})
	}
	printRetryReport(e.stdout, rep)
	return nil
}

// printRetryReport says first whether anything changed, so a dry run can
// never be mistaken for a real one.
func printRetryReport(w io.Writer, rep mailbox.RetryReport) {
	n := len(rep.Requeued)
	if rep.DryRun {
		fmt.Fprintf(w, "dry run: would requeue %d of %d lease(s) considered; nothing changed (add --enable to requeue)\n", n, rep.Considered)
	} else {
		fmt.Fprintf(w, "requeued %d of %d lease(s) considered\n", n, rep.Considered)
	}
	p := rep.Policy
	fmt.Fprintf(w, "policy: idempotent tasks only, leases held at least %s, attempts below %d, at most %d requeue(s), scanning the %d oldest leases\n",
		time.Duration(p.MinLeaseAgeMs)*time.Millisecond, p.MaxAttempts, p.MaxRequeues, p.ScanLimit)
	if n > 0 {
		title := "REQUEUED"
		if rep.DryRun {
			title = "WOULD REQUEUE"
		}
		fmt.Fprintf(w, "\n%s\n", title)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TASK\tLEASE\tATTEMPT\tIDEMPOTENCY KEY")
		for _, r := range rep.Requeued {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", r.TaskID, r.LeaseID, r.Attempt, orDash(r.IdempotencyKey))
		}
		tw.Flush()
	}
	if len(rep.Skipped) > 0 {
		fmt.Fprintf(w, "\nSKIPPED\n")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TASK\tREASON\tATTEMPT\tLEASE AGE")
		for _, s := range rep.Skipped {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", s.TaskID, s.Reason, s.Attempt, (time.Duration(s.LeaseAgeMs) * time.Millisecond).Truncate(time.Second))
		}
		tw.Flush()
	}
}
