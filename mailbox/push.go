package mailbox

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Push notifications. A task may carry push configs (A2A's
// PushNotificationConfig: a webhook URL, a token the receiver checks, an
// optional authentication for the daemon to present). Every change of a
// task that has configs puts one notification per config in the outbox
// as it is applied: the outbox is a projection of the log like the rest
// of the state, so a notification is written in the same unit as the
// change it tells of and no crash can separate them. The daemon's
// notifier delivers the outbox (attempts and backoff are memory only);
// what it learns that changes what a restart must do is logged: a
// delivery acknowledged (push_delivered, the entry leaves the outbox),
// the retry bound exhausted (push_dead_lettered), and the operator's
// retry or drop of an entry (push_retried, push_dropped, audited).

// IsPushEvent reports whether events of type typ are the outbox's own:
// they change no task's state (a task's history does not hold them).
func IsPushEvent(typ string) bool {
	switch typ {
	case EventPushConfigSet, EventPushConfigDeleted, EventPushDelivered, EventPushDeadLettered, EventPushRetried, EventPushDropped:
		return true
	}
	return false
}

// Bounds of push configs.
const (
	MaxPushConfigs        = 10 // per task
	MaxPushURLBytes       = 2048
	MaxPushIDBytes        = 256
	MaxPushTokenBytes     = 1024
	MaxPushSchemes        = 8
	MaxPushSchemeBytes    = 64
	MaxPushCredentialsLen = 4096
	MaxPushErrorBytes     = 1024
)

// PushConfig is one webhook a task's changes are posted to.
type PushConfig struct {
	// ID names the config among the task's; the task's id when the
	// caller gave none.
	ID  string `json:"id"`
	URL string `json:"url"`
	// Token is sent with every notification (X-A2A-Notification-Token)
	// for the receiver to check.
	Token string `json:"token,omitempty"`
	// Authentication is what the daemon presents to the receiver.
	Authentication *PushAuth `json:"authentication,omitempty"`
}

// PushAuth is how the daemon authenticates to a receiver: with the Bearer
// scheme among Schemes, Credentials is sent as a bearer token.
type PushAuth struct {
	Schemes     []string `json:"schemes"`
	Credentials string   `json:"credentials,omitempty"`
}

// Webhook is where a native sender is told that a result is waiting for
// it (on its registry entry: AgentCard.Webhook).
type Webhook struct {
	URL            string    `json:"url" yaml:"url"`
	Token          string    `json:"token,omitempty" yaml:"token,omitempty"`
	Authentication *PushAuth `json:"authentication,omitempty" yaml:"authentication,omitempty"`
}

// Config is the webhook as a push config (its id "webhook"), which is how
// the notifier posts to it.
func (w Webhook) Config() PushConfig {
	return PushConfig{ID: "webhook", URL: w.URL, Token: w.Token, Authentication: w.Authentication}
}

// Notification is one entry of the outbox: a change of a task to tell one
// of its push configs of. Its id is stable (the seq of the change and the
// config's place), so a receiver can drop a notification delivered twice.
type Notification struct {
	ID     string `json:"id"`
	TaskID string `json:"task_id"`
	// ConfigID is the task's push config it goes to; for a native
	// sender's webhook it is "" and Agent names the sender.
	ConfigID string `json:"config_id"`
	Agent    string `json:"agent,omitempty"`
	// Seq and Event are the change it tells of: the task as it stood
	// after that event is what is posted.
	Seq         uint64 `json:"seq"`
	Event       string `json:"event"`
	CreatedAtMs int64  `json:"created_at_ms"`
	// Dead marks a notification whose retries ran out (or whose task was
	// forgotten first); DeadAtMs, Attempts and LastError say when and why.
	Dead      bool   `json:"dead,omitempty"`
	DeadAtMs  int64  `json:"dead_at_ms,omitempty"`
	Attempts  int    `json:"attempts,omitempty"`
	LastError string `json:"last_error,omitempty"`

	// taken marks one taken out of the outbox, for its index (outbox.go).
	taken bool
}

// notificationID is the stable id of the n-th (from 1) notification an
// event with seq makes.
func notificationID(seq uint64, n int) string {
	return strconv.FormatUint(seq, 10) + "-" + strconv.Itoa(n)
}

// DecidePushConfigSet returns the push_config_set event that sets config
// c (normalized) on task taskID, replacing the task's config of the same
// id. Any remembered task takes one, finished ones too (the receiver is
// told of it as it stands).
func (s *State) DecidePushConfigSet(taskID string, c PushConfig, principal string, nowMs int64) (Event, error) {
	c, err := NormalizePushConfig("push", taskID, c)
	if err != nil {
		return Event{}, err
	}
	t, err := s.pushTask(taskID)
	if err != nil {
		return Event{}, err
	}
	if _, ok := t.pushConfig(c.ID); !ok && len(t.Push) >= MaxPushConfigs {
		return Event{}, &Error{Code: CodeConflict, Message: fmt.Sprintf("push.id: task %s has %d push configs, the most a task may have; delete one first or replace one by its id", taskID, len(t.Push)),
			Details: &ErrorDetails{Field: "push.id"}}
	}
	return Event{AtMs: nowMs, Type: EventPushConfigSet, TaskID: taskID, Principal: principal, Push: &c}, nil
}

// DecidePushConfigDelete returns the push_config_deleted event that
// removes task taskID's config configID.
func (s *State) DecidePushConfigDelete(taskID, configID, principal string, nowMs int64) (Event, error) {
	t, err := s.pushTask(taskID)
	if err != nil {
		return Event{}, err
	}
	if _, ok := t.pushConfig(configID); !ok {
		return Event{}, pushConfigNotFound(taskID, configID)
	}
	return Event{AtMs: nowMs, Type: EventPushConfigDeleted, TaskID: taskID, Principal: principal, ConfigID: configID}, nil
}

// PushConfigs returns task taskID's push configs, or one by its id.
func (s *State) PushConfigs(taskID, configID string) ([]PushConfig, error) {
	t, err := s.pushTask(taskID)
	if err != nil {
		return nil, err
	}
	if configID != "" {
		c, ok := t.pushConfig(configID)
		if !ok {
			return nil, pushConfigNotFound(taskID, configID)
		}
		return []PushConfig{c}, nil
	}
	return append([]PushConfig{}, t.Push...), nil
}

func pushConfigNotFound(taskID, configID string) *Error {
	return &Error{Code: CodeNotFound, Message: fmt.Sprintf("push.id: task %s has no push config %s", taskID, quote(configID)), Details: &ErrorDetails{Field: "push.id"}}
}

func (s *State) pushTask(taskID string) (*taskRec, error) {
	t, ok := s.tasks[taskID]
	if !ok {
		return nil, &Error{Code: CodeNotFound, Message: "task_id: task " + taskID + " was never sent through this daemon (or finished long ago and was forgotten)",
			Details: &ErrorDetails{Field: "task_id"}}
	}
	return t, nil
}

func (t *taskRec) pushConfig(id string) (PushConfig, bool) {
	for _, c := range t.Push {
		if c.ID == id {
			return c, true
		}
	}
	return PushConfig{}, false
}

// DecidePushDelivered returns the push_delivered event that takes
// notification id out of the outbox once its receiver acknowledged it.
// A notification no longer pending (delivered, dropped, dead) is a
// conflict: the notifier's attempt raced an operator or another leader.
func (s *State) DecidePushDelivered(id string, attempts int, nowMs int64) (Event, error) {
	n, err := s.notification(id)
	if err != nil {
		return Event{}, err
	}
	if n.Dead {
		return Event{}, &Error{Code: CodeConflict, Message: "notification " + id + " is dead-lettered; nothing was changed", Details: &ErrorDetails{Field: "id"}}
	}
	return Event{AtMs: nowMs, Type: EventPushDelivered, TaskID: n.TaskID, Notification: id, Attempts: attempts}, nil
}

// DecidePushDeadLettered returns the push_dead_lettered event that marks
// notification id dead after attempts attempts, the last failing with
// lastError.
func (s *State) DecidePushDeadLettered(id string, attempts int, lastError string, nowMs int64) (Event, error) {
	n, err := s.notification(id)
	if err != nil {
		return Event{}, err
	}
	if n.Dead {
		return Event{}, &Error{Code: CodeConflict, Message: "notification " + id + " is dead-lettered already; nothing was changed", Details: &ErrorDetails{Field: "id"}}
	}
	if len(lastError) > MaxPushErrorBytes {
		lastError = strings.ToValidUTF8(lastError[:MaxPushErrorBytes], "")
	}
	return Event{AtMs: nowMs, Type: EventPushDeadLettered, TaskID: n.TaskID, Notification: id, Attempts: attempts, Reason: lastError}, nil
}

// DecidePushRetry returns the push_retried event that puts dead
// notification id back in line, on principal's word.
func (s *State) DecidePushRetry(id, principal, reason string, nowMs int64) (Event, error) {
	if err := repairReason(reason, false); err != nil {
		return Event{}, err
	}
	n, err := s.notification(id)
	if err != nil {
		return Event{}, err
	}
	if !n.Dead {
		return Event{}, &Error{Code: CodeConflict, Message: "notification " + id + " is not dead-lettered: it is pending, and is tried again on its own; nothing was changed", Details: &ErrorDetails{Field: "id"}}
	}
	if _, ok := s.tasks[n.TaskID]; !ok {
		return Event{}, &Error{Code: CodeConflict, Message: "notification " + id + ": its task " + n.TaskID + " was forgotten, so there is nothing to post; drop it instead", Details: &ErrorDetails{Field: "id"}}
	}
	return Event{AtMs: nowMs, Type: EventPushRetried, TaskID: n.TaskID, Notification: id, Principal: principal, Reason: reason}, nil
}

// DecidePushDrop returns the push_dropped event that removes notification
// id, pending or dead, on principal's word; the reason is required. With
// deadOnly it removes it only while it is dead-lettered: a bulk drop of
// the dead listed it so, and one retried since (pending again) is kept.
func (s *State) DecidePushDrop(id, principal, reason string, deadOnly bool, nowMs int64) (Event, error) {
	if err := repairReason(reason, true); err != nil {
		return Event{}, err
	}
	n, err := s.notification(id)
	if err != nil {
		return Event{}, err
	}
	if deadOnly && !n.Dead {
		return Event{}, &Error{Code: CodeConflict, Message: "notification " + id + " is not dead-lettered any more (it was retried since, and is pending): dead_only kept it; nothing was changed", Details: &ErrorDetails{Field: "dead_only"}}
	}
	return Event{AtMs: nowMs, Type: EventPushDropped, TaskID: n.TaskID, Notification: id, Principal: principal, Reason: reason}, nil
}

func repairReason(reason string, required bool) error {
	switch {
	case required && strings.TrimSpace(reason) == "":
		return Invalidf("reason", "got \"\", expected why the notification is dropped (it is kept in the audit)")
	case len(reason) > MaxReasonBytes:
		return Invalidf("reason", "got %d bytes, expected at most %d", len(reason), MaxReasonBytes)
	}
	return cardChars("reason", reason, true)
}

func (s *State) notification(id string) (*Notification, error) {
	n, ok := s.outbox[id]
	if !ok {
		return nil, &Error{Code: CodeNotFound, Message: "id: notification " + quote(id) + " is not in the outbox (delivered, dropped, or never made)", Details: &ErrorDetails{Field: "id"}}
	}
	return n, nil
}

// Outbox returns the outbox's notifications in the order they were made
// (by seq, then by config).
func (s *State) Outbox() []Notification {
	out := make([]Notification, 0, len(s.outbox))
	for _, n := range s.outbox {
		out = append(out, *n)
	}
	sortNotifications(out)
	return out
}

// OutboxLen is how many notifications the outbox holds, pending or dead.
func (s *State) OutboxLen() int { return len(s.outbox) }

// Notification returns one notification of the outbox.
func (s *State) Notification(id string) (Notification, bool) {
	n, ok := s.outbox[id]
	if !ok {
		return Notification{}, false
	}
	return *n, true
}

func sortNotifications(ns []Notification) {
	sort.Slice(ns, func(i, j int) bool {
		if ns[i].Seq != ns[j].Seq {
			return ns[i].Seq < ns[j].Seq
		}
		return len(ns[i].ID) < len(ns[j].ID) || len(ns[i].ID) == len(ns[j].ID) && ns[i].ID < ns[j].ID
	})
}

// notifies reports whether an event of this type changes what an A2A
// caller sees of its task's state, and so is told to its push configs.
func notifies(typ string) bool {
	switch typ {
	case EventTaskLeased, EventResultPosted, EventTaskForceErrored, EventTaskRequeued,
		EventTaskReplied, EventTaskCanceled, EventTaskWithdrawn:
		return true
	}
	return false
}

// queueNotifications puts a notification per push config of ev's task in
// the outbox when ev changed the task's state, and one for its sender's
// webhook when ev left a result waiting for the sender (or handed one
// waiting to it).
func (s *State) queueNotifications(ev Event) {
	id := ev.TaskID
	if ev.Type == EventResultReplayed && ev.Task != nil {
		id = ev.Task.ID
	}
	if id == "" {
		return
	}
	t, ok := s.tasks[id]
	if !ok {
		return
	}
	n := 0
	if notifies(ev.Type) {
		for _, c := range t.Push {
			n++
			s.addNotification(ev, id, n, c.ID, "")
		}
	}
	switch ev.Type {
	case EventResultPosted, EventTaskForceErrored, EventResultReplayed, EventTaskWithdrawn:
		if r, ok := s.registry[t.Task.Sender]; ok && r.Card.Webhook != nil {
			s.addNotification(ev, id, n+1, "", t.Task.Sender)
		}
	case EventTaskHandedOver:
		// A result (or a question) waiting for its old sender now waits
		// for the new one: its webhook is told, as of a new result.
		if _, pending := s.results[id]; pending {
			if r, ok := s.registry[t.Task.Sender]; ok && r.Card.Webhook != nil {
				s.addNotification(ev, id, n+1, "", t.Task.Sender)
			}
		}
	}
}

func (s *State) addNotification(ev Event, taskID string, n int, configID, agent string) {
	id := notificationID(ev.Seq, n)
	s.putNotification(&Notification{ID: id, TaskID: taskID, ConfigID: configID, Agent: agent, Seq: ev.Seq, Event: ev.Type, CreatedAtMs: ev.AtMs})
}

// putNotification puts n in the outbox and its indexes: made after every
// notification of its task's config (the events come in seq order).
func (s *State) putNotification(n *Notification) {
	s.outbox[n.ID] = n
	s.outboxTasks[n.TaskID]++
	s.outboxIx.put(n)
}

// removeNotification takes n out of the outbox.
func (s *State) removeNotification(n *Notification) {
	delete(s.outbox, n.ID)
	if s.outboxTasks[n.TaskID]--; s.outboxTasks[n.TaskID] <= 0 {
		delete(s.outboxTasks, n.TaskID)
	}
	s.outboxIx.remove(n)
}

// markDead marks n dead (attempts, lastError) at atMs.
func (s *State) markDead(n *Notification, atMs int64, attempts int, lastError string) {
	if !n.Dead {
		s.outboxIx.dead++
	}
	n.Dead, n.DeadAtMs, n.Attempts, n.LastError = true, atMs, attempts, lastError
}

// dropAgentNotifications removes the notifications for agent's webhook:
// it has none any more (deregistered, or registered without one).
func (s *State) dropAgentNotifications(agent string) {
	for _, n := range s.outbox {
		if n.Agent == agent {
			s.removeNotification(n)
		}
	}
}

func (s *State) applyPushConfigSet(ev Event) error {
	t, ok := s.tasks[ev.TaskID]
	if !ok || ev.Push == nil {
		return fmt.Errorf("push config for unknown task %s, or without its config", ev.TaskID)
	}
	c := *ev.Push
	push := make([]PushConfig, 0, len(t.Push)+1)
	replaced := false
	for _, old := range t.Push {
		if old.ID == c.ID {
			old, replaced = c, true
		}
		push = append(push, old)
	}
	if !replaced {
		push = append(push, c)
	}
	t.Push = push
	// The receiver is told of the task as it stands now.
	s.addNotification(ev, ev.TaskID, 1, c.ID, "")
	return nil
}

func (s *State) applyPushConfigDeleted(ev Event) error {
	t, ok := s.tasks[ev.TaskID]
	if !ok {
		return fmt.Errorf("push config deleted from unknown task %s", ev.TaskID)
	}
	push := make([]PushConfig, 0, len(t.Push))
	for _, c := range t.Push {
		if c.ID != ev.ConfigID {
			push = append(push, c)
		}
	}
	if len(push) == len(t.Push) {
		return fmt.Errorf("task %s has no push config %q", ev.TaskID, ev.ConfigID)
	}
	if len(push) == 0 {
		push = nil
	}
	t.Push = push
	// The config's line is its notifications (a config's id is never "",
	// the line of the sender's webhook).
	for _, n := range slices.Clone(s.outboxIx.queues[outboxKey{ev.TaskID, ev.ConfigID}]) {
		s.removeNotification(n)
	}
	return nil
}

func (s *State) applyPush(ev Event) error {
	n, ok := s.outbox[ev.Notification]
	if !ok {
		return fmt.Errorf("notification %q is not in the outbox", ev.Notification)
	}
	switch ev.Type {
	case EventPushDelivered:
		if n.Dead {
			return fmt.Errorf("notification %s is dead-lettered, not pending", n.ID)
		}
		s.removeNotification(n)
	case EventPushDeadLettered:
		if n.Dead {
			return fmt.Errorf("notification %s is dead-lettered already", n.ID)
		}
		s.markDead(n, ev.AtMs, ev.Attempts, ev.Reason)
	case EventPushRetried:
		if !n.Dead {
			return fmt.Errorf("notification %s is not dead-lettered", n.ID)
		}
		n.Dead, n.DeadAtMs, n.Attempts, n.LastError = false, 0, 0, ""
		s.outboxIx.dead--
		s.recordPushAudit(ev, n)
	case EventPushDropped:
		s.removeNotification(n)
		s.recordPushAudit(ev, n)
	}
	return nil
}

// forgetNotifications dead-letters the pending notifications of a task
// the state forgets: without the task there is nothing to post, and the
// operator sees what was not delivered.
func (s *State) forgetNotifications(t *taskRec) {
	if s.outboxTasks[t.Task.ID] == 0 {
		return
	}
	for _, n := range s.outbox {
		if n.TaskID == t.Task.ID && !n.Dead {
			s.markDead(n, s.atMs, n.Attempts, "the task was forgotten (retain_done) before this notification was delivered")
		}
	}
}

func (s *State) recordPushAudit(ev Event, n *Notification) {
	action := OutcomePushRetried
	if ev.Type == EventPushDropped {
		action = OutcomePushDropped
	}
	s.audit = append(s.audit, AuditRecord{Seq: ev.Seq, AtMs: ev.AtMs, TaskID: n.TaskID, Action: action, Reason: ev.Reason,
		Principal: ev.Principal, Notification: n.ID})
	s.trimAudit((s.AuditMax + 3) / 4)
}

// Audit actions of the outbox's repairs.
const (
	OutcomePushRetried = "push_retried"
	OutcomePushDropped = "push_dropped"
)

// restoreOutbox checks and installs a snapshot's outbox.
func (s *State) restoreOutbox(seq uint64, ns []Notification) error {
	for _, n := range ns {
		if _, dup := s.outbox[n.ID]; dup {
			return fmt.Errorf("snapshot %d: notification %s appears twice", seq, n.ID)
		}
		if !n.Dead {
			t, ok := s.tasks[n.TaskID]
			if !ok {
				return fmt.Errorf("snapshot %d: notification %s is pending for task %s, which the snapshot does not hold", seq, n.ID, n.TaskID)
			}
			if n.Agent != "" {
				if r, ok := s.registry[n.Agent]; !ok || r.Card.Webhook == nil {
					return fmt.Errorf("snapshot %d: notification %s is pending for %s's webhook, which it does not have", seq, n.ID, n.Agent)
				}
			} else if _, ok := t.pushConfig(n.ConfigID); !ok {
				return fmt.Errorf("snapshot %d: notification %s is pending for push config %q, which task %s does not have", seq, n.ID, n.ConfigID, n.TaskID)
			}
		}
		n := n
		s.putNotification(&n)
	}
	s.outboxIx.sort()
	return nil
}
