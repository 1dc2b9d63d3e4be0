package tui

import (
	"sync"
	"time"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/mailbox"
)

// model is the console's replica of the mailbox: the same State the daemon
// keeps, fed by the same events. Events are applied here, on the goroutine
// that reads the stream, under mu; the UI goroutine only ever sees immutable
// rows copied out of it, so a burst of events never waits for a redraw.
type model struct {
	mu    sync.Mutex
	state *mailbox.State
	// version counts changes to the state; the drawing loop rebuilds rows
	// only when it moved.
	version uint64
	synced  bool // a snapshot has been applied
	applied uint64

	// auditVer counts changes to the repair trail. Copying the trail (up to
	// AuditMax records) on every rebuild would cost as much as the queue
	// itself, and repairs are rare next to sends and leases, so rows reuse
	// auditRows until a repair or a snapshot arrives.
	auditVer, auditBuilt uint64
	auditRows            []mailbox.AuditRecord

	// paused holds incoming events in held instead of applying them, so the
	// screen stays still while the operator reads; resume applies them.
	paused bool
	held   []mailbox.Event

	conn     client.ConnState
	connSeen bool
	connVer  uint64
	// cutAt is when a live stream was lost (zero while live); reconnects
	// counts the reconnections after it, lastCut how long the last one
	// was cut off and resumedAfter the seq it resumed after.
	cutAt        time.Time
	reconnects   uint64
	lastCut      time.Duration
	resumedAfter uint64
	// reloads counts the snapshots that replaced a replica in good
	// order (not a gap's): the log was compacted past where a reconnect
	// resumed. reloadedFrom is the seq the replica had.
	reloads      uint64
	reloadedFrom uint64

	// gap is set when an event did not fit the replica; it stays until a
	// snapshot replaces the state. resync asks the stream reader to start
	// over with a fresh snapshot.
	gap    error
	gapVer uint64
	// retry is the reason the client last sent a request again by itself
	// (a shared mailbox's lead changed); retryVer counts them.
	retry    string
	retryVer uint64
	resync   chan struct{}
	// wentLive is signalled each time the stream connects, so a question
	// that failed while the daemon was away is asked again at once.
	wentLive chan struct{}

	// agents is the daemon's agents listing, replaced whole by each one
	// read or pushed; agentsGen counts the pushed ones, so a listing read
	// before a push arrived does not replace it. heldAgents is the newest
	// listing that arrived while paused.
	agents, heldAgents []mailbox.AgentInfo
	agentsHeld         bool
	agentsGen          uint64
	// agentsWanted asks for the listing to be read: on every connect.
	agentsWanted chan struct{}

	// pushAttempts is what the daemon's notifier last said of the failing
	// push notifications (memory only there: polled, not streamed).
	pushAttempts map[string]mailbox.PushAttempt

	// events counts the daemon's events by the second they happened in
	// (their at_ms), held ones included: the header's rate is the
	// daemon's, whether the console is paused or catching up.
	events eventCounter
}

func newModel() *model {
	return &model{state: mailbox.NewState(), resync: make(chan struct{}, 1), wentLive: make(chan struct{}, 1),
		agentsWanted: make(chan struct{}, 1)}
}

// receive takes one event from the stream.
func (m *model) receive(ev mailbox.Event) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events.count(ev)
	if m.paused {
		m.held = append(m.held, ev)
		return
	}
	m.applyLocked(ev)
}

func (m *model) applyLocked(ev mailbox.Event) {
	if ev.Type != mailbox.EventSnapshot {
		if m.gap != nil {
			return // only a snapshot can repair a broken replica
		}
		if m.synced && ev.Seq <= m.state.Seq {
			return // already applied: the stream promises no doubles, but a double must not break the replica
		}
	}
	if ev.Type == mailbox.EventSnapshot && m.synced && m.gap == nil {
		m.reloads++
		m.reloadedFrom = m.state.Seq
	}
	if err := m.state.Apply(ev); err != nil {
		m.gap = err
		m.gapVer++
		m.version++ // the screen must say so
		select {
		case m.resync <- struct{}{}:
		default:
		}
		return
	}
	m.applied++
	m.version++
	switch ev.Type {
	case mailbox.EventSnapshot:
		m.synced = true
		if m.gap != nil {
			m.gap = nil
			m.gapVer++
		}
	}
	switch ev.Type {
	case mailbox.EventSnapshot, mailbox.EventTaskRequeued, mailbox.EventTaskForceErrored, mailbox.EventTaskCanceled, mailbox.EventLimitsSet,
		mailbox.EventTaskMoved, mailbox.EventTaskWithdrawn, mailbox.EventTaskHandedOver,
		mailbox.EventPushRetried, mailbox.EventPushDropped:
		m.auditVer++ // a limits_set may have trimmed the trail
	}
}

