package mailbox

import "sort"

// Counts are the sizes of the mailbox's parts.
type Counts struct {
	Queued   int `json:"queued"`
	InFlight int `json:"in_flight"`
	// Waiting counts tasks waiting on their sender's reply.
	Waiting        int `json:"waiting"`
	ResultsPending int `json:"results_pending"`
	Known          int `json:"known"`
}

// Counts returns how many tasks are queued, in flight, and results pending.
func (s *State) Counts() Counts {
	return Counts{Queued: s.queued.Len(), InFlight: len(s.inFlight), Waiting: len(s.waiting), ResultsPending: len(s.results), Known: len(s.tasks)}
}

// Task returns a copy of what the state knows about a task.
func (s *State) Task(id string) (TaskRecord, bool) {
	t, ok := s.tasks[id]
	if !ok {
		return TaskRecord{}, false
	}
	return t.copyRecord(), true
}

// SentTask returns a remembered task as it was sent (and handed on since),
// without copying its record's history: for a listing that shows a few
// of its fields beside something else, as the console's Results pane does.
func (s *State) SentTask(id string) (Task, bool) {
	t, ok := s.tasks[id]
	if !ok {
		return Task{}, false
	}
	return t.Task, true
}

// Parties returns a remembered task's sender and recipient, without
// copying its record.
func (s *State) Parties(id string) (sender, recipient string, ok bool) {
	t, ok := s.tasks[id]
	if !ok {
		return "", "", false
	}
	return t.Task.Sender, t.Task.Recipient, true
}

// PendingResult returns the pending result of a task, if any.
func (s *State) PendingResult(taskID string) (PendingResult, bool) {
	r, ok := s.results[taskID]
	if !ok {
		return PendingResult{}, false
	}
	return r.PendingResult, true
}

func (t *taskRec) copyRecord() TaskRecord {
	r := t.TaskRecord
	r.History = append([]HistoryEntry(nil), t.History...)
	return r
}

func (t *taskRec) entry() QueueEntry {
	e := QueueEntry{State: TaskQueued, Task: t.Task, Attempt: t.Attempt, QueuedAtMs: t.QueuedAtMs}
	switch t.State {
	case TaskInFlight:
		e.State = TaskInFlight
		e.LeaseID, e.LeasedTo, e.LeasedAtMs = t.LeaseID, t.LeasedTo, t.LeasedAtMs
	case TaskWaiting:
		e.State = TaskWaiting
		e.WaitingSinceMs = t.WaitingSince()
	}
	return e
}

func (s *State) sortedResults() []*resultRec {
	rs := make([]*resultRec, 0, len(s.results))
	for _, r := range s.results {
		rs = append(rs, r)
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].seq < rs[j].seq })
	return rs
}

func (s *State) sortedQueued() []*taskRec {
	recs := append([]*taskRec(nil), s.queued.items...)
	sort.Slice(recs, func(i, j int) bool { return recs[i].SendSeq < recs[j].SendSeq })
	return recs
}

func (s *State) sortedInFlight() []*taskRec {
	recs := make([]*taskRec, 0, len(s.inFlight))
	for _, t := range s.inFlight {
		recs = append(recs, t)
	}
	sort.Slice(recs, func(i, j int) bool {
		if recs[i].LeasedAtMs != recs[j].LeasedAtMs {
			return recs[i].LeasedAtMs < recs[j].LeasedAtMs
		}
		return recs[i].SendSeq < recs[j].SendSeq
	})
	return recs
}

func entries(recs []*taskRec) []QueueEntry {
	out := make([]QueueEntry, len(recs))
	for i, t := range recs {
		out[i] = t.entry()
	}
	return out
}

func (s *State) sortedWaiting() []*taskRec {
	recs := make([]*taskRec, 0, len(s.waiting))
	for _, t := range s.waiting {
		recs = append(recs, t)
	}
	sort.Slice(recs, func(i, j int) bool {
		a, b := recs[i].WaitingSince(), recs[j].WaitingSince()
		if a != b {
			return a < b
		}
		return recs[i].SendSeq < recs[j].SendSeq
	})
	return recs
}

// WaitingTasks returns the tasks waiting on their senders, longest
// waiting first.
func (s *State) WaitingTasks() []QueueEntry { return entries(s.sortedWaiting()) }

// QueuedTasks returns the queued tasks in lease order (oldest first).
func (s *State) QueuedTasks() []QueueEntry { return entries(s.sortedQueued()) }

// InFlightTasks returns the leased tasks, oldest lease first.
func (s *State) InFlightTasks() []QueueEntry { return entries(s.sortedInFlight()) }

