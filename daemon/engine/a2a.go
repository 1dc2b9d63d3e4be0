package engine

import (
	"context"
	"net/url"
	"reflect"

	"github.com/mailroom/mailroom/mailbox"
)

// RegisterAgent registers agent's card, or replaces the card it has.
func (e *Engine) RegisterAgent(ctx context.Context, agent string, card mailbox.AgentCard) (mailbox.RegisteredAgent, error) {
	return e.register(ctx, agent, card, nil)
}

// RegisterAgentIf replaces agent's registration with card only while the
// registration is still was (a conflict when it changed, or went): a
// compare-and-set for the daemon's own updates of a card (the dispatcher
// syncing a remote's card), which must never overwrite an operator's
// registration made since it looked.
func (e *Engine) RegisterAgentIf(ctx context.Context, agent string, card mailbox.AgentCard, was mailbox.RegisteredAgent) (mailbox.RegisteredAgent, error) {
	return e.register(ctx, agent, card, &was)
}

func (e *Engine) register(ctx context.Context, agent string, card mailbox.AgentCard, was *mailbox.RegisteredAgent) (mailbox.RegisteredAgent, error) {
	if err := mailbox.ValidateAgentID("agent", agent); err != nil {
		return mailbox.RegisteredAgent{}, err
	}
	card, err := mailbox.NormalizeCard(card)
	if err != nil {
		return mailbox.RegisteredAgent{}, err
	}
	if w := card.Webhook; w != nil && e.opts.CheckPushURL != nil {
		u, _ := mailbox.ParsePushURL("webhook.url", w.URL)
		if err := e.opts.CheckPushURL("webhook.url", u); err != nil {
			return mailbox.RegisteredAgent{}, err
		}
	}
	if r := card.Remote; r != nil && e.opts.CheckRemoteURL != nil {
		if u, err := url.Parse(r.URL); err == nil {
			if err := e.opts.CheckRemoteURL("remote.url", u); err != nil {
				return mailbox.RegisteredAgent{}, err
			}
		}
	}
	principal := mailbox.PrincipalFrom(ctx)
	var out mailbox.RegisteredAgent
	_, _, err = e.decide(func(s *mailbox.State, now int64) (mailbox.Event, bool, error) {
		if was != nil {
			if cur, ok := s.Registered(agent); !ok || !reflect.DeepEqual(cur, *was) {
				return mailbox.Event{}, false, &mailbox.Error{Code: mailbox.CodeConflict,
					Message: "agent " + agent + "'s registration changed since it was read; nothing was changed"}
			}
		}
		return must(s.DecideRegister(agent, card, principal, now))
	}, func(s *mailbox.State, ev mailbox.Event) { out, _ = s.Registered(agent) })
	if err != nil {
		return mailbox.RegisteredAgent{}, err
	}
	e.log.Info("agent registered", "agent", agent, "principal", principal, "skills", len(card.Skills))
	return out, nil
}

// DeregisterAgent removes agent's card; its tasks stay.
func (e *Engine) DeregisterAgent(ctx context.Context, agent string) error {
	principal := mailbox.PrincipalFrom(ctx)
	_, _, err := e.decide(func(s *mailbox.State, now int64) (mailbox.Event, bool, error) {
		return must(s.DecideDeregister(agent, principal, now))
	}, nil)
	if err == nil {
		e.log.Info("agent deregistered", "agent", agent, "principal", principal)
	}
	return err
}

// Registered returns agent's registry entry from the durable state.
func (e *Engine) Registered(ctx context.Context, agent string) (mailbox.RegisteredAgent, error) {
	if err := mailbox.ValidateAgentID("agent", agent); err != nil {
		return mailbox.RegisteredAgent{}, err
	}
	var r mailbox.RegisteredAgent
	var ok bool
	if err := e.read(func() {
		e.durableMu.RLock()
		r, ok = e.durable.Registered(agent)
		e.durableMu.RUnlock()
	}); err != nil {
		return mailbox.RegisteredAgent{}, err
	}
	if !ok {
		return r, mailbox.NotRegistered(agent)
	}
	return r, nil
}

// Cancel ends a queued or in-flight task on its caller's word and returns
// the task as it now stands.
func (e *Engine) Cancel(ctx context.Context, taskID, reason string) (mailbox.TaskRecord, error) {
	taskID, err := mailbox.CanonicalUUID("task_id", taskID)
	if err != nil {
		return mailbox.TaskRecord{}, err
	}
	principal := mailbox.PrincipalFrom(ctx)
	var rec mailbox.TaskRecord
	ev, _, err := e.decide(func(s *mailbox.State, now int64) (mailbox.Event, bool, error) {
		return must(s.DecideCancel(taskID, principal, reason, now))
	}, func(s *mailbox.State, ev mailbox.Event) { rec, _ = s.Task(taskID) })
	if err != nil {
		return mailbox.TaskRecord{}, err
	}
	e.log.Info("task canceled", "task_id", taskID, "principal", principal, "lease_id", ev.LeaseID, "leased_to", ev.LeasedTo)
	return rec, nil
}

// Delivered marks the pending result of a task as delivered to its A2A
// caller (a result_drained event under the caller's principal). A task
// without a pending result is left alone.
func (e *Engine) Delivered(ctx context.Context, taskID string) error {
	taskID, err := mailbox.CanonicalUUID("task_id", taskID)
	if err != nil {
		return err
	}
	principal := mailbox.PrincipalFrom(ctx)
	_, _, err = e.decide(func(s *mailbox.State, now int64) (mailbox.Event, bool, error) {
		ev, ok := s.DecideDelivered(taskID, principal, now)
		return ev, ok, nil
	}, nil)
	return err
}

// AgentTasks lists the tasks for one recipient, newest first, a page at a
// time.
func (e *Engine) AgentTasks(ctx context.Context, q mailbox.AgentTasksQuery) (mailbox.AgentTasksPage, error) {
	q, err := q.Normalize()
	if err != nil {
		return mailbox.AgentTasksPage{}, err
	}
	var page mailbox.AgentTasksPage
	err = e.read(func() {
		e.durableMu.RLock()
		page = e.durable.AgentTasks(q)
		e.durableMu.RUnlock()
	})
	return page, err
}
