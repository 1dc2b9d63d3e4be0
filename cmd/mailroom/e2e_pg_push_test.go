package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/store/pgstore/pgtest"
	"github.com/mailroom/mailroom/mailbox"
)

var (
	pgPushFailovers    = flag.Int("pg.push-failovers", 3, "kill -9 failovers of TestPostgresKill9PushNotifications (.ci/run runs 6)")
	pgPushTLSFailovers = flag.Int("pg.push-tls-failovers", 2, "kill -9 failovers of TestPostgresKill9PushNotificationsTLS (.ci/run runs 3)")
)

// TestPostgresKill9PushNotifications is TestFaultKill9PushNotifications
// on three `mailroom daemon` processes sharing one PostgreSQL schema: the
// leader, the only one that delivers, is killed with SIGKILL while
// notifications go out; a follower takes over and delivers what the
// outbox holds, and a new instance joins. At the end every acknowledged
// send and result was told, in order per task, and every notification
// received twice was the same one under the same id.
func TestPostgresKill9PushNotifications(t *testing.T) {
	pgKill9Push(t, *pgPushFailovers, procTLS{}, pgtest.URL(t))
}

// TestPostgresKill9PushNotificationsTLS is TestPostgresKill9PushNotifications
// with TLS on every hop: callers and workers reach the leader over HTTPS,
// followers verify it with cluster_ca_file, the instances reach a
// PostgreSQL of the test's own that takes TLS only (verify-full), and
// each leader in turn notifies a receiver serving a certificate of the
// test's CA, trusted through push_ca_file.
func TestPostgresKill9PushNotificationsTLS(t *testing.T) {
	hop := newProcTLS(t)
	url := pgtest.StartTLS(t, hop.ca).URL("localhost", hop.caFile)
	pgKill9Push(t, *pgPushTLSFailovers, hop, url, "--cluster-ca-file", hop.caFile)
}

// pgKill9Push is the push failover suite: three instances on the
// PostgreSQL at url serving as hop says, with extra flags, failovers
// kills of the leader, and a receiver serving as hop says.
func pgKill9Push(t *testing.T, failovers int, hop procTLS, url string, extra ...string) {
	schema := pgtest.Schema(t, url, t.Name())
	seed := faultSeed(t)
	rng := rand.New(rand.NewPCG(seed, seed>>4))
	l := newPushLedger(t)
	rcv := l.receiver(seed, hop)
	defer rcv.Close()
	hook := rcv.URL + "/hook"
	flags := []string{"--push-retry-max", "50ms", "--push-max-attempts", "1000",
		"--store", "postgres", "--postgres-url", url, "--postgres-schema", schema, "--postgres-campaign-interval", "50ms"}
	flags = append(append(flags, hop.pushFlags()...), extra...)
	hc := &http.Client{Transport: hop.secure(&http.Transport{MaxIdleConnsPerHost: 4})}
	defer hc.CloseIdleConnections()

	var procs []*proc
	for range 3 {
		procs = append(procs, startProcTLS(t, t.TempDir(), hop, flags...))
	}
	waitLeader := func(what string) *proc { return waitLeaderOf(t, procs, what) }
	clientOf := func(p *proc) *client.Client {
		c, err := client.New(p.url(), client.WithHTTPClient(hc))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if _, err := clientOf(waitLeader("registering the agent")).RegisterAgent(t.Context(), pushAgent, mailbox.AgentCard{Name: "Coder"}); err != nil {
		t.Fatal(err)
	}
	for i := range failovers {
		leader := waitLeader(fmt.Sprintf("failover %d", i))
		ctx, cancel := context.WithCancel(t.Context())
		wait := l.load(ctx, leader.url()+"/agents/"+pushAgent+"/", clientOf(leader), hc, hook)
		l.waitForAck(t, fmt.Sprintf("failover %d", i), leader)
		leader.killDuringLoad(t, rng, fmt.Sprintf("failover %d", i), &l.killed, cancel, wait)
		if t.Failed() {
			t.Fatalf("failover %d failed (seed %d)", i, seed)
		}
		for j, p := range procs {
			if p == leader {
				procs = append(procs[:j], procs[j+1:]...)
				break
			}
		}
		procs = append(procs, startProcTLS(t, t.TempDir(), hop, flags...))
	}
	leader := waitLeader("after the last failover")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	l.verify(ctx, clientOf(leader))
	if t.Failed() {
		t.Fatalf("at the end (seed %d); the leader's log:\n%s", seed, leader.out)
	}
	t.Logf("%d failovers: %d sends and %d results acknowledged, %d notifications received, %d of them again (same id)", failovers, len(l.sent), len(l.posted), l.received, l.dupes)
	for _, p := range procs {
		p.stop(t)
	}
}
