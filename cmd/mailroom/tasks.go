package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/mailroom/mailroom/mailbox"
)

const sendSummary = "send a task from one agent to another and print its id"

func runSend(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, verbHelp{
		verb:    "send",
		summary: sendSummary,
		usage:   "--from AGENT --to AGENT --intent TEXT [flags]\n  mailroom send --file TASKS.jsonl [flags]",
		example: "mailroom send --from planner@local --to coder@local --intent 'fix the flaky test' --kind code --deadline 30m\nmailroom send --from planner@local --to coder@local --intent 'review' --context '{\"repo\":\"mailroom\",\"pr\":42}'\nmailroom send --file tasks.jsonl    # one task object a line (as POST /a2a/tasks takes it), sent 100 a request; - reads stdin",
	})
	cf := addClientFlags(fs, e)
	var f sendFlags
	f.bind(fs)
	if _, err := parseExact(fs, args); err != nil {
		return err
	}
	if f.file != "" {
		for _, name := range []string{"from", "to", "intent", "kind", "parent", "deadline", "idempotency-key", "idempotent", "id", "context"} {
			if given(fs, name) {
				return usagef("--%s: the tasks of --file say everything about themselves; give one or the other", name)
			}
		}
		return sendFile(ctx, e, cf, f.file, f.json)
	}
	if err := required(fs, "from", "to", "intent"); err != nil {
		return err
	}
	t, err := f.task(given(fs, "context"))
	if err != nil {
		return err
	}
	c, ctx, cancel, err := cf.connect(ctx, e)
	if err != nil {
		return err
	}
	defer cancel()
	if f.parent != "" {
		if t.Parent, err = resolveTaskID(ctx, c, f.parent, "--parent"); err != nil {
			return err
		}
	}
	resp, err := c.Send(ctx, t)
	if err != nil {
		return err
	}
	if f.json {
		return writeJSON(e.stdout, resp)
	}
	fmt.Fprintln(e.stdout, resp.TaskID)
	if resp.Deduplicated {
		fmt.Fprintf(e.stderr, "mailroom send: an identical idempotent task was already sent; its id is %s\n", resp.TaskID)
	}
	return nil
}

// sendFlags are send's flags as parsed.
type sendFlags struct {
	from, to, intent, kind, parent, deadline, key, id, context, file string
	idempotent, json                                                 bool
}

func (f *sendFlags) bind(fs *verbFlags) {
	fs.StringVar(&f.from, "from", "", "sending agent, which later drains the result (required)")
	fs.StringVar(&f.to, "to", "", "recipient agent, which leases the task (required)")
	fs.StringVar(&f.intent, "intent", "", "what the recipient should do (required)")
	fs.StringVar(&f.kind, "kind", "", "task kind, such as review or summarize")
	fs.StringVar(&f.parent, "parent", "", "id of the task this one was split from (a unique prefix of 6+ characters will do while it is queued, in flight or has a result pending)")
	fs.StringVar(&f.deadline, "deadline", "", "deadline: a duration from now (10m) or an RFC 3339 time")
	fs.StringVar(&f.key, "idempotency-key", "", "key identifying the work, for de-duplication and safe requeue")
	fs.BoolVar(&f.idempotent, "idempotent", false, "the task is safe to run twice (needs --idempotency-key)")
	fs.StringVar(&f.id, "id", "", "task id (a UUID); the daemon picks one when absent")
	fs.StringVar(&f.context, "context", "", "structured input for the worker beside the intent: a JSON object, carried in its lease")
	fs.StringVar(&f.file, "file", "", "send the tasks in this file, one JSON task a line (- for stdin), in batches of 100; prints one line a task")
	fs.BoolVar(&f.json, "json", false, "print the daemon's answer as JSON (with --file, one answer a line)")
}

// task is the task the flags describe, but its parent, which may be a
// prefix only the daemon can resolve. withContext says --context was
// given (an empty one is refused, not ignored).
func (f *sendFlags) task(withContext bool) (mailbox.Task, error) {
	t := mailbox.Task{ID: f.id, Sender: f.from, Recipient: f.to, IntentText: f.intent}
	if f.kind != "" {
		t.TaskKind = &f.kind
	}
	if withContext {
		if !json.Valid([]byte(f.context)) {
			return t, usagef("--context: got %q, which is not JSON; expected a JSON object such as '{\"repo\":\"mailroom\"}'", f.context)
		}
		t.Context = json.RawMessage(f.context)
	}
	if f.deadline != "" {
		ms, err := parseDeadline(f.deadline, time.Now())
		if err != nil {
			return t, err
		}
		t.DeadlineMs = &ms
	}
	switch {
	case f.idempotent && f.key == "":
		return t, usagef("--idempotent needs --idempotency-key: the key is how a duplicate is recognised")
	case f.key != "":
		safety := mailbox.DuplicateUnsafe
		if f.idempotent {
			safety = mailbox.DuplicateIdempotent
		}
		t.Idempotency = &mailbox.Idempotency{DuplicateSafety: safety, Key: f.key}
	}
	return t, nil
}

