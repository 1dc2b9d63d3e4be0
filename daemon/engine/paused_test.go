package engine

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mailroom/mailroom/daemon/store/pgstore"
	"github.com/mailroom/mailroom/daemon/store/pgstore/pgtest"
	"github.com/mailroom/mailroom/mailbox"
)

// openShared opens an engine on a shared PostgreSQL schema, as one
// instance of several.
func openShared(t *testing.T, url, schema string) (*Engine, *pgstore.Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	holder := "i-" + uuid.NewString()[:8]
	st, err := pgstore.Open(ctx, pgstore.Options{URL: url, Schema: schema, Holder: holder, Advertise: "http://" + holder,
		CampaignInterval: 20 * time.Millisecond, SessionTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	e, err := Open(st, Options{})
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e, st
}

// asking is a shared store that tells the test each time the engine
// hands it a question (Confirm: is my view current?, AppendUnit: a
// decision): with the store's writer paused, that is where the question
// waits.
type asking struct {
	*pgstore.Store
	asked chan struct{}
}

func (a *asking) told() {
	select {
	case a.asked <- struct{}{}:
	default: // a test waits for as many as it asked; more never block
	}
}

func (a *asking) Confirm(ctx context.Context) error {
	a.told()
	return a.Store.Confirm(ctx)
}

func (a *asking) AppendUnit(evs []mailbox.Event, done func(error)) {
	a.told()
	a.Store.AppendUnit(evs, done)
}

// openAsking is openShared on a store that says when a question reaches
// it.
func openAsking(t *testing.T, url, schema string) (*Engine, *asking) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	holder := "i-" + uuid.NewString()[:8]
	st, err := pgstore.Open(ctx, pgstore.Options{URL: url, Schema: schema, Holder: holder, Advertise: "http://" + holder,
		CampaignInterval: 20 * time.Millisecond, SessionTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	w := &asking{Store: st, asked: make(chan struct{}, 64)}
	e, err := Open(w, Options{})
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e, w
}

// waitAsked waits until n questions have reached the store.
func (a *asking) waitAsked(t *testing.T, n int) {
	t.Helper()
	for range n {
		select {
		case <-a.asked:
		case <-time.After(30 * time.Second):
			t.Fatalf("fewer than %d questions reached the store", n)
		}
	}
}

// drain forgets the questions asked so far.
func (a *asking) drain() {
	for {
		select {
		case <-a.asked:
		default:
			return
		}
	}
}

// waitLeading waits until the engine says the instance leads (or
// follows, want false).
func waitLeading(t *testing.T, e *Engine, want bool) {
	t.Helper()
	sub := e.ListenRole()
	defer sub.Close()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case l := <-sub.C():
			if l.Leader == want {
				return
			}
		case <-deadline:
			t.Fatalf("the instance's leading is still %v", !want)
		}
	}
}

// A leader whose writer could not reach PostgreSQL for longer than the
// session timeout (its process paused: here its store's writer goroutine,
// which is what talks to PostgreSQL) has been replaced. Asked about work
// the new leader took on meanwhile, it must not answer from what it knew
// before: no 404 for a task it never saw, no 409 for a lease it never
// saw, no queue without that work. It answers 503, leader changed,
// nothing changed, and steps down.
func TestAPausedLeaderAnswersNothingFromItsStaleState(t *testing.T) {
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url, t.Name())
	a, sa := openAsking(t, url, schema)
	waitLeading(t, a, true)
	b, _ := openShared(t, url, schema)
	ctx := context.Background()
	old := mustSend(t, a, "p@pg", "w@pg")
	oldTask, oldLease := mustLease(t, a, "w@pg")
	if oldTask.ID != old {
		t.Fatalf("leased %s, want %s", oldTask.ID, old)
	}

	resume := sa.Pause()
	waitLeading(t, b, true)
	// Through the new leader: a task sent and leased, the old lease
	// requeued and leased again.
	fresh := mustSend(t, b, "p@pg", "w@pg")
	if _, err := b.Repair(ctx, mailbox.RepairRequest{TaskID: old, Reason: "worker moved", Command: mailbox.RepairCommand{Action: mailbox.ActionRequeue, LeaseID: oldLease.LeaseID, DuplicateRisk: mailbox.RiskOperatorAccepted}}); err != nil {
		t.Fatal(err)
	}
	leases, err := b.LeaseN(ctx, "w@pg", 2, 0)
	if err != nil || len(leases) != 2 {
		t.Fatalf("leasing through the new leader: %v, %v", leases, err)
	}
	lease := map[string]string{}
	for _, l := range leases {
		lease[l.Task.ID] = l.Lease.LeaseID
	}
	mustSend(t, b, "p@pg", "w@pg") // queued for w@pg, which a knows nothing of

	// a still takes itself to lead. Every question it would answer from
	// its stale state, asked while its writer is still paused; the writer
	// resumes a moment later.
	if !a.Leading() {
		t.Fatal("a noticed the takeover while paused; the test needs it not to")
	}
	type answer struct {
		what string
		err  error
	}
	questions := []func() answer{
		func() answer {
			return answer{"a result for the new leader's task", a.PostResult(ctx, mailbox.Result{TaskID: fresh, Status: mailbox.StatusOK, LeaseID: lease[fresh]})}
		},
		func() answer {
			return answer{"a result under the new lease of the requeued task", a.PostResult(ctx, mailbox.Result{TaskID: old, Status: mailbox.StatusOK, LeaseID: lease[old]})}
		},
		func() answer {
			_, err := a.Repair(ctx, mailbox.RepairRequest{TaskID: fresh, Reason: "r", Command: mailbox.RepairCommand{Action: mailbox.ActionForceError, LeaseID: lease[fresh], Message: "m"}})
			return answer{"a repair of the new leader's lease", err}
		},
		func() answer {
			_, err := a.Task(ctx, fresh)
			return answer{"a read of the new leader's task", err}
		},
		func() answer {
			v, err := a.Queue(ctx, mailbox.QueueFilter{})
			if err == nil {
				err = fmt.Errorf("a queue of %d tasks", len(v.Tasks))
			}
			return answer{"a read of the queue", err}
		},
		func() answer {
			got, err := a.LeaseN(ctx, "w@pg", 1, 0)
			if err == nil {
				err = fmt.Errorf("a lease of %d tasks", len(got))
			}
			return answer{"a lease", err}
		},
	}
	answers := make(chan answer, len(questions))
	sa.drain()
	for _, q := range questions {
		go func() { answers <- q() }()
	}
	sa.waitAsked(t, len(questions)) // the questions wait on the paused writer
	resume()
	for range questions {
		got := <-answers
		var me *mailbox.Error
		if !errors.As(got.err, &me) || me.Code != mailbox.CodeUnavailable || me.Details == nil || me.Details.Retry != mailbox.RetryLeaderChanged {
			t.Errorf("%s, asked of the paused leader: %v; want 503 leader-changed", got.what, got.err)
		}
	}
	waitLeading(t, a, false)

	// Nothing the old leader was asked changed anything: the new leader's
	// leases stand, and its holder's results are taken.
	for id, l := range lease {
		if err := b.PostResult(ctx, mailbox.Result{TaskID: id, Status: mailbox.StatusOK, LeaseID: l}); err != nil {
			t.Errorf("the result for %s under its lease on the new leader: %v", id, err)
		}
	}
}

