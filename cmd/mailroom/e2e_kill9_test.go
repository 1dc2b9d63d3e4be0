package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/mailbox"
)

// loadPairs is how many sender/recipient pairs run cycles in each
// iteration, as mailroom bench does.
const loadPairs = 4

// workload drives the daemon like agents and an operator would until ctx
// ends: pairs run full cycles (and now and then abandon a lease, as a
// crashed agent would), and the operator repairs leases it sees in flight,
// guarded by the lease id it saw.
type workload struct {
	c         *client.Client
	l         *ledger
	abandoned chan struct{} // a pair left a lease for the operator
}

func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// expected says whether err is an answer the workload must accept: a
// conflict (the operator and an agent raced for a lease; exactly one
// wins) or the run's own end.
func (w *workload) expected(ctx context.Context, err error) bool {
	if errors.Is(err, mailbox.ErrConflict) {
		w.l.conflicts.Add(1)
		return true
	}
	return ctx.Err() != nil && errors.Is(err, context.Canceled)
}

// stopped says whether a worker must stop after err: the daemon is being
// killed, so this request and every later one fail without an answer.
// Stopping at once keeps the count of unanswered drains (each of which may
// have taken a result) to what the kill really hid.
func (w *workload) stopped(ctx context.Context, what string, err error) bool {
	if w.expected(ctx, err) {
		return ctx.Err() != nil
	}
	w.l.failure(what, err)
	return w.l.killed.Load()
}

func (w *workload) pair(ctx context.Context, n int, rng *rand.Rand) {
	sender, recipient := fmt.Sprintf("fault-s-%d@local", n), fmt.Sprintf("fault-r-%d@local", n)
	for ctx.Err() == nil {
		if !w.send(ctx, sender, recipient, rng) {
			return
		}
		// Two leases for each send, so tasks the operator requeued (they go
		// back to the head of the queue) do not pile up.
		for range 2 {
			more, ok := w.work(ctx, recipient, rng)
			if !ok {
				return
			}
			if !more {
				break
			}
		}
		res, err := w.c.Drain(ctx, sender)
		switch {
		case err != nil:
			w.l.do(func() { w.l.noAnswer++ })
			if w.stopped(ctx, "drain", err) {
				return
			}
		case res != nil:
			w.l.ackDrain(res.TaskID, res.LeaseID, res.Forced)
		}
	}
}

func (w *workload) send(ctx context.Context, sender, recipient string, rng *rand.Rand) bool {
	id := uuid.NewString()
	task := mailbox.Task{ID: id, Sender: sender, Recipient: recipient, IntentText: "fault " + id[:8]}
	if rng.IntN(2) == 0 {
		task.Idempotency = &mailbox.Idempotency{DuplicateSafety: mailbox.DuplicateIdempotent, Key: "k-" + id}
	}
	w.l.do(func() { w.l.tried[id] = true })
	resp, err := w.c.Send(ctx, task)
	if err != nil {
		return !w.stopped(ctx, "send", err)
	}
	if resp.TaskID != id || resp.Deduplicated {
		w.l.t.Errorf("send %s acknowledged as %s (deduplicated %v)", id, resp.TaskID, resp.Deduplicated)
	}
	w.l.ackSend(id)
	return true
}

// work leases the oldest task for recipient (perhaps one the operator
// requeued rather than the one just sent) and posts its result, or, now
// and then, abandons the lease as a crashed agent would. more is false
// when nothing was queued; ok is false when the worker must stop.
func (w *workload) work(ctx context.Context, recipient string, rng *rand.Rand) (more, ok bool) {
	task, lease, err := w.c.Lease(ctx, recipient)
	if err != nil {
		return false, !w.stopped(ctx, "lease", err)
	}
	if task == nil {
		return false, true
	}
	w.l.ackLease(leaseAck{taskID: task.ID, leaseID: lease.LeaseID, attempt: lease.Attempt})
	if rng.IntN(8) == 0 {
		notify(w.abandoned) // the operator deals with this lease
		return true, true
	}
	w.l.tryPost(task.ID, lease.LeaseID)
	err = w.c.PostResult(ctx, mailbox.Result{TaskID: task.ID, Status: mailbox.StatusOK, LeaseID: lease.LeaseID,
		Content: []mailbox.Content{{Type: mailbox.ContentText, Text: "done"}}})
	if err != nil {
		return true, !w.stopped(ctx, "post result", err)
	}
	w.l.ackPost(task.ID, lease.LeaseID)
	return true, true
}

