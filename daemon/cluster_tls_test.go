package daemon_test

import (
	"context"
	"crypto/tls"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon"
	"github.com/mailroom/mailroom/daemon/auth"
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

// TestAFollowerAssertsItsCallerToTheLeader: with cluster_secret_file the
// follower authenticates its caller itself and asserts the identity to
// the leader with the cluster's credential, never sending the caller's
// token: a leader whose access file lacks the caller's token still acts
// for the caller, and only with the caller's capabilities. A caller the
// follower refuses is refused in the route's own words; an identity
// asserted without the credential is not believed; a follower without
// the secret sends the token as before, which this leader does not know.
func TestAFollowerAssertsItsCallerToTheLeader(t *testing.T) {
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url, t.Name())
	dir := t.TempDir()
	ca := testpki.NewCA(t, "cluster CA")
	caFile := ca.WriteFile(t, dir, "cluster-ca.crt")
	secretFile := filepath.Join(dir, "cluster-secret")
	if err := os.WriteFile(secretFile, []byte("kZ3v0pQ8sL1mN5bX7cR2tY9wE4uI6oA0hJ8gF3dS1aQ=\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	operator := auth.Token{Principal: "operator", Token: "operator-token", Caps: []string{auth.CapAdmin}}
	planner := auth.Token{Principal: "planner@pg", Token: "planner-token", Caps: []string{auth.CapSendPrefix + "worker@pg"}}
	instance := func(secret string, tokens ...auth.Token) daemontest.Options {
		return daemontest.Options{TLS: true, CA: ca, Tokens: tokens, Config: func(c *config.Config) {
			c.Store, c.PostgresURL, c.PostgresSchema = config.StorePostgres, url, schema
			c.PostgresCampaignInterval = 20 * time.Millisecond
			c.ClusterCAFile, c.ClusterSecretFile = caFile, secret
		}}
	}
	// The leader knows the operator only; the followers know the planner.
	leader := daemontest.Start(t, instance(secretFile, operator))
	waitRoleTLS(t, leader, "leader")
	follower := daemontest.Start(t, instance(secretFile, planner))
	waitRoleTLS(t, follower, "follower")
	unsecret := daemontest.Start(t, instance("", planner))
	waitRoleTLS(t, unsecret, "follower")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	as := func(d *daemontest.Daemon, token string) *client.Client {
		c, err := client.New(d.Addr(), client.WithTLS(d.TLSConfig()), client.WithToken(token))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	q, err := as(follower, "planner-token").Send(ctx, mailbox.Task{Sender: "planner@pg", Recipient: "worker@pg", IntentText: "asserted"})
	if err != nil {
		t.Fatalf("send as the planner through the follower: %v", err)
	}
	view, err := as(leader, "operator-token").Queue(ctx, mailbox.QueueFilter{})
	if err != nil || len(view.Tasks) != 1 || view.Tasks[0].Task.ID != q.TaskID || view.Tasks[0].Task.Sender != "planner@pg" {
		t.Fatalf("the leader's queue: %+v, %v; want the planner's task", view.Tasks, err)
	}

	refusals := []struct {
		name  string
		c     *client.Client
		task  mailbox.Task
		code  string
		words string
	}{
		{"the planner's capabilities, not more", as(follower, "planner-token"),
			mailbox.Task{Sender: "planner@pg", Recipient: "other@pg", IntentText: "not allowed"},
			mailbox.CodeForbidden, "planner@pg may not send tasks to other@pg: needs capability a2a.send.other@pg"},
		{"an unknown token, refused by the follower", as(follower, "no-such-token"),
			mailbox.Task{Sender: "planner@pg", Recipient: "worker@pg", IntentText: "unknown"},
			mailbox.CodeUnauthorized, "Authorization: unknown token"},
		{"a follower without the secret forwards the token, unknown to the leader", as(unsecret, "planner-token"),
			mailbox.Task{Sender: "planner@pg", Recipient: "worker@pg", IntentText: "replayed"},
			mailbox.CodeUnauthorized, "Authorization: unknown token"},
	}
	for _, r := range refusals {
		_, err := r.c.Send(ctx, r.task)
		if mailbox.ErrorCode(err) != r.code || !strings.Contains(err.Error(), r.words) {
			t.Errorf("%s: %v, want %s saying %q", r.name, err, r.code, r.words)
		}
	}

	// An identity asserted straight to the leader without the cluster's
	// credential is not believed.
	body := `{"sender":"operator","recipient":"worker@pg","intent":{"text":"forged"}}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, leader.URL()+"/a2a/tasks", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(daemon.HeaderClusterCredential, "not-the-credential")
	req.Header.Set(daemon.HeaderPrincipal, "operator")
	req.Header.Set(daemon.HeaderCapabilities, auth.CapAdmin)
	resp, err := leader.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a forged assertion to the leader: %s, want 401", resp.Status)
	}
	if view, err := as(leader, "operator-token").Queue(ctx, mailbox.QueueFilter{}); err != nil || len(view.Tasks) != 1 {
		t.Errorf("the leader's queue after the refusals: %d tasks, %v; want the planner's one", len(view.Tasks), err)
	}
}

// TestAFollowerShowsItsCertificateToALeaderThatRequiresOne: a leader with
// tls_client_auth: require takes forwarded writes from a follower with
// cluster_cert_file and cluster_key_file; a follower without them gets a
// 503 that says what to set, and the write does not reach the leader.
func TestAFollowerShowsItsCertificateToALeaderThatRequiresOne(t *testing.T) {
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url, t.Name())
	dir := t.TempDir()
	ca := testpki.NewCA(t, "cluster CA")
	caFile := ca.WriteFile(t, dir, "cluster-ca.crt")
	instanceCert := ca.Issue(t, testpki.Options{CN: "mailroom instance", Client: true})
	certFile, keyFile := instanceCert.WriteFiles(t, dir, "instance")
	instance := func(change func(*config.Config)) daemontest.Options {
		return daemontest.Options{TLS: true, CA: ca, Config: func(c *config.Config) {
			c.Store, c.PostgresURL, c.PostgresSchema = config.StorePostgres, url, schema
			c.PostgresCampaignInterval = 20 * time.Millisecond
			c.ClusterCAFile = caFile
			change(c)
		}}
	}
	leader := daemontest.Start(t, instance(func(c *config.Config) {
		c.TLSClientAuth, c.TLSClientCAFile = config.ClientAuthRequire, caFile
	}))
	// The leader asks every client for a certificate: the test's too.
	withCert := leader.TLSConfig()
	withCert.Certificates = []tls.Certificate{instanceCert.TLS}
	leaderClient, err := client.New(leader.Addr(), client.WithTLS(withCert))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, context.Background(), "the leader to lead", func() bool {
		st, err := leaderClient.Status(context.Background())
		return err == nil && st.Store != nil && st.Store.Role == "leader"
	})
	showing := daemontest.Start(t, instance(func(c *config.Config) { c.ClusterCertFile, c.ClusterKeyFile = certFile, keyFile }))
	waitRoleTLS(t, showing, "follower")
	bare := daemontest.Start(t, instance(func(*config.Config) {}))
	waitRoleTLS(t, bare, "follower")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := tlsClient(t, showing).Send(ctx, mailbox.Task{Sender: "planner@pg", Recipient: "worker@pg", IntentText: "with the instance's certificate"}); err != nil {
		t.Fatalf("send through the follower with cluster_cert_file: %v", err)
	}
	_, err = tlsClient(t, bare).Send(ctx, mailbox.Task{Sender: "planner@pg", Recipient: "worker@pg", IntentText: "without"})
	if mailbox.ErrorCode(err) != mailbox.CodeUnavailable {
		t.Fatalf("send through the follower without cluster_cert_file: %v, want 503 unavailable", err)
	}
	for _, want := range []string{"the leader asks for a client certificate", "tls_client_auth is require", "cluster_cert_file and cluster_key_file"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal %q does not say %q", err, want)
		}
	}
	if view, err := leaderClient.Queue(ctx, mailbox.QueueFilter{}); err != nil || len(view.Tasks) != 1 {
		t.Errorf("the leader's queue: %d tasks, %v; want the one forwarded with the certificate", len(view.Tasks), err)
	}
}
