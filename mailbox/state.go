package mailbox

import (
	"fmt"
	"sort"
)

// DefaultRetainDone is how many finished (drained) tasks the state remembers,
// so a late result for one of them is told "already resolved" (409) rather
// than "never sent" (404). Older ones are forgotten oldest first.
const DefaultRetainDone = 10000

// maxHistory bounds the per-task history kept in state (the log has it all).
const maxHistory = 32

type taskRec struct {
	TaskRecord
	gidx, ridx int // positions in the global and per-recipient queue heaps
}

type resultRec struct {
	PendingResult
	seq        uint64
	gidx, sidx int // positions in the global and per-sender result heaps
}

// State is the mailbox as a pure projection of its events. It is not safe
// for concurrent use: one goroutine or one mutex owns it.
type State struct {
	// Seq is the seq of the last applied event.
	Seq uint64
	// Limits are the limits in force, set by the log (limits_set events and
	// snapshots); a new State has the defaults. Setting them directly makes a
	// state that no log replays to, which only tests should want.
	Limits

	tasks       map[string]*taskRec
	queued      *indexedHeap[*taskRec]
	byRecipient map[string]*indexedHeap[*taskRec]
	inFlight    map[string]*taskRec
	results     map[string]*resultRec
	resultsAll  *indexedHeap[*resultRec]
	bySender    map[string]*indexedHeap[*resultRec]
	done        []string // drained task ids, oldest first, from doneHead on
	doneHead    int
	live        map[string]string // dedupe key -> queued or in-flight idempotent task
	cache       map[string]*CachedResult
	cacheOrder  []*CachedResult // oldest first, from cacheHead on
	cacheHead   int
	audit       []AuditRecord // oldest first; the newest AuditMax count
}

// NewState returns an empty mailbox.
func NewState() *State {
	s := &State{Limits: DefaultLimits()}
	s.reset()
	return s
}

func (s *State) reset() {
	s.Seq = 0
	s.tasks = make(map[string]*taskRec)
	s.queued = newTaskHeap(func(t *taskRec) *int { return &t.gidx })
	s.byRecipient = make(map[string]*indexedHeap[*taskRec])
	s.inFlight = make(map[string]*taskRec)
	s.results = make(map[string]*resultRec)
	s.resultsAll = newResultHeap(func(r *resultRec) *int { return &r.gidx })
	s.bySender = make(map[string]*indexedHeap[*resultRec])
	s.done = nil
	s.doneHead = 0
	s.live = make(map[string]string)
	s.cache = make(map[string]*CachedResult)
	s.cacheOrder = nil
	s.cacheHead = 0
	s.audit = nil
}

func newTaskHeap(index func(*taskRec) *int) *indexedHeap[*taskRec] {
	return newIndexedHeap(func(a, b *taskRec) bool { return a.SendSeq < b.SendSeq }, index)
}

func newResultHeap(index func(*resultRec) *int) *indexedHeap[*resultRec] {
	return newIndexedHeap(func(a, b *resultRec) bool { return a.seq < b.seq }, index)
}

// Counts are the sizes of the mailbox's parts.
type Counts struct {
	Queued         int `json:"queued"`
	InFlight       int `json:"in_flight"`
	ResultsPending int `json:"results_pending"`
	Known          int `json:"known"`
}

// Counts returns how many tasks are queued, in flight, and results pending.
func (s *State) Counts() Counts {
	return Counts{Queued: s.queued.Len(), InFlight: len(s.inFlight), ResultsPending: len(s.results), Known: len(s.tasks)}
}

// Task returns a copy of what the state knows about a task.
func (s *State) Task(id string) (TaskRecord, bool) {
	t, ok := s.tasks[id]
	if !ok {
		return TaskRecord{}, false
	}
	return t.copyRecord(), true
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
	e := QueueEntry{State: EntryQueued, Task: t.Task, Attempt: t.Attempt, QueuedAtMs: t.QueuedAtMs}
	if t.State == TaskInFlight {
		e.State = EntryInFlight
		e.LeaseID, e.LeasedTo, e.LeasedAtMs = t.LeaseID, t.LeasedTo, t.LeasedAtMs
	}
	return e
}

