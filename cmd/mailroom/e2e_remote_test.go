package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/mailbox"
)

var (
	remoteKills    = flag.Int("remote.kills", 3, "kill -9 rounds of TestFaultKill9RemoteDelivery (.ci/run runs 10)")
	remoteTLSKills = flag.Int("remote.tls-kills", 2, "kill -9 rounds of TestFaultKill9RemoteDeliveryTLS (.ci/run runs 4)")
)

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

	acks                                  atomic.Int64
	unknownSeen, followedSeen, resentSeen int // what recovery made of the leases a kill left, summed
	// unaccepted holds the leases a kill left, not idempotent and not
	// accepted under them: each one a recovery that did not ask the remote
	// left unknown. foundSeen, absentSeen and cannotSeen are the remote's
	// answers when recovery asked about the leases it had not accepted
	// (the daemons' mailroom_remote_settles_total; a lease left unknown is
	// asked about again after each restart).
	unaccepted                        map[string]bool
	foundSeen, absentSeen, cannotSeen int
	unknownReceived                   int // unknown deliveries the remote had received
	// unknownWhy counts the unknown deliveries the operator ended, by the
	// reason each gave for why it could not be settled.
	unknownWhy                              map[string]int
	checks                                  int
	lastUnknown                             map[string]string // task -> lease of the unknown deliveries at the last check
	receivedTotal, idempotentResentMessages int
}

