package engine

import (
	"context"

	"github.com/mailroom/mailroom/mailbox"
)

// Reply answers a task waiting on its sender: the sender's turn is added
// and the task is queued again for its recipient (see
// mailbox/conversation.go). A reply that repeats the task's newest answer
// changes nothing and says so (a retried request is safe).
func (e *Engine) Reply(ctx context.Context, r mailbox.Reply) (mailbox.ReplyOutcome, error) {
	r, err := mailbox.NormalizeReply(r)
	if err != nil {
		return mailbox.ReplyOutcome{}, err
	}
	replier := ""
	if a, ok := mailbox.ActingFrom(ctx); ok {
		replier = a.Agent
	}
	e.seen(r.Sender)
	var out mailbox.ReplyOutcome
	_, _, err = e.decide(func(s *mailbox.State, now int64) (mailbox.Event, bool, error) {
		ev, o, ok, err := s.DecideReply(r, replier, now)
		out = o
		return ev, ok, err
	}, nil)
	if err != nil {
		return mailbox.ReplyOutcome{}, err
	}
	if !out.Duplicate {
		e.log.Debug("task replied", "task_id", r.TaskID, "sender", r.Sender, "turns", out.Turns)
	}
	return out, nil
}
