package notify_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mailroom/mailroom/daemon/notify"
	"github.com/mailroom/mailroom/mailbox"
)

// fakeMailbox is the mailbox as the notifier sees it (notify.Mailbox),
// with no engine behind it: one task, one sender's card, and a lead that
// lasts until stepDown is closed; termEnded is closed once the term's
// work has stopped.
type fakeMailbox struct {
	task      mailbox.TaskRecord
	sender    mailbox.RegisteredAgent
	stepDown  chan struct{}
	termEnded chan struct{}
}

func (m *fakeMailbox) WhileLeading(ctx context.Context, deliver func(term context.Context)) {
	term, end := context.WithCancel(ctx)
	defer end()
	go func() {
		select {
		case <-m.stepDown:
		case <-ctx.Done():
		}
		end()
	}()
	deliver(term)
	close(m.termEnded)
	<-ctx.Done()
}

func (m *fakeMailbox) SubscribeInternal(ctx context.Context, after *uint64) (mailbox.Subscription, error) {
	return newQuietSubscription(ctx), nil
}

func (m *fakeMailbox) Task(ctx context.Context, id string) (mailbox.TaskRecord, error) {
	if id != m.task.Task.ID {
		return mailbox.TaskRecord{}, mailbox.Errorf(mailbox.CodeNotFound, "no task %s", id)
	}
	return m.task, nil
}

func (m *fakeMailbox) Registered(ctx context.Context, agent string) (mailbox.RegisteredAgent, error) {
	if agent != m.sender.Agent {
		return mailbox.RegisteredAgent{}, mailbox.Errorf(mailbox.CodeNotFound, "no agent %s", agent)
	}
	return m.sender, nil
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

// fakeOutbox is an outbox (notify.Outbox) held in a slice: what it was
// told is recorded, and changed signals each record.
type fakeOutbox struct {
	mu        sync.Mutex
	pending   []mailbox.Notification
	delivered []string // "id/attempts"
	status    func() mailbox.PushStatus
	changed   chan struct{}
}

func (b *fakeOutbox) SetStatus(status func() mailbox.PushStatus) { b.status = status }

func (b *fakeOutbox) Heads(ctx context.Context, busy func(taskID, configID string) bool) ([]mailbox.Notification, int, int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var heads []mailbox.Notification
	seen := map[[2]string]bool{}
	for _, x := range b.pending {
		line := [2]string{x.TaskID, x.ConfigID}
		if !seen[line] && !busy(x.TaskID, x.ConfigID) {
			heads = append(heads, x)
		}
		seen[line] = true
	}
	return heads, len(b.pending), 0, nil
}

func (b *fakeOutbox) Pending(ctx context.Context, id string) (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.ContainsFunc(b.pending, func(x mailbox.Notification) bool { return x.ID == id }), nil
}

func (b *fakeOutbox) Trim(ctx context.Context, bounds mailbox.OutboxBounds, limit int) (int, error) {
	return 0, nil
}

func (b *fakeOutbox) Delivered(ctx context.Context, id string, attempts int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pending = slices.DeleteFunc(b.pending, func(x mailbox.Notification) bool { return x.ID == id })
	b.delivered = append(b.delivered, id+"/"+string(rune('0'+attempts)))
	b.changed <- struct{}{}
	return nil
}

func (b *fakeOutbox) DeadLettered(ctx context.Context, id string, attempts int, lastError string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pending = slices.DeleteFunc(b.pending, func(x mailbox.Notification) bool { return x.ID == id })
	b.changed <- struct{}{}
	return nil
}

// The notifier against fakes of its two ports, no engine: it posts what
// the outbox holds, a line's notifications in order (a task's config,
// its sender's webhook: each with its token and id), retries one its
// receiver refused, and reports each delivered with its attempts; the
// operator's view says it delivers until the lead ends.
func TestNotifierDeliversWhatTheOutboxHolds(t *testing.T) {
	var mu sync.Mutex
	var posted []string // "path id token"
	refused := false
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		posted = append(posted, r.URL.Path+" "+r.Header.Get(notify.HeaderID)+" "+r.Header.Get(notify.HeaderToken))
		if r.URL.Path == "/results" && !refused {
			refused = true
			http.Error(w, "not yet", http.StatusBadGateway)
			return
		}
		var body struct {
			Task struct {
				ID string `json:"id"`
			} `json:"task"`
			TaskID string `json:"task_id"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Task.ID+body.TaskID != "t-1" {
			t.Errorf("%s was posted %+v (%v), want task t-1", r.URL.Path, body, err)
		}
	}))
	defer rcv.Close()

	task := mailbox.TaskRecord{Task: mailbox.Task{ID: "t-1", Sender: "planner@local", Recipient: "worker@local", IntentText: "work"},
		Push: []mailbox.PushConfig{{ID: "c-1", URL: rcv.URL + "/hook", Token: "tok-config"}}}
	m := &fakeMailbox{task: task, stepDown: make(chan struct{}), termEnded: make(chan struct{}),
		sender: mailbox.RegisteredAgent{Agent: "planner@local", Card: mailbox.AgentCard{Name: "Planner", Webhook: &mailbox.Webhook{URL: rcv.URL + "/results", Token: "tok-sender"}}}}
	box := &fakeOutbox{changed: make(chan struct{}, 16), pending: []mailbox.Notification{
		{ID: "n-1", TaskID: "t-1", ConfigID: "c-1", Seq: 1},
		{ID: "n-2", TaskID: "t-1", ConfigID: "c-1", Seq: 2},
		{ID: "n-3", TaskID: "t-1", Agent: "planner@local", Seq: 2},
	}}
	n := notify.New(m, box, notify.Options{RetryMin: time.Millisecond, RetryMax: time.Millisecond})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // a watchdog
	defer cancel()
	ran := make(chan struct{})
	go func() { defer close(ran); n.Run(ctx) }()
	for range 3 {
		select {
		case <-box.changed:
		case <-ctx.Done():
			t.Fatalf("delivered %v, want all three", box.delivered)
		}
	}
	box.mu.Lock()
	delivered := slices.Clone(box.delivered)
	box.mu.Unlock()
	slices.Sort(delivered)
	if want := []string{"n-1/1", "n-2/1", "n-3/2"}; !slices.Equal(delivered, want) {
		t.Errorf("recorded delivered %v, want %v (the sender's webhook on its second attempt)", delivered, want)
	}
	mu.Lock()
	var toConfig, toSender []string
	for _, p := range posted {
		if p[:5] == "/hook" {
			toConfig = append(toConfig, p)
		} else {
			toSender = append(toSender, p)
		}
	}
	mu.Unlock()
	if want := []string{"/hook n-1 tok-config", "/hook n-2 tok-config"}; !slices.Equal(toConfig, want) {
		t.Errorf("the config's webhook was posted %v, want %v (in order)", toConfig, want)
	}
	if want := []string{"/results n-3 tok-sender", "/results n-3 tok-sender"}; !slices.Equal(toSender, want) {
		t.Errorf("the sender's webhook was posted %v, want %v (refused, then again with the same id)", toSender, want)
	}
	if st := box.status(); !st.Delivering {
		t.Errorf("the operator's view while leading: %+v, want delivering", st)
	}

	close(m.stepDown)
	select {
	case <-m.termEnded:
	case <-ctx.Done():
		t.Fatal("the term's work never stopped after the lead ended")
	}
	if n.Leading() {
		t.Error("the notifier says it delivers after the lead ended")
	}
	if st := box.status(); st.Delivering {
		t.Errorf("the operator's view after the lead ended: %+v, want standing by", st)
	}
	cancel()
	<-ran
}
