package tui

// What an agent owes: the leases it holds, the tasks queued for it, the
// questions waiting on its answer (tasks it sent whose workers asked it)
// and the results waiting for it to drain. The Agents pane's R and E
// settle it all in one dialog, and an agent that owes anything and is not
// seen is flagged; both are computed from the replica, as the panes are.

// debtOf is everything agent owes, as repair targets: its leases, its
// queued tasks, the questions waiting on it and its undrained results (a
// question's own pending result is the question's: it goes with it).
func (r *rows) debtOf(agent string) []repairTarget {
	var out []repairTarget
	for i := range r.leases {
		if r.leases[i].LeasedTo == agent {
			out = append(out, targetOf(&r.leases[i]))
		}
	}
	for i := range r.queued {
		if r.queued[i].Task.Recipient == agent {
			out = append(out, targetOf(&r.queued[i]))
		}
	}
	waiting := map[string]bool{}
	for i := range r.waiting {
		if e := &r.waiting[i]; e.Task.Sender == agent {
			waiting[e.Task.ID] = true
			out = append(out, targetOf(e))
		}
	}
	for i := range r.results {
		if res := &r.results[i]; res.Sender == agent && !waiting[res.TaskID] && !res.a2a {
			out = append(out, resultTarget(res))
		}
	}
	return out
}

// countUndrained counts, by sender, the results waiting to be drained
// that are not a waiting task's question (those count as questions).
func countUndrained(results []resultRow, waiting map[string]bool) map[string]int {
	out := map[string]int{}
	for i := range results {
		if r := &results[i]; !waiting[r.TaskID] && !r.a2a {
			out[r.Sender]++
		}
	}
	return out
}

// owes reports whether anything waits on the agent: a lease, a queued
// task, a question, an undrained result.
func (a *agentRow) owes() bool {
	return a.held > 0 || a.Queued > 0 || a.waiting > 0 || a.undrained > 0
}
