package mailbox

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"
)

// The outbox's index and bounds. The notifier looks at the outbox on every
// change: it wants the oldest pending notification of each task's config
// it is not delivering to already, which the index gives without copying
// or sorting the outbox (OutboxHeads). The bounds keep a receiver that is
// down for good from filling memory, the log and every snapshot: past
// them the leader drops the oldest notifications with push_dropped events
// (OutboxOverflow chooses them), so a drop is audited, shown, and the same
// on every replay.

// outboxKey is the line a notification waits in: a task's push config, or
// (config "") the task's sender's webhook. One of a line is delivered at a
// time, oldest first.
type outboxKey struct{ task, config string }

func (n *Notification) key() outboxKey { return outboxKey{n.TaskID, n.ConfigID} }

// receiver is who a notification goes to, as the bounds count: a task's
// push config, or a sender's webhook whatever the task.
type receiver struct{ task, config, agent string }

func (n *Notification) receiver() receiver {
	if n.Agent != "" {
		return receiver{agent: n.Agent}
	}
	return receiver{task: n.TaskID, config: n.ConfigID}
}

// receiverCounts counts each receiver's notifications and keeps the
// largest count, so a look at the bounds costs nothing while every
// receiver is within them.
type receiverCounts struct {
	of   map[receiver]int
	with map[int]int // how many receivers have each count
	most int
}

// add changes r's count by d, 1 or -1.
func (c *receiverCounts) add(r receiver, d int) {
	old := c.of[r]
	n := old + d
	if old > 0 {
		if c.with[old]--; c.with[old] == 0 {
			delete(c.with, old)
		}
	}
	if n > 0 {
		c.of[r] = n
		c.with[n]++
	} else {
		delete(c.of, r)
	}
	switch {
	case n > c.most:
		c.most = n
	case old == c.most && c.with[old] == 0:
		c.most = n // nobody has old any more; r has one less
	}
}

// outboxIndex indexes the outbox: each line's notifications in the order
// they were made (the notifier's heads), every notification in that order
// (the oldest, for push_outbox_max), how many are dead, and each
// receiver's count (push_outbox_per_receiver).
type outboxIndex struct {
	queues map[outboxKey][]*Notification
	// order holds the notifications from head on; one taken out (its
	// taken set) stays until the front passes it or a compaction.
	order  []*Notification
	head   int
	taken  int // taken-out ones in order[head:]
	dead   int
	counts receiverCounts
}

func newOutboxIndex() outboxIndex {
	return outboxIndex{queues: make(map[outboxKey][]*Notification), counts: receiverCounts{of: make(map[receiver]int), with: make(map[int]int)}}
}

// put indexes n, made after every notification indexed so far.
func (x *outboxIndex) put(n *Notification) {
	k := n.key()
	x.queues[k] = append(x.queues[k], n)
	x.order = append(x.order, n)
	x.counts.add(n.receiver(), 1)
	if n.Dead {
		x.dead++
	}
}

// remove takes n out of the index.
func (x *outboxIndex) remove(n *Notification) {
	k := n.key()
	q := x.queues[k]
	if i := slices.Index(q, n); i >= 0 {
		q = slices.Delete(q, i, i+1)
	}
	if len(q) == 0 {
		delete(x.queues, k)
	} else {
		x.queues[k] = q
	}
	n.taken = true
	x.taken++
	for x.head < len(x.order) && x.order[x.head].taken {
		x.order[x.head] = nil
		x.head++
		x.taken--
	}
	if live := len(x.order) - x.head; x.head > 64 && x.head > live || x.taken > 64 && x.taken > live/2 {
		x.compact()
	}
	x.counts.add(n.receiver(), -1)
	if n.Dead {
		x.dead--
	}
}

// compact drops what was taken out from order.
func (x *outboxIndex) compact() {
	live := make([]*Notification, 0, len(x.order)-x.head-x.taken)
	for _, n := range x.order[x.head:] {
		if !n.taken {
			live = append(live, n)
		}
	}
	x.order, x.head, x.taken = live, 0, 0
}