// setPaused pauses or resumes; resuming applies every held event in order.
func (m *model) setPaused(p bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.paused = p
	m.version++
	if p {
		return
	}
	if m.agentsHeld {
		m.agents, m.heldAgents, m.agentsHeld = m.heldAgents, nil, false
	}
	held := m.held
	m.held = nil
	for _, ev := range held {
		m.applyLocked(ev)
	}
}

// setConn records the stream's connection state; the client calls it from
// its own goroutine.
func (m *model) setConn(cs client.ConnState) {
	m.mu.Lock()
	switch {
	case m.conn.Live && !cs.Live:
		m.cutAt = cs.Since
	case !m.conn.Live && cs.Live && !m.cutAt.IsZero():
		m.reconnects++
		m.lastCut, m.resumedAfter, m.cutAt = cs.Since.Sub(m.cutAt), cs.LastSeq, time.Time{}
	}
	m.conn, m.connSeen = cs, true
	m.connVer++
	m.mu.Unlock()
	if cs.Live {
		for _, ch := range []chan struct{}{m.wentLive, m.agentsWanted} {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
}

// outboxEmpty reports whether the replica's outbox is empty: then there is
// nothing whose attempts to ask the daemon for.
func (m *model) outboxEmpty() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state.OutboxLen() == 0
}

// setPushAttempts installs what the daemon's notifier says of the
// failing notifications (from GET /a2a/push).
func (m *model) setPushAttempts(list mailbox.PushListing) {
	attempts := map[string]mailbox.PushAttempt{}
	for _, n := range list.Notifications {
		if n.State == mailbox.DeliveryFailing {
			attempts[n.ID] = mailbox.PushAttempt{Attempts: n.Attempts, LastError: n.LastError, NextTryMs: n.NextTryMs}
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(attempts) == 0 && len(m.pushAttempts) == 0 {
		return
	}
	m.pushAttempts = attempts
	m.version++
}

// pushAgents takes a listing the stream pushed; the client calls it from
// its own goroutine.
func (m *model) pushAgents(u mailbox.AgentsUpdate) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.agentsGen++
	m.installAgentsLocked(u.Agents)
}

// agentsGeneration is how many listings were pushed so far.
func (m *model) agentsGeneration() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.agentsGen
}

// setAgents installs a listing read when gen listings had been pushed,
// unless a newer one was pushed since.
func (m *model) setAgents(list []mailbox.AgentInfo, gen uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.agentsGen != gen {
		return
	}
	m.installAgentsLocked(list)
}

func (m *model) installAgentsLocked(list []mailbox.AgentInfo) {
	if list == nil {
		list = []mailbox.AgentInfo{}
	}
	if m.paused {
		m.heldAgents, m.agentsHeld = list, true
		return
	}
	m.agents = list
	m.version++
}

// status is what the header shows, copied out under the lock.
type status struct {
	version  uint64
	connVer  uint64
	conn     client.ConnState
	connSeen bool
	paused   bool
	held     int
	applied  uint64
	seq      uint64
	synced   bool
	gap      error
	gapVer   uint64
	retry    string
	retryVer uint64

	reconnects, reloads        uint64
	lastCut                    time.Duration
	resumedAfter, reloadedFrom uint64
}

// noteRetry records that the client sent a request again by itself.
func (m *model) noteRetry(reason string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.retry = reason
	m.retryVer++
}

func (m *model) status() status {
	m.mu.Lock()
	defer m.mu.Unlock()
	return status{version: m.version, connVer: m.connVer, conn: m.conn, connSeen: m.connSeen, paused: m.paused,
		held: len(m.held), applied: m.applied, seq: m.state.Seq, synced: m.synced, gap: m.gap, gapVer: m.gapVer,
		retry: m.retry, retryVer: m.retryVer,
		reconnects: m.reconnects, lastCut: m.lastCut, resumedAfter: m.resumedAfter, reloads: m.reloads, reloadedFrom: m.reloadedFrom}
}

// rows copies the lists out of the replica.
func (m *model) rows() *rows {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.auditRows == nil || m.auditBuilt != m.auditVer {
		m.auditRows, m.auditBuilt = m.state.Audit("", m.state.AuditMax), m.auditVer
	}
	r := &rows{version: m.version, seq: m.state.Seq, queued: m.state.QueuedTasks(), leases: m.state.InFlightTasks(), waiting: m.state.WaitingTasks(), audit: m.auditRows}
	r.deliveries = m.state.PushListingOf(m.pushAttempts, false)
	r.remote = remoteLeases(m.agents, r.leases, m.acceptedLocked)
	pending := m.state.PendingResults()
	r.results = make([]resultRow, len(pending))
	for i := range pending {
		r.results[i].PendingResult = pending[i]
		// The task of a pending result is in the state until it is
		// drained: its kind and intent come from there, its history
		// left where it is.
		if t, ok := m.state.SentTask(pending[i].TaskID); ok {
			r.results[i].kind, r.results[i].intent, r.results[i].idempotent = t.Kind(), t.IntentText, t.Idempotent()
			r.results[i].a2a = t.A2A != nil
		}
	}
	r.agents = joinAgents(m.agents, r.leases, r.waiting, r.results)
	return r
}

// detail is everything the detail view shows about one task.
type detail struct {
	record   mailbox.TaskRecord
	known    bool
	children []string
	result   *mailbox.PendingResult
	// repairs are the task's newest repairs, newest first; moreRepairs says
	// older ones exist (the Audit pane lists them all).
	repairs     []mailbox.AuditRecord
	moreRepairs bool
	// holder is the lease holder's entry in the agents listing when it
	// is a remote agent: where the daemon delivers the task, and how.
	holder *mailbox.AgentInfo
}

// acceptedLocked is the remote's acceptance of task taskID under lease
// leaseID, as the replica recorded it; nil if there is none.
func (m *model) acceptedLocked(taskID, leaseID string) *mailbox.RemoteDelivery {
	r, ok := m.state.Task(taskID)
	if !ok || !r.AcceptedUnder(leaseID) {
		return nil
	}
	return r.Remote
}

// detailRepairs bounds the repair history a detail view shows: a task
// requeued over and over would otherwise push its record off the page.
const detailRepairs = 20

func (m *model) detail(taskID string) detail {
	m.mu.Lock()
	defer m.mu.Unlock()
	var d detail
	d.record, d.known = m.state.Task(taskID)
	d.repairs = m.state.Audit(taskID, detailRepairs+1)
	if len(d.repairs) > detailRepairs {
		d.repairs, d.moreRepairs = d.repairs[:detailRepairs], true
	}
	d.children = m.state.Children(taskID)
	if r, ok := m.state.PendingResult(taskID); ok {
		d.result = &r
	}
	if d.record.LeasedTo != "" {
		for i := range m.agents {
			if a := m.agents[i]; a.Agent == d.record.LeasedTo && isRemote(&a) {
				d.holder = &a
			}
		}
	}
	return d
}

// sparkSeconds is how far back the header's sparkline reaches.
const sparkSeconds = 60

// eventCounter counts events per second of event time, in a ring that
// remembers a little more than the sparkline shows.
type eventCounter struct {
	lastSeq uint64
	ring    [64]struct {
		sec int64
		n   int
	}
}

// count records one event from the stream once: a snapshot only says how
// far the stream has come, and a repeated or old event is not counted twice.
func (e *eventCounter) count(ev mailbox.Event) {
	if ev.Seq <= e.lastSeq && ev.Type != mailbox.EventSnapshot {
		return
	}
	e.lastSeq = max(e.lastSeq, ev.Seq)
	if ev.Type == mailbox.EventSnapshot {
		return
	}
	sec := floorDiv(ev.AtMs, 1000)
	slot := &e.ring[mod(sec, int64(len(e.ring)))]
	if slot.sec != sec {
		slot.sec, slot.n = sec, 0
	}
	slot.n++
}

// perSecond returns the counts of the sparkSeconds seconds up to and
// including the one nowMs falls in, oldest first.
func (e *eventCounter) perSecond(nowMs int64) [sparkSeconds]int {
	var out [sparkSeconds]int
	now := floorDiv(nowMs, 1000)
	for k := range out {
		sec := now - sparkSeconds + 1 + int64(k)
		if slot := e.ring[mod(sec, int64(len(e.ring)))]; slot.sec == sec {
			out[k] = slot.n
		}
	}
	return out
}

// eventsPerSecond is the daemon's event counts per second up to nowMs.
func (m *model) eventsPerSecond(nowMs int64) [sparkSeconds]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.events.perSecond(nowMs)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

func mod(a, b int64) int64 { return (a%b + b) % b }
