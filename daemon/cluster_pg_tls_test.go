package daemon_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/daemon/store/pgstore/pgtest"
	"github.com/mailroom/mailroom/internal/testpki"
	"github.com/mailroom/mailroom/mailbox"
)

// TestAClusterWithTLSOnEveryHop is the multi-instance deployment with
// every hop protected: clients reach an instance over HTTPS (the Go
// client trusting the cluster's CA), a follower forwards to the leader
// over HTTPS verified with cluster_ca_file and asserts its callers with
// cluster_secret_file, and every instance reaches PostgreSQL with
// sslmode=verify-full (a server that takes TLS connections only, of
// another CA). A task goes round through the follower; the leader stops
// and the follower takes over; the task is finished through the new
// leader, and the old leader, back as a follower, forwards to it.
func TestAClusterWithTLSOnEveryHop(t *testing.T) {
	pg := pgtest.StartTLS(t, testpki.NewCA(t, "database CA"))
	postgresURL := pg.URL("localhost", pg.CAFile)
	dir := t.TempDir()
	ca := testpki.NewCA(t, "cluster CA")
	caFile := ca.WriteFile(t, dir, "cluster-ca.crt")
	secretFile := filepath.Join(dir, "cluster-secret")
	if err := os.WriteFile(secretFile, []byte("0123456789abcdef0123456789abcdef-cluster\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens := []auth.Token{
		{Principal: "planner@pg", Token: "planner-token", Caps: []string{auth.CapSendPrefix + "worker@pg", auth.CapDrain}},
		{Principal: "worker@pg", Token: "worker-token", Caps: []string{auth.CapRecv, auth.CapRespondPrefix + "planner@pg"}},
	}
	instance := daemontest.Options{TLS: true, CA: ca, Tokens: tokens, Config: func(c *config.Config) {
		onTLSPostgres(postgresURL, "mrt_cluster")(c)
		c.ClusterCAFile, c.ClusterSecretFile = caFile, secretFile
	}}
	a := daemontest.Start(t, instance)
	waitRoleTLS(t, a, "leader")
	b := daemontest.Start(t, instance)
	waitRoleTLS(t, b, "follower")
	as := func(d *daemontest.Daemon, token string) *client.Client {
		c, err := client.New(d.Addr(), client.WithTLS(d.TLSConfig()), client.WithToken(token))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	// Through the follower: the send and the lease are the leader's.
	q, err := as(b, "planner-token").Send(ctx, mailbox.Task{Sender: "planner@pg", Recipient: "worker@pg", IntentText: "round the cluster"})
	if err != nil {
		t.Fatalf("send through the follower: %v", err)
	}
	task, lease, err := as(b, "worker-token").Lease(ctx, "worker@pg")
	if err != nil || task == nil || task.ID != q.TaskID {
		t.Fatalf("lease through the follower = %v, %v, %v", task, lease, err)
	}

	// The leader goes; the follower leads, over TLS, with the lease.
	a.Stop()
	waitRoleTLS(t, b, "leader")
	if err := as(b, "worker-token").PostResult(ctx, mailbox.Result{TaskID: q.TaskID, LeaseID: lease.LeaseID, Status: mailbox.StatusOK,
		Content: []mailbox.Content{}}); err != nil {
		t.Fatalf("the result to the new leader: %v", err)
	}

	// The old leader comes back as a follower and forwards to the new one.
	a.Restart()
	waitRoleTLS(t, a, "follower")
	r, err := as(a, "planner-token").Drain(ctx, "planner@pg")
	if err != nil || r == nil || r.TaskID != q.TaskID {
		t.Fatalf("drain through the old leader, now a follower: %v, %v", r, err)
	}
	st, err := as(a, "planner-token").Status(ctx)
	if err != nil || st.Store == nil || st.Store.LeaderURL != b.URL() || !strings.HasPrefix(st.Store.LeaderURL, "https://") {
		t.Errorf("a's status: %+v, %v; want it to follow %s", st.Store, err, b.URL())
	}

	// Every connection to PostgreSQL is TLS (the server takes no other,
	// and says so).
	if n := pgQueryInt(t, postgresURL, `SELECT count(*) FROM pg_stat_ssl JOIN pg_stat_activity USING (pid) WHERE backend_type = 'client backend' AND NOT ssl`); n != 0 {
		t.Errorf("%d connections to PostgreSQL without TLS, want none", n)
	}
	if n := pgQueryInt(t, postgresURL, `SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'mailroom-%'`); n < 2 {
		t.Errorf("%d mailroom connections to PostgreSQL, want both instances'", n)
	}
}

// pgQueryInt is one number sql answers on a connection of its own.
func pgQueryInt(t *testing.T, url, sql string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int64
	if err := conn.QueryRow(ctx, sql).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}
