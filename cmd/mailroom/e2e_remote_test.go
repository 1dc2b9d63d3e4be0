package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/mailbox"
)

var remoteKills = flag.Int("remote.kills", 3, "kill -9 rounds of TestFaultKill9RemoteDelivery (.ci/run runs 10)")

// The remote agent every remote suite delivers to, its credential, and
// the senders that send it work.
const (
	remoteAgent  = "coder@remote"
	remoteBearer = "e2e-remote-s3cret"
	remoteSends  = 2 // senders
	// remoteOutstanding bounds the tasks a sender has sent and not yet
	// drained, so the queue does not grow beyond what a round delivers.
	remoteOutstanding = 6
)

// remoteLedger is what the remote suites' senders were told across every
// kill, and what the operator did.
type remoteLedger struct {
	ledgerBase

	tried      map[string]bool // task ids a send was attempted for
	sent       map[string]bool // acknowledged sends
	idempotent map[string]bool // tried tasks declared idempotent
	drained    map[string]mailbox.PendingResult
	forced     map[string]bool // tasks the operator force-errored
	// outstanding counts per sender the acknowledged sends not drained.
	outstanding map[string]int

	acks                                    atomic.Int64
	unknownSeen, followedSeen, resentSeen   int // what recovery made of the leases a kill left, summed
	unknownReceived                         int // unknown deliveries the remote had received
	checks                                  int
	lastUnknown                             map[string]string // task -> lease of the unknown deliveries at the last check
	receivedTotal, idempotentResentMessages int
}

func newRemoteLedger(t *testing.T) *remoteLedger {
	return &remoteLedger{ledgerBase: ledgerBase{t: t}, tried: map[string]bool{}, sent: map[string]bool{}, idempotent: map[string]bool{},
		drained: map[string]mailbox.PendingResult{}, forced: map[string]bool{}, outstanding: map[string]int{}, lastUnknown: map[string]string{}}
}

// remoteSender sends native tasks to the remote agent, half of them
// idempotent, and drains its results.
func (l *remoteLedger) remoteSender(ctx context.Context, c *client.Client, sender string, rng *rand.Rand) {
	for ctx.Err() == nil {
		var room bool
		l.do(func() { room = l.outstanding[sender] < remoteOutstanding })
		if room {
			id := uuid.NewString()
			task := mailbox.Task{ID: id, Sender: sender, Recipient: remoteAgent, IntentText: "work " + id}
			idem := rng.IntN(2) == 0
			if idem {
				task.Idempotency = &mailbox.Idempotency{DuplicateSafety: mailbox.DuplicateIdempotent, Key: id}
			}
			l.do(func() { l.tried[id], l.idempotent[id] = true, idem })
			if _, err := c.Send(ctx, task); err != nil {
				l.failed(ctx, "send", err)
				return
			}
			l.do(func() { l.sent[id] = true; l.outstanding[sender]++ })
			l.acks.Add(1)
		}
		got, err := c.DrainN(ctx, sender, 4, 100*time.Millisecond)
		if err != nil {
			l.failed(ctx, "drain", err)
			return
		}
		l.took(sender, got)
	}
}

func (l *remoteLedger) took(sender string, got []mailbox.PendingResult) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range got {
		if _, dup := l.drained[r.TaskID]; dup {
			l.t.Errorf("task %s's result was drained twice: %+v", r.TaskID, r)
		}
		l.drained[r.TaskID] = r
		l.outstanding[sender]--
		l.acks.Add(1)
	}
}

// remoteView is what one daemon (the leader, on PostgreSQL) shows: its
// whole state and the remote agent's deliveries, the latter read first.
type remoteView struct {
	snap       *mailbox.Snapshot
	tasks      map[string]mailbox.TaskRecord
	deliveries map[string]mailbox.DeliveryStatus // by lease id
	state      string
}

func readRemoteView(t *testing.T, c *client.Client, addr string) remoteView {
	t.Helper()
	list, err := c.Agents(t.Context())
	if err != nil {
		t.Fatalf("listing agents: %v", err)
	}
	v := remoteView{tasks: map[string]mailbox.TaskRecord{}, deliveries: map[string]mailbox.DeliveryStatus{}}
	for _, a := range list {
		if a.Agent == remoteAgent && a.Remote != nil {
			v.state = a.Remote.State
			for _, d := range a.Remote.Deliveries {
				v.deliveries[d.LeaseID] = d
			}
		}
	}
	v.snap, _ = daemontest.ReadSnapshot(t, "http://"+addr)
	for _, tr := range v.snap.Tasks {
		v.tasks[tr.Task.ID] = tr
	}
	return v
}

