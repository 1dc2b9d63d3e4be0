package wire

import (
	"sync"

	"github.com/mailroom/mailroom/mailbox"
)

// What the A2A caller of a task delivered to a remote agent is told when
// that delivery is left to the operator (lost by the remote, or maybe
// sent and not settled): the task's state stays what the log says
// (working, while the lease is held), and its status message says why it
// does not move. The dispatcher sets the note by lease id (a lease id is
// never reused, so a note outlives no lease it was set for) and clears it
// when the delivery ends.

var deliveryNotes sync.Map // lease id -> note

// SetDeliveryNote sets the note shown as the status message of the task
// delivered under leaseID while it is in flight; "" clears it.
func SetDeliveryNote(leaseID, note string) {
	if leaseID == "" {
		return
	}
	if note == "" {
		deliveryNotes.Delete(leaseID)
		return
	}
	deliveryNotes.Store(leaseID, note)
}

// deliveryNote is the note of rec's current lease, or "".
func deliveryNote(rec mailbox.TaskRecord) string {
	if rec.State != mailbox.TaskInFlight || rec.LeaseID == "" {
		return ""
	}
	if n, ok := deliveryNotes.Load(rec.LeaseID); ok {
		return n.(string)
	}
	return ""
}
