package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/mailbox"
)

// Ids on the command line may be shortened, as git's and docker's are: a
// full id is used as it is, and anything shorter is looked up among the ids
// the daemon holds now.
const (
	// uuidLen is the length of a full id, which needs no lookup.
	uuidLen = 36
	// minIDPrefix is the shortest prefix looked up: shorter ones match too
	// much to be typed on purpose.
	minIDPrefix = 6
	// maxCandidatesShown bounds the list an ambiguous prefix prints.
	maxCandidatesShown = 10
)

// idCandidate is an id a prefix may stand for, with what an operator needs
// to tell it from the others.
type idCandidate struct {
	id        string
	state     string // queued, in_flight, result_pending, or an audit action
	recipient string // the agent the task is for, or the lease's holder
	task      string // for a lease: its task
}

// idSource lists the ids a prefix is looked up in; capped says a list was
// cut at mailbox.MaxLimit, so an id may be missing from it.
type idSource func(ctx context.Context) (cands []idCandidate, capped bool, err error)

// resolveTaskID returns the task id arg stands for: arg itself when it is a
// full id, else the one queued or in-flight task or pending result whose id
// starts with it. argName is how the command line names the argument
// (TASK_ID, --parent), for messages.
func resolveTaskID(ctx context.Context, c *client.Client, arg, argName string) (string, error) {
	return resolveID(ctx, arg, argName, "task", "a queued or in-flight task or a pending result", actionableTasks(c))
}

// resolveLeaseID is resolveTaskID for the lease of an in-flight task.
func resolveLeaseID(ctx context.Context, c *client.Client, arg, argName string) (string, error) {
	return resolveID(ctx, arg, argName, "lease", "an in-flight task's current lease", currentLeases(c))
}

// resolveRepairedTaskID is resolveTaskID for 'audit --task', which also
// looks in the repair trail: a repaired task may since have been drained.
func resolveRepairedTaskID(ctx context.Context, c *client.Client, arg, argName string) (string, error) {
	return resolveID(ctx, arg, argName, "task", "a queued, in-flight or repaired task or a pending result", either(actionableTasks(c), repairedTasks(c)))
}

// resolveID checks arg's form, then looks it up in src. Every mistake is a
// usage error naming argName; a lookup the daemon refuses is not.
func resolveID(ctx context.Context, arg, argName, what, where string, src idSource) (string, error) {
	if len(arg) == uuidLen {
		return arg, nil
	}
	prefix := strings.ToLower(arg)
	expected := fmt.Sprintf("expected a %s id (a UUID such as 6f9619ff-8b86-4d11-b42d-00c04fc964ff) or a unique prefix of at least %d characters", what, minIDPrefix)
	if strings.Trim(prefix, "0123456789abcdef-") != "" || len(prefix) > uuidLen {
		return "", usagef("%s: got %q, %s", argName, arg, expected)
	}
	if len(prefix) < minIDPrefix {
		return "", usagef("%s: got %q (%d characters), %s", argName, arg, len(arg), expected)
	}
	cands, capped, err := src(ctx)
	if err != nil {
		if isUnreachable(err) {
			return "", err
		}
		// Without a text of our own, report would print only the daemon's.
		return "", fmt.Errorf("%s: looking up the %s id prefix %q: %s (a full id needs no lookup)", argName, what, arg, errorText(err))
	}
	matches := matchPrefix(cands, prefix)
	switch len(matches) {
	case 1:
		return matches[0].id, nil
	case 0:
		msg := fmt.Sprintf("%s: no %s id starts with %q; expected the id of %s, or a unique prefix of it of at least %d characters", argName, what, arg, where, minIDPrefix)
		if capped {
			msg += fmt.Sprintf(" (only the first %d of each were looked at: give the full id)", mailbox.MaxLimit)
		}
		return "", usagef("%s", msg)
	}
	return "", usagef("%s: %q is ambiguous: %d %ss have an id starting with it; give more characters\n%s", argName, arg, len(matches), what, candidateTable(matches))
}

