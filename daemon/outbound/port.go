package outbound

import (
	"context"
	"time"

	"github.com/mailroom/mailroom/mailbox"
)

// Mailbox is what the dispatcher calls of the mailbox's service: when it
// leads, its changes (registrations, repairs), and the leases, reads and
// results of a worker, on each remote agent's behalf. *engine.Engine is
// one; a test's fake is another.
type Mailbox interface {
	// WhileLeading runs dispatch once for each term this instance leads,
	// term ending the moment it stops leading.
	WhileLeading(ctx context.Context, dispatch func(term context.Context))
	// SubscribeInternal streams every change from now on.
	SubscribeInternal(ctx context.Context, after *uint64) (mailbox.Subscription, error)
	LeaseN(ctx context.Context, recipient string, n int, wait time.Duration) ([]mailbox.LeasedTask, error)
	PostResult(ctx context.Context, r mailbox.Result) error
	Task(ctx context.Context, id string) (mailbox.TaskRecord, error)
	Queue(ctx context.Context, f mailbox.QueueFilter) (mailbox.QueueView, error)
	Registered(ctx context.Context, agent string) (mailbox.RegisteredAgent, error)
	RegisterAgentIf(ctx context.Context, agent string, card mailbox.AgentCard, was mailbox.RegisteredAgent) (mailbox.RegisteredAgent, error)
}

// Remotes is the mailbox's side for remote agents alone: which agents are
// remote, what a delivery records (remote_accepted, with the remote's
// answer when it came at once), and the dispatcher's reports for the
// agents listing. engine.Remote is one.
type Remotes interface {
	// Agents lists the agents registered as remote agents.
	Agents() []mailbox.RegisteredAgent
	// Results returns the tasks agent answered whose results wait for
	// their senders.
	Results(agent string) []mailbox.TaskRecord
	Accepted(ctx context.Context, taskID, leaseID string, ref mailbox.RemoteRef) error
	Answered(ctx context.Context, taskID, leaseID string, ref mailbox.RemoteRef, r mailbox.Result) error
	// SetStatus has the agents listing ask status for each agent's state;
	// StatusChanged says it changed.
	SetStatus(status func(agent string) *mailbox.RemoteStatus)
	StatusChanged()
}
