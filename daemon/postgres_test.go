package daemon_test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/config"
	"github.com/mailroom/mailroom/daemon"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/daemon/store/pgstore/pgtest"
	"github.com/mailroom/mailroom/internal/testlog"
	"github.com/mailroom/mailroom/mailbox"
)

// TestPostgresStoreKeepsLeasesAndHandsOver runs the daemon on the
// PostgreSQL store: a lease survives a restart, and a second instance on
// the same schema stands by while the first leads, then takes over with
// the mailbox as the first left it.
func TestPostgresStoreKeepsLeasesAndHandsOver(t *testing.T) {
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url, t.Name())
	onPG := func(c *config.Config) {
		c.Store, c.PostgresURL, c.PostgresSchema = config.StorePostgres, url, schema
	}
	logs := &testlog.Buffer{}
	a := daemontest.Start(t, daemontest.Options{Config: onPG, Logger: logs.Logger()})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ca, err := client.New(a.Addr())
	if err != nil {
		t.Fatal(err)
	}
	q, err := ca.Send(ctx, mailbox.Task{Sender: "planner@pg", Recipient: "worker@pg", IntentText: "survive"})
	if err != nil {
		t.Fatal(err)
	}
	task, lease, err := ca.Lease(ctx, "worker@pg")
	if err != nil || task == nil || task.ID != q.TaskID {
		t.Fatalf("Lease = %v, %v, %v", task, lease, err)
	}
	if !strings.Contains(logs.String(), "mailbox store: PostgreSQL, leading") || !strings.Contains(logs.String(), "schema="+schema) {
		t.Errorf("the daemon did not log which store it runs on:\n%s", logs.String())
	}

	a.Restart()
	snap := a.State(t)
	if got := findTask(snap, q.TaskID); got == nil || got.State != mailbox.TaskInFlight || got.LeaseID != lease.LeaseID {
		t.Fatalf("after a restart the task is %+v, want in flight under lease %s", got, lease.LeaseID)
	}
	if a.Metric(t, "mailroom_store_epoch") < 2 {
		t.Errorf("mailroom_store_epoch = %v after a restart, want at least 2", a.Metric(t, "mailroom_store_epoch"))
	}

	// A second instance on the schema waits in Open while a leads.
	cfg := config.DefaultFor(func(string) string { return "" })
	onPG(&cfg)
	cfg.Addr, cfg.DataDir = "127.0.0.1:0", t.TempDir()
	bLogs := &testlog.Buffer{}
	type opened struct {
		d   *daemon.Daemon
		err error
	}
	bOpen := make(chan opened, 1)
	go func() {
		d, err := daemon.OpenContext(ctx, cfg, bLogs.Logger())
		bOpen <- opened{d, err}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(bLogs.String(), "standing by to take over") {
		if time.Now().After(deadline) {
			t.Fatalf("b neither stood by nor opened:\n%s", bLogs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	select {
	case o := <-bOpen:
		t.Fatalf("b opened while a leads: %v", o.err)
	case <-time.After(500 * time.Millisecond):
	}
	a.Stop()
	o := <-bOpen
	if o.err != nil {
		t.Fatal(o.err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- o.d.Run(runCtx) }()
	defer func() {
		stop()
		if err := <-ran; err != nil {
			t.Errorf("b's Run: %v", err)
		}
	}()
	snapB, _ := daemontest.ReadSnapshot(t, "http://"+o.d.Addr())
	if got := findTask(snapB, q.TaskID); got == nil || got.State != mailbox.TaskInFlight || got.LeaseID != lease.LeaseID {
		t.Fatalf("b sees the task as %+v, want in flight under lease %s", got, lease.LeaseID)
	}
	// b's advertised address is the one it listens on.
	if _, port, _ := net.SplitHostPort(o.d.Addr()); port == "0" {
		t.Errorf("b listens on %s", o.d.Addr())
	}
	cb, err := client.New(o.d.Addr(), client.WithHTTPClient(&http.Client{Timeout: 10 * time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	if err := cb.PostResult(ctx, mailbox.Result{TaskID: q.TaskID, LeaseID: lease.LeaseID, Status: mailbox.StatusOK, Content: []mailbox.Content{}}); err != nil {
		t.Fatalf("posting the result through b: %v", err)
	}
	r, err := cb.Drain(ctx, "planner@pg")
	if err != nil || r == nil || r.TaskID != q.TaskID {
		t.Fatalf("Drain through b = %v, %v", r, err)
	}
}

func findTask(snap *mailbox.Snapshot, id string) *mailbox.TaskRecord {
	for i := range snap.Tasks {
		if snap.Tasks[i].Task.ID == id {
			return &snap.Tasks[i]
		}
	}
	return nil
}
