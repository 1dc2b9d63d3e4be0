package daemon_test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon"
	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/daemon/engine"
	"github.com/mailroom/mailroom/daemon/store/logstore"
	"github.com/mailroom/mailroom/daemon/store/logstore/logstoretest"
	"github.com/mailroom/mailroom/internal/testclock"
	"github.com/mailroom/mailroom/internal/testlog"
	"github.com/mailroom/mailroom/mailbox"
)

func testConfig(t *testing.T) config.Config {
	t.Helper()
	cfg := config.DefaultFor(func(string) string { return "" })
	cfg.Addr, cfg.DataDir = "127.0.0.1:0", t.TempDir()
	return cfg
}

func mustClient(t *testing.T, addr string, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New(addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRefusesNonLoopbackWithoutTokens(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0"} {
		cfg := testConfig(t)
		cfg.Addr = addr
		_, err := daemon.Open(cfg, nil)
		if err == nil || !strings.Contains(err.Error(), "addr") || !strings.Contains(err.Error(), "tokens") {
			t.Errorf("Open on %s without tokens = %v, want a refusal naming addr and tokens", addr, err)
		}
	}
}

// TestRunEndsWithItsContext: Run serves until its context ends; neither an
// open event stream nor a connection that never sent a request holds the
// shutdown up; what was acknowledged is in the log the next daemon opens.
func TestRunEndsWithItsContext(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.ShutdownTimeout = time.Minute
	d, err := daemon.Open(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- d.Run(ctx) }()

	c := mustClient(t, d.Addr())
	sent, err := c.Send(t.Context(), mailbox.Task{Sender: "p@local", Recipient: "w@local", IntentText: "keep me"})
	if err != nil {
		t.Fatal(err)
	}
	events := c.Subscribe(t.Context(), 0, nil)
	if ev := <-events; ev.Type != mailbox.EventSnapshot {
		t.Fatalf("first event %s, want the snapshot", ev.Type)
	}
	// http.Server.Shutdown alone would wait 5 s for this one.
	silent, err := net.Dial("tcp", d.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	cancel()
	const within = 4 * time.Second
	select {
	case err := <-ran:
		if err != nil {
			t.Fatalf("Run after its context ended = %v, want nil", err)
		}
	case <-time.After(within):
		t.Fatalf("Run did not return within %s of its context ending, with an event stream and a silent connection open", within)
	}
	if err := d.Close(); err != nil {
		t.Errorf("Close after Run = %v, want nil", err)
	}

	again := daemontest.Start(t, daemontest.Options{Dir: cfg.DataDir})
	if s := again.State(t); len(s.Tasks) != 1 || s.Tasks[0].Task.ID != sent.TaskID {
		t.Errorf("after the restart the mailbox holds %+v, want the task %s", s.Tasks, sent.TaskID)
	}
}

// TestCloseReleasesADaemonNeverRun: Close lets go of the listener and the
// data dir's lock, so the same address and dir open again.
func TestCloseReleasesADaemonNeverRun(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	d, err := daemon.Open(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Addr = d.Addr()
	if err := d.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	if err := d.Close(); err != nil {
		t.Errorf("a second Close = %v, want nil", err)
	}
	if _, err := http.Get("http://" + cfg.Addr + "/healthz"); err == nil {
		t.Errorf("a closed daemon that never ran answered on %s", cfg.Addr)
	}
	d, err = daemon.Open(cfg, nil)
	if err != nil {
		t.Fatalf("Open on the address and dir a closed daemon held: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestTokensNeverReachTheLog(t *testing.T) {
	t.Parallel()
	secret, hash, err := auth.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	logs := &testlog.Buffer{}
	d := daemontest.Start(t, daemontest.Options{Logger: logs.Logger(), Tokens: []auth.Token{
		{Principal: "planner@local", SHA256: hash, Caps: []string{"a2a.send.*"}},
		{Principal: "plain", Token: "plain-secret-token", Caps: []string{auth.CapRead}},
	}})
	ctx := context.Background()
	for _, tok := range []string{secret, "plain-secret-token", "wrong-" + secret} {
		c := mustClient(t, d.Addr(), client.WithToken(tok))
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
	t.Parallel()
	logs := &testlog.Buffer{}
	daemontest.Start(t, daemontest.Options{Logger: logs.Logger()})
	if !strings.Contains(logs.String(), "no tokens configured: serving loopback only") {
		t.Errorf("no loopback-only notice in:\n%s", logs.String())
	}
}

func TestWarnsWhenTheDataDirIsInMemory(t *testing.T) {
	t.Parallel()
	const warning = "kept in memory only"
	if fs, volatile, err := logstore.Filesystem(t.TempDir()); err != nil || volatile {
		t.Skipf("the test's temp dir is itself on %s (%v)", fs, err)
	}
	logs := &testlog.Buffer{}
	daemontest.Start(t, daemontest.Options{Logger: logs.Logger()})
	if strings.Contains(logs.String(), warning) {
		t.Errorf("a data dir on disk was called volatile:\n%s", logs.String())
	}

	shm := logstoretest.TmpfsDir(t)
	logs = &testlog.Buffer{}
	daemontest.Start(t, daemontest.Options{Dir: shm, Logger: logs.Logger()})
	if !strings.Contains(logs.String(), "the data dir is on tmpfs, "+warning) || !strings.Contains(logs.String(), "data_dir="+shm) {
		t.Errorf("no warning naming tmpfs and %s in:\n%s", shm, logs.String())
	}
}

// TestScheduledRetryStaleRequeuesAndAudits drives the scheduler tick by
// tick on the daemon's clock. The tick channel is unbuffered and the
// scheduler takes a tick only between scans, so each send returns once the
// scan before it is over: the scans are seen in order in the event stream.
func TestScheduledRetryStaleRequeuesAndAudits(t *testing.T) {
	t.Parallel()
	clk := testclock.New(time.UnixMilli(1_767_225_600_000))
	ticks := make(chan time.Time)
	d := daemontest.Start(t, daemontest.Options{Now: clk.Now, RetryStaleTicks: ticks, Config: func(c *config.Config) {
		c.RetryStaleInterval = time.Minute
		c.RetryStaleMinLeaseAge = 5 * time.Minute
	}})
	ctx := t.Context()
	c := mustClient(t, d.Addr())
	idem, err := c.Send(ctx, mailbox.Task{Sender: "p@local", Recipient: "w@local", IntentText: "reindex",
		Idempotency: &mailbox.Idempotency{DuplicateSafety: mailbox.DuplicateIdempotent, Key: "k"}})
	if err != nil {
		t.Fatal(err)
	}
	unsafe, err := c.Send(ctx, mailbox.Task{Sender: "p@local", Recipient: "w@local", IntentText: "charge the card"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{idem.TaskID, unsafe.TaskID} {
		if task, _, err := c.Lease(ctx, "w@local"); err != nil || task == nil || task.ID != want {
			t.Fatalf("lease = %+v, %v; want task %s", task, err, want)
		}
	}
	leased := d.State(t).Seq
	subCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	events := c.Subscribe(subCtx, leased, nil)

	// Tick 1: both leases are younger than the minimum age; nothing moves.
	ticks <- clk.Now()
	// Tick 2, once both are old enough: the idempotent lease is requeued, the
	// unsafe one left alone. This send returns only after scan 1 ended, so
	// the first event after the leases tells what scans 1 and 2 did.
	clk.Advance(6 * time.Minute)
	ticks <- clk.Now()
	ev := <-events
	if ev.Type != mailbox.EventTaskRequeued || ev.Seq != leased+1 || ev.TaskID != idem.TaskID || !ev.Auto || ev.Principal != engine.RetryStalePrincipal {
		t.Fatalf("first event after the leases = %+v; want seq %d, an auto requeue of %s by %s (scan 1 should do nothing, scan 2 requeue)",
			ev, leased+1, idem.TaskID, engine.RetryStalePrincipal)
	}
	// Tick 3: the idempotent task is queued, the unsafe one still unsafe.
	// Stopping waits for the scan in progress; the restarted daemon's log
	// shows that scan 3 added nothing.
	ticks <- clk.Now()
	d.Restart()
	if s := d.State(t); s.Seq != leased+1 {
		t.Errorf("after scan 3 the log ends at seq %d, want %d (the one requeue)", s.Seq, leased+1)
	}

	audit, err := c.Audit(ctx, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(audit) != 1 || audit[0].TaskID != idem.TaskID || !audit[0].Auto || audit[0].Principal != engine.RetryStalePrincipal || audit[0].Reason != mailbox.RetryStaleReason {
		t.Fatalf("audit = %+v, want one auto requeue of %s by %s", audit, idem.TaskID, engine.RetryStalePrincipal)
	}
	v, err := c.Queue(ctx, mailbox.QueueFilter{State: mailbox.TaskInFlight})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range v.Tasks {
		if e.Task.ID == idem.TaskID {
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
	t.Parallel()
	retainDone := func(n int) func(*config.Config) { return func(c *config.Config) { c.RetainDone = n } }
	d := daemontest.Start(t, daemontest.Options{Config: retainDone(1)})
	ctx := t.Context()
	c := mustClient(t, d.Addr())
	const x, y = "00000000-0000-4000-8000-00000000000a", "00000000-0000-4000-8000-00000000000b"
	for _, id := range []string{x, y, x} {
		if _, err := c.Send(ctx, mailbox.Task{ID: id, Sender: "p@local", Recipient: "w@local", IntentText: "work"}); err != nil {
			t.Fatalf("send %s: %v", id, err)
		}
		task, lease, err := c.Lease(ctx, "w@local")
		if err != nil || task == nil {
			t.Fatalf("lease = %v, %v", task, err)
		}
		if err := c.PostResult(ctx, mailbox.Result{TaskID: task.ID, Status: mailbox.StatusOK, LeaseID: lease.LeaseID}); err != nil {
			t.Fatal(err)
		}
		if r, err := c.Drain(ctx, "p@local"); err != nil || r == nil {
			t.Fatalf("drain = %v, %v", r, err)
		}
	}
	d.Stop()

	for _, retain := range []int{mailbox.DefaultRetainDone, 1} {
		d := daemontest.Start(t, daemontest.Options{Dir: d.Dir, Config: retainDone(retain)})
		if s := d.State(t); s.Limits == nil || s.Limits.RetainDone != retain {
			t.Errorf("restarted with retain_done %d, the mailbox has limits %+v", retain, s.Limits)
		}
		d.Stop()
	}
}
