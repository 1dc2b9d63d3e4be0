package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
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
	from := fs.String("from", "", "sending agent, which later drains the result (required)")
	to := fs.String("to", "", "recipient agent, which leases the task (required)")
	intent := fs.String("intent", "", "what the recipient should do (required)")
	kind := fs.String("kind", "", "task kind, such as review or summarize")
	parent := fs.String("parent", "", "id of the task this one was split from (a unique prefix of 6+ characters will do while it is queued, in flight or has a result pending)")
	deadline := fs.String("deadline", "", "deadline: a duration from now (10m) or an RFC 3339 time")
	key := fs.String("idempotency-key", "", "key identifying the work, for de-duplication and safe requeue")
	idempotent := fs.Bool("idempotent", false, "the task is safe to run twice (needs --idempotency-key)")
	id := fs.String("id", "", "task id (a UUID); the daemon picks one when absent")
	taskContext := fs.String("context", "", "structured input for the worker beside the intent: a JSON object, carried in its lease")
	file := fs.String("file", "", "send the tasks in this file, one JSON task a line (- for stdin), in batches of 100; prints one line a task")
	asJSON := fs.Bool("json", false, "print the daemon's answer as JSON (with --file, one answer a line)")
	if _, err := parseExact(fs, args); err != nil {
		return err
	}
	if *file != "" {
		for _, name := range []string{"from", "to", "intent", "kind", "parent", "deadline", "idempotency-key", "idempotent", "id", "context"} {
			if given(fs, name) {
				return usagef("--%s: the tasks of --file say everything about themselves; give one or the other", name)
			}
		}
		return sendFile(ctx, e, cf, *file, *asJSON)
	}
	if err := required(fs, "from", "to", "intent"); err != nil {
		return err
	}
	t := mailbox.Task{ID: *id, Sender: *from, Recipient: *to, IntentText: *intent}
	if *kind != "" {
		t.TaskKind = kind
	}
	if given(fs, "context") {
		if !json.Valid([]byte(*taskContext)) {
			return usagef("--context: got %q, which is not JSON; expected a JSON object such as '{\"repo\":\"mailroom\"}'", *taskContext)
		}
		t.Context = json.RawMessage(*taskContext)
	}
	if *deadline != "" {
		ms, err := parseDeadline(*deadline, time.Now())
		if err != nil {
			return err
		}
		t.DeadlineMs = &ms
	}
	switch {
	case *idempotent && *key == "":
		return usagef("--idempotent needs --idempotency-key: the key is how a duplicate is recognised")
	case *key != "":
		safety := mailbox.DuplicateUnsafe
		if *idempotent {
			safety = mailbox.DuplicateIdempotent
		}
		t.Idempotency = &mailbox.Idempotency{DuplicateSafety: safety, Key: *key}
	}
	c, ctx, cancel, err := cf.connect(ctx, e)
	if err != nil {
		return err
	}
	defer cancel()
	if *parent != "" {
		if t.Parent, err = resolveTaskID(ctx, c, *parent, "--parent"); err != nil {
			return err
		}
	}
	resp, err := c.Send(ctx, t)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(e.stdout, resp)
	}
	fmt.Fprintln(e.stdout, resp.TaskID)
	if resp.Deduplicated {
		fmt.Fprintf(e.stderr, "mailroom send: an identical idempotent task was already sent; its id is %s\n", resp.TaskID)
	}
	return nil
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

// sendFile sends the tasks of a JSON-lines file (or stdin) in batches and
// prints one line a task, in file order: its id, or why it was refused.
// It fails (exit 1) when any task was refused.
func sendFile(ctx context.Context, e *env, cf *clientFlags, path string, asJSON bool) error {
	var in io.Reader
	if path == "-" {
		in = e.stdin
		if in == nil {
			in = os.Stdin
		}
	} else {
		f, err := os.Open(path)
		if err != nil {
			return usagef("--file: %v", err)
		}
		defer f.Close()
		in = f
	}
	c, ctx, cancel, err := cf.connect(ctx, e)
	if err != nil {
		return err
	}
	defer cancel()
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), mailbox.MaxBodyBytes)
	// pending is one line waiting for its answer: a task to send, or the
	// refusal it met already (answers are printed in file order).
	type pending struct {
		line    int
		task    mailbox.Task
		refusal *mailbox.BatchItem
	}
	var batch []pending
	refused, line := 0, 0
	report := func(line int, it mailbox.BatchItem) error {
		if !it.OK() {
			refused++
		}
		if asJSON {
			it.Index = line
			return writeJSON(e.stdout, it)
		}
		if it.OK() {
			fmt.Fprintln(e.stdout, it.TaskID)
		} else {
			fmt.Fprintf(e.stdout, "error: line %d: %s\n", line, it.Message)
		}
		return nil
	}
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		var tasks []mailbox.Task
		for _, p := range batch {
			if p.refusal == nil {
				tasks = append(tasks, p.task)
			}
		}
		var items []mailbox.BatchItem
		if len(tasks) > 0 {
			var err error
			if items, err = c.SendBatch(ctx, tasks); err != nil {
				return fmt.Errorf("sending lines %d to %d: %w (the lines before them were sent)", batch[0].line, batch[len(batch)-1].line, err)
			}
		}
		k := 0
		for _, p := range batch {
			it := mailbox.BatchItem{}
			if p.refusal != nil {
				it = *p.refusal
			} else {
				it = items[k]
				it.Message = strings.Replace(it.Message, fmt.Sprintf("tasks[%d]", k), "task", 1)
				k++
			}
			if err := report(p.line, it); err != nil {
				return err
			}
		}
		batch = batch[:0]
		return nil
	}
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		var t mailbox.Task
		dec := json.NewDecoder(strings.NewReader(text))
		dec.DisallowUnknownFields()
		p := pending{line: line}
		if err := dec.Decode(&t); err != nil {
			p.refusal = &mailbox.BatchItem{Kind: mailbox.KindError, Code: mailbox.CodeInvalid, Message: "not a task: " + strings.TrimPrefix(err.Error(), "json: ")}
		}
		p.task = t
		if batch = append(batch, p); len(batch) == mailbox.DefaultBatchMax {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading %s at line %d: %w", path, line+1, err)
	}
	if err := flush(); err != nil {
		return err
	}
	if refused > 0 {
		return fmt.Errorf("%d of the tasks were refused (their lines say why); the others were sent", refused)
	}
	return nil
}
