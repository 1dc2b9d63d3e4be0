package client_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/mailbox"
)

// notices counts the retry notices a client gives.
type notices struct {
	mu      sync.Mutex
	reasons []string
	after   func(n int) // called with the count after each notice
}

func (n *notices) notice(reason string) {
	n.mu.Lock()
	n.reasons = append(n.reasons, reason)
	k := len(n.reasons)
	n.mu.Unlock()
	if n.after != nil {
		n.after(k)
	}
}

func (n *notices) got() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.reasons...)
}

func isPath(method, path string) func(*http.Request) bool {
	return func(r *http.Request) bool { return r.Method == method && r.URL.Path == path }
}

// A send answered "the leader changed" three times is sent again, with the
// same body each time, and queues its task once; each retry is told.
func TestRetriesWhenTheLeaderChanged(t *testing.T) {
	d, direct := start(t)
	p := daemontest.StartLeaderChanged(t, d.URL(), daemontest.LeaderChangedOptions{N: 3, Match: isPath("POST", "/a2a/tasks")})
	var n notices
	c := mustClient(t, p.URL, client.WithRetryNotice(n.notice))

	q, err := c.Send(t.Context(), mailbox.Task{Sender: "a", Recipient: "b", IntentText: "once"})
	if err != nil {
		t.Fatalf("send through a changing lead: %v", err)
	}
	refused, passed := p.Refused(), p.Passed()
	if len(refused) != 3 || len(passed) != 1 {
		t.Fatalf("%d tries refused and %d passed, want 3 and 1", len(refused), len(passed))
	}
	for i, b := range refused {
		if !bytes.Equal(b, passed[0]) {
			t.Fatalf("try %d sent %s, the last %s: a retry must send the same body", i+1, b, passed[0])
		}
	}
	if got := n.got(); len(got) != 3 || got[0] != client.ReasonLeaderChanged {
		t.Fatalf("retry notices %q, want %q three times", got, client.ReasonLeaderChanged)
	}
	task, _ := lease(t, direct, "b")
	if task.ID != q.TaskID {
		t.Fatalf("leased %s, want the task sent %s", task.ID, q.TaskID)
	}
	if st, err := direct.Status(t.Context()); err != nil || st.Queued != 0 || st.InFlight != 1 {
		t.Fatalf("status %+v (%v): the task must be queued once", st, err)
	}
}

// A lease (which may long-poll) is retried the same way.
func TestLeaseRetriesWhenTheLeaderChanged(t *testing.T) {
	d, direct := start(t)
	id := send(t, direct, "a", "b", "lease me")
	p := daemontest.StartLeaderChanged(t, d.URL(), daemontest.LeaderChangedOptions{N: 2, Match: isPath("POST", "/a2a/tasks/next")})
	var n notices
	c := mustClient(t, p.URL, client.WithRetryNotice(n.notice))
	leases, err := c.LeaseN(t.Context(), "b", 4, 0)
	if err != nil || len(leases) != 1 || leases[0].Task.ID != id {
		t.Fatalf("lease through a changing lead: %+v, %v; want the task %s", leases, err, id)
	}
	if got := n.got(); len(got) != 2 {
		t.Fatalf("%d retry notices, want 2", len(got))
	}
}

// A 503 without the hint (a full disk, a forward whose outcome is unknown)
// goes back to the caller as it is: the client cannot know it is safe.
func TestA503WithoutTheHintIsNotRetried(t *testing.T) {
	d, direct := start(t)
	p := daemontest.StartLeaderChanged(t, d.URL(), daemontest.LeaderChangedOptions{N: 1, NoHint: true, Match: isPath("POST", "/a2a/tasks")})
	var n notices
	c := mustClient(t, p.URL, client.WithRetryNotice(n.notice))
	_, err := c.Send(t.Context(), mailbox.Task{Sender: "a", Recipient: "b", IntentText: "unknown"})
	if !errors.Is(err, mailbox.ErrUnavailable) {
		t.Fatalf("send answered 503 without the hint: %v, want unavailable", err)
	}
	if len(p.Refused()) != 1 || len(p.Passed()) != 0 || len(n.got()) != 0 {
		t.Fatalf("%d refused, %d passed, %d notices: want it sent once and not retried", len(p.Refused()), len(p.Passed()), len(n.got()))
	}
	if st, err := direct.Status(t.Context()); err != nil || st.Queued != 0 {
		t.Fatalf("status %+v (%v): nothing must be queued", st, err)
	}
}

// The client gives up after ten tries, returning the last answer.
func TestRetriesGiveUpWithTheLastError(t *testing.T) {
	d, _ := start(t)
	p := daemontest.StartLeaderChanged(t, d.URL(), daemontest.LeaderChangedOptions{N: 1000, Match: isPath("POST", "/a2a/tasks")})
	var n notices
	c := mustClient(t, p.URL, client.WithRetryNotice(n.notice))
	_, err := c.Send(t.Context(), mailbox.Task{Sender: "a", Recipient: "b", IntentText: "never"})
	if !errors.Is(err, mailbox.ErrUnavailable) {
		t.Fatalf("send refused every time: %v, want the last 503", err)
	}
	if len(p.Refused()) != 10 || len(n.got()) != 9 {
		t.Fatalf("%d tries and %d notices, want 10 and 9", len(p.Refused()), len(n.got()))
	}
}

// The caller's context bounds the retries: ended while the client waits
// out a Retry-After, the request ends with it and is not sent again.
func TestRetriesEndWithTheContext(t *testing.T) {
	d, _ := start(t)
	p := daemontest.StartLeaderChanged(t, d.URL(), daemontest.LeaderChangedOptions{N: 1000, RetryAfter: "1", Match: isPath("POST", "/a2a/tasks")})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	n := notices{after: func(k int) {
		if k == 2 {
			cancel()
		}
	}}
	c := mustClient(t, p.URL, client.WithRetryNotice(n.notice))
	_, err := c.Send(ctx, mailbox.Task{Sender: "a", Recipient: "b", IntentText: "cancelled"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("send cancelled while waiting to retry: %v, want context.Canceled", err)
	}
	if len(p.Refused()) != 2 {
		t.Fatalf("%d tries, want 2: none after the context ended", len(p.Refused()))
	}
}
