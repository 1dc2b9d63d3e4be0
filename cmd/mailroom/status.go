package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/mailbox"
	"github.com/mailroom/mailroom/tui"
)

const statusSummary = "show queued, in-flight and waiting tasks and pending results"

// statusReport is the --json shape. Its keys are a contract for scripts:
// exactly these, with unset filters as null rather than absent.
type statusReport struct {
	Kind             string                  `json:"kind"`
	Limit            int                     `json:"limit"`
	MinLeaseAgeMs    *int64                  `json:"min_lease_age_ms"`
	DeadlineWithinMs *int64                  `json:"deadline_within_ms"`
	StateFilter      *string                 `json:"state_filter"`
	AgentFilter      *string                 `json:"agent_filter"`
	Counts           statusCounts            `json:"counts"`
	Tasks            []mailbox.QueueEntry    `json:"tasks"`
	Results          []mailbox.PendingResult `json:"results"`
	// Store is the instance's part in a shared mailbox; absent on a
	// daemon with a local log.
	Store *mailbox.StoreRole `json:"store,omitempty"`
}

// statusCounts are the mailbox's totals, whatever the filters and -n keep
// of the lists.
type statusCounts struct {
	Queued   int `json:"queued"`
	InFlight int `json:"in_flight"`
	// Waiting counts tasks waiting on their senders to answer their
	// workers' questions.
	Waiting int `json:"waiting"`
	// Stale counts in-flight leases held at least StaleAfterMs. It is
	// counted up to mailbox.MaxLimit; StaleCapped says there may be more.
	Stale          int   `json:"stale"`
	StaleCapped    bool  `json:"stale_capped"`
	StaleAfterMs   int64 `json:"stale_after_ms"`
	ResultsPending int   `json:"results_pending"`
}

