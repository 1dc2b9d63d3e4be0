package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/mailbox"
)

// binPath is the real mailroom binary, built once for the crash test.
var binPath string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mailroom-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binPath = filepath.Join(dir, "mailroom")
	if out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building mailroom for the crash test: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// daemonProc is the real binary running "mailroom daemon".
type daemonProc struct {
	cmd    *exec.Cmd
	addr   string
	stderr *lockedWriter
	buf    *bytes.Buffer
	exited chan error
}

var listenLine = regexp.MustCompile(`mailroom daemon listening on (\S+)\n`)

// addrWatcher is the daemon's stdout: it hands over the listen address as
// soon as the line announcing it is complete.
type addrWatcher struct {
	mu   sync.Mutex
	buf  []byte
	addr chan string
}

func (w *addrWatcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.buf == nil {
		return len(p), nil // address already handed over
	}
	w.buf = append(w.buf, p...)
	if m := listenLine.FindSubmatch(w.buf); m != nil {
		w.addr <- string(m[1])
		w.buf = nil
	}
	return len(p), nil
}

func startProc(t *testing.T, dir string) *daemonProc {
	t.Helper()
	// Compaction thresholds are tiny so that kills also land during
	// automatic compactions.
	cmd := exec.Command(binPath, "daemon", "--addr", "127.0.0.1:0", "--data-dir", dir,
		"--log-level", "warn", "--compact-min-bytes", "8KiB", "--compact-factor", "2")
	cmd.Env = []string{"HOME=" + dir}
	w := &addrWatcher{buf: []byte{}, addr: make(chan string, 1)}
	buf := &bytes.Buffer{}
	p := &daemonProc{cmd: cmd, stderr: &lockedWriter{w: buf}, buf: buf, exited: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = w, p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", binPath, err)
	}
	go func() { p.exited <- cmd.Wait() }()
	select {
	case p.addr = <-w.addr:
	case err := <-p.exited:
		t.Fatalf("daemon exited before listening (%v); stderr:\n%s", err, p.log())
	case <-time.After(30 * time.Second): // a watchdog, not synchronisation
		cmd.Process.Kill()
		t.Fatalf("daemon did not announce its address; stderr:\n%s", p.log())
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	return p
}

func (p *daemonProc) log() string {
	p.stderr.mu.Lock()
	defer p.stderr.mu.Unlock()
	return p.buf.String()
}

// leaseAck is a lease the daemon acknowledged to a client.
type leaseAck struct {
	taskID, leaseID string
	attempt         int
}

// ledger is what clients were told (acknowledged, 2xx) and what they tried
// (requests whose outcome a kill may have hidden), across every iteration.
type ledger struct {
	mu            sync.Mutex
	tried         map[string]bool       // task ids a send was attempted for
	sent          map[string]bool       // acknowledged sends
	leases        map[string][]leaseAck // acknowledged leases per task
	leaseTask     map[string]string     // acknowledged lease id -> task
	touched       map[string]bool       // lease ids a result or requeue was attempted with
	requeueTries  map[string]int        // requeue attempts per task
	postTried     map[string]bool       // tasks a result post was attempted for
	posted        map[string]string     // acknowledged result: task -> lease id
	drained       map[string]bool       // acknowledged drains
	unackedDrains int                   // drains that got no answer: each may have taken a result

	acks   atomic.Int64
	killAt atomic.Pointer[killSwitch]
	killed atomic.Bool
}

// killSwitch fires once the ledger holds at acknowledgements.
type killSwitch struct {
	at   int64
	once sync.Once
	ch   chan struct{}
}

// ack counts one acknowledged request and fires the kill switch.
func (l *ledger) ack() {
	n := l.acks.Add(1)
	if k := l.killAt.Load(); k != nil && n >= k.at {
		k.once.Do(func() { close(k.ch) })
	}
}

func newLedger() *ledger {
	return &ledger{tried: map[string]bool{}, sent: map[string]bool{}, leases: map[string][]leaseAck{},
		leaseTask: map[string]string{}, touched: map[string]bool{}, requeueTries: map[string]int{},
		postTried: map[string]bool{}, posted: map[string]string{}, drained: map[string]bool{}}
}

func (l *ledger) do(f func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f()
}

// crashWorkload drives the daemon like agents and an operator would, until
// ctx ends. Requests in flight at the kill fail; only errors before the
// kill are wrong.
type crashWorkload struct {
	t      *testing.T
	c      *client.Client
	l      *ledger
	held   chan leaseAck // leases a leaser keeps for the operator to requeue
	queued chan struct{} // a send happened: leasers may find work
	posted chan struct{} // a result was posted: the drainer may find one
}

const crashSender = "planner@crash"

var crashRecipients = []string{"coder@crash", "reviewer@crash"}

func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func wait(ctx context.Context, ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	case <-ctx.Done():
		return false
	}
}

