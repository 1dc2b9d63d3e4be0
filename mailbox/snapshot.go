package mailbox

import (
	"fmt"
	"maps"
	"slices"
	"sort"
)

// Snapshot returns a deep copy of the whole state.
func (s *State) Snapshot(atMs int64) *Snapshot {
	limits := s.Limits
	snap := &Snapshot{Seq: s.Seq, AtMs: atMs, Limits: &limits, Tasks: make([]TaskRecord, 0, len(s.tasks)), Results: make([]PendingResult, 0, len(s.results))}
	recs := make([]*taskRec, 0, len(s.tasks))
	for _, t := range s.tasks {
		recs = append(recs, t)
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].SendSeq < recs[j].SendSeq })
	for _, t := range recs {
		snap.Tasks = append(snap.Tasks, t.copyRecord())
	}
	for _, r := range s.sortedResults() {
		snap.Results = append(snap.Results, r.PendingResult)
	}
	snap.ResultCache = s.CachedResults()
	snap.Audit = append([]AuditRecord(nil), s.audit[max(0, len(s.audit)-s.AuditMax):]...)
	if len(s.registry) > 0 {
		snap.Registry = s.Registry()
	}
	if len(s.outbox) > 0 {
		snap.Outbox = s.Outbox()
	}
	return snap
}

// Restore replaces the state with a snapshot, limits included (the
// defaults for a snapshot written before snapshots carried them). The
// snapshot's results keep their order; drained tasks are remembered in the
// order they were finished.
func (s *State) Restore(snap *Snapshot) error {
	n := NewState()
	// Sized for the snapshot at once: growing maps of a million tasks
	// step by step rehashed them a dozen times over.
	n.tasks = make(map[string]*taskRec, len(snap.Tasks))
	if snap.Limits != nil {
		if err := snap.Limits.validate(); err != nil {
			return fmt.Errorf("snapshot %d: %w", snap.Seq, err)
		}
		n.Limits = snap.Limits.canonical()
	}
	if err := n.restoreTasks(snap); err != nil {
		return err
	}
	if err := n.restoreResults(snap); err != nil {
		return err
	}
	for _, c := range snap.ResultCache {
		c := c
		n.cache[c.Key] = &c
		n.cacheOrder = append(n.cacheOrder, &c)
	}
	n.audit = append([]AuditRecord(nil), snap.Audit...)
	if err := n.restoreRegistry(snap); err != nil {
		return err
	}
	if err := n.restoreOutbox(snap.Seq, snap.Outbox); err != nil {
		return err
	}
	n.Seq = snap.Seq
	*s = *n
	return nil
}

// restoreTasks puts the snapshot's tasks in the indexes of their states;
// drained tasks are remembered in the order they were finished.
func (s *State) restoreTasks(snap *Snapshot) error {
	var done []*taskRec
	for _, tr := range snap.Tasks {
		if _, dup := s.tasks[tr.Task.ID]; dup {
			return fmt.Errorf("snapshot %d: task %s appears twice", snap.Seq, tr.Task.ID)
		}
		t := &taskRec{TaskRecord: tr, gidx: -1, ridx: -1, lidx: -1}
		t.History = append([]HistoryEntry(nil), tr.History...)
		s.addTask(t)
		s.actedFromHistory(t)
		switch t.State {
		case TaskQueued:
			s.enqueue(t)
			s.trackLive(t)
		case TaskInFlight:
			s.holdLease(t)
			s.trackLive(t)
		case TaskWaiting:
			if len(t.Task.Turns) == 0 || t.Task.Turns[len(t.Task.Turns)-1].Role != RoleWorker {
				return fmt.Errorf("snapshot %d: task %s waits on its sender without a question", snap.Seq, tr.Task.ID)
			}
			s.waiting[t.Task.ID] = t
			s.trackLive(t)
		case TaskDone, TaskCanceled:
			done = append(done, t)
		case TaskResultPending:
		default:
			return fmt.Errorf("snapshot %d: task %s has unknown state %q", snap.Seq, tr.Task.ID, t.State)
		}
	}
	sort.Slice(done, func(i, j int) bool { return done[i].DoneSeq < done[j].DoneSeq })
	for _, t := range done {
		s.remember(t.Task.ID)
	}
	return nil
}