func newRemoteLedger(t *testing.T) *remoteLedger {
	return &remoteLedger{ledgerBase: ledgerBase{t: t}, tried: map[string]bool{}, sent: map[string]bool{}, idempotent: map[string]bool{},
		drained: map[string]mailbox.PendingResult{}, forced: map[string]bool{}, outstanding: map[string]int{}, lastUnknown: map[string]string{},
		unknownWhy: map[string]int{}, unaccepted: map[string]bool{}}
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

func readRemoteView(t *testing.T, c *client.Client, p *proc) remoteView {
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
	v.snap = p.snapshot(t)
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
// under that lease; else, when the remote can be asked (v1.0), settled
// by asking it (followed or sent), and otherwise sent again when
// idempotent, else left unknown for the operator, saying why; and no
// other delivery is unknown.
func (l *remoteLedger) verify(c *client.Client, p *proc, r *e2eRemote, killedMs int64, when string) {
	t := l.t
	t.Helper()
	var v remoteView
	deadline := time.Now().Add(60 * time.Second) // a watchdog, not synchronisation
	// settled: recovery has decided on every lease the kill left (a v0.3
	// remote, which cannot be asked, as soon as its card is read; a v1.0
	// one once it answered, the call bound after the restart).
	waitRecovered := func(settled bool) {
		for {
			v = readRemoteView(t, c, p)
			recovered := true
			for _, tr := range v.tasks {
				if tr.State == mailbox.TaskInFlight && tr.LeasedTo == remoteAgent && tr.LeasedAtMs <= killedMs {
					if d, ok := v.deliveries[tr.LeaseID]; !ok || settled && d.State == mailbox.DeliveryChecking {
						recovered = false
					}
				}
			}
			if recovered {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the leases the kill left are not all recovered after 60s: %s", when, v)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitRecovered(false)
	// The leases the kill left, not idempotent and not accepted under
	// them, before recovery settled them (a settled task may finish before
	// the next look): what a recovery that does not ask the remote leaves
	// unknown.
	l.do(func() {
		for _, tr := range v.tasks {
			if tr.State == mailbox.TaskInFlight && tr.LeasedTo == remoteAgent && tr.LeasedAtMs <= killedMs && !tr.AcceptedUnder(tr.LeaseID) && !l.idempotent[tr.Task.ID] {
				l.unaccepted[tr.LeaseID] = true
			}
		}
	})
	waitRecovered(true)
	found, absent, cannot := settles(t, p)
	l.do(func() { l.foundSeen += found; l.absentSeen += absent; l.cannotSeen += cannot })
	received, completed := r.counts()
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
			// An idempotent task is left only past remote_resend_max.
			if accepted || idem && !strings.Contains(d.LastError, "remote_resend_max") {
				t.Errorf("%s: task %s (idempotent %v, accepted under its lease %v) is left unknown: %+v", when, tr.Task.ID, idem, accepted, d)
			}
			if why := unknownReason(d.LastError); why == "" {
				t.Errorf("%s: task %s is left unknown without saying why it could not be settled: %+v", when, tr.Task.ID, d)
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
			// Not idempotent, not accepted under its lease before the
			// kill: settled by asking the remote (checking it, then
			// followed, or sent when the remote surely lacks it), or left
			// unknown when the remote cannot say.
			switch {
			case d.State == mailbox.DeliveryUnknown:
				if _, seen := l.lastUnknown[tr.Task.ID]; !seen {
					l.unknownSeen++
					if received[tr.Task.ID] > 0 {
						l.unknownReceived++
					}
				}
			case r.binding == mailbox.BindingJSONRPC03:
				t.Errorf("%s: task %s, not idempotent and leased but not accepted before the kill by a v0.3 remote (which cannot be asked), is %s (accepted since: %v), not unknown: %+v", when, tr.Task.ID, d.State, accepted, d)
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
func (l *remoteLedger) settle(c *client.Client, p *proc, r *e2eRemote) {
	t := l.t
	t.Helper()
	var v remoteView
	deadline := time.Now().Add(120 * time.Second) // a watchdog, not synchronisation
	for {
		v = readRemoteView(t, c, p)
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
		why := unknownReason(d.LastError)
		if why == "" {
			t.Errorf("at the end: delivery %+v is unknown without saying why it could not be settled", d)
		}
		l.do(func() { l.forced[d.TaskID] = true; l.unknownWhy[why]++ })
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
		v = readRemoteView(t, c, p)
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
	received, completed := r.counts()
	l.mu.Lock()
	defer l.mu.Unlock()
	for id, pr := range l.drained {
		l.checkResult(pr, completed, "at the end")
		if l.idempotent[id] && pr.Status != mailbox.StatusOK {
			t.Errorf("idempotent task %s ended with %+v, not delivered", id, pr)
		}
	}
	for _, d := range unknown {
		if l.idempotent[d.TaskID] && !strings.Contains(d.LastError, "remote_resend_max") {
			t.Errorf("idempotent task %s was left for the operator: %+v", d.TaskID, d)
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
	if n := r.unauthorized(); n > 0 {
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
	var whys []string
	for why, n := range l.unknownWhy {
		whys = append(whys, fmt.Sprintf("%d %s", n, why))
	}
	slices.Sort(whys)
	return fmt.Sprintf("acknowledged %d sends (%d idempotent), %d results drained (%d more drained by a request the kill cut off); the remote received %d messages (%d idempotent resends, 0 non-idempotent duplicates); recovery over %d checks: %d followed, %d idempotent and not accepted (sent again unless the remote had them), %d not idempotent and not accepted (which a recovery that does not ask the remote leaves unknown); the remote asked about leases not accepted answered %d found (followed), %d absent (sent), %d cannot say; %d left unknown (%d of which the remote had received); the operator force-errored %d, each unknown saying why: [%s]",
		len(l.sent), idem, len(l.drained), cutOff, l.receivedTotal, l.idempotentResentMessages, l.checks, l.followedSeen, l.resentSeen, len(l.unaccepted), l.foundSeen, l.absentSeen, l.cannotSeen, l.unknownSeen, l.unknownReceived, len(l.forced), strings.Join(whys, "; "))
}

// settles reads what the daemon p asked remotes since it started, by
// answer (mailroom_remote_settles_total).
func settles(t *testing.T, p *proc) (found, absent, cannot int) {
	t.Helper()
	resp, err := (&http.Client{Transport: p.hop.transport()}).Get(p.url() + "/metrics")
	if err != nil {
		t.Fatalf("reading /metrics: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		for answer, n := range map[string]*int{"found": &found, "absent": &absent, "cannot": &cannot} {
			if v, ok := strings.CutPrefix(line, `mailroom_remote_settles_total{answer="`+answer+`"} `); ok {
				f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
				*n = int(f)
			}
		}
	}
	return found, absent, cannot
}

// unknownReason is the reason an unknown delivery's last error gives for
// why it could not be settled, in a word or two; "" when it gives none.
func unknownReason(lastErr string) string {
	switch {
	case strings.Contains(lastErr, "remote_resend_max"):
		return "resends capped (remote_resend_max)"
	case strings.Contains(lastErr, "A2A v0.3, which has no way to list tasks"):
		return "v0.3 remote: no ListTasks"
	case strings.Contains(lastErr, "does not list tasks"):
		return "remote without ListTasks"
	case strings.Contains(lastErr, "has yet shown that it keeps the contextId"):
		return "remote not yet seen keeping the contextId"
	case strings.Contains(lastErr, "asking it whether it holds the task failed"):
		return "asking the remote failed"
	case strings.Contains(lastErr, "legacy tasks/send dialect has no way"):
		return "legacy remote: no list"
	}
	return ""
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
//
// It runs against two remotes: an a2a-go v0.3.3 server (v0.3 has no
// ListTasks, so a non-idempotent task whose acceptance the kill lost is
// left unknown, saying so), and the @a2a-js/sdk 1.3.0 server over v1.0,
// which the daemon asks whether it holds such a task (by the contextId it
// derived from the task): followed if it does, sent if it surely does
// not. It logs what recovery made of each lease and why each unknown one
// could not be settled.
func TestFaultKill9RemoteDelivery(t *testing.T) {
	t.Run("a2a-go v0.3", func(t *testing.T) {
		faultKill9Remote(t, *remoteKills, procTLS{}, func(seed uint64) *e2eRemote { return startE2ERemote(t, seed) })
	})
	t.Run("js v1.0", func(t *testing.T) {
		faultKill9Remote(t, *remoteKills, procTLS{}, func(uint64) *e2eRemote { return startE2ENodeRemote(t) })
	})
}

// TestFaultKill9RemoteDeliveryTLS is TestFaultKill9RemoteDelivery with the
// daemon serving TLS from the test's CA and the senders, the operator and
// the checks over HTTPS and HTTP/2, against the a2a-go v0.3 remote (one
// remote: what TLS changes is the senders' hop the kill cuts, not how
// recovery treats the remote): nothing acknowledged is lost and no
// non-idempotent task reaches the remote twice.
func TestFaultKill9RemoteDeliveryTLS(t *testing.T) {
	faultKill9Remote(t, *remoteTLSKills, newProcTLS(t), func(seed uint64) *e2eRemote { return startE2ERemote(t, seed) })
}

// faultKill9Remote is the remote delivery suite: kills kills of the daemon
// serving as hop says, delivering to the remote startRemote starts.
func faultKill9Remote(t *testing.T, kills int, hop procTLS, startRemote func(seed uint64) *e2eRemote) {
	seed := faultSeed(t)
	rng := rand.New(rand.NewPCG(seed, seed>>3))
	dir := t.TempDir()
	remote := startRemote(seed)
	flags := remoteConfig(t)
	l := newRemoteLedger(t)
	hc := &http.Client{Transport: hop.secure(&http.Transport{MaxIdleConnsPerHost: remoteSends + 2})}
	defer hc.CloseIdleConnections()

	var killedMs int64
	for i := range kills {
		p := startProcTLS(t, dir, hop, flags...)
		c, err := client.New(p.url(), client.WithHTTPClient(hc))
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			registerRemote(t, c, remote)
		}
		l.verify(c, p, remote, killedMs, fmt.Sprintf("restart %d", i))
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

	p := startProcTLS(t, dir, hop, flags...)
	c, err := client.New(p.url(), client.WithHTTPClient(hc))
	if err != nil {
		t.Fatal(err)
	}
	l.verify(c, p, remote, killedMs, "final restart")
	l.settle(c, p, remote)
	if t.Failed() {
		t.Fatalf("at the end (seed %d); the daemon's log:\n%s", seed, p.out)
	}
	t.Logf("%s: %d kills; %s", remote.name, kills, l.summary())
	p.stop(t)
}
