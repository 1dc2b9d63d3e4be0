package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/store/pgstore/pgtest"
)

var (
	pgConvFailovers    = flag.Int("pg.conv-failovers", 3, "kill -9 failovers of TestPostgresKill9Conversations (.ci/run runs 8)")
	pgConvTLSFailovers = flag.Int("pg.conv-tls-failovers", 2, "kill -9 failovers of TestPostgresKill9ConversationsTLS (.ci/run runs 3)")
)

// TestPostgresKill9Conversations is TestFaultKill9Conversations on three
// `mailroom daemon` processes sharing one PostgreSQL schema: each pair
// talks to an instance of its own (a follower forwards to the leader), the
// leader is killed with SIGKILL mid-conversation, a follower takes over
// and a new instance joins. After every failover the new leader holds
// every acknowledged question and reply, and every instance, followers
// included, holds the same mailbox.
func TestPostgresKill9Conversations(t *testing.T) {
	url := pgtest.URL(t)
	pgKill9Conversations(t, *pgConvFailovers, procTLS{}, url)
}

// TestPostgresKill9ConversationsTLS is TestPostgresKill9Conversations with
// TLS on every hop: the pairs reach their instances over HTTPS, a follower
// forwards questions and replies to the leader over HTTPS verified with
// cluster_ca_file, and every instance reaches a PostgreSQL of the test's
// own that takes TLS only, with sslmode=verify-full.
func TestPostgresKill9ConversationsTLS(t *testing.T) {
	hop := newProcTLS(t)
	url := pgtest.StartTLS(t, hop.ca).URL("localhost", hop.caFile)
	pgKill9Conversations(t, *pgConvTLSFailovers, hop, url, "--cluster-ca-file", hop.caFile)
}

// pgKill9Conversations is the conversation failover suite: three
// instances on the PostgreSQL at url serving as hop says, with extra
// flags, and failovers kills of the leader.
func pgKill9Conversations(t *testing.T, failovers int, hop procTLS, url string, extra ...string) {
	schema := pgtest.Schema(t, url, t.Name())
	pg := append([]string{"--store", "postgres", "--postgres-url", url, "--postgres-schema", schema, "--postgres-campaign-interval", "50ms"}, extra...)
	seed := faultSeed(t)
	rng := rand.New(rand.NewPCG(seed, seed>>2))
	l := newConvLedger(t)
	hc := &http.Client{Transport: hop.secure(&http.Transport{MaxIdleConnsPerHost: 2*convPairs + 2})}
	defer hc.CloseIdleConnections()

	var procs []*proc
	for range 3 {
		procs = append(procs, startProcTLS(t, t.TempDir(), hop, pg...))
	}
	waitLeader := func(what string) *proc { return waitLeaderOf(t, procs, what) }
	check := func(when string) *proc {
		t.Helper()
		leader := waitLeader(when)
		c, err := client.New(leader.url(), client.WithHTTPClient(hc))
		if err != nil {
			t.Fatal(err)
		}
		l.verify(c, leader, when)
		sameMailboxes(t, procs, leader, when)
		if t.Failed() {
			t.Fatalf("%s: stopping at the first failed check (seed %d); the leader's log:\n%s", when, seed, leader.out)
		}
		l.retryUnanswered(c)
		return leader
	}

	for i := range failovers {
		leader := check(fmt.Sprintf("failover %d", i))
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		for n := range convPairs {
			c, err := client.New(procs[n%len(procs)].url(), client.WithHTTPClient(hc))
			if err != nil {
				t.Fatal(err)
			}
			w := &convLoad{c: c, l: l, sender: fmt.Sprintf("conv-s-%d@local", n), recipient: fmt.Sprintf("conv-r-%d@local", n)}
			srng, wrng := rand.New(rand.NewPCG(rng.Uint64(), uint64(n))), rand.New(rand.NewPCG(rng.Uint64(), uint64(n)+convPairs))
			wg.Go(func() { w.converse(ctx, srng) })
			wg.Go(func() { w.worker(ctx, wrng) })
		}
		// The kill comes at a random moment 0.5-1.5 s into the load.
		before := l.acks.Load()
		time.Sleep(500*time.Millisecond + time.Duration(rng.Int64N(int64(time.Second))))
		l.killed.Store(true)
		leader.kill9(t)
		cancel()
		wg.Wait()
		l.killed.Store(false)
		if l.acks.Load() == before {
			t.Errorf("failover %d: no request was acknowledged in the load before the kill; the leader's log:\n%s", i, leader.out)
		}
		for j, p := range procs {
			if p == leader {
				procs = append(procs[:j], procs[j+1:]...)
				break
			}
		}
		procs = append(procs, startProcTLS(t, t.TempDir(), hop, pg...))
	}
	check("after the last failover")
	if l.replies.Load() == 0 || l.questions.Load() == 0 {
		t.Errorf("%d questions and %d replies acknowledged: the load held no conversations", l.questions.Load(), l.replies.Load())
	}
	t.Logf("%d failovers; acknowledged %d sends, %d questions, %d replies (%d retried after a kill, %d duplicates), %d final results; %d reply conflicts; %d tasks waiting summed over the checks",
		failovers, len(l.sent), l.questions.Load(), l.replies.Load(), l.retried.Load(), l.duplicates.Load(), len(l.finished), l.conflicts.Load(), l.waitingSeen)
	for _, p := range procs {
		p.stop(t)
	}
}

// sameMailboxes waits until every instance has applied the leader's last
// event and requires each to hold the leader's tasks and results, byte
// for byte as their event streams give them.
func sameMailboxes(t *testing.T, procs []*proc, leader *proc, when string) {
	t.Helper()
	want := leader.snapshot(t)
	for _, p := range procs {
		if p == leader {
			continue
		}
		deadline := time.Now().Add(30 * time.Second) // a watchdog, not synchronisation
		for {
			h, err := p.health()
			if err == nil && h.LastSeq >= want.Seq {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: instance %s stays at seq %d, the leader is at %d", when, p.addr, h.LastSeq, want.Seq)
			}
			time.Sleep(2 * time.Millisecond)
		}
		got := p.snapshot(t)
		if got.Seq != want.Seq || jsonOf(t, got.Tasks) != jsonOf(t, want.Tasks) || jsonOf(t, got.Results) != jsonOf(t, want.Results) {
			t.Errorf("%s: instance %s at seq %d holds another mailbox than the leader at seq %d", when, p.addr, got.Seq, want.Seq)
		}
	}
}
