package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mailroom/mailroom/mailbox"
)

const resultSummary = "post a result for a leased task, or drain the next result for a sender"

func runResult(ctx context.Context, e *env, args []string) error {
	return runGroup(ctx, e, "result", resultSummary,
		"  mailroom result post 6f9619ff-8b86-4d11-b42d-00c04fc964ff --status ok --text done\n  mailroom result next --sender planner@local\n",
		[]subVerb{{"post", resultPostSummary, runResultPost}, {"next", resultNextSummary, runResultNext}}, args)
}

// subVerb is one verb of a group such as "mailroom result post".
type subVerb struct {
	name, summary string
	run           func(context.Context, *env, []string) error
}

// runGroup dispatches args to one of a group's sub-verbs; errors carry the
// full verb name, so messages say "mailroom result post: ...". example
// holds the help's example lines.
func runGroup(ctx context.Context, e *env, group, summary, example string, subs []subVerb, args []string) error {
	names := make([]string, len(subs))
	width := 0
	for i, s := range subs {
		names[i] = s.name
		width = max(width, len(s.name))
	}
	if len(args) == 0 {
		return usagef("missing sub-command: %s", strings.Join(names, " or "))
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprintf(e.stdout, "mailroom %s: %s\n\nUsage:\n", group, summary)
		for _, s := range subs {
			fmt.Fprintf(e.stdout, "  mailroom %s %-*s %s\n", group, width, s.name, s.summary)
		}
		fmt.Fprintf(e.stdout, "\nExample:\n%s\nRun 'mailroom %s <%s> --help' for flags.\n", example, group, strings.Join(names, "|"))
		return errHelpShown
	}
	for _, s := range subs {
		if s.name == args[0] {
			if err := s.run(ctx, e, args[1:]); err != nil {
				return &verbError{verb: group + " " + s.name, err: err}
			}
			return nil
		}
	}
	return usagef("unknown sub-command %q, expected %s", args[0], strings.Join(names, " or "))
}

const resultPostSummary = "post the result of a leased task for its sender"

func runResultPost(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, verbHelp{
		verb:    "result post",
		summary: resultPostSummary,
		usage:   "TASK_ID --status ok|error|partial|rejected|input_required|auth_required [flags]",
		example: "mailroom result post 6f9619ff --status ok --text 'fixed in abc123' --lease-id 0b5c7e21   # ids in full, or a unique prefix of 6+ characters",
	})
	cf := addClientFlags(fs, e)
	status := fs.String("status", "", "ok, error, partial or rejected to finish; input_required or auth_required to ask the sender (the question in --text/--json-value) (required)")
	var texts repeated
	fs.Var(&texts, "text", "a text part of the result (repeatable)")
	jsonValue := fs.String("json-value", "", "a JSON part of the result, such as '{\"files\":3}'")
	errMsg := fs.String("error-message", "", "what went wrong, with --status error")
	leaseID := fs.String("lease-id", "", "refuse unless this is still the current lease (recommended); a unique prefix of 6+ characters will do")
	asJSON := fs.Bool("json", false, "print the daemon's answer as JSON")
	pos, err := parseExact(fs, args, "TASK_ID")
	if err != nil {
		return err
	}
	if err := required(fs, "status"); err != nil {
		return err
	}
	switch *status {
	case mailbox.StatusOK, mailbox.StatusError, mailbox.StatusPartial, mailbox.StatusRejected, mailbox.StatusInputRequired, mailbox.StatusAuthRequired:
	default:
		return usagef("--status: got %q, expected ok, error, partial, rejected, input_required or auth_required", *status)
	}
	content, err := contentOf(texts, *jsonValue, `{"files":3}`)
	if err != nil {
		return err
	}
	r := mailbox.Result{Status: *status, Content: content, ErrorMessage: *errMsg}
	c, ctx, cancel, err := cf.connect(ctx, e)
	if err != nil {
		return err
	}
	defer cancel()
	if r.TaskID, err = resolveTaskID(ctx, c, pos[0], "TASK_ID"); err != nil {
		return err
	}
	if *leaseID != "" {
		if r.LeaseID, err = resolveLeaseID(ctx, c, *leaseID, "--lease-id"); err != nil {
			return err
		}
	}
	if err := c.PostResult(ctx, r); err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(e.stdout, mailbox.ResultPostedResponse{Kind: mailbox.KindResultPosted, TaskID: r.TaskID})
	}
	if mailbox.Asks(r.Status) {
		fmt.Fprintf(e.stdout, "asked the sender of task %s (%s): the task waits for its answer\n", r.TaskID, r.Status)
		return nil
	}
	fmt.Fprintf(e.stdout, "posted %s result for task %s\n", r.Status, r.TaskID)
	return nil
}