// restoreResults puts the snapshot's pending results, in their order, on
// the tasks waiting for them; every task waiting for a result must get one.
func (s *State) restoreResults(snap *Snapshot) error {
	for i, pr := range snap.Results {
		t, ok := s.tasks[pr.TaskID]
		if !ok || (t.State != TaskResultPending && t.State != TaskWaiting) {
			return fmt.Errorf("snapshot %d: result for task %s, which is not waiting for one", snap.Seq, pr.TaskID)
		}
		r := &resultRec{PendingResult: pr, seq: uint64(i), gidx: -1, sidx: -1}
		s.results[pr.TaskID] = r
		s.resultsAll.Push(r)
		s.senderHeap(r.Sender).Push(r)
	}
	for id, t := range s.tasks {
		if _, ok := s.results[id]; t.State == TaskResultPending && !ok {
			return fmt.Errorf("snapshot %d: task %s waits for a result the snapshot does not have", snap.Seq, id)
		}
	}
	return nil
}

// restoreRegistry restores the registered agents' cards.
func (s *State) restoreRegistry(snap *Snapshot) error {
	for _, r := range snap.Registry {
		if err := validAgentIDChars("agent", r.Agent); err != nil {
			return fmt.Errorf("snapshot %d: registry: %w", snap.Seq, err)
		}
		if _, dup := s.registry[r.Agent]; dup {
			return fmt.Errorf("snapshot %d: agent %s registered twice", snap.Seq, r.Agent)
		}
		r := r
		s.registry[r.Agent] = &r
	}
	return nil
}

// Clone returns an independent copy of the state: every task and
// pending result copied once, its indexes (the maps, and the heaps
// position for position) pointing at the copies. Going through a snapshot
// and Restore copied each task twice and rebuilt every index entry by
// entry: 3.7 of the 10 s of a restart over a million live tasks (issue
// 27). The copies share what a state never writes in place (strings, a
// result's content, a task's turns and push configs), as a snapshot's
// records did; a task's history is appended to, so it is copied.
func (s *State) Clone() *State {
	c := NewState()
	c.Seq, c.Limits, c.atMs = s.Seq, s.Limits, s.atMs
	tasks := make(map[*taskRec]*taskRec, len(s.tasks))
	c.tasks = make(map[string]*taskRec, len(s.tasks))
	for id, t := range s.tasks {
		n := new(taskRec)
		*n = *t
		n.History = slices.Clone(t.History)
		c.tasks[id] = n
		tasks[t] = n
	}
	cloneHeap(c.queued, s.queued, tasks)
	cloneHeaps(c.byRecipient, s.byRecipient, func() *indexedHeap[*taskRec] { return newTaskHeap(func(t *taskRec) *int { return &t.ridx }) }, tasks)
	cloneHeap(c.leases, s.leases, tasks)
	for id, t := range s.inFlight {
		c.inFlight[id] = tasks[t]
	}
	for id, t := range s.waiting {
		c.waiting[id] = tasks[t]
	}
	results := make(map[*resultRec]*resultRec, len(s.results))
	for id, r := range s.results {
		n := new(resultRec)
		*n = *r
		c.results[id] = n
		results[r] = n
	}
	cloneHeap(c.resultsAll, s.resultsAll, results)
	cloneHeaps(c.bySender, s.bySender, func() *indexedHeap[*resultRec] { return newResultHeap(func(r *resultRec) *int { return &r.sidx }) }, results)
	c.done = slices.Clone(s.done[s.doneHead:])
	c.live = maps.Clone(s.live)
	for _, cr := range s.CachedResults() {
		c.cache[cr.Key] = &cr
		c.cacheOrder = append(c.cacheOrder, &cr)
	}
	c.audit = slices.Clone(s.audit[max(0, len(s.audit)-s.AuditMax):])
	c.agents = maps.Clone(s.agents)
	for id, r := range s.registry {
		r := *r
		c.registry[id] = &r
	}
	c.acted = maps.Clone(s.acted)
	if err := c.restoreOutbox(s.Seq, s.Outbox()); err != nil {
		panic("mailbox: state does not survive its own clone: " + err.Error())
	}
	return c
}

// cloneHeaps clones each heap of src (one an agent) into dst, into a new
// heap made by mk.
func cloneHeaps[T comparable](dst, src map[string]*indexedHeap[T], mk func() *indexedHeap[T], copies map[T]T) {
	for k, h := range src {
		nh := mk()
		cloneHeap(nh, h, copies)
		dst[k] = nh
	}
}

// cloneHeap makes dst the heap src is, position for position, with each
// item replaced by its copy: the copies carry the same positions.
func cloneHeap[T comparable](dst, src *indexedHeap[T], copies map[T]T) {
	dst.items = make([]T, len(src.items))
	for i, x := range src.items {
		dst.items[i] = copies[x]
	}
}
