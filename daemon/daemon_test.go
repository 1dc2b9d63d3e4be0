package daemon_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/config"
	"github.com/mailroom/mailroom/daemon"
	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/daemon/engine"
	"github.com/mailroom/mailroom/daemon/store/logstore"
	"github.com/mailroom/mailroom/daemon/store/logstore/logstoretest"
	"github.com/mailroom/mailroom/internal/testlog"
	"github.com/mailroom/mailroom/mailbox"
)

func testConfig(t *testing.T) config.Config {
	t.Helper()
	cfg := config.DefaultFor(func(string) string { return "" })
	cfg.Addr, cfg.DataDir = "127.0.0.1:0", t.TempDir()
	return cfg
}

// start opens and serves a daemon; it is shut down at the end of the test.
func start(t *testing.T, cfg config.Config) (*daemon.Daemon, *testlog.Buffer) {
	t.Helper()
	logs := &testlog.Buffer{}
	d, err := daemon.Open(cfg, logs.Logger())
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- d.Serve() }()
	t.Cleanup(func() {
		if err := d.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
		if err := <-served; err != nil {
			t.Error(err)
		}
	})
	return d, logs
}

func TestRefusesNonLoopbackWithoutTokens(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0"} {
		cfg := testConfig(t)
		cfg.Addr = addr
		_, err := daemon.Open(cfg, nil)
		if err == nil || !strings.Contains(err.Error(), "addr") || !strings.Contains(err.Error(), "tokens") {
			t.Errorf("Open on %s without tokens = %v, want a refusal naming addr and tokens", addr, err)
		}
	}
}

func TestTokensNeverReachTheLog(t *testing.T) {
	secret, hash, err := auth.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t)
	cfg.Tokens = []auth.Token{
		{Principal: "planner@local", SHA256: hash, Caps: []string{"a2a.send.*"}},
		{Principal: "plain", Token: "plain-secret-token", Caps: []string{auth.CapRead}},
	}
	d, logs := start(t, cfg)
	ctx := context.Background()
	for _, tok := range []string{secret, "plain-secret-token", "wrong-" + secret} {
		c, _ := client.New(d.Addr(), client.WithToken(tok))
		c.Send(ctx, mailbox.Task{Sender: "planner@local", Recipient: "w@local", IntentText: "x"})
		c.Queue(ctx, mailbox.QueueFilter{})
		c.Repair(ctx, mailbox.RepairRequest{TaskID: "6f9619ff-8b86-4d11-b42d-00c04fc964ff", Reason: "r", Command: mailbox.RepairCommand{Action: "requeue", DuplicateRisk: "idempotent"}})
	}
	out := logs.String()
	if !strings.Contains(out, "bearer tokens required") || !strings.Contains(out, "request denied") {
		t.Fatalf("expected start-up and denial lines in the log:\n%s", out)
	}
	for _, tok := range []string{secret, "plain-secret-token"} {
		if strings.Contains(out, tok) {
			t.Errorf("a token appears in the log")
		}
	}
}

func TestSaysWhenServingWithoutTokens(t *testing.T) {
	_, logs := start(t, testConfig(t))
	if !strings.Contains(logs.String(), "no tokens configured: serving loopback only") {
		t.Errorf("no loopback-only notice in:\n%s", logs.String())
	}
}

func TestWarnsWhenTheDataDirIsInMemory(t *testing.T) {
	const warning = "kept in memory only"
	if fs, volatile, err := logstore.Filesystem(t.TempDir()); err != nil || volatile {
		t.Skipf("the test's temp dir is itself on %s (%v)", fs, err)
	}
	_, logs := start(t, testConfig(t))
	if strings.Contains(logs.String(), warning) {
		t.Errorf("a data dir on disk was called volatile:\n%s", logs.String())
	}

	shm := logstoretest.TmpfsDir(t)
	cfg := testConfig(t)
	cfg.DataDir = shm
	_, logs = start(t, cfg)
	if !strings.Contains(logs.String(), "the data dir is on tmpfs, "+warning) || !strings.Contains(logs.String(), "data_dir="+shm) {
		t.Errorf("no warning naming tmpfs and %s in:\n%s", shm, logs.String())
	}
}

