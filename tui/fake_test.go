package tui

import (
	"context"
	"sync"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/mailbox"
)

// fakeBackend is an in-process stream for the tests that need to control
// exactly which events arrive (a gap, a burst); the acceptance tests use a
// real daemon instead.
type fakeBackend struct {
	src *source
	mu  sync.Mutex
	out chan mailbox.Event
	// subscribed receives every Subscribe call, so a test can follow the
	// console resubscribing.
	subscribed chan struct{}
	onState    func(client.ConnState)
}

func newFakeBackend(src *source) *fakeBackend {
	return &fakeBackend{src: src, subscribed: make(chan struct{}, 8)}
}

func (f *fakeBackend) BaseURL() string { return "http://fake.invalid" }

func (f *fakeBackend) SubscribeWith(ctx context.Context, fromSeq uint64, o client.SubscribeOptions) <-chan mailbox.Event {
	onState := o.OnState
	out := make(chan mailbox.Event, 1024)
	f.mu.Lock()
	f.out, f.onState = out, onState
	out <- f.src.snapshot()
	f.mu.Unlock()
	onState(client.ConnState{Live: true})
	go func() {
		<-ctx.Done()
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.out == out {
			f.out = nil
		}
		close(out)
	}()
	f.subscribed <- struct{}{}
	return out
}

// publish hands events to the current subscriber.
func (f *fakeBackend) publish(evs ...mailbox.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ev := range evs {
		if f.out != nil {
			f.out <- ev
		}
	}
}

// Agents answers with no agents: the tests of the Agents pane run against
// a real daemon, which knows when it last saw each one.
func (f *fakeBackend) Agents(context.Context) ([]mailbox.AgentInfo, error) {
	return nil, nil
}

// WhoAmI answers as a daemon without tokens does.
func (f *fakeBackend) WhoAmI(context.Context) (mailbox.WhoAmI, error) {
	return mailbox.WhoAmI{Kind: mailbox.KindWhoAmI, Capabilities: []string{capAdmin}}, nil
}

// The outbox: the fake's replica knows no notifier, so nothing is failing.
func (f *fakeBackend) Deliveries(context.Context, bool) (mailbox.PushListing, error) {
	return mailbox.PushListing{Kind: mailbox.KindPushList, Notifications: []mailbox.NotificationStatus{}}, nil
}

func (f *fakeBackend) RetryNotification(context.Context, string, string) (mailbox.Notification, error) {
	return mailbox.Notification{}, mailbox.Errorf(mailbox.CodeNotFound, "the fake has no outbox")
}

func (f *fakeBackend) DropNotification(context.Context, string, string) error {
	return mailbox.Errorf(mailbox.CodeNotFound, "the fake has no outbox")
}

func (f *fakeBackend) Repair(ctx context.Context, req mailbox.RepairRequest) (mailbox.RepairOutcome, error) {
	ev, err := f.src.s.DecideRepair(req, "ops", f.src.nowMs)
	if err != nil {
		return mailbox.RepairOutcome{}, err
	}
	ev = f.src.emit(ev, nil)
	f.publish(ev)
	return f.src.s.RepairOutcomeOf(ev), nil
}