// PendingResults returns the results waiting to be drained, oldest first.
func (s *State) PendingResults() []PendingResult {
	rs := s.sortedResults()
	out := make([]PendingResult, len(rs))
	for i, r := range rs {
		out[i] = r.PendingResult
	}
	return out
}

// Query answers a queue query at time nowMs: queued tasks FIFO, then
// in-flight tasks oldest lease first, then tasks waiting on their senders
// longest waiting first, filtered before the limit; pending results
// oldest first, up to the limit. A lease-age filter keeps in-flight tasks
// only; an agent filter keeps its tasks (sent to it or leased by it) and
// its results (sent by it, or answering a task sent to it).
//
// It walks each part in order and stops at the limit: the queue and the
// leases are heaps walked from the root (indexedHeap.Ascend), so a
// listing with a limit costs what it lists, and the leases older than an
// age stop at the first younger one, whatever the mailbox's size. Only an
// agent filter's leases and results are found by a scan (of the leases and
// the results, not of every task), then sorted.
func (s *State) Query(f QueueFilter, nowMs int64) QueueView {
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	keep := func(t *taskRec) bool {
		if f.DeadlineWithinMs != nil && (t.Task.DeadlineMs == nil || *t.Task.DeadlineMs > nowMs+*f.DeadlineWithinMs) {
			return false
		}
		if f.Agent != "" && t.Task.Recipient != f.Agent && t.LeasedTo != f.Agent {
			return false
		}
		return true
	}
	view := QueueView{Tasks: []QueueEntry{}}
	take := func(t *taskRec) bool {
		if keep(t) {
			view.Tasks = append(view.Tasks, t.entry())
		}
		return len(view.Tasks) < limit
	}
	more := true
	if (f.State == "" || f.State == TaskQueued) && f.MinLeaseAgeMs == nil {
		// A queued task has no holder: an agent's are the ones sent to it.
		q := s.queued
		if f.Agent != "" {
			q = s.byRecipient[f.Agent]
		}
		if q != nil {
			q.Ascend(func(t *taskRec) bool { more = take(t); return more })
		}
	}
	if more && (f.State == "" || f.State == TaskInFlight) {
		leased := func(t *taskRec) bool {
			if f.MinLeaseAgeMs != nil && nowMs-t.LeasedAtMs < *f.MinLeaseAgeMs {
				// Oldest first: every lease after this one is younger.
				more = false
				return false
			}
			more = take(t)
			return more
		}
		if f.Agent != "" {
			for _, t := range s.agentLeases(f.Agent) {
				if !leased(t) {
					break
				}
			}
		} else {
			s.leases.Ascend(leased)
		}
	}
	if more && (f.State == "" || f.State == TaskWaiting) && f.MinLeaseAgeMs == nil {
		for _, t := range s.sortedWaiting() {
			if !take(t) {
				break
			}
		}
	}
	view.Results = s.pendingResults(f.Agent, limit)
	return view
}

// pendingResults are up to limit pending results, oldest first; with an
// agent, the ones sent by it or answering a task sent to it.
func (s *State) pendingResults(agent string, limit int) []PendingResult {
	out := []PendingResult{}
	add := func(r *resultRec) bool {
		if len(out) >= limit {
			return false
		}
		out = append(out, r.PendingResult)
		return true
	}
	if agent == "" {
		s.resultsAll.Ascend(add)
		return out
	}
	for _, r := range s.agentResults(agent) {
		if !add(r) {
			break
		}
	}
	return out
}

// agentLeases are the in-flight tasks sent to agent or leased by it,
// oldest lease first.
func (s *State) agentLeases(agent string) []*taskRec {
	var recs []*taskRec
	for _, t := range s.inFlight {
		if t.Task.Recipient == agent || t.LeasedTo == agent {
			recs = append(recs, t)
		}
	}
	sort.Slice(recs, func(i, j int) bool { return leasedBefore(recs[i], recs[j]) })
	return recs
}

// agentResults are the pending results sent by agent or answering a task
// sent to it, oldest first.
func (s *State) agentResults(agent string) []*resultRec {
	var rs []*resultRec
	for _, r := range s.results {
		if r.Sender == agent || r.Recipient == agent {
			rs = append(rs, r)
		}
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].seq < rs[j].seq })
	return rs
}

// Children returns the ids of remembered tasks whose parent is id, in send order.
func (s *State) Children(id string) []string {
	var recs []*taskRec
	for _, t := range s.tasks {
		if t.Task.Parent == id {
			recs = append(recs, t)
		}
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].SendSeq < recs[j].SendSeq })
	ids := make([]string, len(recs))
	for i, t := range recs {
		ids[i] = t.Task.ID
	}
	return ids
}
