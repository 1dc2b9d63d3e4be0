package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/httpapi"
	"github.com/mailroom/mailroom/daemon/store/pgstore/pgtest"
	"github.com/mailroom/mailroom/mailbox"
)

var (
	pgFailovers    = flag.Int("pg.failovers", 20, "kill -9 failovers of TestPostgresFailoverKill9UnderLoad (.ci/run runs 50)")
	pgTLSFailovers = flag.Int("pg.tls-failovers", 3, "kill -9 failovers of TestPostgresFailoverKill9UnderLoadTLS (.ci/run runs 8)")
)

// leaderOf asks each instance's /healthz which one leads; "" while none
// says so.
// waitLeaderOf waits until one of procs leads, and returns it; 60 s
// without one fails the test.
func waitLeaderOf(t *testing.T, procs []*proc, what string) *proc {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second) // a watchdog, not synchronisation
	for {
		if p := leaderOf(procs); p != nil {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no instance leads after 60s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func leaderOf(procs []*proc) *proc {
	for _, p := range procs {
		h, err := p.health()
		if err == nil && h.Store != nil && h.Store.Role == "leader" {
			return p
		}
	}
	return nil
}

// healthOf is the GET /healthz of the instance at addr, over plain HTTP.
func healthOf(addr string) (httpapi.HealthResponse, error) {
	return healthAt(&http.Client{Timeout: 2 * time.Second}, "http://"+addr)
}

// TestPostgresFailoverKill9UnderLoad runs three `mailroom daemon` processes
// on one PostgreSQL schema under load from four writers that spread their
// sends over all three (a follower forwards to the leader). The leader is
// killed with SIGKILL, a follower takes over, a new instance joins, and
// again. At the end every acknowledged send is in the mailbox, once.
func TestPostgresFailoverKill9UnderLoad(t *testing.T) {
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url, t.Name())
	failoverKill9UnderLoad(t, *pgFailovers, procTLS{},
		"--store", "postgres", "--postgres-url", url, "--postgres-schema", schema, "--postgres-campaign-interval", "50ms")
}

// TestPostgresFailoverKill9UnderLoadTLS is TestPostgresFailoverKill9UnderLoad
// with TLS on every hop: the writers reach each instance over HTTPS, a
// follower forwards to the leader over HTTPS verified with
// cluster_ca_file, and every instance reaches a PostgreSQL of the test's
// own that takes TLS only, with sslmode=verify-full. A kill -9 cuts
// HTTP/2 connections carrying many requests at once, and a new leader's
// followers must handshake with it before they forward: nothing
// acknowledged is lost all the same.
func TestPostgresFailoverKill9UnderLoadTLS(t *testing.T) {
	hop := newProcTLS(t)
	url := pgtest.StartTLS(t, hop.ca).URL("localhost", hop.caFile)
	schema := pgtest.Schema(t, url, t.Name())
	failoverKill9UnderLoad(t, *pgTLSFailovers, hop,
		"--store", "postgres", "--postgres-url", url, "--postgres-schema", schema, "--postgres-campaign-interval", "50ms",
		"--cluster-ca-file", hop.caFile)
}

// pgLoad is the failover suite's writers: each sends in turn through
// every live instance until stopped, keeping what was acknowledged.
type pgLoad struct {
	t    *testing.T
	live func() []*proc
	stop atomic.Bool
	wg   sync.WaitGroup

	amu   sync.Mutex
	acked map[string]bool
	sends tally
	// ackedAfter counts sends started and acknowledged; lastAck is when
	// the newest such send was started (unix ns), stored before the count
	// is told.
	ackedAfter tally
	lastAck    atomic.Int64
}

// writer sends through the live instances, one after another, until the
// load stops; a send not acknowledged (the instance died, or the lead is
// moving) is tried again.
func (l *pgLoad) writer(w int) {
	defer l.wg.Done()
	clients := map[string]*client.Client{}
	for n := 0; !l.stop.Load(); n++ {
		ps := l.live()
		p := ps[(w+n)%len(ps)]
		c := clients[p.addr]
		if c == nil {
			var err error
			if c, err = client.New(p.url(), p.hop.clientOptions()...); err != nil {
				l.t.Error(err)
				return
			}
			clients[p.addr] = c
		}
		started := time.Now().UnixNano()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		q, err := c.Send(ctx, mailbox.Task{Sender: fmt.Sprintf("planner%d@pg", w), Recipient: "worker@pg", IntentText: fmt.Sprintf("w%d n%d", w, n)})
		cancel()
		if err != nil {
			time.Sleep(2 * time.Millisecond)
			continue
		}
		l.sends.add()
		if started > l.lastAck.Load() {
			l.lastAck.Store(started)
		}
		l.ackedAfter.add()
		l.amu.Lock()
		l.acked[q.TaskID] = true
		l.amu.Unlock()
	}
}

// failoverKill9UnderLoad is the failover suite: three instances started
// with flags serving as hop says, failovers kills of the leader under
// load, then every acknowledged send checked.
func failoverKill9UnderLoad(t *testing.T, failovers int, hop procTLS, flags ...string) {
	var mu sync.Mutex
	var procs []*proc
	live := func() []*proc {
		mu.Lock()
		defer mu.Unlock()
		return append([]*proc(nil), procs...)
	}
	for range 3 {
		procs = append(procs, startProcTLS(t, t.TempDir(), hop, flags...))
	}
	l := &pgLoad{t: t, live: live, acked: map[string]bool{}}
	for w := range 4 {
		l.wg.Add(1)
		go l.writer(w)
	}

	waitLeader := func(what string) *proc { return waitLeaderOf(t, live(), what) }
	var gaps []time.Duration
	for i := range failovers {
		leader := waitLeader(fmt.Sprintf("failover %d", i))
		fiftyMore(t, &l.sends, fmt.Sprintf("before kill %d", i))
		killed := time.Now()
		leader.kill9(t)
		mu.Lock()
		for j, p := range procs {
			if p == leader {
				procs = append(procs[:j], procs[j+1:]...)
				break
			}
		}
		mu.Unlock()
		waitLeader(fmt.Sprintf("after kill %d", i))
		// Write unavailability: from the kill until a send (a new one,
		// sent after the kill) is acknowledged again.
		after := l.ackedAfter.load()
		if !l.ackedAfter.waitUntil(60*time.Second-time.Since(killed), func(n int64) bool { return n > after && l.lastAck.Load() > killed.UnixNano() }) {
			t.Fatalf("failover %d: no send acknowledged within 60s of the kill", i)
		}
		gaps = append(gaps, time.Duration(l.lastAck.Load()-killed.UnixNano()))
		joined := startProcTLS(t, t.TempDir(), hop, flags...)
		mu.Lock()
		procs = append(procs, joined)
		mu.Unlock()
	}
	fiftyMore(t, &l.sends, "after the last failover")
	l.stop.Store(true)
	l.wg.Wait()
	leader := waitLeader("at the end")
	l.throughFollowers(leader)
	l.check(leader, failovers)
	sort.Slice(gaps, func(i, j int) bool { return gaps[i] < gaps[j] })
	// Reported, not asserted: this machine is shared and timing is noisy.
	t.Logf("%d acknowledged sends through 3 instances survived %d kill -9 failovers; from the kill to the first send acknowledged after it: min %v, median %v, max %v",
		len(l.acked), len(gaps), gaps[0], gaps[len(gaps)/2], gaps[len(gaps)-1])
	for _, p := range live() {
		p.stop(t)
	}
}

// throughFollowers sends one task through each live instance but leader
// and requires it acknowledged: the writers retry what an instance does
// not acknowledge, so without this a follower that could not forward to
// the leader (over HTTPS, the leader's certificate verified) would go
// unseen.
func (l *pgLoad) throughFollowers(leader *proc) {
	t := l.t
	t.Helper()
	for _, p := range l.live() {
		if p == leader {
			continue
		}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		q, err := p.client(t).Send(ctx, mailbox.Task{Sender: "planner@pg", Recipient: "worker@pg", IntentText: "through the follower at " + p.addr})
		cancel()
		if err != nil {
			t.Fatalf("a send through the follower at %s: %v; its log:\n%s", p.url(), err, p.out)
		}
		l.acked[q.TaskID] = true
	}
}

// check reads the mailbox from leader: every acknowledged send is in it,
// once, and every live instance holds the same.
func (l *pgLoad) check(leader *proc, failovers int) {
	t := l.t
	t.Helper()
	snap := leader.snapshot(t)
	seen := map[string]int{}
	for _, tr := range snap.Tasks {
		seen[tr.Task.ID]++
	}
	missing := 0
	for id := range l.acked {
		if seen[id] == 0 {
			missing++
			if missing <= 5 {
				t.Errorf("acknowledged task %s is not in the mailbox after %d failovers", id, failovers)
			}
		}
	}
	for id, n := range seen {
		if n > 1 {
			t.Errorf("task %s is in the mailbox %d times", id, n)
		}
	}
	if missing > 0 {
		t.Fatalf("%d of %d acknowledged sends lost", missing, len(l.acked))
	}
	// Every instance holds the same mailbox.
	for _, p := range l.live() {
		deadline := time.Now().Add(30 * time.Second)
		for {
			h, err := p.health()
			if err == nil && h.LastSeq == snap.Seq {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("instance %s stays at seq %d, the leader is at %d", p.addr, h.LastSeq, snap.Seq)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// stream opens the event stream of the instance at addr from after.
func stream(t *testing.T, ctx context.Context, addr string, after uint64) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/a2a/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Last-Event-ID", strconv.FormatUint(after, 10))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /a2a/events on %s: %s", addr, resp.Status)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// TestPostgresInstancesStreamTheSameEvents runs three `mailroom daemon`
// processes on one schema with writers spread over them and an event
// stream on each: the three streams are the same events, byte for byte,
// with the same ids; and a stream resumed on one instance from an id
// another gave out continues without a gap or a repeat.
func TestPostgresInstancesStreamTheSameEvents(t *testing.T) {
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url, t.Name())
	pg := []string{"--store", "postgres", "--postgres-url", url, "--postgres-schema", schema, "--postgres-campaign-interval", "50ms"}
	var procs []*proc
	for range 3 {
		procs = append(procs, startProc(t, t.TempDir(), pg...))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	deadline := time.Now().Add(30 * time.Second)
	for leaderOf(procs) == nil {
		if time.Now().After(deadline) {
			t.Fatal("no instance leads")
		}
		time.Sleep(5 * time.Millisecond)
	}
	base, err := healthOf(procs[0].addr)
	if err != nil {
		t.Fatal(err)
	}
	from := base.LastSeq
	// mailroom status says which instance answered and its part.
	leader := leaderOf(procs)
	for _, p := range procs {
		out := mustCLI(t, p.addr, "status")
		want := "this instance (http://" + p.addr + ") follows http://" + leader.addr
		if p == leader {
			want = "this instance (http://" + p.addr + ") leads, epoch"
		}
		if first, _, _ := strings.Cut(out, "\n"); !strings.Contains(first, want) {
			t.Errorf("mailroom status on %s begins %q, want it to say %q", p.addr, first, want)
		}
		var rep statusReport
		if err := json.Unmarshal([]byte(mustCLI(t, p.addr, "status", "--json")), &rep); err != nil || rep.Store == nil || (rep.Store.Role == "leader") != (p == leader) {
			t.Errorf("mailroom status --json on %s: store %+v, %v", p.addr, rep.Store, err)
		}
	}
	streams := make([]*http.Response, len(procs))
	for i, p := range procs {
		streams[i] = stream(t, ctx, p.addr, from)
	}

	const writers, each = 4, 40
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range each {
				p := procs[(w+n)%len(procs)]
				c, err := client.New(p.addr)
				if err != nil {
					t.Error(err)
					return
				}
				if _, err := c.Send(ctx, mailbox.Task{Sender: fmt.Sprintf("planner%d@pg", w), Recipient: "worker@pg", IntentText: fmt.Sprintf("w%d n%d", w, n)}); err != nil {
					t.Errorf("send through %s: %v", p.addr, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	const n = writers * each
	var ref []sseEvent
	for i, resp := range streams {
		got := readSSE(t, resp, n)
		if len(got) != n {
			t.Fatalf("instance %d streamed %d events, want %d", i, len(got), n)
		}
		for j, ev := range got {
			if ev.id != from+uint64(j)+1 {
				t.Fatalf("instance %d: event %d has id %d, want %d", i, j, ev.id, from+uint64(j)+1)
			}
		}
		if i == 0 {
			ref = got
			continue
		}
		for j := range got {
			if string(got[j].data) != string(ref[j].data) {
				t.Fatalf("instance %d streams event %d as\n%s\ninstance 0 as\n%s", i, got[j].id, got[j].data, ref[j].data)
			}
		}
	}
	// Resume from ids one instance gave out, on another.
	rng := rand.New(rand.NewPCG(1, 2))
	for range 10 {
		at := rng.IntN(n)
		p := procs[rng.IntN(len(procs))]
		got := readSSE(t, stream(t, ctx, p.addr, ref[at].id), n-at-1)
		if len(got) != n-at-1 {
			t.Fatalf("resumed on %s after id %d: %d events, want %d", p.addr, ref[at].id, len(got), n-at-1)
		}
		for j, ev := range got {
			if want := ref[at+1+j]; ev.id != want.id || string(ev.data) != string(want.data) {
				t.Fatalf("resumed on %s after id %d: event %d is id %d, want id %d with the same bytes", p.addr, ref[at].id, j, ev.id, want.id)
			}
		}
	}
	for _, p := range procs {
		p.stop(t)
	}
}

// TestPostgresAPausedLeaderNeverAppendsAgain stops the leader with SIGSTOP
// for longer than postgres_session_timeout: PostgreSQL ends its session,
// another instance leads and writes go on through the others. After
// SIGCONT the old leader finds itself fenced: it forwards or refuses, and
// no event of its epoch follows the takeover.
func TestPostgresAPausedLeaderNeverAppendsAgain(t *testing.T) {
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url, t.Name())
	pg := []string{"--store", "postgres", "--postgres-url", url, "--postgres-schema", schema,
		"--postgres-campaign-interval", "50ms", "--postgres-session-timeout", "1s"}
	var procs []*proc
	for range 3 {
		procs = append(procs, startProc(t, t.TempDir(), pg...))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	var old *proc
	waitWithin(t, "a leader", func() bool { old = leaderOf(procs); return old != nil })
	h, err := healthOf(old.addr)
	if err != nil {
		t.Fatal(err)
	}
	oldEpoch := h.Store.Epoch
	send := func(p *proc, what string) error {
		c, err := client.New(p.addr)
		if err != nil {
			t.Fatal(err)
		}
		sctx, scancel := context.WithTimeout(ctx, 5*time.Second)
		defer scancel()
		_, err = c.Send(sctx, mailbox.Task{Sender: "planner@pg", Recipient: "worker@pg", IntentText: what})
		return err
	}
	for i := range 10 {
		if err := send(procs[i%3], fmt.Sprint("before ", i)); err != nil {
			t.Fatal(err)
		}
	}

	if err := old.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	var others []*proc
	for _, p := range procs {
		if p != old {
			others = append(others, p)
		}
	}
	var next *proc
	waitWithin(t, "a new leader while the old one is stopped", func() bool { next = leaderOf(others); return next != nil })
	for i := range 10 {
		// A follower that still forwarded to the stopped leader ends that
		// write with a 503 once it sees the new one; a client retries.
		var err error
		for range 20 {
			if err = send(others[i%2], fmt.Sprint("while stopped ", i)); err == nil {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("a write through the others while the leader is stopped: %v", err)
		}
	}

	if err := old.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	// Writes through every instance, the woken one included: it either
	// forwards them to the new leader or refuses them, never writes them.
	for i := range 30 {
		_ = send(procs[i%3], fmt.Sprint("after ", i))
	}
	waitWithin(t, "the old leader to follow", func() bool {
		h, err := healthOf(old.addr)
		return err == nil && h.Store != nil && h.Store.Role == "follower"
	})
	after := int64(0)
	ctxq, cq := context.WithTimeout(ctx, 10*time.Second)
	defer cq()
	conn, err := pgx.Connect(ctxq, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := conn.QueryRow(ctxq, `SELECT count(*) FROM `+schema+`.events WHERE epoch = $1 AND seq > (SELECT min(seq) FROM `+schema+`.events WHERE epoch > $1)`, oldEpoch).Scan(&after); err != nil {
		t.Fatal(err)
	}
	if after != 0 {
		t.Fatalf("%d events of the paused leader's epoch %d follow the takeover", after, oldEpoch)
	}
	for _, p := range procs {
		p.stop(t)
	}
}

// fiftyMore returns once fifty more sends are acknowledged, the load
// running on; 60 s without them fails the test.
func fiftyMore(t *testing.T, sends *tally, when string) {
	t.Helper()
	base := sends.load()
	if !sends.waitUntil(60*time.Second, func(n int64) bool { return n >= base+50 }) {
		t.Fatalf("%s: %d sends acknowledged in 60s, want 50", when, sends.load()-base)
	}
}

// waitWithin waits until ok, polling, and fails the test after 60 s
// saying what it waited for.
func waitWithin(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 60s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