// A follower that could not read the table for a while (paused) reads to
// its head before it answers: it never says "never sent" of a task the
// leader acknowledged before the question.
func TestAPausedFollowerCatchesUpBeforeItAnswers(t *testing.T) {
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url, t.Name())
	a, _ := openShared(t, url, schema)
	waitLeading(t, a, true)
	b, sb := openAsking(t, url, schema)
	ctx := context.Background()
	mustSend(t, a, "p@pg", "w@pg")
	deadline := time.Now().Add(30 * time.Second)
	for b.DurableSeq() < a.DurableSeq() {
		if time.Now().After(deadline) {
			t.Fatal("the follower never caught up")
		}
		time.Sleep(5 * time.Millisecond)
	}

	resume := sb.Pause()
	fresh := mustSend(t, a, "p@pg", "w@pg")
	// Past the follower's lease on its view (4 campaign intervals): it
	// knows it has not read the table since.
	for sb.CurrentAt(time.Now()) {
		if time.Now().After(deadline) {
			t.Fatal("the paused follower's view never stopped being current")
		}
		time.Sleep(5 * time.Millisecond)
	}
	sb.drain()
	got := make(chan error, 2)
	go func() {
		rec, err := b.Task(ctx, fresh)
		if err == nil && rec.Task.ID != fresh {
			err = fmt.Errorf("read %s", rec.Task.ID)
		}
		got <- err
	}()
	go func() {
		v, err := b.Queue(ctx, mailbox.QueueFilter{})
		if err == nil && len(v.Tasks) != 2 {
			err = fmt.Errorf("a queue of %d tasks, want 2", len(v.Tasks))
		}
		got <- err
	}()
	sb.waitAsked(t, 2) // the questions wait on the paused writer
	resume()
	for range 2 {
		if err := <-got; err != nil {
			t.Errorf("a read from the follower after its pause: %v; want what the leader acknowledged before it", err)
		}
	}
}
