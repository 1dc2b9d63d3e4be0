package mailbox

import "fmt"

// DefaultRetainDone is how many finished (drained) tasks the state remembers,
// so a late result for one of them is told "already resolved" (409) rather
// than "never sent" (404). Older ones are forgotten oldest first.
const DefaultRetainDone = 10000

// maxHistory bounds the per-task history kept in state (the log has it all).
const maxHistory = 32

type taskRec struct {
	TaskRecord
	gidx, ridx int // positions in the global and per-recipient queue heaps
	lidx       int // position in the leases heap, while in flight
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
	// leases orders the in-flight tasks oldest lease first, for the
	// queries that list them, so a listing with a limit (or of the leases
	// older than an age) costs what it lists, not the mailbox's size.
	leases     *indexedHeap[*taskRec]
	waiting    map[string]*taskRec // tasks waiting on their sender's reply
	results    map[string]*resultRec
	resultsAll *indexedHeap[*resultRec]
	bySender   map[string]*indexedHeap[*resultRec]
	done       []string // drained task ids, oldest first, from doneHead on
	doneHead   int
	live       map[string]string // dedupe key -> queued or in-flight idempotent task
	cache      map[string]*CachedResult
	cacheOrder []*CachedResult // oldest first, from cacheHead on
	cacheHead  int
	audit      []AuditRecord // oldest first; the newest AuditMax count
	// agents counts, per agent id, the remembered tasks naming it as
	// sender or recipient (see Agents).
	agents map[string]int
	// registry holds the registered agents' cards.
	registry map[string]*RegisteredAgent
	// acted is when each agent last acted on the mailbox (acted.go).
	acted map[string]int64
	// outbox holds the push notifications not yet delivered, by id.
	outbox map[string]*Notification
	// outboxTasks counts the outbox's notifications per task, so a task
	// forgotten without any costs no look at the outbox.
	outboxTasks map[string]int
	// outboxIx indexes the outbox for the notifier and its bounds
	// (outbox.go).
	outboxIx outboxIndex
	// atMs is the time of the event being applied.
	atMs int64
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
	s.leases = newIndexedHeap(leasedBefore, func(t *taskRec) *int { return &t.lidx })
	s.waiting = make(map[string]*taskRec)
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
	s.agents = make(map[string]int)
	s.registry = make(map[string]*RegisteredAgent)
	s.acted = make(map[string]int64)
	s.outbox = make(map[string]*Notification)
	s.outboxTasks = make(map[string]int)
	s.outboxIx = newOutboxIndex()
}

func newTaskHeap(index func(*taskRec) *int) *indexedHeap[*taskRec] {
	return newIndexedHeap(func(a, b *taskRec) bool { return a.SendSeq < b.SendSeq }, index)
}

func newResultHeap(index func(*resultRec) *int) *indexedHeap[*resultRec] {
	return newIndexedHeap(func(a, b *resultRec) bool { return a.seq < b.seq }, index)
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
	actor := s.actor(ev)
	s.atMs = ev.AtMs
	if err := s.apply(ev); err != nil {
		return fmt.Errorf("event %d (%s): %w", ev.Seq, ev.Type, err)
	}
	s.noteActed(actor, ev.AtMs)
	s.queueNotifications(ev)
	s.Seq = ev.Seq
	s.evictCache(ev.AtMs)
	return nil
}

func (s *State) apply(ev Event) error {
	switch ev.Type {
	case EventTaskSent:
		return s.applySend(ev)
	case EventResultReplayed:
		return s.applyReplayed(ev)
	case EventTaskLeased:
		return s.applyLease(ev)
	case EventResultPosted, EventTaskForceErrored:
		return s.applyResult(ev)
	case EventResultDrained:
		return s.applyDrain(ev)
	case EventTaskRequeued:
		return s.applyRequeue(ev)
	case EventTaskMoved:
		return s.applyMove(ev)
	case EventTaskWithdrawn:
		return s.applyWithdraw(ev)
	case EventTaskHandedOver:
		return s.applyHandOver(ev)
	case EventLimitsSet:
		return s.applyLimits(ev)
	case EventTaskCanceled:
		return s.applyCancel(ev)
	case EventTaskReplied:
		return s.applyReply(ev)
	case EventRemoteAccepted:
		return s.applyRemoteAccepted(ev)
	case EventAgentRegistered, EventAgentDeregistered:
		return s.applyRegistry(ev)
	case EventPushConfigSet:
		return s.applyPushConfigSet(ev)
	case EventPushConfigDeleted:
		return s.applyPushConfigDeleted(ev)
	case EventPushDelivered, EventPushDeadLettered, EventPushRetried, EventPushDropped:
		return s.applyPush(ev)
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

// leasedBefore orders in-flight tasks: the oldest lease first, then send
// order.
func leasedBefore(a, b *taskRec) bool {
	if a.LeasedAtMs != b.LeasedAtMs {
		return a.LeasedAtMs < b.LeasedAtMs
	}
	return a.SendSeq < b.SendSeq
}

// holdLease records t, its lease fields set, as in flight.
func (s *State) holdLease(t *taskRec) {
	s.inFlight[t.Task.ID] = t
	s.leases.Push(t)
}

func (s *State) clearLease(t *taskRec) {
	delete(s.inFlight, t.Task.ID)
	s.leases.Remove(t)
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
		if t, ok := s.tasks[old]; ok && finished(t.State) {
			s.dropTask(t)
		}
	}
	if s.doneHead > 1024 && s.doneHead*2 > len(s.done) {
		s.done = append([]string(nil), s.done[s.doneHead:]...)
		s.doneHead = 0
	}
}

// keepResult keeps the result on a task that came through the A2A edge.
func (t *taskRec) keepResult(r Result) {
	if t.Task.A2A != nil {
		r.LeaseID = ""
		t.Result = &r
	}
}

func (t *taskRec) addHistory(ev Event) {
	h := HistoryEntry{Seq: ev.Seq, AtMs: ev.AtMs, Type: ev.Type, LeaseID: ev.LeaseID, LeasedTo: ev.LeasedTo, Attempt: t.Attempt,
		Principal: ev.Principal, Reason: ev.Reason, DuplicateRisk: ev.DuplicateRisk, Recipient: ev.Recipient, Sender: ev.Sender}
	if ev.Result != nil {
		h.Status = ev.Result.Status
	}
	if ev.Remote != nil {
		h.RemoteTaskID = ev.Remote.TaskID
	}
	if len(t.History) >= maxHistory {
		// Keep the first entry (the send) and the most recent ones.
		copy(t.History[1:], t.History[2:])
		t.History = t.History[:len(t.History)-1]
	}
	t.History = append(t.History, h)
}