// operator repairs leases it sees in flight: requeue (with the posture
// the task allows) or force_error, always guarded by the lease id it saw.
// Agents may finish those leases meanwhile; then the guard refuses the
// repair with a conflict, which is the point of the guard.
func (w *workload) operator(ctx context.Context, rng *rand.Rand) {
	for {
		select {
		case <-w.abandoned:
		case <-ctx.Done():
			return
		}
		view, err := w.c.Queue(ctx, mailbox.QueueFilter{State: mailbox.TaskInFlight, Limit: 100})
		if err != nil {
			if w.stopped(ctx, "queue", err) {
				return
			}
			continue
		}
		for _, e := range view.Tasks {
			if ctx.Err() != nil {
				return
			}
			req := mailbox.RepairRequest{TaskID: e.Task.ID, Reason: "fault test: agent gone",
				Command: mailbox.RepairCommand{Action: mailbox.ActionForceError, LeaseID: e.LeaseID, Message: "agent gone"}}
			requeue := rng.IntN(3) != 0
			if requeue {
				risk := mailbox.RiskOperatorAccepted
				if e.Task.Idempotent() && rng.IntN(2) == 0 {
					risk = mailbox.RiskIdempotent
				}
				req.Command = mailbox.RepairCommand{Action: mailbox.ActionRequeue, LeaseID: e.LeaseID, DuplicateRisk: risk}
			}
			w.l.tryRepair(e.Task.ID, e.LeaseID, requeue)
			out, err := w.c.Repair(ctx, req)
			if err != nil {
				if w.stopped(ctx, "repair", err) {
					return
				}
				continue
			}
			if out.TaskID != e.Task.ID {
				w.l.t.Errorf("repair of %s answered for task %s", e.Task.ID, out.TaskID)
			}
			w.l.ackRepair(repairAck{taskID: e.Task.ID, leaseID: e.LeaseID, action: out.Action, attempt: out.Attempt})
		}
	}
}

// TestFaultKill9UnderLoad kills the real daemon with SIGKILL at a random
// moment of a bench-like load with an operator repairing leases, restarts
// it on the same data dir, and checks after every restart that everything
// acknowledged survived and nothing was leased twice without a requeue.
// Compaction thresholds are tiny so that kills also land mid-compaction.
func TestFaultKill9UnderLoad(t *testing.T) { kill9UnderLoad(t, *iterations, procTLS{}) }

// tlsIterations: a kill under TLS is the same kill to the log; what TLS
// adds (HTTP/2 connections cut with many requests on them, a handshake
// with each new daemon) shows in a few.
var tlsIterations = flag.Int("fault.tls-iterations", 2, "kill -9 iterations of TestFaultKill9UnderLoadTLS (.ci/run runs 6)")

// TestFaultKill9UnderLoadTLS is TestFaultKill9UnderLoad with the daemon
// serving TLS (tls_cert_file and tls_key_file from the test's CA) and the
// load, the operator and the checks all over HTTPS and HTTP/2, trusting
// that CA: nothing acknowledged is lost.
func TestFaultKill9UnderLoadTLS(t *testing.T) { kill9UnderLoad(t, *tlsIterations, newProcTLS(t)) }

// kill9UnderLoad is the kill -9 suite: iterations kills of the daemon
// serving as hop says, a clean stop, and the checks after each.
func kill9UnderLoad(t *testing.T, iterations int, hop procTLS) {
	seed := faultSeed(t)
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	dir := t.TempDir()
	l := newLedger(t)
	flags := []string{"--compact-min-bytes", "8KiB", "--compact-factor", "2"}
	hc := &http.Client{Transport: hop.secure(&http.Transport{MaxIdleConnsPerHost: loadPairs + 2})}
	defer hc.CloseIdleConnections()
	connect := func(p *proc) *client.Client {
		c, err := client.New(p.url(), client.WithHTTPClient(hc))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}

	for i := range iterations {
		p := startProcTLS(t, dir, hop, flags...)
		c := connect(p)
		view := l.verify(c, fmt.Sprintf("restart %d", i))
		if t.Failed() {
			t.Fatalf("restart %d: stopping at the first failed check (seed %d); the daemon's log:\n%s", i, seed, p.out)
		}

		w := &workload{c: c, l: l, abandoned: make(chan struct{}, 1)}
		// Leases that survived the kill belong to agents that died with it.
		for _, e := range view.Tasks {
			if e.State == mailbox.TaskInFlight {
				notify(w.abandoned)
				break
			}
		}
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		for n := range loadPairs {
			prng := rand.New(rand.NewPCG(rng.Uint64(), uint64(n)))
			wg.Go(func() { w.pair(ctx, n, prng) })
		}
		orng := rand.New(rand.NewPCG(rng.Uint64(), loadPairs))
		wg.Go(func() { w.operator(ctx, orng) })

		before := l.acks.Load()
		p.killDuringLoad(t, rng, fmt.Sprintf("iteration %d", i), &l.killed, cancel, wg.Wait)
		l.iterations++
		if l.acks.Load() == before {
			t.Errorf("iteration %d: no request was acknowledged in the load before the kill; its log:\n%s", i, p.out)
		}
		if t.Failed() {
			t.Fatalf("iteration %d failed (seed %d)", i, seed)
		}
	}

	// The last restart ends with SIGTERM: a clean stop exits 0 and the next
	// start shows the same mailbox.
	p := startProcTLS(t, dir, hop, flags...)
	before := l.verify(connect(p), "final restart")
	p.stop(t)
	p = startProcTLS(t, dir, hop, flags...)
	after := l.verify(connect(p), "after a clean stop")
	if b, a := jsonOf(t, before), jsonOf(t, after); b != a {
		t.Errorf("a clean stop changed the mailbox:\nbefore %s\nafter  %s", b, a)
	}
	requeues := 0
	for _, n := range l.requeues {
		requeues += n
	}
	t.Logf("%d kills; acknowledged %d sends, %d leases, %d results, %d repairs (%d requeues tried), %d drains; %d conflicts, %d drains unanswered, %d *.broken files",
		l.iterations, len(l.sent), len(l.leaseTask), len(l.posted), len(l.repairs), requeues, len(l.drained), l.conflicts.Load(), l.noAnswer, len(brokenFiles(t, dir)))
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