// pastLease returns the one lease of task taskID that a repair ended
// whose id starts with prefix (a lease the operator looked at before it
// was requeued), from the task's repair trail; ok is false when there is
// none, or more than one.
func pastLease(ctx context.Context, c *client.Client, taskID, prefix string) (string, bool) {
	prefix = strings.ToLower(prefix)
	if len(prefix) < minIDPrefix || len(prefix) > uuidLen {
		return "", false
	}
	recs, err := c.Audit(ctx, taskID, mailbox.MaxLimit)
	if err != nil {
		return "", false
	}
	found := ""
	for _, r := range recs {
		if strings.HasPrefix(r.LeaseID, prefix) && r.LeaseID != found {
			if found != "" {
				return "", false
			}
			found = r.LeaseID
		}
	}
	return found, found != ""
}

// matchPrefix returns the candidates whose id starts with prefix, each id
// once (a source may list it twice).
func matchPrefix(cands []idCandidate, prefix string) []idCandidate {
	var out []idCandidate
	seen := map[string]bool{}
	for _, c := range cands {
		if strings.HasPrefix(c.id, prefix) && !seen[c.id] {
			seen[c.id] = true
			out = append(out, c)
		}
	}
	return out
}

// candidateTable lists ambiguous candidates, indented under the message.
func candidateTable(cands []idCandidate) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	for i, c := range cands {
		if i == maxCandidatesShown {
			fmt.Fprintf(tw, "  ... and %d more\n", len(cands)-i)
			break
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s", c.id, c.state, c.recipient)
		if c.task != "" {
			fmt.Fprintf(tw, "\ttask %s", c.task)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	return strings.TrimRight(b.String(), "\n")
}

// actionableTasks lists the tasks a verb can act on: queued and in flight (asked
// for separately, so neither crowds the other out of the limit) and those
// with a result pending.
func actionableTasks(c *client.Client) idSource {
	return func(ctx context.Context) ([]idCandidate, bool, error) {
		var cands []idCandidate
		capped := false
		for _, state := range []string{mailbox.TaskInFlight, mailbox.TaskQueued} {
			view, err := c.Queue(ctx, mailbox.QueueFilter{State: state, Limit: mailbox.MaxLimit})
			if err != nil {
				return nil, false, err
			}
			capped = capped || len(view.Tasks) == mailbox.MaxLimit
			for _, t := range view.Tasks {
				cands = append(cands, idCandidate{id: t.Task.ID, state: t.State, recipient: t.Task.Recipient})
			}
			if state == mailbox.TaskInFlight {
				capped = capped || len(view.Results) == mailbox.MaxLimit
				for _, r := range view.Results {
					cands = append(cands, idCandidate{id: r.TaskID, state: mailbox.TaskResultPending, recipient: r.Recipient})
				}
			}
		}
		return cands, capped, nil
	}
}

// currentLeases lists the current leases of in-flight tasks.
func currentLeases(c *client.Client) idSource {
	return func(ctx context.Context) ([]idCandidate, bool, error) {
		view, err := c.Queue(ctx, mailbox.QueueFilter{State: mailbox.TaskInFlight, Limit: mailbox.MaxLimit})
		if err != nil {
			return nil, false, err
		}
		cands := make([]idCandidate, 0, len(view.Tasks))
		for _, t := range view.Tasks {
			cands = append(cands, idCandidate{id: t.LeaseID, state: t.State, recipient: t.LeasedTo, task: t.Task.ID})
		}
		return cands, len(view.Tasks) == mailbox.MaxLimit, nil
	}
}

// repairedTasks lists the tasks in the repair trail, newest repair first.
func repairedTasks(c *client.Client) idSource {
	return func(ctx context.Context) ([]idCandidate, bool, error) {
		recs, err := c.Audit(ctx, "", mailbox.MaxLimit)
		if err != nil {
			return nil, false, err
		}
		cands := make([]idCandidate, 0, len(recs))
		for _, r := range recs {
			cands = append(cands, idCandidate{id: r.TaskID, state: r.Action, recipient: orDash(r.LeasedTo)})
		}
		return cands, len(recs) == mailbox.MaxLimit, nil
	}
}

// either looks ids up in every source; the first to list an id describes it.
func either(srcs ...idSource) idSource {
	return func(ctx context.Context) ([]idCandidate, bool, error) {
		var all []idCandidate
		capped := false
		for _, src := range srcs {
			cands, c, err := src(ctx)
			if err != nil {
				return nil, false, err
			}
			all, capped = append(all, cands...), capped || c
		}
		return all, capped, nil
	}
}
