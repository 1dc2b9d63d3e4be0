package outbound_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mailroom/mailroom/daemon/outbound"
	"github.com/mailroom/mailroom/mailbox"
)

// fakeMailbox is the mailbox as the dispatcher sees it (outbound.Mailbox),
// with no engine behind it: it leads for as long as the dispatcher runs,
// hands the remote agent its one task at the first lease, and records the
// result posted under that lease.
type fakeMailbox struct {
	agent string
	task  mailbox.Task
	lease mailbox.Lease

	mu      sync.Mutex
	handed  bool
	card    mailbox.RegisteredAgent
	results chan mailbox.Result
}

func (m *fakeMailbox) WhileLeading(ctx context.Context, dispatch func(term context.Context)) {
	dispatch(ctx)
}

func (m *fakeMailbox) SubscribeInternal(ctx context.Context, after *uint64) (mailbox.Subscription, error) {
	return newQuietSubscription(ctx), nil
}

func (m *fakeMailbox) LeaseN(ctx context.Context, recipient string, n int, wait time.Duration) ([]mailbox.LeasedTask, error) {
	if mailbox.PrincipalFrom(ctx) != m.agent || recipient != m.agent {
		return nil, mailbox.Errorf(mailbox.CodeForbidden, "leased as %q for %q", mailbox.PrincipalFrom(ctx), recipient)
	}
	m.mu.Lock()
	first := !m.handed
	m.handed = true
	m.mu.Unlock()
	if first {
		return []mailbox.LeasedTask{{Task: m.task, Lease: m.lease}}, nil
	}
	// Nothing more is queued: the long poll waits it out.
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	return nil, nil
}

func (m *fakeMailbox) PostResult(ctx context.Context, r mailbox.Result) error {
	m.results <- r
	return nil
}

func (m *fakeMailbox) Task(ctx context.Context, id string) (mailbox.TaskRecord, error) {
	if id != m.task.ID {
		return mailbox.TaskRecord{}, mailbox.Errorf(mailbox.CodeNotFound, "no task %s", id)
	}
	return mailbox.TaskRecord{Task: m.task, State: mailbox.TaskInFlight, LeaseID: m.lease.LeaseID}, nil
}

func (m *fakeMailbox) Queue(ctx context.Context, f mailbox.QueueFilter) (mailbox.QueueView, error) {
	return mailbox.QueueView{}, nil // no lease to recover
}

func (m *fakeMailbox) Registered(ctx context.Context, agent string) (mailbox.RegisteredAgent, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.card, nil
}

func (m *fakeMailbox) RegisterAgentIf(ctx context.Context, agent string, card mailbox.AgentCard, was mailbox.RegisteredAgent) (mailbox.RegisteredAgent, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.card.Card = card
	return m.card, nil
}

// quietSubscription is a stream in which nothing happens until its
// context ends.
type quietSubscription struct{ events chan *mailbox.Event }

func newQuietSubscription(ctx context.Context) *quietSubscription {
	s := &quietSubscription{events: make(chan *mailbox.Event)}
	context.AfterFunc(ctx, func() { close(s.events) })
	return s
}

func (s *quietSubscription) Events() <-chan *mailbox.Event       { return s.events }
func (s *quietSubscription) Agents() <-chan mailbox.AgentsUpdate { return nil }
func (s *quietSubscription) Err() error                          { return nil }
func (s *quietSubscription) Close()                              {}

// fakeRemotes is the mailbox's side for remote agents (outbound.Remotes):
// one remote agent, and what the dispatcher records and reports.
type fakeRemotes struct {
	agent mailbox.RegisteredAgent

	mu       sync.Mutex
	accepted []mailbox.RemoteRef
	answered chan mailbox.Result
	status   func(agent string) *mailbox.RemoteStatus
}

func (f *fakeRemotes) Agents() []mailbox.RegisteredAgent         { return []mailbox.RegisteredAgent{f.agent} }
func (f *fakeRemotes) Results(agent string) []mailbox.TaskRecord { return nil }
func (f *fakeRemotes) StatusChanged()                            {}

func (f *fakeRemotes) SetStatus(status func(agent string) *mailbox.RemoteStatus) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status = status
}

func (f *fakeRemotes) Accepted(ctx context.Context, taskID, leaseID string, ref mailbox.RemoteRef) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.accepted = append(f.accepted, ref)
	return nil
}

func (f *fakeRemotes) Answered(ctx context.Context, taskID, leaseID string, ref mailbox.RemoteRef, r mailbox.Result) error {
	if err := f.Accepted(ctx, taskID, leaseID, ref); err != nil {
		return err
	}
	r.TaskID, r.LeaseID = taskID, leaseID
	f.answered <- r
	return nil
}

// The dispatcher against fakes of its two ports, no engine: it delivers
// the task the fake mailbox hands the remote agent to a real remote (an
// a2a-go server), records the remote's acceptance, and posts its answer
// under the lease, in the agent's name.
func TestDispatcherDeliversTheTaskTheMailboxHands(t *testing.T) {
	g := startGoRemote(t, "Go Coder", false)
	agent := "coder@remote"
	reg := mailbox.RegisteredAgent{Agent: agent, Card: mailbox.AgentCard{Name: "coder",
		Remote: &mailbox.RemoteSpec{URL: g.Srv.URL, Concurrency: 1}}}
	task := mailbox.Task{ID: uuid.NewString(), Sender: "planner@local", Recipient: agent, IntentText: "hello there"}
	lease := mailbox.Lease{LeaseID: uuid.NewString(), Attempt: 1, LeasedAtMs: time.Now().UnixMilli()}
	m := &fakeMailbox{agent: agent, task: task, lease: lease, card: reg, results: make(chan mailbox.Result, 1)}
	rs := &fakeRemotes{agent: reg, answered: make(chan mailbox.Result, 1)}
	d := outbound.New(m, rs, outbound.Options{LeaseWait: 50 * time.Millisecond})

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // a watchdog
	defer cancel()
	ran := make(chan struct{})
	go func() { defer close(ran); d.Run(ctx) }()
	var res mailbox.Result
	select {
	case res = <-m.results: // accepted, followed, then posted
	case res = <-rs.answered: // answered at once, with its acceptance
	case <-ctx.Done():
		t.Fatal("the dispatcher posted no result for the task it was handed")
	}
	if res.TaskID != task.ID || res.LeaseID != lease.LeaseID || res.Status != mailbox.StatusOK {
		t.Errorf("posted %+v, want ok for task %s under lease %s", res, task.ID, lease.LeaseID)
	}
	var got strings.Builder
	for _, c := range res.Content {
		got.WriteString(c.Text)
	}
	if !strings.Contains(got.String(), "hello there") {
		t.Errorf("the result says %q, want the remote's echo of the task", got.String())
	}
	rs.mu.Lock()
	accepted := rs.accepted
	rs.mu.Unlock()
	if len(accepted) != 1 || accepted[0].TaskID == "" || accepted[0].Binding != mailbox.BindingJSONRPC03 {
		t.Errorf("acceptances recorded %+v, want the remote's task once, over jsonrpc-0.3", accepted)
	}
	if n := g.Executor().Sent(task.ID); n != 1 {
		t.Errorf("the remote got the message %d times, want once", n)
	}
	if st := rs.status(agent); st == nil || st.State != mailbox.RemoteHealthy {
		t.Errorf("the agents listing is told %+v of the agent, want healthy", st)
	}
	cancel()
	<-ran
}
