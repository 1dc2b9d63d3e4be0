package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
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
	pushKills    = flag.Int("push.kills", 3, "kill -9 rounds of TestFaultKill9PushNotifications (.ci/run runs 8)")
	pushTLSKills = flag.Int("push.tls-kills", 2, "kill -9 rounds of TestFaultKill9PushNotificationsTLS (.ci/run runs 4)")
)

const (
	pushAgent = "coder@local"
	pushToken = "tok-e2e"
)

// pushLedger is what the push suite's callers were told and what its
// receiver got, across every kill.
type pushLedger struct {
	ledgerBase

	sent   map[string]bool // tasks whose send with a config was acknowledged
	posted map[string]bool // tasks whose result was acknowledged
	// byID is the task and state each notification id was received with;
	// firsts is, per task, the ids in the order first received.
	byID     map[string]string
	firsts   map[string][]string
	received int
	dupes    int

	acks tally
}

func newPushLedger(t *testing.T) *pushLedger {
	return &pushLedger{ledgerBase: ledgerBase{t: t}, sent: map[string]bool{}, posted: map[string]bool{}, byID: map[string]string{}, firsts: map[string][]string{}}
}

// receiver is the webhook: it answers 2xx after a short random delay (so
// kills land between its answer and the acknowledgement's sync), and 500
// one time in eight (so retries are under way when kills land). Under
// hop's TLS it serves HTTPS with a certificate of hop's CA.
func (l *pushLedger) receiver(seed uint64, hop procTLS) *httptest.Server {
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(seed, seed>>5))
	return hop.serve(l.t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var task struct {
			ID     string `json:"id"`
			Status struct {
				State string `json:"state"`
			} `json:"status"`
		}
		if err := json.NewDecoder(r.Body).Decode(&task); err != nil || task.ID == "" {
			l.t.Errorf("a notification that is no v0.3 Task: %v", err)
		}
		id := r.Header.Get("Mailroom-Notification-Id")
		if r.Header.Get("X-A2A-Notification-Token") != pushToken {
			l.t.Errorf("notification %s of task %s came with token %q, want its config's", id, task.ID, r.Header.Get("X-A2A-Notification-Token"))
		}
		mu.Lock()
		delay, fail := time.Duration(rng.IntN(20))*time.Millisecond, rng.IntN(8) == 0
		mu.Unlock()
		time.Sleep(delay) // the receiver's own pace, not synchronisation
		if fail {
			http.Error(w, "not now", http.StatusInternalServerError)
			return
		}
		l.do(func() {
			l.received++
			what := task.ID + " " + task.Status.State
			if was, seen := l.byID[id]; seen {
				l.dupes++
				if was != what {
					l.t.Errorf("notification %s was %q and then %q: a duplicate must be the same notification", id, was, what)
				}
				return
			}
			l.byID[id] = what
			l.firsts[task.ID] = append(l.firsts[task.ID], id)
		})
	}))
}

// load sends A2A tasks with a push config (non-blocking) and works them
// through the native API until ctx ends. At most 8 of its own sends are
// open at once: a task leased when an earlier daemon was killed stays in
// flight (leases are never redelivered), and must not count against the
// next load, or after enough kills nothing would be sent.
func (l *pushLedger) load(ctx context.Context, base string, c *client.Client, hc *http.Client, hook string) (wait func()) {
	var wg sync.WaitGroup
	var sentHere, postedHere atomic.Int64
	wg.Go(func() {
		for ctx.Err() == nil {
			if sentHere.Load()-postedHere.Load() > 8 {
				select {
				case <-ctx.Done():
				case <-time.After(5 * time.Millisecond):
				}
				continue
			}
			id, err := l.sendWithConfig(ctx, base, hc, uuid.NewString(), hook)
			if err != nil {
				l.failed(ctx, "send", err)
				return
			}
			l.do(func() { l.sent[id] = true })
			sentHere.Add(1)
			l.acks.add()
		}
	})
	wg.Go(func() {
		for ctx.Err() == nil {
			got, err := c.LeaseN(ctx, pushAgent, 4, 100*time.Millisecond)
			if err != nil {
				l.failed(ctx, "lease", err)
				return
			}
			for _, lt := range got {
				r := mailbox.Result{TaskID: lt.Task.ID, LeaseID: lt.Lease.LeaseID, Status: mailbox.StatusOK, Content: []mailbox.Content{{Type: mailbox.ContentText, Text: "done"}}}
				if err := c.PostResult(ctx, r); err != nil {
					l.failed(ctx, "post", err)
					return
				}
				l.do(func() { l.posted[lt.Task.ID] = true })
				postedHere.Add(1)
				l.acks.add()
			}
		}
	})
	return wg.Wait
}

// sendWithConfig sends a v0.3 message with a push config inside it and
// returns the task's id once the send is acknowledged.
func (l *pushLedger) sendWithConfig(ctx context.Context, base string, hc *http.Client, msg, hook string) (string, error) {
	call := func(body string) (json.RawMessage, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base, strings.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		var out struct {
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			return nil, err
		}
		if out.Error != nil {
			return nil, fmt.Errorf("%s", out.Error)
		}
		return out.Result, nil
	}
	res, err := call(`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"` + msg +
		`","parts":[{"kind":"text","text":"work"}]},"configuration":{"blocking":false,"pushNotificationConfig":{"url":"` + hook + `","token":"` + pushToken + `"}}}}`)
	if err != nil {
		return "", err
	}
	var task struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(res, &task); err != nil || task.ID == "" {
		return "", fmt.Errorf("the send answered %s", res)
	}
	return task.ID, nil
}