func (v remoteView) String() string {
	b, _ := json.Marshal(v.deliveries)
	return fmt.Sprintf("remote %s, deliveries %s", v.state, b)
}

// verify checks a restarted daemon (the new leader) against the ledger
// and the remote: every acknowledged send is in the mailbox, nothing is
// there that nobody sent, no non-idempotent task reached the remote
// twice, every result from the remote is for a task the remote
// completed, and recovery made of every lease the kill left (leased at
// or before killedMs) what it must: followed when the remote accepted it
// under that lease, sent again when idempotent, else left unknown for the
// operator; and no other delivery is unknown.
func (l *remoteLedger) verify(c *client.Client, addr string, r *e2eRemote, killedMs int64, when string) {
	t := l.t
	t.Helper()
	var v remoteView
	deadline := time.Now().Add(60 * time.Second) // a watchdog, not synchronisation
	for {
		v = readRemoteView(t, c, addr)
		recovered := true
		for _, tr := range v.tasks {
			if tr.State == mailbox.TaskInFlight && tr.LeasedTo == remoteAgent && tr.LeasedAtMs <= killedMs {
				if _, ok := v.deliveries[tr.LeaseID]; !ok {
					recovered = false
				}
			}
		}
		if recovered {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the leases the kill left are not all recovered after 60s: %s", when, v)
		}
		time.Sleep(5 * time.Millisecond)
	}
	received, completed := r.exec.counts()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.checks++

	for id := range v.tasks {
		if !l.tried[id] {
			t.Errorf("%s: task %s is in the mailbox but nobody sent it", when, id)
		}
	}
	for id := range l.sent {
		if _, ok := v.tasks[id]; !ok {
			t.Errorf("%s: acknowledged task %s is gone", when, id)
		}
	}
	for id, n := range received {
		if !l.tried[id] {
			t.Errorf("%s: the remote received message %s, which is no task anybody sent", when, id)
			continue
		}
		if n > 1 && !l.idempotent[id] {
			t.Errorf("%s: the remote received the non-idempotent task %s %d times (no operator repaired it)", when, id, n)
		}
	}
	for _, pr := range v.snap.Results {
		l.checkResult(pr, completed, when)
	}
	unknown := map[string]string{}
	for _, tr := range v.tasks {
		if tr.State != mailbox.TaskInFlight || tr.LeasedTo != remoteAgent {
			continue
		}
		d, ok := v.deliveries[tr.LeaseID]
		if !ok {
			continue // leased by this daemon since the view was read
		}
		accepted, idem := tr.AcceptedUnder(tr.LeaseID), l.idempotent[tr.Task.ID]
		if d.State == mailbox.DeliveryUnknown {
			unknown[tr.Task.ID] = tr.LeaseID
			if accepted || idem {
				t.Errorf("%s: task %s (idempotent %v, accepted under its lease %v) is left unknown: %+v", when, tr.Task.ID, idem, accepted, d)
			}
		}
		if tr.LeasedAtMs > killedMs {
			continue
		}
		// Accepted before the kill, or (an idempotent task sent again)
		// by this daemon since.
		switch {
		case accepted && tr.Remote.AcceptedAtMs <= killedMs:
			l.followedSeen++
			if d.State == mailbox.DeliveryUnknown || d.State == mailbox.DeliverySending || d.State == mailbox.DeliveryRetrying {
				t.Errorf("%s: task %s, accepted under its lease before the kill, is %s, not followed: %+v", when, tr.Task.ID, d.State, d)
			}
		case idem:
			l.resentSeen++
		default:
			if d.State != mailbox.DeliveryUnknown || accepted {
				t.Errorf("%s: task %s, not idempotent and leased but not accepted before the kill, is %s (accepted since: %v), not unknown: %+v", when, tr.Task.ID, d.State, accepted, d)
			}
			if _, seen := l.lastUnknown[tr.Task.ID]; !seen {
				l.unknownSeen++
				if received[tr.Task.ID] > 0 {
					l.unknownReceived++
				}
			}
		}
	}
	for _, d := range v.deliveries {
		if d.State == mailbox.DeliveryUnknown {
			if tr := v.tasks[d.TaskID]; tr.State != mailbox.TaskInFlight || tr.LeaseID != d.LeaseID {
				t.Errorf("%s: delivery %+v is unknown, but its task is %s under lease %q", when, d, tr.State, tr.LeaseID)
			}
		}
	}
	l.lastUnknown = unknown
}

