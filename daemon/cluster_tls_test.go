package daemon_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/daemon/store/pgstore/pgtest"
	"github.com/mailroom/mailroom/internal/testpki"
	"github.com/mailroom/mailroom/mailbox"
)

// tlsClient is the Go client of d, trusting d's CA.
func tlsClient(t *testing.T, d *daemontest.Daemon) *client.Client {
	t.Helper()
	c, err := client.New(d.Addr(), client.WithTLS(d.TLSConfig()))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestAFollowerVerifiesTheLeaderWithTheClusterCA: instances serving TLS
// from a CA of their own (not among the system's): a follower given it
// as cluster_ca_file forwards a write to the leader over HTTPS and
// answers it; one without it refuses the write with a 503 that says why,
// and the write never reaches the leader.
func TestAFollowerVerifiesTheLeaderWithTheClusterCA(t *testing.T) {
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url, t.Name())
	ca := testpki.NewCA(t, "cluster CA")
	caFile := ca.WriteFile(t, t.TempDir(), "cluster-ca.crt")
	instance := func(clusterCA string) daemontest.Options {
		return daemontest.Options{TLS: true, CA: ca, Config: func(c *config.Config) {
			c.Store, c.PostgresURL, c.PostgresSchema = config.StorePostgres, url, schema
			c.PostgresCampaignInterval = 20 * time.Millisecond
			c.ClusterCAFile = clusterCA
		}}
	}
	leader := daemontest.Start(t, instance(caFile))
	waitRoleTLS(t, leader, "leader")
	trusting := daemontest.Start(t, instance(caFile))
	waitRoleTLS(t, trusting, "follower")
	untrusting := daemontest.Start(t, instance(""))
	waitRoleTLS(t, untrusting, "follower")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	q, err := tlsClient(t, trusting).Send(ctx, mailbox.Task{Sender: "planner@pg", Recipient: "worker@pg", IntentText: "through the follower, over https"})
	if err != nil {
		t.Fatalf("send through the follower with cluster_ca_file: %v", err)
	}
	if findTask(leader.State(t), q.TaskID) == nil {
		t.Errorf("the leader does not hold the task forwarded to it")
	}

	_, err = tlsClient(t, untrusting).Send(ctx, mailbox.Task{Sender: "planner@pg", Recipient: "worker@pg", IntentText: "refused"})
	if mailbox.ErrorCode(err) != mailbox.CodeUnavailable {
		t.Fatalf("send through the follower without cluster_ca_file: %v, want 503 unavailable", err)
	}
	for _, want := range []string{"cannot verify", "certificate signed by unknown authority", "was not sent", "cluster_ca_file"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal %q does not say %q", err, want)
		}
	}
	if n := len(leader.State(t).Tasks); n != 1 {
		t.Errorf("the leader holds %d tasks, want only the one forwarded by the follower that trusts it", n)
	}
}

// waitRoleTLS waits until the TLS instance d reports role.
func waitRoleTLS(t *testing.T, d *daemontest.Daemon, role string) {
	t.Helper()
	c := tlsClient(t, d)
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := c.Status(context.Background())
		if err == nil && st.Store != nil && st.Store.Role == role {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never became %s: %+v, %v", d.URL(), role, st, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
