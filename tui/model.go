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
	// open holds the tasks that are not yet drained, so the Results pane can
	// show and filter a result's kind and intent without copying the task's
	// history out of the state.
	open map[string]*mailbox.Task

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

	// gap is set when an event did not fit the replica; it stays until a
	// snapshot replaces the state. resync asks the stream reader to start
	// over with a fresh snapshot.
	gap    error
	gapVer uint64
	resync chan struct{}
}

func newModel() *model {
	return &model{state: mailbox.NewState(), open: make(map[string]*mailbox.Task), resync: make(chan struct{}, 1)}
}

// receive takes one event from the stream.
func (m *model) receive(ev mailbox.Event) {
	m.mu.Lock()
	defer m.mu.Unlock()
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
		m.open = make(map[string]*mailbox.Task, len(ev.Snapshot.Tasks))
		for i := range ev.Snapshot.Tasks {
			if tr := &ev.Snapshot.Tasks[i]; tr.State != mailbox.TaskDone {
				t := tr.Task // a copy: the snapshot's histories must not be kept alive
				m.open[t.ID] = &t
			}
		}
	case mailbox.EventTaskSent, mailbox.EventResultReplayed:
		m.open[ev.Task.ID] = ev.Task
	case mailbox.EventResultDrained:
		delete(m.open, ev.TaskID)
	}
	switch ev.Type {
	case mailbox.EventSnapshot, mailbox.EventTaskRequeued, mailbox.EventTaskForceErrored, mailbox.EventLimitsSet:
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
	m.conn, m.connSeen = cs, true
	m.connVer++
	m.mu.Unlock()
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
}

func (m *model) status() status {
	m.mu.Lock()
	defer m.mu.Unlock()
	return status{version: m.version, connVer: m.connVer, conn: m.conn, connSeen: m.connSeen, paused: m.paused,
		held: len(m.held), applied: m.applied, seq: m.state.Seq, synced: m.synced, gap: m.gap, gapVer: m.gapVer}
}

// rows copies the lists out of the replica.
func (m *model) rows() *rows {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.auditRows == nil || m.auditBuilt != m.auditVer {
		m.auditRows, m.auditBuilt = m.state.Audit("", m.state.AuditMax), m.auditVer
	}
	r := &rows{version: m.version, seq: m.state.Seq, queued: m.state.QueuedTasks(), leases: m.state.InFlightTasks(), audit: m.auditRows}
	pending := m.state.PendingResults()
	r.results = make([]resultRow, len(pending))
	for i := range pending {
		r.results[i].PendingResult = pending[i]
		if t := m.open[pending[i].TaskID]; t != nil {
			r.results[i].kind, r.results[i].intent, r.results[i].idempotent = t.Kind(), t.IntentText, t.Idempotent()
		}
	}
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
	return d
}

// rate measures events applied per second over the last measuring window.
type rate struct {
	at    time.Time
	count uint64
	perS  float64
}

func (r *rate) update(now time.Time, applied uint64) float64 {
	if r.at.IsZero() {
		r.at, r.count = now, applied
		return 0
	}
	if el := now.Sub(r.at); el >= time.Second {
		r.perS = float64(applied-r.count) / el.Seconds()
		r.at, r.count = now, applied
	}
	return r.perS
}