// Apply applies one event. Events must come in seq order with no gaps; a
// snapshot event replaces the whole state. An event that does not fit the
// state is refused with an error and changes nothing.
func (s *State) Apply(ev Event) error {
	if ev.Type == EventSnapshot {
		if ev.Snapshot == nil {
			return fmt.Errorf("event %d: snapshot event without a snapshot", ev.Seq)
		}
		return s.Restore(ev.Snapshot)
	}
	if ev.Seq != s.Seq+1 {
		return fmt.Errorf("event %d (%s): expected seq %d", ev.Seq, ev.Type, s.Seq+1)
	}
	if err := s.apply(ev); err != nil {
		return fmt.Errorf("event %d (%s): %w", ev.Seq, ev.Type, err)
	}
	s.Seq = ev.Seq
	s.evictCache(ev.AtMs)
	return nil
}

func (s *State) apply(ev Event) error {
	switch ev.Type {
	case EventTaskSent:
		if ev.Task == nil {
			return fmt.Errorf("no task")
		}
		if err := s.admit(ev.Task.ID); err != nil {
			return err
		}
		t := &taskRec{TaskRecord: TaskRecord{Task: *ev.Task, State: TaskQueued, SentAtMs: ev.AtMs, QueuedAtMs: ev.AtMs, SendSeq: ev.Seq}, gidx: -1, ridx: -1}
		t.addHistory(ev)
		s.tasks[t.Task.ID] = t
		s.enqueue(t)
		s.trackLive(t)
		return nil
	case EventResultReplayed:
		if ev.Task == nil || ev.Result == nil || ev.Result.TaskID != ev.Task.ID {
			return fmt.Errorf("replayed result without its task or result")
		}
		if err := s.admit(ev.Task.ID); err != nil {
			return err
		}
		t := &taskRec{TaskRecord: TaskRecord{Task: *ev.Task, State: TaskResultPending, SentAtMs: ev.AtMs, QueuedAtMs: ev.AtMs, SendSeq: ev.Seq}, gidx: -1, ridx: -1}
		s.tasks[t.Task.ID] = t
		s.addResult(t, ev, PendingResult{Result: *ev.Result, Replayed: true})
		return nil
	case EventTaskLeased:
		t, err := s.taskIn(ev.TaskID, TaskQueued)
		if err != nil {
			return err
		}
		if ev.LeaseID == "" || ev.LeasedTo == "" {
			return fmt.Errorf("task %s: lease without a lease id or holder", t.Task.ID)
		}
		if ev.Attempt != t.Attempt+1 {
			return fmt.Errorf("task %s: lease attempt %d after attempt %d", t.Task.ID, ev.Attempt, t.Attempt)
		}
		s.dequeue(t)
		t.State, t.Attempt = TaskInFlight, ev.Attempt
		t.LeaseID, t.LeasedTo, t.LeasedAtMs = ev.LeaseID, ev.LeasedTo, ev.AtMs
		s.inFlight[t.Task.ID] = t
		t.addHistory(ev)
		return nil
	case EventResultPosted, EventTaskForceErrored:
		t, err := s.taskIn(ev.TaskID, TaskInFlight)
		if err != nil {
			return err
		}
		if ev.Result == nil || ev.Result.TaskID != t.Task.ID {
			return fmt.Errorf("no result for task %s", t.Task.ID)
		}
		if ev.LeaseID != "" && ev.LeaseID != t.LeaseID {
			return fmt.Errorf("task %s: lease %s is not the current lease %s", t.Task.ID, ev.LeaseID, t.LeaseID)
		}
		s.clearLease(t)
		t.State = TaskResultPending
		s.untrackLive(t)
		forced := ev.Type == EventTaskForceErrored
		if forced {
			s.recordAudit(ev)
		} else {
			s.cacheResult(t, *ev.Result, ev.AtMs)
		}
		s.addResult(t, ev, PendingResult{Result: *ev.Result, Forced: forced})
		return nil
	case EventResultDrained:
		r, ok := s.results[ev.TaskID]
		if !ok {
			return fmt.Errorf("task %s has no pending result", ev.TaskID)
		}
		s.resultsAll.Remove(r)
		h := s.bySender[r.Sender]
		h.Remove(r)
		if h.Len() == 0 {
			delete(s.bySender, r.Sender)
		}
		delete(s.results, ev.TaskID)
		if t, ok := s.tasks[ev.TaskID]; ok {
			t.State, t.DoneAtMs, t.DoneSeq = TaskDone, ev.AtMs, ev.Seq
			t.addHistory(ev)
			s.remember(t.Task.ID)
		}
		return nil
	case EventTaskRequeued:
		t, err := s.taskIn(ev.TaskID, TaskInFlight)
		if err != nil {
			return err
		}
		if ev.LeaseID != "" && ev.LeaseID != t.LeaseID {
			return fmt.Errorf("task %s: lease %s is not the current lease %s", t.Task.ID, ev.LeaseID, t.LeaseID)
		}
		s.clearLease(t)
		t.State, t.QueuedAtMs = TaskQueued, ev.AtMs
		s.enqueue(t)
		t.addHistory(ev)
		s.recordAudit(ev)
		return nil
	case EventLimitsSet:
		if ev.Limits == nil {
			return fmt.Errorf("no limits")
		}
		if err := ev.Limits.validate(); err != nil {
			return err
		}
		s.setLimits(*ev.Limits)
		return nil
	case EventRecordSkipped:
		return nil
	}
	return fmt.Errorf("unknown event type %q", ev.Type)
}