// sort puts the lines and order in the order the notifications were made
// (a restored snapshot's outbox is in that order already).
func (x *outboxIndex) sort() {
	for _, q := range x.queues {
		sort.SliceStable(q, func(i, j int) bool { return notificationBefore(q[i], q[j]) })
	}
	o := x.order[x.head:]
	sort.SliceStable(o, func(i, j int) bool { return notificationBefore(o[i], o[j]) })
}

// notificationBefore orders notifications as they were made: by seq,
// then by their place in the event.
func notificationBefore(a, b *Notification) bool {
	if a.Seq != b.Seq {
		return a.Seq < b.Seq
	}
	return len(a.ID) < len(b.ID) || len(a.ID) == len(b.ID) && a.ID < b.ID
}

// OutboxHeads returns, in the order they were made, the oldest pending
// notification of each line (a task's push config, or its sender's
// webhook) for which busy reports false, and how many notifications the
// outbox holds pending and dead. It looks at each line once, skipping its
// dead letters, and copies only the heads.
func (s *State) OutboxHeads(busy func(taskID, configID string) bool) (heads []Notification, pending, dead int) {
	for k, q := range s.outboxIx.queues {
		if busy != nil && busy(k.task, k.config) {
			continue
		}
		for _, n := range q {
			if !n.Dead {
				heads = append(heads, *n)
				break
			}
		}
	}
	sortNotifications(heads)
	return heads, len(s.outbox) - s.outboxIx.dead, s.outboxIx.dead
}

// NotificationPending reports whether notification id is in the outbox
// and not dead: still to be delivered.
func (s *State) NotificationPending(id string) bool {
	n, ok := s.outbox[id]
	return ok && !n.Dead
}

// OutboxBounds bound the outbox; a zero field is no bound.
type OutboxBounds struct {
	// PerReceiver is the most notifications (pending and dead) one
	// receiver may have in the outbox: one push config of a task, or one
	// sender's webhook (all its tasks'). Config key push_outbox_per_receiver.
	PerReceiver int
	// Total is the most notifications the outbox may hold. Config key
	// push_outbox_max.
	Total int
	// DeadRetention is how long a dead letter is kept after it died.
	// Config key push_dead_retention.
	DeadRetention time.Duration
}

// Defaults of OutboxBounds: generous for a receiver that is down for an
// afternoon, bounded for one that never comes back.
const (
	DefaultOutboxPerReceiver = 1000
	DefaultOutboxTotal       = 100000
	DefaultDeadRetention     = 7 * 24 * time.Hour
)

// DefaultOutboxBounds returns the default bounds.
func DefaultOutboxBounds() OutboxBounds {
	return OutboxBounds{PerReceiver: DefaultOutboxPerReceiver, Total: DefaultOutboxTotal, DeadRetention: DefaultDeadRetention}
}

// OutboxDrop is a notification the bounds drop, and the reason its
// push_dropped event gives.
type OutboxDrop struct {
	ID, Reason string
}

// OutboxPrincipal is who drops what the bounds do not allow: the daemon.
const OutboxPrincipal = "mailroom"

// OutboxOverflow returns the notifications the bounds drop at nowMs, at
// most limit of them: first the dead letters kept past DeadRetention,
// then, for each receiver past PerReceiver, its oldest, then the oldest
// of the whole outbox past Total. Each has a reason naming the bound and
// its value. It changes nothing: the leader writes a push_dropped event
// for each.
func (s *State) OutboxOverflow(b OutboxBounds, nowMs int64, limit int) []OutboxDrop {
	if limit <= 0 || len(s.outbox) == 0 {
		return nil
	}
	d := &drops{limit: limit}
	if s.dropDeadPastRetention(b, nowMs, d) && s.dropPastPerReceiver(b, d) {
		s.dropPastTotal(b, d)
	}
	return d.out
}

// drops collects OutboxOverflow's answer: each notification once, at most
// limit of them.
type drops struct {
	out   []OutboxDrop
	gone  map[string]bool
	limit int
}

// add drops n for reason, unless it is dropped already, and reports
// whether there is room for more.
func (d *drops) add(n *Notification, reason string) bool {
	if d.gone[n.ID] {
		return true
	}
	if d.gone == nil {
		d.gone = map[string]bool{}
	}
	d.gone[n.ID] = true
	d.out = append(d.out, OutboxDrop{ID: n.ID, Reason: reason})
	return len(d.out) < d.limit
}