const resultNextSummary = "drain the oldest result waiting for a sender"

func runResultNext(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, verbHelp{
		verb:    "result next",
		summary: resultNextSummary,
		usage:   "--sender AGENT [--max N] [--wait D] [flags]",
		example: "mailroom result next --sender planner@local --json\nmailroom result next --sender planner@local --max 10 --wait 20s",
	})
	cf := addClientFlags(fs, e)
	sender := fs.String("sender", "", "agent whose results to drain (required)")
	max := fs.Int("max", 0, fmt.Sprintf("drain up to this many results (1 to %d) and print them all", mailbox.MaxBatch))
	wait := fs.Duration("wait", 0, "when no result is pending, wait up to this long (at most 20s) for one")
	asJSON := fs.Bool("json", false, "print the daemon's answer as JSON (result is null when none is pending; with --max, a list)")
	if _, err := parseExact(fs, args); err != nil {
		return err
	}
	if err := required(fs, "sender"); err != nil {
		return err
	}
	if strings.TrimSpace(*sender) == "" {
		return usagef("--sender: got %q, expected an agent id such as planner@local", *sender)
	}
	n, err := batchFlags(fs, *max, *wait)
	if err != nil {
		return err
	}
	cf.timeout = pollTimeout(cf.timeout, *wait)
	c, ctx, cancel, err := cf.connect(ctx, e)
	if err != nil {
		return err
	}
	defer cancel()
	results, err := c.DrainN(ctx, *sender, n, *wait)
	if err != nil {
		return err
	}
	if given(fs, "max") {
		if results == nil {
			results = []mailbox.PendingResult{}
		}
		if *asJSON {
			return writeJSON(e.stdout, mailbox.ResultsDrainedResponse{Kind: mailbox.KindResultsDrained, Results: results})
		}
		if len(results) == 0 {
			fmt.Fprintf(e.stdout, "no result pending for %s\n", *sender)
		}
		for i, r := range results {
			if i > 0 {
				fmt.Fprintln(e.stdout)
			}
			printResult(e.stdout, r)
		}
		return nil
	}
	var res *mailbox.PendingResult
	if len(results) > 0 {
		res = &results[0]
	}
	if *asJSON {
		return writeJSON(e.stdout, mailbox.ResultOptResponse{Kind: mailbox.KindResultOpt, Result: res})
	}
	if res == nil {
		fmt.Fprintf(e.stdout, "no result pending for %s\n", *sender)
		return nil
	}
	printResult(e.stdout, *res)
	return nil
}

// contentOf is the content parts --text (repeatable) and --json-value
// give, in that order; example is a JSON value the refusal of a bad
// --json-value shows.
func contentOf(texts []string, jsonValue, example string) ([]mailbox.Content, error) {
	content := []mailbox.Content{}
	for _, t := range texts {
		content = append(content, mailbox.Content{Type: mailbox.ContentText, Text: t})
	}
	if jsonValue != "" {
		if !json.Valid([]byte(jsonValue)) {
			return nil, usagef("--json-value: got %q, expected a JSON value such as '%s'", jsonValue, example)
		}
		content = append(content, mailbox.Content{Type: mailbox.ContentJSON, Value: json.RawMessage(jsonValue)})
	}
	return content, nil
}