// verify waits until the daemon delivered everything, then checks what
// the receiver got: every acknowledged send and result told, in order per
// task, each duplicate the same notification.
func (l *pushLedger) verify(ctx context.Context, c *client.Client) {
	l.t.Helper()
	for {
		list, err := c.Deliveries(ctx, false)
		if err != nil {
			l.t.Fatalf("listing the outbox: %v", err)
		}
		if len(list.Notifications) == 0 {
			break
		}
		for _, n := range list.Notifications {
			if n.Dead {
				l.t.Fatalf("notification %s was dead-lettered: %+v", n.ID, n)
			}
		}
		select {
		case <-ctx.Done():
			l.t.Fatalf("the outbox never emptied: %d left, the first %+v", len(list.Notifications), list.Notifications[0])
		case <-time.After(20 * time.Millisecond):
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	states := map[string]map[string]bool{}
	for _, what := range l.byID {
		task, state, _ := strings.Cut(what, " ")
		if states[task] == nil {
			states[task] = map[string]bool{}
		}
		states[task][state] = true
	}
	for id := range l.sent {
		// The config set with the token tells its receiver of the task
		// as it stood: submitted, or further along.
		if len(states[id]) == 0 {
			l.t.Errorf("task %s: its send with a config was acknowledged, and its receiver heard nothing", id)
		}
	}
	for id := range l.posted {
		if !states[id]["completed"] {
			l.t.Errorf("task %s: its result was acknowledged, and its receiver was never told it completed (got %v)", id, states[id])
		}
	}
	for task, ids := range l.firsts {
		for i := 1; i < len(ids); i++ {
			if seqOf(ids[i]) < seqOf(ids[i-1]) {
				l.t.Errorf("task %s: notification %s was first received after %s: out of order (%v)", task, ids[i], ids[i-1], ids)
			}
		}
	}
}

func seqOf(id string) uint64 {
	s, _, _ := strings.Cut(id, "-")
	n, _ := strconv.ParseUint(s, 10, 64)
	return n
}

// TestFaultKill9PushNotifications kills the real daemon with SIGKILL while
// A2A tasks with push configs are sent, worked and their notifications
// delivered to a receiver that is slow and sometimes fails, then restarts
// it on the same data dir. At the end, with the outbox empty: every
// acknowledged send and result was told to the receiver, a task's
// notifications were first received in order, and every notification
// received twice was the same one under the same id.
func TestFaultKill9PushNotifications(t *testing.T) { kill9Push(t, *pushKills, procTLS{}) }

// TestFaultKill9PushNotificationsTLS is TestFaultKill9PushNotifications
// with TLS on both of its hops: the daemon serves a certificate of the
// test's CA to the callers and workers (HTTPS, HTTP/2), and the receiver
// serves one of the same CA, which the daemon trusts through
// push_ca_file. A kill cuts deliveries mid-handshake as well as
// mid-request, and still every acknowledged send and result is told, in
// order per task, a duplicate under the same id.
func TestFaultKill9PushNotificationsTLS(t *testing.T) { kill9Push(t, *pushTLSKills, newProcTLS(t)) }

// kill9Push is the push suite: kills kills of the daemon serving as hop
// says, notifying a receiver that serves as hop says too.
func kill9Push(t *testing.T, kills int, hop procTLS) {
	seed := faultSeed(t)
	rng := rand.New(rand.NewPCG(seed, seed>>3))
	dir := t.TempDir()
	l := newPushLedger(t)
	rcv := l.receiver(seed, hop)
	defer rcv.Close()
	hook := rcv.URL + "/hook"
	flags := append([]string{"--push-retry-max", "50ms", "--push-max-attempts", "1000"}, hop.pushFlags()...)
	hc := &http.Client{Transport: hop.secure(&http.Transport{MaxIdleConnsPerHost: 4})}
	defer hc.CloseIdleConnections()
	for i := range kills {
		p := startProcTLS(t, dir, hop, flags...)
		c, err := client.New(p.url(), client.WithHTTPClient(hc))
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if _, err := c.RegisterAgent(t.Context(), pushAgent, mailbox.AgentCard{Name: "Coder"}); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithCancel(t.Context())
		wait := l.load(ctx, p.url()+"/agents/"+pushAgent+"/", c, hc, hook)
		// The kill comes under load: after the restarted daemon has
		// acknowledged something (on a slow machine, replaying the outbox
		// and starting the notifier may take longer than the random delay).
		l.waitForAck(t, fmt.Sprintf("kill %d", i), p)
		p.killDuringLoad(t, rng, fmt.Sprintf("kill %d", i), &l.killed, cancel, wait)
		if t.Failed() {
			t.Fatalf("kill %d failed (seed %d)", i, seed)
		}
	}
	p := startProcTLS(t, dir, hop, flags...)
	c, err := client.New(p.url(), client.WithHTTPClient(hc))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	l.verify(ctx, c)
	if t.Failed() {
		t.Fatalf("at the end (seed %d); the daemon's log:\n%s", seed, p.out)
	}
	t.Logf("%d kills: %d sends and %d results acknowledged, %d notifications received, %d of them again (same id)", kills, len(l.sent), len(l.posted), l.received, l.dupes)
	p.stop(t)
}

// waitForAck waits until the load has had something acknowledged by p
// since the call, failing the test if nothing is within a generous bound.
func (l *pushLedger) waitForAck(t *testing.T, what string, p *proc) {
	t.Helper()
	before := l.acks.load()
	if !l.acks.waitUntil(30*time.Second, func(n int64) bool { return n > before }) {
		t.Errorf("%s: nothing was acknowledged in 30s of load; the daemon's log:\n%s", what, p.out)
	}
}