// addResult queues a result for the task's sender.
func (s *State) addResult(t *taskRec, ev Event, pr PendingResult) {
	pr.Sender, pr.Recipient, pr.PostedAtMs = t.Task.Sender, t.Task.Recipient, ev.AtMs
	r := &resultRec{PendingResult: pr, seq: ev.Seq, gidx: -1, sidx: -1}
	s.results[t.Task.ID] = r
	s.resultsAll.Push(r)
	s.senderHeap(r.Sender).Push(r)
	t.addHistory(ev)
}

func (s *State) taskIn(id, state string) (*taskRec, error) {
	t, ok := s.tasks[id]
	if !ok {
		return nil, fmt.Errorf("unknown task %s", id)
	}
	if t.State != state {
		return nil, fmt.Errorf("task %s is %s, not %s", id, t.State, state)
	}
	return t, nil
}

func (s *State) enqueue(t *taskRec) {
	s.queued.Push(t)
	h, ok := s.byRecipient[t.Task.Recipient]
	if !ok {
		h = newTaskHeap(func(t *taskRec) *int { return &t.ridx })
		s.byRecipient[t.Task.Recipient] = h
	}
	h.Push(t)
}

func (s *State) dequeue(t *taskRec) {
	s.queued.Remove(t)
	if h, ok := s.byRecipient[t.Task.Recipient]; ok {
		h.Remove(t)
		if h.Len() == 0 {
			delete(s.byRecipient, t.Task.Recipient)
		}
	}
}

func (s *State) clearLease(t *taskRec) {
	delete(s.inFlight, t.Task.ID)
	t.LeaseID, t.LeasedTo, t.LeasedAtMs = "", "", 0
}

func (s *State) senderHeap(sender string) *indexedHeap[*resultRec] {
	h, ok := s.bySender[sender]
	if !ok {
		h = newResultHeap(func(r *resultRec) *int { return &r.sidx })
		s.bySender[sender] = h
	}
	return h
}

// remember keeps a drained task for RetainDone more drains, then forgets it.
func (s *State) remember(id string) {
	s.done = append(s.done, id)
	s.forgetDone()
}

// forgetDone forgets the oldest drained tasks beyond RetainDone.
func (s *State) forgetDone() {
	for len(s.done)-s.doneHead > s.RetainDone {
		old := s.done[s.doneHead]
		s.done[s.doneHead] = ""
		s.doneHead++
		if t, ok := s.tasks[old]; ok && t.State == TaskDone {
			delete(s.tasks, old)
		}
	}
	if s.doneHead > 1024 && s.doneHead*2 > len(s.done) {
		s.done = append([]string(nil), s.done[s.doneHead:]...)
		s.doneHead = 0
	}
}

func (t *taskRec) addHistory(ev Event) {
	h := HistoryEntry{Seq: ev.Seq, AtMs: ev.AtMs, Type: ev.Type, LeaseID: ev.LeaseID, LeasedTo: ev.LeasedTo, Attempt: t.Attempt,
		Principal: ev.Principal, Reason: ev.Reason, DuplicateRisk: ev.DuplicateRisk}
	if ev.Result != nil {
		h.Status = ev.Result.Status
	}
	if len(t.History) >= maxHistory {
		// Keep the first entry (the send) and the most recent ones.
		copy(t.History[1:], t.History[2:])
		t.History = t.History[:len(t.History)-1]
	}
	t.History = append(t.History, h)
}

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
	return snap
}

