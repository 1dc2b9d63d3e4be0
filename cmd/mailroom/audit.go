package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/mailroom/mailroom/mailbox"
)

const auditSummary = "list repairs (requeues and forced errors), newest first"

func runAudit(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, verbHelp{
		verb:    "audit",
		summary: auditSummary,
		usage:   "[--task TASK_ID] [-n N] [flags]",
		example: "mailroom audit --task 6f9619ff-8b86-4d11-b42d-00c04fc964ff",
	})
	cf := addClientFlags(fs, e)
	task := fs.String("task", "", "only this task's repairs (its id, or a unique prefix of 6+ characters)")
	limit := fs.Int("n", mailbox.DefaultLimit, fmt.Sprintf("show at most this many repairs (1 to %d)", mailbox.MaxLimit))
	asJSON := fs.Bool("json", false, "print one a2a_audit JSON object")
	if _, err := parseExact(fs, args); err != nil {
		return err
	}
	if *limit < 1 || *limit > mailbox.MaxLimit {
		return usagef("-n: got %d, expected a number from 1 to %d", *limit, mailbox.MaxLimit)
	}
	taskID := *task
	if len(taskID) == uuidLen {
		var err error
		if taskID, err = mailbox.CanonicalUUID("--task", taskID); err != nil {
			return usagef("%s", errorText(err))
		}
	}
	c, ctx, cancel, err := cf.connect(ctx, e)
	if err != nil {
		return err
	}
	defer cancel()
	if taskID != "" {
		if taskID, err = resolveRepairedTaskID(ctx, c, taskID, "--task"); err != nil {
			return err
		}
	}
	recs, err := c.Audit(ctx, taskID, *limit)
	if err != nil {
		return err
	}
	if recs == nil {
		recs = []mailbox.AuditRecord{}
	}
	if *asJSON {
		return writeJSON(e.stdout, mailbox.AuditResponse{Kind: mailbox.KindAudit, Repairs: recs})
	}
	printAudit(e.stdout, recs, taskID, time.Now())
	return nil
}

func printAudit(w io.Writer, recs []mailbox.AuditRecord, taskID string, now time.Time) {
	if len(recs) == 0 {
		if taskID != "" {
			fmt.Fprintf(w, "no repairs recorded for task %s\n", taskID)
		} else {
			fmt.Fprintln(w, "no repairs recorded")
		}
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WHEN\tAGO\tPRINCIPAL\tACTION\tMOVE\tTASK\tLEASE\tATTEMPT\tPOSTURE\tREASON\tAUTO")
	for _, r := range recs {
		// The scan's requeues are marked so an operator can tell them from
		// their own at a glance.
		auto := ""
		if r.Auto {
			auto = "auto"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n",
			time.UnixMilli(r.AtMs).UTC().Format(time.RFC3339), age(now, r.AtMs), r.PrincipalOrNoAuth(), r.Action, orDash(r.Move()),
			r.TaskID, r.LeaseID, r.Attempt, orDash(r.DuplicateRisk), truncate(r.Reason, 48), auto)
	}
	tw.Flush()
}