func runStatus(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, verbHelp{
		verb:    "status",
		summary: statusSummary,
		usage:   "[flags]",
		example: "mailroom status --state in_flight --min-lease-age-ms 600000   # leases held over 10 minutes\nmailroom status --state waiting                                # questions waiting on their senders\nmailroom status --agent coder@local                            # one agent's queue, leases and results",
	})
	cf := addClientFlags(fs, e)
	limit := fs.Int("n", mailbox.DefaultLimit, fmt.Sprintf("show at most this many tasks (in-flight leases first) and results (1 to %d); filters apply first", mailbox.MaxLimit))
	var minAge, deadlineWithin optionalInt64
	fs.Var(&minAge, "min-lease-age-ms", "only in-flight tasks leased at least this many milliseconds ago")
	fs.Var(&deadlineWithin, "deadline-within-ms", "only tasks whose deadline is at most this many milliseconds away")
	state := fs.String("state", "", "only tasks in this state: queued, in_flight or waiting")
	agent := fs.String("agent", "", "only this agent's tasks (sent to it or leased by it) and results (sent by it or answering it)")
	staleAfter := fs.Duration("stale-after", tui.DefaultStaleAfter, "count leases held longer than this as stale, as the console does")
	asJSON := fs.Bool("json", false, "print one a2a_status JSON object")
	if _, err := parseExact(fs, args); err != nil {
		return err
	}
	if *limit < 1 || *limit > mailbox.MaxLimit {
		return usagef("-n: got %d, expected a number from 1 to %d", *limit, mailbox.MaxLimit)
	}
	switch *state {
	case "", mailbox.TaskQueued, mailbox.TaskInFlight, mailbox.TaskWaiting:
	default:
		return usagef("--state: got %q, expected queued, in_flight or waiting", *state)
	}
	if isSet(fs, "agent") && strings.TrimSpace(*agent) == "" {
		return usagef("--agent: got %q, expected an agent id such as coder@local; leave --agent out for every agent", *agent)
	}
	if minAge.v != nil && *minAge.v < 0 {
		return usagef("--min-lease-age-ms: got %d, expected 0 or more", *minAge.v)
	}
	if *staleAfter <= 0 {
		return usagef("--stale-after: got %s, expected a positive duration such as 5m", *staleAfter)
	}
	c, ctx, cancel, err := cf.connect(ctx, e)
	if err != nil {
		return err
	}
	defer cancel()
	if *agent != "" {
		// A typo shows an empty mailbox otherwise.
		known, err := c.Agents(ctx)
		if err != nil {
			return err
		}
		if err := knownAgent(known, "--agent", *agent, ""); err != nil {
			return err
		}
	}
	counts, role, err := countAll(ctx, c, *staleAfter)
	if err != nil {
		return err
	}
	filter := mailbox.QueueFilter{Limit: *limit, MinLeaseAgeMs: minAge.v, DeadlineWithinMs: deadlineWithin.v, State: *state, Agent: *agent}
	view, err := leasesFirst(ctx, c, filter)
	if err != nil {
		return err
	}
	rep := statusReport{Kind: mailbox.KindStatus, Limit: *limit, MinLeaseAgeMs: minAge.v, DeadlineWithinMs: deadlineWithin.v,
		Counts: counts, Tasks: view.Tasks, Results: view.Results, Store: role}
	if *state != "" {
		rep.StateFilter = state
	}
	if *agent != "" {
		rep.AgentFilter = agent
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

// leasesFirst lists the tasks f selects with in-flight leases first, then
// tasks waiting on their senders, and queued tasks only in the room they
// leave: the daemon lists queued tasks first, so with more of them than
// the limit no lease would be shown, and leases and unanswered questions
// are what an operator looks after.
func leasesFirst(ctx context.Context, c *client.Client, f mailbox.QueueFilter) (mailbox.QueueView, error) {
	if f.State != "" {
		return c.Queue(ctx, f)
	}
	leases := f
	leases.State = mailbox.TaskInFlight
	view, err := c.Queue(ctx, leases)
	// A lease age filter leaves out every queued and waiting task.
	if err != nil || len(view.Tasks) >= f.Limit || f.MinLeaseAgeMs != nil {
		return view, err
	}
	for _, state := range []string{mailbox.TaskWaiting, mailbox.TaskQueued} {
		if len(view.Tasks) >= f.Limit {
			break
		}
		more := f
		more.State, more.Limit = state, f.Limit-len(view.Tasks)
		got, err := c.Queue(ctx, more)
		if err != nil {
			return view, err
		}
		view.Tasks = append(view.Tasks, got.Tasks...)
	}
	return view, nil
}

// countAll asks the daemon for its totals, and counts the leases held
// longer than staleAfter by its clock.
func countAll(ctx context.Context, c *client.Client, staleAfter time.Duration) (statusCounts, *mailbox.StoreRole, error) {
	total, err := c.Status(ctx)
	if err != nil {
		return statusCounts{}, nil, err
	}
	counts := statusCounts{Queued: total.Queued, InFlight: total.InFlight, Waiting: total.Waiting, ResultsPending: total.ResultsPending, StaleAfterMs: staleAfter.Milliseconds()}
	if total.InFlight == 0 {
		return counts, total.Store, nil
	}
	stale, err := c.Queue(ctx, mailbox.QueueFilter{State: mailbox.TaskInFlight, MinLeaseAgeMs: &counts.StaleAfterMs, Limit: mailbox.MaxLimit})
	if err != nil {
		return statusCounts{}, nil, err
	}
	counts.Stale, counts.StaleCapped = len(stale.Tasks), len(stale.Tasks) == mailbox.MaxLimit
	return counts, total.Store, nil
}

// roleLine says which instance of a shared mailbox answered and its part.
func roleLine(r *mailbox.StoreRole) string {
	switch {
	case r.Role == "leader":
		return fmt.Sprintf("shared mailbox (%s): this instance (%s) leads, epoch %d", r.Kind, r.Self, r.Epoch)
	case r.LeaderURL == "":
		return fmt.Sprintf("shared mailbox (%s): this instance (%s) follows; no instance leads right now (an election is under way), epoch %d", r.Kind, r.Self, r.Epoch)
	}
	return fmt.Sprintf("shared mailbox (%s): this instance (%s) follows %s (%s), epoch %d, %d events behind", r.Kind, r.Self, r.LeaderURL, r.Leader, r.Epoch, r.Behind)
}

// printStatus writes the totals, what of them is listed, and the lists.
func printStatus(w io.Writer, rep statusReport, now time.Time) {
	printTotals(w, rep)
	waiting := printListed(w, rep)
	if len(rep.Tasks) > 0 {
		printTasks(w, rep.Tasks, now)
	}
	if waiting > 0 {
		printWaiting(w, rep.Tasks, now)
	}
	if len(rep.Results) > 0 {
		printResults(w, rep.Results, now)
	}
}

// printTotals writes which instance answered and the mailbox's counts.
func printTotals(w io.Writer, rep statusReport) {
	if rep.Store != nil {
		fmt.Fprintln(w, roleLine(rep.Store))
	}
	n := rep.Counts
	stale := fmt.Sprint(n.Stale)
	if n.StaleCapped {
		stale = fmt.Sprintf("at least %d", n.Stale)
	}
	// Waiting tasks are named only when there are some: most mailboxes
	// never hold a conversation.
	waitingNote := ""
	if n.Waiting > 0 {
		waitingNote = fmt.Sprintf(", %d waiting on their senders", n.Waiting)
	}
	fmt.Fprintf(w, "%d queued, %d in flight, %s stale (leased over %s)%s, %d results pending\n",
		n.Queued, n.InFlight, stale, time.Duration(n.StaleAfterMs)*time.Millisecond, waitingNote, n.ResultsPending)
}

// printListed says what of the totals the lists below hold, when that is
// not all of them, and returns how many of the tasks listed wait on their
// senders.
func printListed(w io.Writer, rep statusReport) (waiting int) {
	n := rep.Counts
	var queued, inFlight int
	for _, t := range rep.Tasks {
		switch t.State {
		case mailbox.TaskInFlight:
			inFlight++
		case mailbox.TaskWaiting:
			waiting++
		default:
			queued++
		}
	}
	filtered := rep.StateFilter != nil || rep.AgentFilter != nil || rep.MinLeaseAgeMs != nil || rep.DeadlineWithinMs != nil
	cut := len(rep.Tasks) >= rep.Limit || len(rep.Results) >= rep.Limit
	if filtered || cut || len(rep.Tasks) < n.Queued+n.InFlight+n.Waiting || len(rep.Results) < n.ResultsPending {
		if n.Waiting > 0 || waiting > 0 {
			fmt.Fprintf(w, "listed: %d in flight, %d waiting, %d queued, %d results", inFlight, waiting, queued, len(rep.Results))
		} else {
			fmt.Fprintf(w, "listed: %d in flight, %d queued, %d results", inFlight, queued, len(rep.Results))
		}
		if filtered {
			fmt.Fprint(w, " matching the filters")
		}
		if cut {
			fmt.Fprintf(w, " (showing at most %d, leases first; raise -n for more)", rep.Limit)
		}
		fmt.Fprintln(w)
	}
	return waiting
}

func printTasks(w io.Writer, tasks []mailbox.QueueEntry, now time.Time) {
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STATE\tTASK\tSENDER -> RECIPIENT\tKIND\tATTEMPT\tLEASE AGE\tLEASED TO\tINTENT")
	for _, t := range tasks {
		leaseAge := "-"
		if t.State == mailbox.TaskInFlight {
			leaseAge = age(now, t.LeasedAtMs)
		}
		if t.State == mailbox.TaskWaiting {
			// A waiting task holds no lease; its age is how long its
			// question has waited.
			leaseAge = "waited " + age(now, t.WaitingSinceMs)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s -> %s\t%s\t%d\t%s\t%s\t%s\n", t.State, t.Task.ID, t.Task.Sender, t.Task.Recipient,
			orDash(t.Task.Kind()), t.Attempt, leaseAge, orDash(t.LeasedTo), truncate(t.Task.IntentText, 48))
	}
	tw.Flush()
}

// printWaiting lists the tasks waiting on their senders, with the
// question each waits on.
func printWaiting(w io.Writer, tasks []mailbox.QueueEntry, now time.Time) {
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WAITING TASK\tWAITING ON\tASKED BY\tWAITED\tTURNS\tQUESTION")
	for _, t := range tasks {
		if t.State != mailbox.TaskWaiting {
			continue
		}
		q, _ := t.Task.Question()
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", t.Task.ID, t.Task.Sender, q.Agent, age(now, t.WaitingSinceMs), len(t.Task.Turns),
			truncate(q.Status+": "+contentLine(mailbox.Result{Content: q.Content}), 60))
	}
	tw.Flush()
}

func printResults(w io.Writer, results []mailbox.PendingResult, now time.Time) {
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RESULT FOR TASK\tSTATUS\tRECIPIENT -> SENDER\tWAITING\tCONTENT")
	for _, r := range results {
		status := r.Status
		if r.Forced {
			status += " (forced)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s -> %s\t%s\t%s\n", r.TaskID, status, r.Recipient, r.Sender, age(now, r.PostedAtMs), truncate(contentLine(r.Result), 48))
	}
	tw.Flush()
}
