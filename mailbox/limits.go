package mailbox

import (
	"fmt"
	"slices"
	"time"
)

// Limits bound what the state remembers: drained tasks, cached results of
// idempotent tasks, repair records. They change what Apply does (a task
// forgotten under one limit is a duplicate under another), so they are part
// of the log, never only of a daemon's configuration: a limits_set event
// changes them and every snapshot carries them, and a log that never
// recorded any has the defaults. Replaying a log therefore gives the same
// state whatever the replaying process is configured with.
type Limits struct {
	// RetainDone is how many drained tasks are remembered, forgotten in
	// drain order.
	RetainDone int `json:"retain_done"`
	// ResultCacheMax and ResultCacheAgeMs bound the idempotent result cache
	// by count and by age in event time.
	ResultCacheMax   int   `json:"result_cache_max"`
	ResultCacheAgeMs int64 `json:"result_cache_age_ms"`
	// AuditMax is how many repair records the audit query can list.
	AuditMax int `json:"audit_max"`
	// MaxTurns and MaxTurnsBytes bound a task's conversation: how many
	// turns (questions and answers) it may hold, and their content's total
	// size. They are checked when a turn is added, never on replay. Zero is
	// the default, and the only way the default is recorded (see
	// canonical), so logs and snapshots written before these bounds existed
	// read, and are written back, byte for byte as they were.
	MaxTurns      int `json:"max_turns,omitempty"`
	MaxTurnsBytes int `json:"max_turns_bytes,omitempty"`
}

// Conversation bounds by default.
const (
	DefaultMaxTurns      = 50
	DefaultMaxTurnsBytes = 4 << 20
)

// canonical returns l with the conversation bounds at their defaults
// written as zero.
func (l Limits) canonical() Limits {
	if l.MaxTurns == DefaultMaxTurns {
		l.MaxTurns = 0
	}
	if l.MaxTurnsBytes == DefaultMaxTurnsBytes {
		l.MaxTurnsBytes = 0
	}
	return l
}

// turnBounds returns the conversation bounds in force.
func (l Limits) turnBounds() (turns, bytes int) {
	turns, bytes = l.MaxTurns, l.MaxTurnsBytes
	if turns == 0 {
		turns = DefaultMaxTurns
	}
	if bytes == 0 {
		bytes = DefaultMaxTurnsBytes
	}
	return turns, bytes
}

// DefaultLimits are the limits of a log (or snapshot) that records none.
func DefaultLimits() Limits {
	return Limits{RetainDone: DefaultRetainDone, ResultCacheMax: DefaultResultCacheMax, ResultCacheAgeMs: DefaultResultCacheAgeMs, AuditMax: DefaultAuditMax}
}

func (l Limits) String() string {
	turns, bytes := l.turnBounds()
	return fmt.Sprintf("retain_done=%d result_cache_max=%d result_cache_age=%v audit_max=%d max_turns=%d max_turns_bytes=%d",
		l.RetainDone, l.ResultCacheMax, time.Duration(l.ResultCacheAgeMs)*time.Millisecond, l.AuditMax, turns, bytes)
}

func (l Limits) validate() error {
	if l.RetainDone < 0 || l.ResultCacheMax < 0 || l.ResultCacheAgeMs < 0 || l.AuditMax < 0 || l.MaxTurns < 0 || l.MaxTurnsBytes < 0 {
		return fmt.Errorf("negative limits (%v)", l)
	}
	return nil
}

// DecideLimits returns the limits_set event that puts l in force, or
// ok=false when l is already.
func (s *State) DecideLimits(l Limits, nowMs int64) (ev Event, ok bool) {
	l = l.canonical()
	if s.Limits == l {
		return Event{}, false
	}
	return Event{AtMs: nowMs, Type: EventLimitsSet, Limits: &l}, true
}

// applyLimits puts recorded limits in force.
func (s *State) applyLimits(ev Event) error {
	if ev.Limits == nil {
		return fmt.Errorf("no limits")
	}
	if err := ev.Limits.validate(); err != nil {
		return err
	}
	s.setLimits(ev.Limits.canonical())
	return nil
}

// setLimits puts l in force and applies it at once, so the state holds what
// it would hold had l always applied (a raised limit cannot bring back what
// was already forgotten). Apply evicts the result cache after every event.
func (s *State) setLimits(l Limits) {
	// Records past the old bound are invisible already; a raised bound must
	// not bring them back, or the state would differ from one restored from
	// a snapshot, which never holds them.
	s.trimAudit(0)
	s.Limits = l
	s.trimAudit(0)
	s.forgetDone()
}

// admit makes room for a task sent (or answered from the cache) with id. An
// id remembered only as a drained task is forgotten first: a log written
// under a smaller retain_done had forgotten it and accepted the new send, so
// it replays under any retain_done. A task still queued, in flight or
// waiting for its result cannot be sent again.
func (s *State) admit(id string) error {
	old, ok := s.tasks[id]
	if !ok {
		return nil
	}
	if !finished(old.State) {
		return fmt.Errorf("task %s sent twice (it is %s)", id, old.State)
	}
	s.dropTask(old)
	if i := slices.Index(s.done[s.doneHead:], id); i >= 0 {
		s.done = slices.Delete(s.done, s.doneHead+i, s.doneHead+i+1)
	}
	return nil
}
