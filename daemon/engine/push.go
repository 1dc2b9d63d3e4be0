package engine

import (
	"context"
	"reflect"

	"github.com/mailroom/mailroom/mailbox"
)

// Push configs and the outbox (mailbox/push.go). The configs are set by
// the A2A edge for its callers; the outbox is delivered by the daemon's
// notifier through Push (outbox.go); an operator repairs it with
// RetryNotification and DropNotification.

// checkPushConfig normalizes c for task taskID and holds its URL to the
// daemon's configuration (Options.CheckPushURL): refused, nothing is
// changed.
func (e *Engine) checkPushConfig(taskID string, c mailbox.PushConfig) (mailbox.PushConfig, error) {
	c, err := mailbox.NormalizePushConfig("push", taskID, c)
	if err != nil {
		return c, err
	}
	if e.opts.CheckPushURL != nil {
		u, _ := mailbox.ParsePushURL("push.url", c.URL)
		if err := e.opts.CheckPushURL("push.url", u); err != nil {
			return c, err
		}
	}
	return c, nil
}

// SetPushConfig sets push config c on task taskID (replacing its config
// of the same id) and returns it as stored. Setting a config the task
// already has, unchanged, changes nothing.
func (e *Engine) SetPushConfig(ctx context.Context, taskID string, c mailbox.PushConfig) (mailbox.PushConfig, error) {
	taskID, err := mailbox.CanonicalUUID("task_id", taskID)
	if err != nil {
		return c, err
	}
	if c, err = e.checkPushConfig(taskID, c); err != nil {
		return c, err
	}
	principal := mailbox.PrincipalFrom(ctx)
	_, _, err = e.decide(func(s *mailbox.State, now int64) (mailbox.Event, bool, error) {
		return decidePushSet(s, taskID, c, principal, now)
	}, nil)
	if err != nil {
		return mailbox.PushConfig{}, err
	}
	return c, nil
}

// decidePushSet decides a push config, nothing when the task has it
// already as it is.
func decidePushSet(s *mailbox.State, taskID string, c mailbox.PushConfig, principal string, now int64) (mailbox.Event, bool, error) {
	if have, err := s.PushConfigs(taskID, c.ID); err == nil && reflect.DeepEqual(have[0], c) {
		return mailbox.Event{}, false, nil
	}
	return must(s.DecidePushConfigSet(taskID, c, principal, now))
}

// SendWithPush sends task t with push config c as one unit: the task and
// its config are durable together or not at all, so its receiver hears
// of every change after the send. A retry of a task already sent (the
// same id, or a live idempotent twin) sets the config on that task.
func (e *Engine) SendWithPush(ctx context.Context, t mailbox.Task, c mailbox.PushConfig) (mailbox.TaskQueuedResponse, error) {
	if t.ID == "" {
		t.ID = e.opts.NewID()
	}
	t, err := mailbox.NormalizeTask(t)
	if err != nil {
		return mailbox.TaskQueuedResponse{}, err
	}
	if c, err = e.checkPushConfig(t.ID, c); err != nil {
		return mailbox.TaskQueuedResponse{}, err
	}
	e.seen(t.Sender)
	principal := mailbox.PrincipalFrom(ctx)
	out := mailbox.TaskQueuedResponse{Kind: mailbox.KindTaskQueued, TaskID: t.ID}
	var sent error // the send's refusal: a task of that id was sent already
	_, err = e.run("nothing was changed", func(p *pass) error {
		id := t.ID
		if twin, ok := p.s.LiveDuplicate(t); ok {
			id, out.TaskID, out.Deduplicated = twin, twin, true
		} else if ev, err := p.s.DecideSend(t, p.now); err == nil {
			if _, err := p.add(ev, nil); err != nil {
				return err
			}
			out.Deduplicated = ev.Type == mailbox.EventResultReplayed
		} else if mailbox.ErrorCode(err) == mailbox.CodeConflict {
			// The caller's retry: its config goes on the task it made,
			// and the send is answered as Send answers it.
			sent = err
		} else {
			return err
		}
		ev, ok, err := decidePushSet(p.s, id, withID(c, t.ID, id), principal, p.now)
		if err != nil || !ok {
			return err
		}
		_, err = p.add(ev, nil)
		return err
	})
	if err == nil {
		err = sent
	}
	if err != nil {
		return mailbox.TaskQueuedResponse{}, err
	}
	return out, nil
}