func TestScheduledRetryStaleRequeuesAndAudits(t *testing.T) {
	cfg := testConfig(t)
	cfg.RetryStaleInterval = 20 * time.Millisecond
	cfg.RetryStaleMinLeaseAge = time.Millisecond
	d, _ := start(t, cfg)
	ctx := context.Background()
	c, _ := client.New(d.Addr())
	subCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	events := c.Subscribe(subCtx, 0, nil)
	// The unsafe task is sent and leased before the idempotent one exists: the
	// scheduler may run at any moment, and a requeue between two leases would
	// let the second lease take the idempotent task again.
	unsafe, err := c.Send(ctx, mailbox.Task{Sender: "p@local", Recipient: "w@local", IntentText: "charge the card"})
	if err != nil {
		t.Fatal(err)
	}
	if task, _, err := c.Lease(ctx, "w@local"); err != nil || task == nil || task.ID != unsafe.TaskID {
		t.Fatalf("lease = %+v, %v; want the unsafe task %s", task, err, unsafe.TaskID)
	}
	idem := mailbox.Task{Sender: "p@local", Recipient: "w@local", IntentText: "reindex", Idempotency: &mailbox.Idempotency{DuplicateSafety: mailbox.DuplicateIdempotent, Key: "k"}}
	sent, err := c.Send(ctx, idem)
	if err != nil {
		t.Fatal(err)
	}
	if task, _, err := c.Lease(ctx, "w@local"); err != nil || task == nil || task.ID != sent.TaskID {
		t.Fatalf("lease = %+v, %v; want the idempotent task %s", task, err, sent.TaskID)
	}
	// The scheduler acts on its own clock: wait for its requeue to be published.
	for ev := range events {
		if ev.Type == mailbox.EventTaskRequeued {
			break
		}
	}
	audit, err := c.Audit(ctx, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(audit) == 0 || audit[0].TaskID != sent.TaskID || !audit[0].Auto || audit[0].Principal != engine.RetryStalePrincipal || audit[0].Reason != mailbox.RetryStaleReason {
		t.Fatalf("audit = %+v, want an auto requeue of %s by %s", audit, sent.TaskID, engine.RetryStalePrincipal)
	}
	v, _ := c.Queue(ctx, mailbox.QueueFilter{State: mailbox.TaskInFlight})
	for _, e := range v.Tasks {
		if e.Task.ID == sent.TaskID {
			t.Errorf("the idempotent stale lease is still in flight")
		}
	}
	if len(v.Tasks) == 0 || v.Tasks[0].Task.ID != unsafe.TaskID {
		t.Errorf("the unsafe task's lease should be left alone: %+v", v.Tasks)
	}
}

// Issue 9: a daemon restarted with another retain_done starts, even when
// the log holds a task id sent again after the smaller limit forgot it.
func TestRestartWithChangedRetainDoneStarts(t *testing.T) {
	cfg := testConfig(t)
	cfg.RetainDone = 1
	d, err := daemon.Open(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	e := d.Engine()
	const x, y = "00000000-0000-4000-8000-00000000000a", "00000000-0000-4000-8000-00000000000b"
	for _, id := range []string{x, y, x} {
		if _, err := e.Send(ctx, mailbox.Task{ID: id, Sender: "p@local", Recipient: "w@local", IntentText: "work"}); err != nil {
			t.Fatalf("send %s: %v", id, err)
		}
		task, lease, err := e.Lease(ctx, "w@local")
		if err != nil || task == nil {
			t.Fatalf("lease = %v, %v", task, err)
		}
		if err := e.PostResult(ctx, mailbox.Result{TaskID: task.ID, Status: mailbox.StatusOK, LeaseID: lease.LeaseID}); err != nil {
			t.Fatal(err)
		}
		if r, err := e.Drain(ctx, "p@local"); err != nil || r == nil {
			t.Fatalf("drain = %v, %v", r, err)
		}
	}
	if err := d.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	for _, retain := range []int{config.DefaultRetainDone, 1} {
		cfg.RetainDone = retain
		d, err = daemon.Open(cfg, nil)
		if err != nil {
			t.Fatalf("restart with retain_done %d: %v", retain, err)
		}
		d.Engine().View(func(s *mailbox.State) {
			if s.RetainDone != retain {
				t.Errorf("restarted with retain_done %d, the mailbox has %d", retain, s.RetainDone)
			}
		})
		if err := d.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