// checkResult checks a result pending or drained: an ok one carries what
// the remote made of the task, which it completed; an error one was the
// operator's.
func (l *remoteLedger) checkResult(pr mailbox.PendingResult, completed map[string]int, when string) {
	t := l.t
	switch {
	case pr.Status == mailbox.StatusOK:
		if completed[pr.TaskID] == 0 {
			t.Errorf("%s: task %s has an ok result, but the remote never completed it: %+v", when, pr.TaskID, pr)
		}
		if len(pr.Content) != 1 || pr.Content[0].Text != "done work "+pr.TaskID {
			t.Errorf("%s: task %s's result is %+v, not the remote's answer", when, pr.TaskID, pr.Content)
		}
	case pr.Forced:
		if !l.forced[pr.TaskID] {
			t.Errorf("%s: task %s has a forced result, but the operator forced none: %+v", when, pr.TaskID, pr)
		}
	default:
		t.Errorf("%s: task %s has the result %+v; the remote completes every task", when, pr.TaskID, pr)
	}
}

// remoteLoad runs the senders against clients (one each, round robin)
// until ctx ends; wait waits them out.
func (l *remoteLedger) remoteLoad(ctx context.Context, clients []*client.Client, rng *rand.Rand) (wait func()) {
	var wg sync.WaitGroup
	for n := range remoteSends {
		c, srng := clients[n%len(clients)], rand.New(rand.NewPCG(rng.Uint64(), uint64(n)))
		wg.Go(func() { l.remoteSender(ctx, c, fmt.Sprintf("planner-%d@local", n), srng) })
	}
	return wg.Wait
}

// settle ends the run: it waits until every acknowledged task is finished
// or left unknown for the operator, then plays the operator, force-erroring
// every unknown lease (with its lease id as the guard), drains every
// result and checks that every task ended: the idempotent ones and those
// the remote accepted with the remote's answer, the unknown ones with the
// operator's error, and nothing acknowledged lost.
func (l *remoteLedger) settle(c *client.Client, addr string, r *e2eRemote) {
	t := l.t
	t.Helper()
	var v remoteView
	deadline := time.Now().Add(120 * time.Second) // a watchdog, not synchronisation
	for {
		v = readRemoteView(t, c, addr)
		open := 0
		l.do(func() {
			for id := range l.sent {
				tr := v.tasks[id]
				switch tr.State {
				case mailbox.TaskResultPending, mailbox.TaskDone:
				case mailbox.TaskInFlight:
					if d, ok := v.deliveries[tr.LeaseID]; !ok || d.State != mailbox.DeliveryUnknown {
						open++
					}
				default:
					open++
				}
			}
		})
		if open == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("at the end: %d acknowledged tasks neither finished nor left for the operator after 120s: %s", open, v)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var unknown []mailbox.DeliveryStatus
	for _, d := range v.deliveries {
		if d.State == mailbox.DeliveryUnknown {
			unknown = append(unknown, d)
		}
	}
	for _, d := range unknown {
		l.do(func() { l.forced[d.TaskID] = true })
		_, err := c.Repair(t.Context(), mailbox.RepairRequest{TaskID: d.TaskID, Reason: "e2e: delivery unknown after a kill -9",
			Command: mailbox.RepairCommand{Action: "force_error", LeaseID: d.LeaseID, Message: "not known whether the remote got it; the operator ended it"}})
		if err != nil {
			t.Errorf("force-erroring the unknown delivery %+v: %v", d, err)
		}
	}
	// Every task ends: drain until each sender has every result.
	deadline = time.Now().Add(120 * time.Second)
	for {
		for n := range remoteSends {
			got, err := c.DrainN(t.Context(), fmt.Sprintf("planner-%d@local", n), 100, 50*time.Millisecond)
			if err != nil {
				t.Fatalf("draining at the end: %v", err)
			}
			l.took(fmt.Sprintf("planner-%d@local", n), got)
		}
		v = readRemoteView(t, c, addr)
		left := 0
		l.do(func() {
			for id := range l.sent {
				if v.tasks[id].State != mailbox.TaskDone {
					left++
				}
			}
		})
		// Tasks whose send the kill cut off, but which were durable,
		// end too.
		for _, tr := range v.tasks {
			if tr.State != mailbox.TaskDone {
				left++
			}
		}
		if left == 0 && len(v.deliveries) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("at the end: %d tasks not done after the operator's repairs: %s", left, v)
		}
		time.Sleep(20 * time.Millisecond)
	}
	received, completed := r.exec.counts()
	l.mu.Lock()
	defer l.mu.Unlock()
	for id, pr := range l.drained {
		l.checkResult(pr, completed, "at the end")
		if l.idempotent[id] && pr.Status != mailbox.StatusOK {
			t.Errorf("idempotent task %s ended with %+v, not delivered", id, pr)
		}
	}
	for id := range l.forced {
		if l.idempotent[id] {
			t.Errorf("idempotent task %s was left for the operator", id)
		}
	}
	for id, n := range received {
		if n > 1 && !l.idempotent[id] {
			t.Errorf("at the end: the remote received the non-idempotent task %s %d times", id, n)
		}
		l.receivedTotal += n
		if n > 1 {
			l.idempotentResentMessages += n - 1
		}
		if completed[id] > 0 && v.tasks[id].State != mailbox.TaskDone {
			t.Errorf("task %s, which the remote completed, is %s at the end", id, v.tasks[id].State)
		}
		if completed[id] > 0 && !l.forced[id] {
			if pr, ok := l.drained[id]; ok && pr.Status != mailbox.StatusOK {
				t.Errorf("task %s, which the remote completed and the operator did not touch, ended with %+v", id, pr)
			}
		}
	}
	if n := r.unauthorized.Load(); n > 0 {
		t.Errorf("the remote refused %d requests without the config file's bearer credential", n)
	}
}