// withID gives a config defaulted to the sent task's id the id of the
// task it goes on instead.
func withID(c mailbox.PushConfig, sent, id string) mailbox.PushConfig {
	if c.ID == sent {
		c.ID = id
	}
	return c
}

// PushConfigs returns task taskID's push configs, or the one named
// configID ("" for all).
func (e *Engine) PushConfigs(ctx context.Context, taskID, configID string) ([]mailbox.PushConfig, error) {
	taskID, err := mailbox.CanonicalUUID("task_id", taskID)
	if err != nil {
		return nil, err
	}
	var out []mailbox.PushConfig
	if rerr := e.read(func() {
		e.durableMu.RLock()
		out, err = e.durable.PushConfigs(taskID, configID)
		e.durableMu.RUnlock()
	}); rerr != nil {
		return nil, rerr
	}
	return out, err
}

// DeletePushConfig removes task taskID's push config configID and the
// notifications not yet delivered to it.
func (e *Engine) DeletePushConfig(ctx context.Context, taskID, configID string) error {
	taskID, err := mailbox.CanonicalUUID("task_id", taskID)
	if err != nil {
		return err
	}
	principal := mailbox.PrincipalFrom(ctx)
	_, _, err = e.decide(func(s *mailbox.State, now int64) (mailbox.Event, bool, error) {
		return must(s.DecidePushConfigDelete(taskID, configID, principal, now))
	}, nil)
	return err
}

// Deliveries is the operator's view of the outbox: every notification
// (only the failing and dead ones when failedOnly), with what the
// notifier knows of its delivery.
func (e *Engine) Deliveries(ctx context.Context, failedOnly bool) (mailbox.PushListing, error) {
	out := mailbox.PushListing{Kind: mailbox.KindPushList}
	var attempts map[string]mailbox.PushAttempt
	if f := e.pushStatus.Load(); f != nil {
		st := (*f)()
		out.Delivering, attempts = st.Delivering, st.Attempts
		if st.Delivering {
			out.Bounds, out.Dropped = st.Bounds, st.Dropped
		}
	}
	err := e.read(func() {
		e.durableMu.RLock()
		out.Notifications = e.durable.PushListingOf(attempts, failedOnly)
		e.durableMu.RUnlock()
	})
	return out, err
}

// RetryNotification puts dead notification id back in line, on the
// caller's word (audited), and returns it.
func (e *Engine) RetryNotification(ctx context.Context, id, reason string) (mailbox.Notification, error) {
	principal := mailbox.PrincipalFrom(ctx)
	var out mailbox.Notification
	_, _, err := e.decide(func(s *mailbox.State, now int64) (mailbox.Event, bool, error) {
		return must(s.DecidePushRetry(id, principal, reason, now))
	}, func(s *mailbox.State, ev mailbox.Event) { out, _ = s.Notification(id) })
	if err != nil {
		return mailbox.Notification{}, err
	}
	e.log.Info("push notification retried", "notification", id, "principal", principal)
	return out, nil
}

// DropNotification removes notification id, pending or dead, on the
// caller's word with a reason (audited).
func (e *Engine) DropNotification(ctx context.Context, id, reason string) error {
	return e.dropNotification(ctx, id, reason, false)
}

// DropDeadNotification removes notification id only while it is
// dead-lettered (a bulk drop of the dead: one retried since is kept).
func (e *Engine) DropDeadNotification(ctx context.Context, id, reason string) error {
	return e.dropNotification(ctx, id, reason, true)
}

func (e *Engine) dropNotification(ctx context.Context, id, reason string, deadOnly bool) error {
	principal := mailbox.PrincipalFrom(ctx)
	_, _, err := e.decide(func(s *mailbox.State, now int64) (mailbox.Event, bool, error) {
		return must(s.DecidePushDrop(id, principal, reason, deadOnly, now))
	}, nil)
	if err == nil {
		e.log.Info("push notification dropped", "notification", id, "principal", principal, "reason", reason)
	}
	return err
}
