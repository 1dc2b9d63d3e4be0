package main

import (
	"sync"
	"sync/atomic"
	"testing"
)

// leaseAck is a lease the daemon acknowledged to a recipient.
type leaseAck struct {
	taskID, leaseID string
	attempt         int
}

// repairAck is a repair the daemon acknowledged to the operator.
type repairAck struct {
	taskID, leaseID, action string // action: requeued | forced_error
	attempt                 int
}

// ledger is what clients were told (acknowledged: a 2xx answer) and what
// they tried (requests whose outcome a kill may have hidden), across every
// iteration. The daemon must reflect every acknowledgement, and may reflect
// a tried request either way.
type ledger struct {
	t  *testing.T
	mu sync.Mutex

	tried      map[string]bool       // task ids a send was attempted for
	sent       map[string]bool       // acknowledged sends
	leases     map[string][]leaseAck // acknowledged leases per task, in the order given
	leaseTask  map[string]string     // acknowledged lease id -> task
	touched    map[string]bool       // lease ids a result or a repair was attempted with
	requeues   map[string]int        // requeue attempts per task: each allows one more lease
	repairTry  map[string]bool       // tasks a repair was attempted for
	postTried  map[string]bool       // tasks a result post was attempted for
	posted     map[string]string     // acknowledged results: task -> lease id
	repairs    []repairAck           // acknowledged repairs, in order
	forced     map[string]string     // acknowledged force_errors: task -> lease id
	requeued   map[string]bool       // acknowledged requeues by lease id
	drained    map[string]bool       // acknowledged drains by task
	lost       map[string]bool       // tasks an unanswered drain must have taken (see verify)
	noAnswer   int                   // drains that got no answer: each may have taken a result
	acks       atomic.Int64          // acknowledgements of every kind
	killed     atomic.Bool           // the daemon is being killed: failures are expected
	conflicts  atomic.Int64          // 409s: the operator and the agents raced, as they may
	iterations int
}

func newLedger(t *testing.T) *ledger {
	return &ledger{t: t, tried: map[string]bool{}, sent: map[string]bool{}, leases: map[string][]leaseAck{},
		leaseTask: map[string]string{}, touched: map[string]bool{}, requeues: map[string]int{}, repairTry: map[string]bool{},
		postTried: map[string]bool{}, posted: map[string]string{}, forced: map[string]string{}, requeued: map[string]bool{},
		drained: map[string]bool{}, lost: map[string]bool{}}
}

func (l *ledger) do(f func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f()
}

// failure reports an unexpected failure unless the daemon is being killed,
// when every request in flight fails.
func (l *ledger) failure(what string, err error) {
	if err != nil && !l.killed.Load() {
		l.t.Errorf("%s before the kill: %v", what, err)
	}
}

func (l *ledger) ackSend(id string) {
	l.do(func() { l.sent[id] = true })
	l.acks.Add(1)
}

func (l *ledger) ackLease(a leaseAck) {
	l.do(func() {
		if prev, dup := l.leaseTask[a.leaseID]; dup {
			l.t.Errorf("lease id %s acknowledged twice (tasks %s and %s)", a.leaseID, prev, a.taskID)
		}
		if prev := l.leases[a.taskID]; len(prev) > 0 && prev[len(prev)-1].attempt >= a.attempt {
			l.t.Errorf("task %s: lease at attempt %d acknowledged after one at attempt %d", a.taskID, a.attempt, prev[len(prev)-1].attempt)
		}
		l.leaseTask[a.leaseID] = a.taskID
		l.leases[a.taskID] = append(l.leases[a.taskID], a)
	})
	l.acks.Add(1)
}

func (l *ledger) tryPost(taskID, leaseID string) {
	l.do(func() { l.touched[leaseID], l.postTried[taskID] = true, true })
}

func (l *ledger) ackPost(taskID, leaseID string) {
	l.do(func() { l.posted[taskID] = leaseID })
	l.acks.Add(1)
}

func (l *ledger) tryRepair(taskID, leaseID string, requeue bool) {
	l.do(func() {
		l.touched[leaseID], l.repairTry[taskID] = true, true
		if requeue {
			l.requeues[taskID]++
		}
	})
}

func (l *ledger) ackRepair(r repairAck) {
	l.do(func() {
		l.repairs = append(l.repairs, r)
		if r.action == "forced_error" {
			l.forced[r.taskID] = r.leaseID
		} else {
			l.requeued[r.leaseID] = true
		}
	})
	l.acks.Add(1)
}

// ackDrain records a drained result; a result drained twice is a lost
// acknowledgement of the first drain.
func (l *ledger) ackDrain(taskID, leaseID string, forced bool) {
	l.do(func() {
		if l.drained[taskID] {
			l.t.Errorf("the result of task %s was drained twice", taskID)
		}
		l.drained[taskID] = true
		switch {
		case forced:
			if want, ok := l.forced[taskID]; ok && want != leaseID {
				l.t.Errorf("drained forced result of %s carries lease %s, the force_error was acknowledged for %s", taskID, leaseID, want)
			}
		case l.leaseTask[leaseID] != taskID:
			l.t.Errorf("drained result of %s carries lease %q, never acknowledged for that task", taskID, leaseID)
		}
	})
	l.acks.Add(1)
}
