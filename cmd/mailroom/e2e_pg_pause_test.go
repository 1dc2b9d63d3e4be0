package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/store/pgstore/pgtest"
	"github.com/mailroom/mailroom/mailbox"
)

var pgPauses = flag.Int("pg.pauses", 2, "SIGSTOP/SIGCONT rounds of TestPostgresAPausedLeaderAnswersNothingStale (.ci/run runs 25)")

// The requests each pause round puts in the paused leader's accept queue,
// by kind. Hundreds in all: the window between SIGCONT and the resumed
// leader noticing it lost the lead is tens of milliseconds, and only the
// requests it serves inside that window can show a stale answer.
const (
	pauseResultsLeased   = 60 // results with the lease id the new leader gave
	pauseResultsUnleased = 40 // results without a lease id
	pauseResultsReleased = 20 // results with the lease id of a lease the old leader gave, requeued and leased again by the new one
	pauseRepairs         = 40 // requeues with the lease id the new leader gave
	pauseQueueReads      = 40 // GET /a2a/queue
	pauseA2AGets         = 40 // tasks/get of A2A tasks sent through the new leader
	pauseLeases          = 40 // leases for a recipient with work queued through the new leader
	pauseLeaseQueued     = 60 // tasks queued for those leases: more than the leases, so "nothing queued" is always stale
	pauseWitnesses       = 5  // tasks of each kind the queue reads must show: queued, leased, re-leased
	pauseA2ATasks        = 5
	pauseLoadWriters     = 4 // goroutines sending through the leader up to its pause
)

// pausedAnswer is one request queued on the paused leader and how it was
// answered.
type pausedAnswer struct {
	kind    string
	outcome string // "ok", "503", or what was wrong
	body    string // the answer, for a wrong one
	after   time.Duration
	taskID  string // results and repairs: the task; leases: the task leased
	leaseID string // leases: the lease given
}

func (a pausedAnswer) good() bool { return a.outcome == "ok" || a.outcome == "503" }

// pausedRequest is a request to put in the paused leader's accept queue
// and how to judge a 200 answer to it: "ok" when it is correct, else what
// is wrong with it (and, for a lease, the task leased).
type pausedRequest struct {
	kind   string
	method string
	path   string
	body   any
	taskID string
	judge  func(body []byte) (outcome string, leased *mailbox.LeasedTask)
}