// dropDeadPastRetention drops the dead letters kept longer than
// DeadRetention, the oldest first; false when d is full.
func (s *State) dropDeadPastRetention(b OutboxBounds, nowMs int64, d *drops) bool {
	if b.DeadRetention <= 0 || s.outboxIx.dead == 0 {
		return true
	}
	cutoff := nowMs - b.DeadRetention.Milliseconds()
	var old []*Notification // a look at every notification: dead letters are rare
	for _, n := range s.outbox {
		if n.Dead && n.DeadAtMs <= cutoff {
			old = append(old, n)
		}
	}
	sort.Slice(old, func(i, j int) bool { return notificationBefore(old[i], old[j]) })
	reason := "dead-lettered longer than push_dead_retention=" + b.DeadRetention.String() + " allows"
	for _, n := range old {
		if !d.add(n, reason) {
			return false
		}
	}
	return true
}

// dropPastPerReceiver drops, for each receiver holding more than
// PerReceiver, its oldest; false when d is full.
func (s *State) dropPastPerReceiver(b OutboxBounds, d *drops) bool {
	if b.PerReceiver <= 0 || s.outboxIx.counts.most <= b.PerReceiver {
		return true
	}
	var rs []receiver
	for r, n := range s.outboxIx.counts.of {
		if n > b.PerReceiver {
			rs = append(rs, r)
		}
	}
	sort.Slice(rs, func(i, j int) bool {
		a, b := rs[i], rs[j]
		return a.agent < b.agent || a.agent == b.agent && (a.task < b.task || a.task == b.task && a.config < b.config)
	})
	for _, r := range rs {
		var left []*Notification
		for _, n := range s.receiverLine(r) {
			if !d.gone[n.ID] {
				left = append(left, n)
			}
		}
		if len(left) <= b.PerReceiver {
			continue
		}
		sort.Slice(left, func(i, j int) bool { return notificationBefore(left[i], left[j]) })
		name := r.agent + "'s webhook"
		if r.agent == "" {
			name = "push config " + strconv.Quote(r.config) + " of task " + r.task
		}
		reason := fmt.Sprintf("the outbox bound push_outbox_per_receiver=%d was passed by %s: its oldest notifications are dropped", b.PerReceiver, name)
		for _, n := range left[:len(left)-b.PerReceiver] {
			if !d.add(n, reason) {
				return false
			}
		}
	}
	return true
}

// receiverLine is what one receiver holds: a config is one line; a
// sender's webhook has a line per task.
func (s *State) receiverLine(r receiver) []*Notification {
	if r.agent == "" {
		return s.outboxIx.queues[outboxKey{r.task, r.config}]
	}
	var q []*Notification
	for k, line := range s.outboxIx.queues {
		if k.config == "" && line[0].Agent == r.agent {
			q = append(q, line...)
		}
	}
	return q
}

// dropPastTotal drops the oldest of the whole outbox past Total, not
// counting what is dropped already.
func (s *State) dropPastTotal(b OutboxBounds, d *drops) {
	excess := len(s.outbox) - len(d.gone) - b.Total
	if b.Total <= 0 || excess <= 0 {
		return
	}
	reason := fmt.Sprintf("the outbox bound push_outbox_max=%d was passed: the oldest notifications are dropped", b.Total)
	for _, n := range s.outboxIx.order[s.outboxIx.head:] {
		if excess == 0 {
			return
		}
		if n.taken || d.gone[n.ID] {
			continue
		}
		excess--
		if !d.add(n, reason) {
			return
		}
	}
}

// OutboxWithin reports whether the outbox is within the count bounds, as
// far as can be told without a look at every notification: false means
// OutboxOverflow may find something to drop (dead letters' age is not
// looked at).
func (s *State) OutboxWithin(b OutboxBounds) bool {
	return (b.Total <= 0 || len(s.outbox) <= b.Total) && (b.PerReceiver <= 0 || len(s.outbox) <= b.PerReceiver)
}
