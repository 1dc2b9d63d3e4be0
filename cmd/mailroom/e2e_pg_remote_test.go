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
)

var (
	pgRemoteFailovers    = flag.Int("pg.remote-failovers", 3, "kill -9 failovers of TestPostgresKill9RemoteDelivery (.ci/run runs 8)")
	pgRemoteTLSFailovers = flag.Int("pg.remote-tls-failovers", 2, "kill -9 failovers of TestPostgresKill9RemoteDeliveryTLS (.ci/run runs 3)")
)

// TestPostgresKill9RemoteDelivery is TestFaultKill9RemoteDelivery on
// three `mailroom daemon` processes sharing one PostgreSQL schema: only
// the leader delivers to the remote agent, the senders spread over every
// instance (a follower forwards to the leader), and the leader is killed
// with SIGKILL mid-delivery; a follower takes over and a new instance
// joins. After every failover the new leader holds every acknowledged
// send, follows the tasks the remote accepted under their leases (the
// remote receives no non-idempotent task twice), sends the idempotent
// ones again and leaves the rest unknown for the operator; every instance
// holds the same mailbox. At the end the operator force-errors the
// unknown ones and every task ends. Like TestFaultKill9RemoteDelivery it
// runs against the a2a-go v0.3 remote and the @a2a-js/sdk 1.3.0 one over
// v1.0, which the new leader asks about what the old one may have sent.
func TestPostgresKill9RemoteDelivery(t *testing.T) {
	url := pgtest.URL(t)
	t.Run("a2a-go v0.3", func(t *testing.T) {
		pgKill9Remote(t, *pgRemoteFailovers, procTLS{}, url, func(seed uint64) *e2eRemote { return startE2ERemote(t, seed) })
	})
	t.Run("js v1.0", func(t *testing.T) {
		pgKill9Remote(t, *pgRemoteFailovers, procTLS{}, url, func(uint64) *e2eRemote { return startE2ENodeRemote(t) })
	})
}

// TestPostgresKill9RemoteDeliveryTLS is TestPostgresKill9RemoteDelivery
// against the a2a-go v0.3 remote with TLS on the hops it adds: the senders
// reach every instance over HTTPS, a follower forwards to the leader over
// HTTPS verified with cluster_ca_file, and the instances reach a
// PostgreSQL of the test's own that takes TLS only (verify-full).
func TestPostgresKill9RemoteDeliveryTLS(t *testing.T) {
	hop := newProcTLS(t)
	url := pgtest.StartTLS(t, hop.ca).URL("localhost", hop.caFile)
	pgKill9Remote(t, *pgRemoteTLSFailovers, hop, url, func(seed uint64) *e2eRemote { return startE2ERemote(t, seed) }, "--cluster-ca-file", hop.caFile)
}

// pgKill9Remote is the remote delivery failover suite: three instances on
// the PostgreSQL at url serving as hop says, with extra flags, failovers
// kills of the leader, delivering to the remote startRemote starts.
func pgKill9Remote(t *testing.T, failovers int, hop procTLS, url string, startRemote func(seed uint64) *e2eRemote, extra ...string) {
	schema := pgtest.Schema(t, url, t.Name())
	seed := faultSeed(t)
	rng := rand.New(rand.NewPCG(seed, seed>>4))
	remote := startRemote(seed)
	flags := append(append(remoteConfig(t), "--store", "postgres", "--postgres-url", url, "--postgres-schema", schema, "--postgres-campaign-interval", "50ms"), extra...)
	l := newRemoteLedger(t)
	hc := &http.Client{Transport: hop.secure(&http.Transport{MaxIdleConnsPerHost: remoteSends + 2})}
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
	var killedMs int64
	check := func(when string) (*proc, *client.Client) {
		t.Helper()
		leader := waitLeader(when)
		c := clientOf(leader)
		l.verify(c, leader, remote, killedMs, when)
		sameRemoteMailboxes(t, procs, leader, when)
		if t.Failed() {
			t.Fatalf("%s: stopping at the first failed check (seed %d); the leader's log:\n%s", when, seed, leader.out)
		}
		return leader, c
	}

	registerRemote(t, clientOf(waitLeader("registering the remote")), remote)
	for i := range failovers {
		leader, _ := check(fmt.Sprintf("failover %d", i))
		var clients []*client.Client
		for _, p := range procs {
			clients = append(clients, clientOf(p))
		}
		ctx, cancel := context.WithCancel(t.Context())
		wait := l.remoteLoad(ctx, clients, rng)
		before := l.acks.Load()
		leader.killDuringLoad(t, rng, fmt.Sprintf("failover %d", i), &l.killed, cancel, wait)
		killedMs = time.Now().UnixMilli()
		if l.acks.Load() == before {
			t.Errorf("failover %d: no request was acknowledged in the load before the kill; the leader's log:\n%s", i, leader.out)
		}
		for j, p := range procs {
			if p == leader {
				procs = append(procs[:j], procs[j+1:]...)
				break
			}
		}
		procs = append(procs, startProcTLS(t, t.TempDir(), hop, flags...))
	}
	leader, c := check("after the last failover")
	l.settle(c, leader, remote)
	if t.Failed() {
		t.Fatalf("at the end (seed %d); the leader's log:\n%s", seed, leader.out)
	}
	t.Logf("%s: %d failovers; %s", remote.name, failovers, l.summary())
	for _, p := range procs {
		p.stop(t)
	}
}

// sameRemoteMailboxes is sameMailboxes while the leader's dispatcher
// still writes (acceptances and results of the deliveries it recovered):
// it compares each instance's mailbox with the leader's at the same
// event, reading both again until they stand at one.
func sameRemoteMailboxes(t *testing.T, procs []*proc, leader *proc, when string) {
	t.Helper()
	for _, p := range procs {
		if p == leader {
			continue
		}
		deadline := time.Now().Add(60 * time.Second) // a watchdog, not synchronisation
		for {
			want, got := leader.snapshot(t), p.snapshot(t)
			if got.Seq == want.Seq {
				if jsonOf(t, got.Tasks) != jsonOf(t, want.Tasks) || jsonOf(t, got.Results) != jsonOf(t, want.Results) {
					t.Errorf("%s: instance %s at seq %d holds another mailbox than the leader", when, p.addr, got.Seq)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: instance %s and the leader never stood at the same event in 60s (last %d and %d)", when, p.addr, got.Seq, want.Seq)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}
