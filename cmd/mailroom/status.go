package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/mailroom/mailroom/mailbox"
)

const statusSummary = "show queued and in-flight tasks and pending results"

// statusReport is the --json shape. Its keys are a contract for scripts:
// exactly these, with unset filters as null rather than absent.
type statusReport struct {
	Kind             string                  `json:"kind"`
	Limit            int                     `json:"limit"`
	MinLeaseAgeMs    *int64                  `json:"min_lease_age_ms"`
	DeadlineWithinMs *int64                  `json:"deadline_within_ms"`
	StateFilter      *string                 `json:"state_filter"`
	Tasks            []mailbox.QueueEntry    `json:"tasks"`
	Results          []mailbox.PendingResult `json:"results"`
}

func runStatus(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, verbHelp{
		verb:    "status",
		summary: statusSummary,
		usage:   "[flags]",
		example: "mailroom status --state in_flight --min-lease-age-ms 600000   # leases held over 10 minutes",
	})
	cf := addClientFlags(fs, e)
	limit := fs.Int("n", mailbox.DefaultLimit, fmt.Sprintf("show at most this many tasks and results (1 to %d); filters apply first", mailbox.MaxLimit))
	var minAge, deadlineWithin optionalInt64
	fs.Var(&minAge, "min-lease-age-ms", "only in-flight tasks leased at least this many milliseconds ago")
	fs.Var(&deadlineWithin, "deadline-within-ms", "only tasks whose deadline is at most this many milliseconds away")
	state := fs.String("state", "", "only tasks in this state: queued or in_flight")
	asJSON := fs.Bool("json", false, "print one a2a_status JSON object")
	if _, err := parseExact(fs, args); err != nil {
		return err
	}
	if *limit < 1 || *limit > mailbox.MaxLimit {
		return usagef("-n: got %d, expected a number from 1 to %d", *limit, mailbox.MaxLimit)
	}
	switch *state {
	case "", mailbox.TaskQueued, mailbox.TaskInFlight:
	default:
		return usagef("--state: got %q, expected queued or in_flight", *state)
	}
	if minAge.v != nil && *minAge.v < 0 {
		return usagef("--min-lease-age-ms: got %d, expected 0 or more", *minAge.v)
	}
	c, ctx, cancel, err := cf.connect(ctx, e)
	if err != nil {
		return err
	}
	defer cancel()
	view, err := c.Queue(ctx, mailbox.QueueFilter{Limit: *limit, MinLeaseAgeMs: minAge.v, DeadlineWithinMs: deadlineWithin.v, State: *state})
	if err != nil {
		return err
	}
	rep := statusReport{Kind: mailbox.KindStatus, Limit: *limit, MinLeaseAgeMs: minAge.v, DeadlineWithinMs: deadlineWithin.v,
		Tasks: view.Tasks, Results: view.Results}
	if *state != "" {
		rep.StateFilter = state
	}
	// Empty lists are [] so scripts can iterate without a null check.
	if rep.Tasks == nil {
		rep.Tasks = []mailbox.QueueEntry{}
	}
	if rep.Results == nil {
		rep.Results = []mailbox.PendingResult{}
	}
	if *asJSON {
		return writeJSON(e.stdout, rep)
	}
	printStatus(e.stdout, rep, time.Now())
	return nil
}

// printStatus writes the status as two tables under a header of counts.
func printStatus(w io.Writer, rep statusReport, now time.Time) {
	var queued, inFlight int
	for _, t := range rep.Tasks {
		if t.State == mailbox.TaskInFlight {
			inFlight++
		} else {
			queued++
		}
	}
	fmt.Fprintf(w, "%d queued, %d in flight, %d results pending", queued, inFlight, len(rep.Results))
	if len(rep.Tasks) == rep.Limit || len(rep.Results) == rep.Limit {
		fmt.Fprintf(w, " (showing at most %d; raise -n for more)", rep.Limit)
	}
	fmt.Fprintln(w)

	if len(rep.Tasks) > 0 {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "STATE\tTASK\tSENDER -> RECIPIENT\tKIND\tATTEMPT\tLEASE AGE\tLEASED TO\tINTENT")
		for _, t := range rep.Tasks {
			leaseAge := "-"
			if t.State == mailbox.TaskInFlight {
				leaseAge = age(now, t.LeasedAtMs)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s -> %s\t%s\t%d\t%s\t%s\t%s\n", t.State, t.Task.ID, t.Task.Sender, t.Task.Recipient,
				orDash(t.Task.Kind()), t.Attempt, leaseAge, orDash(t.LeasedTo), truncate(t.Task.IntentText, 48))
		}
		tw.Flush()
	}
	if len(rep.Results) > 0 {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "RESULT FOR TASK\tSTATUS\tRECIPIENT -> SENDER\tWAITING\tCONTENT")
		for _, r := range rep.Results {
			status := r.Status
			if r.Forced {
				status += " (forced)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s -> %s\t%s\t%s\n", r.TaskID, status, r.Recipient, r.Sender, age(now, r.PostedAtMs), truncate(contentLine(r.Result), 48))
		}
		tw.Flush()
	}
}
