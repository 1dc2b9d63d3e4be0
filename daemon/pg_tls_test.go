package daemon_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon"
	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/daemon/store/pgstore/pgtest"
	"github.com/mailroom/mailroom/internal/testpki"
	"github.com/mailroom/mailroom/mailbox"
)

// onTLSPostgres puts a daemon on the schema of a PostgreSQL that takes
// TLS connections only, reached with postgresURL.
func onTLSPostgres(postgresURL, schema string) func(*config.Config) {
	return func(c *config.Config) {
		c.Store, c.PostgresURL, c.PostgresSchema = config.StorePostgres, postgresURL, schema
		c.PostgresCampaignInterval = 20 * time.Millisecond
	}
}

// TestDaemonOnPostgresVerifiedOverTLS: a daemon whose postgres_url says
// sslmode=verify-full and sslrootcert (docs/postgresql.md's example)
// leads and serves writes over a connection that is TLS (the server takes
// nothing else).
func TestDaemonOnPostgresVerifiedOverTLS(t *testing.T) {
	srv := pgtest.StartTLS(t, testpki.NewCA(t, "pg test CA"))
	d := daemontest.Start(t, daemontest.Options{Config: onTLSPostgres(srv.URL("localhost", srv.CAFile), "mrt_daemon")})
	waitRole(t, d.URL(), "leader")
	c, err := client.New(d.Addr())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	q, err := c.Send(ctx, mailbox.Task{Sender: "planner@pg", Recipient: "worker@pg", IntentText: "over TLS to PostgreSQL"})
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	if rec := findTask(d.State(t), q.TaskID); rec == nil {
		t.Errorf("the task sent is not in the mailbox")
	}
}

// TestDaemonRefusesAPostgresItCannotVerify: a daemon whose sslrootcert
// does not hold the server's CA does not start, and its error names
// postgres_url and the cause, without the password.
func TestDaemonRefusesAPostgresItCannotVerify(t *testing.T) {
	srv := pgtest.StartTLS(t, testpki.NewCA(t, "pg test CA"))
	other := testpki.NewCA(t, "another CA").WriteFile(t, t.TempDir(), "other.crt")
	url := strings.Replace(srv.URL("localhost", other), "postgres://postgres@", "postgres://postgres:s3cret-pw@", 1)
	cfg := config.DefaultFor(func(string) string { return "" })
	onTLSPostgres(url, "mrt_daemon")(&cfg)
	cfg.Addr, cfg.DataDir = "127.0.0.1:0", t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := daemon.OpenContext(ctx, cfg, nil)
	if err == nil {
		d.Close()
		t.Fatal("the daemon started on a PostgreSQL it cannot verify")
	}
	msg := err.Error()
	for _, want := range []string{"postgres_url: ", "certificate signed by unknown authority", "sslrootcert"} {
		if !strings.Contains(msg, want) {
			t.Errorf("start error %q, want it to say %q", msg, want)
		}
	}
	if strings.Contains(msg, "s3cret-pw") {
		t.Errorf("start error %q shows the password", msg)
	}
}