// TestPostgresAPausedLeaderAnswersNothingStale is issue 21's acceptance
// test. Three `mailroom daemon` processes share one schema. In each round
// (-pg.pauses) the leader is stopped with SIGSTOP, under write load, past
// postgres_session_timeout; another takes the lead, and tasks are sent (through the third instance,
// forwarded) and leased through the new leader. Still during the pause,
// hundreds of requests are written to the paused leader's sockets, where
// they wait in its accept queue: results for those leases (with their
// lease ids and without), results for tasks the old leader had leased and
// the new one requeued and leased again, requeues, queue reads, A2A
// tasks/get, and leases for a recipient with work queued. After SIGCONT
// every answer must be correct (200 with the right content) or a 503
// (whatever its headers say); never a 404, a 409, or a read that misses
// what the new leader holds. Afterwards the new leader's mailbox holds
// every write answered 200, and the round clears it. Each outcome is
// counted and logged; timings are logged, never asserted.
func TestPostgresAPausedLeaderAnswersNothingStale(t *testing.T) {
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url, t.Name())
	pg := []string{"--store", "postgres", "--postgres-url", url, "--postgres-schema", schema,
		"--postgres-campaign-interval", "50ms", "--postgres-session-timeout", "1s"}
	var procs []*proc
	for range 3 {
		procs = append(procs, startProc(t, t.TempDir(), pg...))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(*pgPauses)*3*time.Minute+time.Minute)
	defer cancel()
	clientOf := func(p *proc) *client.Client {
		c, err := client.New(p.addr, client.WithTimeout(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	// settled waits until one instance of ps leads, every other one
	// follows it and all have applied the same seq.
	settled := func(what string, ps []*proc) *proc {
		t.Helper()
		var leader *proc
		waitWithin(t, what, func() bool {
			leader = leaderOf(ps)
			if leader == nil {
				return false
			}
			lh, err := healthOf(leader.addr)
			if err != nil || lh.Store == nil {
				return false
			}
			for _, p := range ps {
				h, err := healthOf(p.addr)
				if err != nil || h.Store == nil || h.Store.LeaderURL != lh.Store.Self || h.LastSeq != lh.LastSeq {
					return false
				}
			}
			return true
		})
		return leader
	}

	leader := settled("three instances agree on a leader", procs)
	if _, err := clientOf(leader).RegisterAgent(ctx, "a2a@pg", mailbox.AgentCard{Name: "A2A"}); err != nil {
		t.Fatal(err)
	}

	counts := map[string]map[string]int{}
	var bad []pausedAnswer
	var rounds []string
	shownLog := false
	rng := rand.New(rand.NewPCG(21, 21))
	for round := range *pgPauses {
		started := time.Now()
		old := settled(fmt.Sprintf("round %d: a settled leader", round), procs)
		oh, err := healthOf(old.addr)
		if err != nil {
			t.Fatal(err)
		}
		rcpt := func(group string) string { return fmt.Sprintf("%s%d@pg", group, round) }

		// Before the pause, through the old leader: tasks it leases, which
		// the new leader will requeue and lease again.
		pre := sendGroup(t, ctx, clientOf(old), rcpt("pre"), pauseResultsReleased+pauseWitnesses)
		oldLeases := leaseGroup(t, ctx, clientOf(old), rcpt("pre"), pre)
		settled(fmt.Sprintf("round %d: the old leader's leases applied everywhere", round), procs)

		// The old leader is stopped under load, so that an append is
		// likely in flight: on SIGCONT it finds its session broken in the
		// middle of one and settles it from the table, the window in
		// which issue 21's stale refusals were seen.
		var (
			loadWG   sync.WaitGroup
			loadMu   sync.Mutex
			loadOut  []pausedAnswer
			loadStop atomic.Bool
			loadAck  atomic.Int64
		)
		// Its sends wait out the pause: a timeout longer than any pause.
		lc, err := client.New(old.addr, client.WithTimeout(90*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for w := range pauseLoadWriters {
			loadWG.Go(func() {
				for n := 0; !loadStop.Load() && n < 10000; n++ {
					sctx, scancel := context.WithTimeout(ctx, 90*time.Second)
					_, err := lc.Send(sctx, mailbox.Task{Sender: "planner@pg", Recipient: rcpt("load"), IntentText: fmt.Sprintf("load %d %d", w, n)})
					scancel()
					a := pausedAnswer{kind: "send (load)", outcome: "ok"}
					var me *mailbox.Error
					switch {
					case err == nil:
						loadAck.Add(1)
					case errors.As(err, &me) && me.Code == mailbox.CodeUnavailable:
						a.outcome = "503"
					default:
						a.outcome, a.body = "refused", err.Error()
					}
					loadMu.Lock()
					loadOut = append(loadOut, a)
					loadMu.Unlock()
				}
			})
		}
		waitWithin(t, fmt.Sprintf("round %d: sends through the old leader", round), func() bool { return loadAck.Load() >= 40 })

		if err := old.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		stopped := time.Now()
		loadStop.Store(true)
		var others []*proc
		for _, p := range procs {
			if p != old {
				others = append(others, p)
			}
		}
		var next, fol *proc
		waitWithin(t, fmt.Sprintf("round %d: a new leader while the old one is stopped", round), func() bool {
			next = leaderOf(others)
			if next == nil {
				return false
			}
			h, err := healthOf(next.addr)
			return err == nil && h.Store != nil && h.Store.Epoch > oh.Store.Epoch
		})
		took := time.Since(stopped)
		for _, p := range others {
			if p != next {
				fol = p
			}
		}
		nh, err := healthOf(next.addr)
		if err != nil {
			t.Fatal(err)
		}
		waitWithin(t, fmt.Sprintf("round %d: the third instance to follow the new leader", round), func() bool {
			h, err := healthOf(fol.addr)
			return err == nil && h.Store != nil && h.Store.LeaderURL == nh.Store.Self
		})

		// While the old leader is stopped: tasks sent through the third
		// instance (forwarded to the new leader) and leased through the
		// new leader.
		nc, fc := clientOf(next), clientOf(fol)
		resL := sendGroup(t, ctx, fc, rcpt("resl"), pauseResultsLeased)
		resN := sendGroup(t, ctx, fc, rcpt("resn"), pauseResultsUnleased)
		rep := sendGroup(t, ctx, fc, rcpt("rep"), pauseRepairs)
		idle := sendGroup(t, ctx, fc, rcpt("idle"), pauseWitnesses)
		busy := sendGroup(t, ctx, fc, rcpt("busy"), pauseWitnesses)
		lz := sendGroup(t, ctx, fc, rcpt("lz"), pauseLeaseQueued)
		lzSet := map[string]bool{}
		for _, id := range lz {
			lzSet[id] = true
		}
		resLLeases := leaseGroup(t, ctx, nc, rcpt("resl"), resL)
		leaseGroup(t, ctx, nc, rcpt("resn"), resN)
		repLeases := leaseGroup(t, ctx, nc, rcpt("rep"), rep)
		busyLeases := leaseGroup(t, ctx, nc, rcpt("busy"), busy)
		for _, id := range pre {
			if _, err := nc.Repair(ctx, mailbox.RepairRequest{TaskID: id, Reason: "issue 21: requeued while the old leader is stopped",
				Command: mailbox.RepairCommand{Action: mailbox.ActionRequeue, LeaseID: oldLeases[id], DuplicateRisk: mailbox.RiskOperatorAccepted}}); err != nil {
				t.Fatalf("round %d: requeue %s through the new leader: %v", round, id, err)
			}
		}
		preLeases := leaseGroup(t, ctx, nc, rcpt("pre"), pre)
		var a2aTasks []string
		for i := range pauseA2ATasks {
			a2aTasks = append(a2aTasks, sendA2A(t, ctx, next.addr, fmt.Sprintf("r%d-%d", round, i)))
		}

		// Still during the pause: the requests for the paused leader.
		var reqs []pausedRequest
		result := func(kind, id, lease string) {
			reqs = append(reqs, pausedRequest{kind: kind, method: http.MethodPost, path: "/a2a/results", taskID: id,
				body: mailbox.Result{TaskID: id, LeaseID: lease, Status: mailbox.StatusOK, Content: []mailbox.Content{{Type: mailbox.ContentText, Text: "done"}}},
				judge: func(b []byte) (string, *mailbox.LeasedTask) {
					var r mailbox.ResultPostedResponse
					if json.Unmarshal(b, &r) != nil || r.Kind != mailbox.KindResultPosted || r.TaskID != id {
						return "200 but not the result posted", nil
					}
					return "ok", nil
				}})
		}
		for _, id := range resL {
			result("result, lease id", id, resLLeases[id])
		}
		for _, id := range resN {
			result("result, no lease id", id, "")
		}
		for _, id := range pre[:pauseResultsReleased] {
			result("result, re-leased", id, preLeases[id])
		}
		for _, id := range rep {
			reqs = append(reqs, pausedRequest{kind: "requeue", method: http.MethodPost, path: "/a2a/repair", taskID: id,
				body: mailbox.RepairRequest{TaskID: id, Reason: "issue 21: sent to the paused leader",
					Command: mailbox.RepairCommand{Action: mailbox.ActionRequeue, LeaseID: repLeases[id], DuplicateRisk: mailbox.RiskOperatorAccepted}},
				judge: func(b []byte) (string, *mailbox.LeasedTask) {
					var r mailbox.RepairedResponse
					if json.Unmarshal(b, &r) != nil || r.Kind != mailbox.KindRepaired || r.Outcome.TaskID != id ||
						r.Outcome.Action != mailbox.OutcomeRequeued || r.Outcome.State != mailbox.TaskQueued {
						return "200 but not the requeue", nil
					}
					return "ok", nil
				}})
		}
		witnessPre := pre[pauseResultsReleased:]
		for range pauseQueueReads {
			reqs = append(reqs, pausedRequest{kind: "queue read", method: http.MethodGet, path: "/a2a/queue?limit=10000",
				judge: func(b []byte) (string, *mailbox.LeasedTask) {
					var r mailbox.QueueResponse
					if json.Unmarshal(b, &r) != nil || r.Kind != mailbox.KindQueue {
						return "200 but not a queue", nil
					}
					return staleQueue(r, idle, busy, busyLeases, witnessPre, preLeases), nil
				}})
		}
		for i := range pauseA2AGets {
			id := a2aTasks[i%len(a2aTasks)]
			reqs = append(reqs, pausedRequest{kind: "a2a tasks/get", method: http.MethodPost, path: "/agents/a2a@pg/", taskID: id,
				body: map[string]any{"jsonrpc": "2.0", "id": i, "method": "tasks/get", "params": map[string]any{"id": id}},
				judge: func(b []byte) (string, *mailbox.LeasedTask) {
					var r struct {
						Result *struct {
							ID     string `json:"id"`
							Status struct {
								State string `json:"state"`
							} `json:"status"`
						} `json:"result"`
						Error *struct {
							Code int `json:"code"`
						} `json:"error"`
					}
					switch {
					case json.Unmarshal(b, &r) != nil:
						return "200 but not JSON-RPC", nil
					case r.Error != nil:
						return fmt.Sprintf("stale: 200 with error %d", r.Error.Code), nil
					case r.Result == nil || r.Result.ID != id || r.Result.Status.State != "submitted":
						return "200 but not the submitted task", nil
					}
					return "ok", nil
				}})
		}
		for range pauseLeases {
			reqs = append(reqs, pausedRequest{kind: "lease", method: http.MethodPost, path: "/a2a/tasks/next?recipient=" + rcpt("lz"),
				judge: func(b []byte) (string, *mailbox.LeasedTask) {
					var r mailbox.TaskOptResponse
					switch {
					case json.Unmarshal(b, &r) != nil || r.Kind != mailbox.KindTaskOpt:
						return "200 but not a lease", nil
					case r.Task == nil || r.Lease == nil:
						return "stale: nothing queued", nil
					case !lzSet[r.Task.ID]:
						return "200 but a task not queued for it", nil
					}
					return "ok", &mailbox.LeasedTask{Task: *r.Task, Lease: *r.Lease}
				}})
		}
		rng.Shuffle(len(reqs), func(i, j int) { reqs[i], reqs[j] = reqs[j], reqs[i] })

		answers := make([]pausedAnswer, len(reqs))
		var queued, done sync.WaitGroup
		cont := make(chan time.Time, 1)
		var contAt time.Time
		var contOnce sync.Once
		continued := func() time.Time {
			contOnce.Do(func() { contAt = <-cont })
			return contAt
		}
		for i, rq := range reqs {
			queued.Add(1)
			done.Add(1)
			go func() {
				defer done.Done()
				answers[i] = askPaused(old.addr, rq, queued.Done, continued)
			}()
		}
		queued.Wait()
		paused := time.Since(stopped)
		if err := old.cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		cont <- time.Now()
		done.Wait()
		loadWG.Wait()
		answers = append(answers, loadOut...)
		var last time.Duration
		for _, a := range answers {
			last = max(last, a.after)
		}
		waitWithin(t, fmt.Sprintf("round %d: the resumed leader to follow", round), func() bool {
			h, err := healthOf(old.addr)
			return err == nil && h.Store != nil && h.Store.Role == "follower"
		})
		followed := time.Since(continued())
		// Every write answered 200 is in the new leader's mailbox, and no
		// task was leased twice.
		view, err := nc.Queue(ctx, mailbox.QueueFilter{Limit: mailbox.MaxLimit})
		if err != nil {
			t.Fatal(err)
		}
		entries := map[string]mailbox.QueueEntry{}
		for _, e := range view.Tasks {
			entries[e.Task.ID] = e
		}
		results := map[string]bool{}
		for _, r := range view.Results {
			results[r.TaskID] = true
		}
		leasedBy := map[string]string{}
		roundCounts := map[string]int{}
		badBefore := len(bad)
		for i := range answers {
			a := &answers[i]
			if a.outcome == "ok" {
				switch {
				case strings.HasPrefix(a.kind, "result"):
					if _, queued := entries[a.taskID]; queued || !results[a.taskID] {
						a.outcome, a.body = "answered 200, but the new leader has no result", ""
					}
				case a.kind == "requeue":
					if e, ok := entries[a.taskID]; !ok || e.State != mailbox.TaskQueued {
						a.outcome, a.body = "answered 200, but the new leader has not requeued it", ""
					}
				case a.kind == "lease":
					if e, ok := entries[a.taskID]; !ok || e.State != mailbox.TaskInFlight || e.LeaseID != a.leaseID {
						a.outcome, a.body = "answered 200, but the new leader holds another lease", ""
					} else if leasedBy[a.taskID] != "" {
						a.outcome, a.body = "leased twice", ""
					}
					leasedBy[a.taskID] = a.leaseID
				}
			}
			if counts[a.kind] == nil {
				counts[a.kind] = map[string]int{}
			}
			counts[a.kind][a.outcome]++
			roundCounts[a.outcome]++
			if !a.good() {
				bad = append(bad, *a)
			}
		}
		if roundBad := len(bad) - badBefore; roundBad > 0 && !shownLog {
			// The resumed leader's own account of the first round that
			// went wrong: what it refused, and when it stepped down.
			shownLog = true
			t.Logf("round %d: %d wrong answers; the resumed leader's log:\n%s", round, roundBad, lastLines(old.out.String(), 40))
		}
		// The next round's queue reads stay small: every task of this one
		// is answered and every result drained, through the new leader.
		clearMailbox(t, ctx, nc)
		rounds = append(rounds, fmt.Sprintf("round %d: %d requests; takeover %v after SIGSTOP, paused %v; last answer %v and follower %v after SIGCONT; round %v; %v",
			round, len(reqs), took.Round(time.Millisecond), paused.Round(time.Millisecond), last.Round(time.Millisecond), followed.Round(time.Millisecond),
			time.Since(started).Round(time.Millisecond), roundCounts))
		if ctx.Err() != nil {
			t.Fatalf("round %d: out of time", round)
		}
	}

	// Reported, not asserted: timings on a shared machine are noisy.
	for _, r := range rounds {
		t.Log(r)
	}
	var kinds []string
	for k := range counts {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		var outs []string
		for o, n := range counts[k] {
			outs = append(outs, fmt.Sprintf("%s: %d", o, n))
		}
		sort.Strings(outs)
		t.Logf("%-22s %s", k, strings.Join(outs, ", "))
	}
	// One example of each kind of wrong answer.
	shown := map[string]bool{}
	for _, a := range bad {
		if k := a.kind + "\x00" + a.outcome; !shown[k] {
			shown[k] = true
			t.Errorf("%s (task %s) answered %v after SIGCONT: %s %s", a.kind, a.taskID, a.after.Round(time.Millisecond), a.outcome, a.body)
		}
	}
	if len(bad) > 0 {
		t.Errorf("%d answers of the resumed leader over %d pauses were neither correct nor 503", len(bad), *pgPauses)
	}
	for _, p := range procs {
		p.stop(t)
	}
}

// askPaused writes rq on a connection of its own to the paused instance at
// addr, calls queued once it sits in that instance's socket, and reads the
// answer (after SIGCONT, which continued says when it was sent).
func askPaused(addr string, rq pausedRequest, queued func(), continued func() time.Time) pausedAnswer {
	a := pausedAnswer{kind: rq.kind, taskID: rq.taskID}
	var body io.Reader
	if rq.body != nil {
		b, err := json.Marshal(rq.body)
		if err != nil {
			panic(err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequest(rq.method, "http://"+addr+rq.path, body)
	if err != nil {
		panic(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Close = true
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err == nil {
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(90 * time.Second))
		err = req.Write(conn)
	}
	queued()
	if err != nil {
		a.outcome = "not queued: " + err.Error()
		return a
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	a.after = time.Since(continued())
	if err != nil {
		a.outcome = "no answer: " + err.Error()
		return a
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		a.outcome = "answer cut: " + err.Error()
		return a
	}
	a.body = string(raw)
	if len(a.body) > 300 {
		a.body = a.body[:300] + "..."
	}
	switch resp.StatusCode {
	case http.StatusOK:
		var leased *mailbox.LeasedTask
		a.outcome, leased = rq.judge(raw)
		if leased != nil {
			a.taskID, a.leaseID = leased.Task.ID, leased.Lease.LeaseID
		}
		if a.outcome == "ok" {
			a.body = ""
		}
	case http.StatusServiceUnavailable:
		a.outcome = "503"
	default:
		var e mailbox.ErrorResponse
		code := ""
		if json.Unmarshal(raw, &e) == nil {
			code = " " + e.Code
		}
		a.outcome = fmt.Sprint(resp.StatusCode, code)
	}
	return a
}

// staleQueue says what a queue read misses of what the new leader holds
// ("ok" when nothing): the tasks it queued, the leases it gave, and the
// leases it gave again after requeuing the old leader's.
func staleQueue(r mailbox.QueueResponse, idle, busy []string, busyLeases map[string]string, rereleased []string, preLeases map[string]string) string {
	got := map[string]mailbox.QueueEntry{}
	for _, e := range r.Tasks {
		got[e.Task.ID] = e
	}
	for _, id := range idle {
		if e, ok := got[id]; !ok || e.State != mailbox.TaskQueued {
			return "stale: misses a task queued through the new leader"
		}
	}
	for _, id := range busy {
		if e, ok := got[id]; !ok || e.State != mailbox.TaskInFlight || e.LeaseID != busyLeases[id] {
			return "stale: misses a lease the new leader gave"
		}
	}
	for _, id := range rereleased {
		if e, ok := got[id]; !ok || e.State != mailbox.TaskInFlight || e.LeaseID != preLeases[id] {
			return "stale: shows the old leader's lease of a task leased again"
		}
	}
	return "ok"
}

// sendGroup sends n tasks to recipient through c, with ids of its own so
// that a batch retried after an answer was lost cannot queue a task twice
// (the daemon refuses an id it has, "already sent"). It returns the ids.
func sendGroup(t *testing.T, ctx context.Context, c *client.Client, recipient string, n int) []string {
	t.Helper()
	var ids []string
	var tasks []mailbox.Task
	for i := range n {
		id := uuid.NewString()
		ids = append(ids, id)
		tasks = append(tasks, mailbox.Task{ID: id, Sender: "planner@pg", Recipient: recipient, IntentText: fmt.Sprintf("%s %d", recipient, i)})
	}
	for len(tasks) > 0 {
		chunk := tasks[:min(len(tasks), mailbox.DefaultBatchMax)]
		var err error
		for try := 0; try < 20; try++ {
			var items []mailbox.BatchItem
			if items, err = c.SendBatch(ctx, chunk); err == nil {
				for _, it := range items {
					if !it.OK() && !strings.Contains(it.Message, "was already sent") {
						t.Fatalf("sending to %s: item %d refused: %s %s", recipient, it.Index, it.Code, it.Message)
					}
				}
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("sending to %s through %s: %v", recipient, c.BaseURL(), err)
		}
		tasks = tasks[len(chunk):]
	}
	return ids
}

// leaseGroup leases the tasks ids queued for recipient through c, all of
// them, and returns their lease ids.
func leaseGroup(t *testing.T, ctx context.Context, c *client.Client, recipient string, ids []string) map[string]string {
	t.Helper()
	got, err := c.LeaseN(ctx, recipient, len(ids), 0)
	if err != nil {
		t.Fatalf("leasing for %s through %s: %v", recipient, c.BaseURL(), err)
	}
	leases := map[string]string{}
	for _, l := range got {
		leases[l.Task.ID] = l.Lease.LeaseID
	}
	for _, id := range ids {
		if leases[id] == "" {
			t.Fatalf("leasing for %s through %s: %d leases, task %s not among them", recipient, c.BaseURL(), len(got), id)
		}
	}
	return leases
}

// sendA2A sends a message to a2a@pg through the A2A edge of the instance
// at addr, without blocking, and returns its task's id.
func sendA2A(t *testing.T, ctx context.Context, addr, messageID string) string {
	t.Helper()
	r, err := a2aCall(ctx, "http://"+addr+"/agents/a2a@pg/", nil,
		`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"`+messageID+`","parts":[{"kind":"text","text":"read me"}]},"configuration":{"blocking":false}}}`)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var rep struct {
		Result struct {
			ID string `json:"id"`
		} `json:"result"`
		Error json.RawMessage `json:"error"`
	}
	if err := json.NewDecoder(r.Body).Decode(&rep); err != nil || rep.Result.ID == "" {
		t.Fatalf("A2A message/send through %s: %s %s %v", addr, r.Status, rep.Error, err)
	}
	return rep.Result.ID
}

// lastLines is the end of a log, at most n lines.
func lastLines(log string, n int) string {
	lines := strings.Split(strings.TrimRight(log, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// clearMailbox ends every task of the mailbox through the leader c: each
// lease is answered, each queued task leased and answered, each result
// drained. The queue is then empty.
func clearMailbox(t *testing.T, ctx context.Context, c *client.Client) {
	t.Helper()
	answer := func(leases []mailbox.Result) {
		t.Helper()
		for len(leases) > 0 {
			chunk := leases[:min(len(leases), mailbox.DefaultBatchMax)]
			items, err := c.PostResults(ctx, chunk)
			if err != nil {
				t.Fatalf("clearing the mailbox: %v", err)
			}
			for _, it := range items {
				if !it.OK() {
					t.Fatalf("clearing the mailbox: result %d refused: %s %s", it.Index, it.Code, it.Message)
				}
			}
			leases = leases[len(chunk):]
		}
	}
	done := func(id, lease string) mailbox.Result {
		return mailbox.Result{TaskID: id, LeaseID: lease, Status: mailbox.StatusOK, Content: []mailbox.Content{{Type: mailbox.ContentText, Text: "cleared"}}}
	}
	view, err := c.Queue(ctx, mailbox.QueueFilter{Limit: mailbox.MaxLimit, State: mailbox.TaskInFlight})
	if err != nil {
		t.Fatalf("clearing the mailbox: %v", err)
	}
	var rs []mailbox.Result
	for _, e := range view.Tasks {
		rs = append(rs, done(e.Task.ID, e.LeaseID))
	}
	answer(rs)
	for range 1000 {
		got, err := c.LeaseN(ctx, "", mailbox.DefaultBatchMax, 0)
		if err != nil {
			t.Fatalf("clearing the mailbox: %v", err)
		}
		if len(got) == 0 {
			break
		}
		rs = rs[:0]
		for _, l := range got {
			rs = append(rs, done(l.Task.ID, l.Lease.LeaseID))
		}
		answer(rs)
	}
	for range 1000 {
		got, err := c.DrainN(ctx, "", mailbox.DefaultBatchMax, 0)
		if err != nil {
			t.Fatalf("clearing the mailbox: %v", err)
		}
		if len(got) == 0 {
			break
		}
	}
	view, err = c.Queue(ctx, mailbox.QueueFilter{Limit: mailbox.MaxLimit})
	if err != nil {
		t.Fatalf("clearing the mailbox: %v", err)
	}
	if len(view.Tasks)+len(view.Results) != 0 {
		t.Fatalf("clearing the mailbox: %d tasks and %d results left", len(view.Tasks), len(view.Results))
	}
}
