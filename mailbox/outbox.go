package mailbox

import (
	"slices"
	"sort"
)

// The outbox's index. The notifier looks at the outbox on every change:
// it wants the oldest pending notification of each task's config it is
// not delivering to already, which the index gives without copying or
// sorting the outbox (OutboxHeads).

// outboxKey is the line a notification waits in: a task's push config, or
// (config "") the task's sender's webhook. One of a line is delivered at a
// time, oldest first.
type outboxKey struct{ task, config string }

func (n *Notification) key() outboxKey { return outboxKey{n.TaskID, n.ConfigID} }

// unqueue takes n out of its line.
func (s *State) unqueue(n *Notification) {
	k := n.key()
	q := s.outboxQueues[k]
	if i := slices.Index(q, n); i >= 0 {
		q = slices.Delete(q, i, i+1)
	}
	if len(q) == 0 {
		delete(s.outboxQueues, k)
	} else {
		s.outboxQueues[k] = q
	}
}

// sortQueues puts each line in the order its notifications were made (a
// restored snapshot's outbox is in that order already).
func (s *State) sortQueues() {
	for _, q := range s.outboxQueues {
		sort.SliceStable(q, func(i, j int) bool { return notificationBefore(q[i], q[j]) })
	}
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
	for k, q := range s.outboxQueues {
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
	return heads, len(s.outbox) - s.outboxDead, s.outboxDead
}

// NotificationPending reports whether notification id is in the outbox
// and not dead: still to be delivered.
func (s *State) NotificationPending(id string) bool {
	n, ok := s.outbox[id]
	return ok && !n.Dead
}
