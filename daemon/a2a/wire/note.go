package wire

import (
	"sync"

	"github.com/mailroom/mailroom/mailbox"
)

// DeliveryNotes are what the A2A callers of tasks delivered to remote
// agents are told when a delivery is left to the operator (lost by the
// remote, or maybe sent and not settled): the task's state stays what the
// log says (working, while the lease is held), and its status message
// says why it does not move. The daemon makes one and hands it to the
// dispatcher, which sets a note by lease id (a lease id is never reused,
// so a note outlives no lease it was set for) and clears it when the
// delivery ends, and to the edge, whose views show it. Memory only: a
// restart's dispatcher finds the delivery again and sets it again. The
// zero value is empty; a nil *DeliveryNotes holds nothing and keeps
// nothing set.
type DeliveryNotes struct {
	m sync.Map // lease id -> note
}

// Set sets the note shown as the status message of the task delivered
// under leaseID while it is in flight; "" clears it.
func (n *DeliveryNotes) Set(leaseID, note string) {
	if n == nil || leaseID == "" {
		return
	}
	if note == "" {
		n.m.Delete(leaseID)
		return
	}
	n.m.Store(leaseID, note)
}

// of is the note of rec's current lease, or "".
func (n *DeliveryNotes) of(rec mailbox.TaskRecord) string {
	if n == nil || rec.State != mailbox.TaskInFlight || rec.LeaseID == "" {
		return ""
	}
	if v, ok := n.m.Load(rec.LeaseID); ok {
		return v.(string)
	}
	return ""
}

// View is View, with the note of a delivery left to the operator as the
// status message of the task it is about.
func (n *DeliveryNotes) View(rec mailbox.TaskRecord, origin *Message) TaskView {
	tv := View(rec, origin)
	if note := n.of(rec); note != "" {
		tv.StatusMessage = agentText(rec, note)
	}
	return tv
}