func (l *remoteLedger) summary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	idem := 0
	for id := range l.sent {
		if l.idempotent[id] {
			idem++
		}
	}
	cutOff := 0
	for id := range l.sent {
		if _, ok := l.drained[id]; !ok {
			cutOff++
		}
	}
	return fmt.Sprintf("acknowledged %d sends (%d idempotent), %d results drained (%d more drained by a request the kill cut off); the remote received %d messages (%d idempotent resends, 0 non-idempotent duplicates); recovery over %d checks: %d followed, %d idempotent resent, %d left unknown (%d of which the remote had received); the operator force-errored %d",
		len(l.sent), idem, len(l.drained), cutOff, l.receivedTotal, l.idempotentResentMessages, l.checks, l.followedSeen, l.resentSeen, l.unknownSeen, l.unknownReceived, len(l.forced))
}

// TestFaultKill9RemoteDelivery kills the real daemon with SIGKILL while
// its dispatcher delivers native tasks (half idempotent) to a remote
// A2A agent that answers after a random delay, so kills land before the
// remote accepts a task, between acceptance and result, and after; then
// restarts it on the same data dir. After every restart: nothing
// acknowledged is lost, the remote never received a non-idempotent task
// twice, a task accepted under its lease is followed, an idempotent one
// sent again, any other left unknown for the operator. At the end the
// operator force-errors the unknown ones and every task ends.
func TestFaultKill9RemoteDelivery(t *testing.T) {
	seed := faultSeed(t)
	rng := rand.New(rand.NewPCG(seed, seed>>3))
	dir := t.TempDir()
	remote := startE2ERemote(t, seed)
	flags := remoteConfig(t)
	l := newRemoteLedger(t)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: remoteSends + 2}}
	defer hc.CloseIdleConnections()

	var killedMs int64
	for i := range *remoteKills {
		p := startProc(t, dir, flags...)
		c, err := client.New(p.addr, client.WithHTTPClient(hc))
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			registerRemote(t, c, remote.srv.URL)
		}
		l.verify(c, p.addr, remote, killedMs, fmt.Sprintf("restart %d", i))
		if t.Failed() {
			t.Fatalf("restart %d: stopping at the first failed check (seed %d); the daemon's log:\n%s", i, seed, p.out)
		}
		ctx, cancel := context.WithCancel(t.Context())
		wait := l.remoteLoad(ctx, []*client.Client{c}, rng)
		before := l.acks.Load()
		p.killDuringLoad(t, rng, fmt.Sprintf("kill %d", i), &l.killed, cancel, wait)
		killedMs = time.Now().UnixMilli()
		if l.acks.Load() == before {
			t.Errorf("kill %d: no request was acknowledged in the load before the kill; the daemon's log:\n%s", i, p.out)
		}
		if t.Failed() {
			t.Fatalf("kill %d failed (seed %d)", i, seed)
		}
	}

	p := startProc(t, dir, flags...)
	c, err := client.New(p.addr, client.WithHTTPClient(hc))
	if err != nil {
		t.Fatal(err)
	}
	l.verify(c, p.addr, remote, killedMs, "final restart")
	l.settle(c, p.addr, remote)
	if t.Failed() {
		t.Fatalf("at the end (seed %d); the daemon's log:\n%s", seed, p.out)
	}
	t.Logf("%d kills; %s", *remoteKills, l.summary())
	p.stop(t)
}