// parseDeadline reads a deadline relative to now ("10m") or absolute
// (RFC 3339) and returns unix milliseconds.
func parseDeadline(s string, now time.Time) (int64, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 {
			return 0, usagef("--deadline: got %q, expected a positive duration such as 10m or an RFC 3339 time", s)
		}
		return now.Add(d).UnixMilli(), nil
	}
	at, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return 0, usagef("--deadline: got %q, expected a duration such as 10m or an RFC 3339 time such as 2030-01-02T15:04:05Z", s)
	}
	return at.UnixMilli(), nil
}

const leaseSummary = "lease the oldest task queued for a recipient"

func runLease(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, verbHelp{
		verb:    "lease",
		summary: leaseSummary,
		usage:   "--recipient AGENT [--max N] [--wait D] [flags]",
		example: "mailroom lease --recipient coder@local\nmailroom lease --recipient coder@local --max 10 --wait 20s   # up to 10 tasks; wait up to 20 s for one when none is queued",
	})
	cf := addClientFlags(fs, e)
	recipient := fs.String("recipient", "", "agent whose queue to lease from (required)")
	max := fs.Int("max", 0, fmt.Sprintf("lease up to this many tasks (1 to %d) and print them all", mailbox.MaxBatch))
	wait := fs.Duration("wait", 0, "when nothing is queued, wait up to this long (at most 20s) for a task")
	asJSON := fs.Bool("json", false, "print the daemon's answer as JSON (task and lease are null when nothing is queued; with --max, a list)")
	if _, err := parseExact(fs, args); err != nil {
		return err
	}
	if err := required(fs, "recipient"); err != nil {
		return err
	}
	if strings.TrimSpace(*recipient) == "" {
		return usagef("--recipient: got %q, expected an agent id such as coder@local", *recipient)
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
	leases, err := c.LeaseN(ctx, *recipient, n, *wait)
	if err != nil {
		return err
	}
	if given(fs, "max") {
		if *asJSON {
			return writeJSON(e.stdout, mailbox.TasksLeasedResponse{Kind: mailbox.KindTasksLeased, Leases: nonNilLeases(leases)})
		}
		if len(leases) == 0 {
			fmt.Fprintf(e.stdout, "nothing queued for %s\n", *recipient)
		}
		for i, l := range leases {
			if i > 0 {
				fmt.Fprintln(e.stdout)
			}
			printTask(e.stdout, l.Task, time.Now())
			fmt.Fprintf(e.stdout, "lease      %s\nattempt    %d\n", l.Lease.LeaseID, l.Lease.Attempt)
		}
		return nil
	}
	var task *mailbox.Task
	var lease *mailbox.Lease
	if len(leases) > 0 {
		task, lease = &leases[0].Task, &leases[0].Lease
	}
	if *asJSON {
		return writeJSON(e.stdout, mailbox.TaskOptResponse{Kind: mailbox.KindTaskOpt, Task: task, Lease: lease})
	}
	if task == nil {
		fmt.Fprintf(e.stdout, "nothing queued for %s\n", *recipient)
		return nil
	}
	now := time.Now()
	printTask(e.stdout, *task, now)
	if lease != nil {
		fmt.Fprintf(e.stdout, "lease      %s\n", lease.LeaseID)
		fmt.Fprintf(e.stdout, "attempt    %d\n", lease.Attempt)
	}
	return nil
}

// batchFlags checks a long poll's --max and --wait and returns how many to
// take (1 without --max).
func batchFlags(fs *verbFlags, max int, wait time.Duration) (int, error) {
	n := 1
	if given(fs, "max") {
		if max < 1 || max > mailbox.MaxBatch {
			return 0, usagef("--max: got %d, expected 1 to %d", max, mailbox.MaxBatch)
		}
		n = max
	}
	if wait < 0 || wait > time.Duration(mailbox.MaxWaitMs)*time.Millisecond {
		return 0, usagef("--wait: got %s, expected 0 to 20s", wait)
	}
	return n, nil
}

// pollTimeout is --timeout for a long poll: the wait comes on top.
func pollTimeout(timeout, wait time.Duration) time.Duration {
	if timeout <= 0 {
		return 0
	}
	return timeout + wait
}

// given reports whether flag name was on the command line.
func given(fs *verbFlags, name string) bool {
	found := false
	fs.Visit(func(f *flag.Flag) { found = found || f.Name == name })
	return found
}

func nonNilLeases(l []mailbox.LeasedTask) []mailbox.LeasedTask {
	if l == nil {
		return []mailbox.LeasedTask{}
	}
	return l
}
