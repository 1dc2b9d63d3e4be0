package main

import (
	"context"
	"fmt"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/mailbox"
)

const replySummary = "answer a task whose worker asked its sender a question"

func runReply(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, verbHelp{
		verb:    "reply",
		summary: replySummary,
		usage:   "TASK_ID (--text T | --json-value J)... [--from SENDER] [flags]",
		example: "mailroom status --state waiting                          # the tasks waiting on their senders, with their questions\n" +
			"mailroom reply 6f9619ff --text 'use the staging database'   # a unique prefix of 6+ characters will do\n" +
			"mailroom reply 6f9619ff --json-value '{\"approved\":true}' --from planner@local",
	})
	cf := addClientFlags(fs, e)
	var texts repeated
	fs.Var(&texts, "text", "a text part of the answer (repeatable)")
	jsonValue := fs.String("json-value", "", "a JSON part of the answer, such as '{\"approved\":true}'")
	from := fs.String("from", "", "the task's sender, answering (default: the sender of the waiting task)")
	asJSON := fs.Bool("json", false, "print the daemon's answer as JSON")
	pos, err := parseExact(fs, args, "TASK_ID")
	if err != nil {
		return err
	}
	content, err := contentOf(texts, *jsonValue, `{"approved":true}`)
	if err != nil {
		return err
	}
	r := mailbox.Reply{Sender: *from, Content: content}
	if len(r.Content) == 0 {
		return usagef("missing the answer: give --text or --json-value (or both)")
	}
	c, ctx, cancel, err := cf.connect(ctx, e)
	if err != nil {
		return err
	}
	defer cancel()
	if r.TaskID, err = resolveID(ctx, pos[0], "TASK_ID", "task", "a task waiting on its sender", waitingTasks(c)); err != nil {
		return err
	}
	if r.Sender == "" {
		sender, err := waitingSender(ctx, c, r.TaskID)
		if err != nil {
			return err
		}
		r.Sender = sender
	}
	out, err := c.Reply(ctx, r)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(e.stdout, mailbox.TaskRepliedResponse{Kind: mailbox.KindTaskReplied, ReplyOutcome: out})
	}
	if out.Duplicate {
		fmt.Fprintf(e.stdout, "task %s already has this answer (it is %s, %d turns); nothing was changed\n", out.TaskID, out.State, out.Turns)
		return nil
	}
	fmt.Fprintf(e.stdout, "replied to task %s as %s: it is queued again for its worker (%d turns)\n", out.TaskID, r.Sender, out.Turns)
	return nil
}

// waitingTasks lists the tasks waiting on their senders.
func waitingTasks(c *client.Client) idSource {
	return func(ctx context.Context) ([]idCandidate, bool, error) {
		view, err := c.Queue(ctx, mailbox.QueueFilter{State: mailbox.TaskWaiting, Limit: mailbox.MaxLimit})
		if err != nil {
			return nil, false, err
		}
		cands := make([]idCandidate, len(view.Tasks))
		for i, t := range view.Tasks {
			cands[i] = idCandidate{id: t.Task.ID, state: t.State, recipient: t.Task.Recipient}
		}
		return cands, len(view.Tasks) == mailbox.MaxLimit, nil
	}
}

// waitingSender returns the sender of a task waiting on it, for a reply
// that did not name one.
func waitingSender(ctx context.Context, c *client.Client, id string) (string, error) {
	view, err := c.Queue(ctx, mailbox.QueueFilter{State: mailbox.TaskWaiting, Limit: mailbox.MaxLimit})
	if err != nil {
		return "", err
	}
	for _, t := range view.Tasks {
		if t.Task.ID == id {
			return t.Task.Sender, nil
		}
	}
	return "", usagef("TASK_ID: task %s is not waiting on its sender (see 'mailroom status --state waiting'); give --from SENDER to send the reply anyway and hear the daemon's answer", id)
}