func (w *crashWorkload) fail(what string, err error) {
	if err != nil && !w.l.killed.Load() && !errors.Is(err, context.Canceled) {
		w.t.Errorf("%s before the kill: %v", what, err)
	}
}

func (w *crashWorkload) send(ctx context.Context, rng *rand.Rand) {
	for ctx.Err() == nil {
		id := uuid.NewString()
		task := mailbox.Task{ID: id, Sender: crashSender, Recipient: crashRecipients[rng.IntN(len(crashRecipients))], IntentText: "crash " + id[:8]}
		if rng.IntN(2) == 0 {
			task.Idempotency = &mailbox.Idempotency{DuplicateSafety: mailbox.DuplicateIdempotent, Key: "k-" + id}
		}
		w.l.do(func() { w.l.tried[id] = true })
		resp, err := w.c.Send(ctx, task)
		if err != nil {
			w.fail("send", err)
			continue
		}
		if resp.TaskID != id {
			w.t.Errorf("send %s acknowledged as %s", id, resp.TaskID)
		}
		w.l.do(func() { w.l.sent[id] = true })
		w.l.ack()
		notify(w.queued)
	}
}

func (w *crashWorkload) lease(ctx context.Context, rng *rand.Rand) {
	for ctx.Err() == nil {
		task, lease, err := w.c.Lease(ctx, crashRecipients[rng.IntN(len(crashRecipients))])
		if err != nil {
			w.fail("lease", err)
			continue
		}
		if task == nil {
			wait(ctx, w.queued)
			continue
		}
		ack := leaseAck{taskID: task.ID, leaseID: lease.LeaseID, attempt: lease.Attempt}
		w.l.do(func() {
			if prev, dup := w.l.leaseTask[ack.leaseID]; dup {
				w.t.Errorf("lease id %s acknowledged twice (tasks %s and %s)", ack.leaseID, prev, ack.taskID)
			}
			w.l.leaseTask[ack.leaseID] = ack.taskID
			w.l.leases[ack.taskID] = append(w.l.leases[ack.taskID], ack)
		})
		w.l.ack()
		// Some leases stay open for the operator, so kills find leases in
		// flight and restarts must keep them.
		if rng.IntN(4) == 0 {
			select {
			case w.held <- ack:
				continue
			default:
			}
		}
		w.l.do(func() { w.l.touched[ack.leaseID], w.l.postTried[ack.taskID] = true, true })
		r := mailbox.Result{TaskID: ack.taskID, Status: mailbox.StatusOK, LeaseID: ack.leaseID,
			Content: []mailbox.Content{{Type: mailbox.ContentText, Text: "done"}}}
		if err := w.c.PostResult(ctx, r); err != nil {
			w.fail("post result", err)
			continue
		}
		w.l.do(func() { w.l.posted[ack.taskID] = ack.leaseID })
		w.l.ack()
		notify(w.posted)
	}
}

// requeue is the operator: it requeues held leases with the lease guard.
func (w *crashWorkload) requeue(ctx context.Context) {
	for {
		var ack leaseAck
		select {
		case ack = <-w.held:
		case <-ctx.Done():
			return
		}
		w.l.do(func() { w.l.touched[ack.leaseID] = true; w.l.requeueTries[ack.taskID]++ })
		_, err := w.c.Repair(ctx, mailbox.RepairRequest{TaskID: ack.taskID, Reason: "crash test",
			Command: mailbox.RepairCommand{Action: mailbox.ActionRequeue, LeaseID: ack.leaseID, DuplicateRisk: mailbox.RiskOperatorAccepted}})
		if err != nil {
			w.fail("requeue", err)
			continue
		}
		w.l.ack()
		notify(w.queued)
	}
}