// Restore replaces the state with a snapshot, limits included (the
// defaults for a snapshot written before snapshots carried them). The
// snapshot's results keep their order; drained tasks are remembered in the
// order they were finished.
func (s *State) Restore(snap *Snapshot) error {
	n := NewState()
	if snap.Limits != nil {
		if err := snap.Limits.validate(); err != nil {
			return fmt.Errorf("snapshot %d: %w", snap.Seq, err)
		}
		n.Limits = *snap.Limits
	}
	var done []*taskRec
	for _, tr := range snap.Tasks {
		if _, dup := n.tasks[tr.Task.ID]; dup {
			return fmt.Errorf("snapshot %d: task %s appears twice", snap.Seq, tr.Task.ID)
		}
		t := &taskRec{TaskRecord: tr, gidx: -1, ridx: -1}
		t.History = append([]HistoryEntry(nil), tr.History...)
		n.tasks[tr.Task.ID] = t
		switch t.State {
		case TaskQueued:
			n.enqueue(t)
			n.trackLive(t)
		case TaskInFlight:
			n.inFlight[t.Task.ID] = t
			n.trackLive(t)
		case TaskDone:
			done = append(done, t)
		case TaskResultPending:
		default:
			return fmt.Errorf("snapshot %d: task %s has unknown state %q", snap.Seq, tr.Task.ID, t.State)
		}
	}
	sort.Slice(done, func(i, j int) bool { return done[i].DoneSeq < done[j].DoneSeq })
	for _, t := range done {
		n.remember(t.Task.ID)
	}
	for i, pr := range snap.Results {
		t, ok := n.tasks[pr.TaskID]
		if !ok || t.State != TaskResultPending {
			return fmt.Errorf("snapshot %d: result for task %s, which is not waiting for one", snap.Seq, pr.TaskID)
		}
		r := &resultRec{PendingResult: pr, seq: uint64(i), gidx: -1, sidx: -1}
		n.results[pr.TaskID] = r
		n.resultsAll.Push(r)
		n.senderHeap(r.Sender).Push(r)
	}
	for id, t := range n.tasks {
		if _, ok := n.results[id]; t.State == TaskResultPending && !ok {
			return fmt.Errorf("snapshot %d: task %s waits for a result the snapshot does not have", snap.Seq, id)
		}
	}
	for _, c := range snap.ResultCache {
		c := c
		n.cache[c.Key] = &c
		n.cacheOrder = append(n.cacheOrder, &c)
	}
	n.audit = append([]AuditRecord(nil), snap.Audit...)
	n.Seq = snap.Seq
	*s = *n
	return nil
}

// Clone returns an independent copy of the state.
func (s *State) Clone() *State {
	c := NewState()
	if err := c.Restore(s.Snapshot(0)); err != nil {
		panic("mailbox: state does not survive its own snapshot: " + err.Error())
	}
	return c
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
// in-flight tasks oldest lease first, filtered before the limit; pending
// results oldest first, up to the limit.
func (s *State) Query(f QueueFilter, nowMs int64) QueueView {
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	keep := func(t *taskRec) bool {
		if f.MinLeaseAgeMs != nil && (t.State != TaskInFlight || nowMs-t.LeasedAtMs < *f.MinLeaseAgeMs) {
			return false
		}
		if f.DeadlineWithinMs != nil && (t.Task.DeadlineMs == nil || *t.Task.DeadlineMs > nowMs+*f.DeadlineWithinMs) {
			return false
		}
		return true
	}
	view := QueueView{Tasks: []QueueEntry{}, Results: []PendingResult{}}
	var parts [][]*taskRec
	if f.State != EntryInFlight && f.MinLeaseAgeMs == nil {
		parts = append(parts, s.sortedQueued())
	}
	if f.State != EntryQueued {
		parts = append(parts, s.sortedInFlight())
	}
	for _, part := range parts {
		for _, t := range part {
			if len(view.Tasks) >= limit {
				break
			}
			if keep(t) {
				view.Tasks = append(view.Tasks, t.entry())
			}
		}
	}
	for _, r := range s.sortedResults() {
		if len(view.Results) >= limit {
			break
		}
		view.Results = append(view.Results, r.PendingResult)
	}
	return view
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
