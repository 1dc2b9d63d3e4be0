package mailbox

// The operator's view of the outbox (GET /a2a/push): each notification as
// the log has it, with what the notifier knows of its delivery (memory).

// States of a notification in the operator's view.
const (
	DeliveryPending = "pending" // waiting for its turn or its first try
	DeliveryFailing = "failing" // tried and failed; tried again at NextTryMs
	DeliveryDead    = "dead"    // its retries ran out: retry or drop it
)

// PushAttempt is what the notifier knows of a notification it is
// delivering: attempts so far, the last error, the next try.
type PushAttempt struct {
	Attempts  int    `json:"attempts"`
	LastError string `json:"last_error,omitempty"`
	NextTryMs int64  `json:"next_try_ms,omitempty"`
}

// NotificationStatus is one notification in the operator's view.
type NotificationStatus struct {
	Notification
	State string `json:"state"`
	// URL is the config's webhook ("" when the task was forgotten).
	URL       string `json:"url,omitempty"`
	NextTryMs int64  `json:"next_try_ms,omitempty"`
}

// PushListing is GET /a2a/push's answer.
type PushListing struct {
	Kind string `json:"kind"`
	// Delivering says whether this instance's notifier delivers (false on
	// an instance that does not lead: attempts are known where it does).
	Delivering    bool                 `json:"delivering"`
	Notifications []NotificationStatus `json:"notifications"`
	// Bounds are the bounds this instance's notifier holds the outbox to
	// (absent where it does not deliver); Dropped counts what it dropped
	// by them since it began delivering, each a push_dropped event in the
	// log and the audit (principal mailroom).
	Bounds  *PushBounds `json:"bounds,omitempty"`
	Dropped int         `json:"dropped,omitempty"`
}

// PushBounds is OutboxBounds as GET /a2a/push shows them (0: no bound).
type PushBounds struct {
	PerReceiver     int   `json:"per_receiver"`
	Max             int   `json:"max"`
	DeadRetentionMs int64 `json:"dead_retention_ms"`
}

// PushStatus is what the notifier tells the operator's view of its
// deliveries: whether it delivers (this instance leads), its attempts by
// notification id, its bounds and what it dropped by them.
type PushStatus struct {
	Delivering bool
	Attempts   map[string]PushAttempt
	Bounds     *PushBounds
	Dropped    int
}

// View is b as GET /a2a/push shows it.
func (b OutboxBounds) View() *PushBounds {
	return &PushBounds{PerReceiver: b.PerReceiver, Max: b.Total, DeadRetentionMs: b.DeadRetention.Milliseconds()}
}

// PushRetried is POST /a2a/push/{id}/retry's answer; PushDropped is
// POST /a2a/push/{id}/drop's.
type PushRetried struct {
	Kind         string       `json:"kind"`
	Notification Notification `json:"notification"`
}

type PushDropped struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
}

// PushDropRequest is POST /a2a/push/{id}/drop's body (and retry's, whose
// reason may be empty). DeadOnly, on a drop, removes the notification
// only while it is dead-lettered (409 once it was retried): what a bulk
// drop of the dead sends, so that one retried since it was listed is kept.
type PushDropRequest struct {
	Reason   string `json:"reason"`
	DeadOnly bool   `json:"dead_only,omitempty"`
}

// Kinds of the outbox's answers.
const (
	KindPushList    = "a2a_push_list"
	KindPushRetried = "a2a_push_retried"
	KindPushDropped = "a2a_push_dropped"
)

// PushListingOf makes the operator's view of the outbox from the state's
// notifications and the notifier's attempts (nil when it does not lead).
func (s *State) PushListingOf(attempts map[string]PushAttempt, failedOnly bool) []NotificationStatus {
	out := []NotificationStatus{}
	var ns []Notification
	if failedOnly {
		// The console asks for this every few seconds: copy and sort
		// only the failing and dead, not a large outbox.
		for id, n := range s.outbox {
			if n.Dead || attempts[id].Attempts > 0 {
				ns = append(ns, *n)
			}
		}
		sortNotifications(ns)
	} else {
		ns = s.Outbox()
	}
	for _, n := range ns {
		st := NotificationStatus{Notification: n, State: DeliveryPending}
		if n.Agent != "" {
			if r, ok := s.registry[n.Agent]; ok && r.Card.Webhook != nil {
				st.URL = r.Card.Webhook.URL
			}
		} else if t, ok := s.tasks[n.TaskID]; ok {
			if c, ok := t.pushConfig(n.ConfigID); ok {
				st.URL = c.URL
			}
		}
		switch a, ok := attempts[n.ID]; {
		case n.Dead:
			st.State = DeliveryDead
		case ok && a.Attempts > 0:
			st.State, st.Attempts, st.LastError, st.NextTryMs = DeliveryFailing, a.Attempts, a.LastError, a.NextTryMs
		}
		if failedOnly && st.State == DeliveryPending {
			continue
		}
		out = append(out, st)
	}
	return out
}