func (w *crashWorkload) drain(ctx context.Context) {
	for ctx.Err() == nil {
		res, err := w.c.Drain(ctx, crashSender)
		if err != nil {
			w.fail("drain", err)
			w.l.do(func() { w.l.unackedDrains++ })
			continue
		}
		if res == nil {
			wait(ctx, w.posted)
			continue
		}
		w.l.do(func() {
			if w.l.drained[res.TaskID] {
				w.t.Errorf("result for task %s drained twice", res.TaskID)
			}
			w.l.drained[res.TaskID] = true
			if w.l.leaseTask[res.LeaseID] != res.TaskID {
				w.t.Errorf("drained result for %s carries lease %q, which was never acknowledged for it", res.TaskID, res.LeaseID)
			}
		})
		w.l.ack()
	}
}

// TestCrashKill9 kills the real daemon with SIGKILL at a random moment
// while clients send, lease, post, requeue and drain, restarts it on the
// same data directory, and checks that everything acknowledged survived.
func TestCrashKill9(t *testing.T) {
	const iterations = 5
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	dir := t.TempDir()
	l := newLedger()

	for i := range iterations {
		p := startProc(t, dir)
		c, err := client.New(p.addr)
		if err != nil {
			t.Fatal(err)
		}
		view := verifyCrash(t, c, l, fmt.Sprintf("restart %d", i))

		w := &crashWorkload{t: t, c: c, l: l, held: make(chan leaseAck, 1024),
			queued: make(chan struct{}, 1), posted: make(chan struct{}, 1)}
		// Leases that survived the last kill go to the operator, as they would
		// after a real crash of the agents holding them.
		for _, e := range view.Tasks {
			if e.State == mailbox.EntryInFlight {
				w.held <- leaseAck{taskID: e.Task.ID, leaseID: e.LeaseID, attempt: e.Attempt}
			}
		}
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		for range 2 {
			// Each worker gets its own generator, seeded here: rng is not
			// safe for concurrent use.
			sendRNG, leaseRNG := rand.New(rand.NewPCG(rng.Uint64(), 1)), rand.New(rand.NewPCG(rng.Uint64(), 2))
			wg.Go(func() { w.send(ctx, sendRNG) })
			wg.Go(func() { w.lease(ctx, leaseRNG) })
		}
		wg.Go(func() { w.requeue(ctx) })
		wg.Go(func() { w.drain(ctx) })

		// Kill after a random number of acknowledgements: a random moment
		// measured in progress, not wall time.
		kill := &killSwitch{at: l.acks.Load() + 30 + rng.Int64N(400), ch: make(chan struct{})}
		l.killAt.Store(kill)
		select {
		case <-kill.ch:
		case err := <-p.exited:
			cancel()
			wg.Wait()
			t.Fatalf("iteration %d: daemon exited by itself (%v); stderr:\n%s", i, err, p.log())
		case <-time.After(20 * time.Second): // a watchdog, not synchronisation
			cancel()
			wg.Wait()
			t.Fatalf("iteration %d: no progress towards %d acknowledgements; stderr:\n%s", i, kill.at, p.log())
		}
		l.killed.Store(true)
		if err := p.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		<-p.exited
		cancel()
		wg.Wait()
		l.killed.Store(false)
		t.Logf("iteration %d: killed after %d acknowledgements", i, l.acks.Load())
	}

	// The last restart ends with SIGTERM: a clean stop exits 0 and the next
	// start sees the same mailbox.
	p := startProc(t, dir)
	c, err := client.New(p.addr)
	if err != nil {
		t.Fatal(err)
	}
	before := verifyCrash(t, c, l, "final restart")
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-p.exited; err != nil {
		t.Fatalf("daemon after SIGTERM: %v, want exit 0; stderr:\n%s", err, p.log())
	}
	p = startProc(t, dir)
	c, err = client.New(p.addr)
	if err != nil {
		t.Fatal(err)
	}
	after := verifyCrash(t, c, l, "after clean stop")
	if len(before.Tasks) != len(after.Tasks) || len(before.Results) != len(after.Results) {
		t.Errorf("clean stop changed the mailbox: %d tasks, %d results before; %d, %d after",
			len(before.Tasks), len(before.Results), len(after.Tasks), len(after.Results))
	}
	requeues := 0
	for _, n := range l.requeueTries {
		requeues += n
	}
	t.Logf("acknowledged: %d sends, %d leases, %d results, %d drains; %d requeues tried, %d drains unanswered",
		len(l.sent), len(l.leaseTask), len(l.posted), len(l.drained), requeues, l.unackedDrains)
}
