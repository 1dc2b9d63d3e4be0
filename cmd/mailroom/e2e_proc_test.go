package main

import (
	"context"
	"flag"
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

	"github.com/mailroom/mailroom/internal/testlog"
)

var (
	iterations    = flag.Int("fault.iterations", 3, "kill -9 iterations of TestFaultKill9UnderLoad (.ci/run runs 20)")
	seedFlag      = flag.Uint64("fault.seed", 0, "random seed of the kill -9 suites (TestFaultKill9* and their PostgreSQL twins, TestPostgresKill9*) (0: from the clock; the seed used is logged)")
	diskFullMode  = flag.String("fault.diskfull", "auto", "how TestFaultDiskFull fills the disk: tmpfs, rlimit, or auto (tmpfs when mount is permitted)")
	restartEvents = flag.Int("fault.restart-events", 0, "TestRestartMillionEvents: build a log of this many events and time the restart (0: skip)")
	liveMillion   = flag.Int("fault.live-tasks", 0, "TestMillionLiveTasks: this many live tasks, half queued and half in flight, and as many events after the snapshot (0: skip)")
)

// The end-to-end tests (e2e_*_test.go) run the real binary and break its
// world for real: kill -9 under load, a data directory that fills up, a
// restart over a million events. The binary is this test binary itself,
// re-executed with asMainEnv set, when it runs main() with the arguments it
// was given; so the daemon under test is built exactly as the tests are
// (with -race when they are). Run them with
//
//	go test -run 'Fault|Restart' ./cmd/mailroom
//	go test -run Fault ./cmd/mailroom -fault.iterations 200 -fault.seed 42
//	go test -run Kill9Conversations ./cmd/mailroom -conv.kills 50
//	go test -run Kill9RemoteDelivery ./cmd/mailroom -remote.kills 50 -pg.remote-failovers 20
//	go test -run 'Kill9UnderLoadTLS' ./cmd/mailroom -fault.tls-iterations 20 -pg.tls-failovers 20
//	go test -run RestartMillion ./cmd/mailroom -fault.restart-events 1000000 -v
const asMainEnv = "GO_TEST_MAILROOM_AS_MAIN"

// binPath is the binary the end-to-end tests start as `mailroom`.
var binPath = os.Args[0]

func TestMain(m *testing.M) {
	if os.Getenv(asMainEnv) == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// proc is the real binary running "mailroom daemon".
type proc struct {
	cmd    *exec.Cmd
	addr   string
	out    *testlog.Buffer // stderr: the daemon's log
	exited chan error
	hop    procTLS // how it serves (e2e_hop_test.go): plain HTTP unless startProcTLS
}

var listenLine = regexp.MustCompile(`mailroom daemon listening on (\S+)\n`)

// addrWatcher is the daemon's stdout: it hands over the listen address as
// soon as the line announcing it is complete.
type addrWatcher struct {
	mu   sync.Mutex
	buf  []byte
	done bool
	addr chan string
}

func (w *addrWatcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return len(p), nil
	}
	w.buf = append(w.buf, p...)
	if m := listenLine.FindSubmatch(w.buf); m != nil {
		w.addr <- string(m[1])
		w.done, w.buf = true, nil
	}
	return len(p), nil
}

// startProc runs the daemon on dir with extra flags and waits until it
// listens. It is killed when the test ends, if it still runs.
func startProc(t *testing.T, dir string, extra ...string) *proc {
	t.Helper()
	return startProcWithin(t, dir, 30*time.Second, extra...)
}

// startProcWithin is startProc for a daemon that may take up to wait to
// open (a replay of millions of events).
func startProcWithin(t *testing.T, dir string, wait time.Duration, extra ...string) *proc {
	t.Helper()
	args := append([]string{"daemon", "--addr", "127.0.0.1:0", "--data-dir", dir, "--log-level", "warn"}, extra...)
	cmd := exec.Command(binPath, args...)
	cmd.Env = []string{"HOME=" + dir, asMainEnv + "=1"}
	w := &addrWatcher{addr: make(chan string, 1)}
	p := &proc{cmd: cmd, out: &testlog.Buffer{}, exited: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = w, p.out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", binPath, err)
	}
	go func() { p.exited <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })
	watchdog := time.NewTimer(wait) // a watchdog, not synchronisation
	defer watchdog.Stop()
	select {
	case p.addr = <-w.addr:
	case err := <-p.exited:
		t.Fatalf("daemon on %s exited before listening (%v); its log:\n%s", dir, err, p.out)
	case <-watchdog.C:
		t.Fatalf("daemon on %s did not announce its address in %s; its log:\n%s", dir, wait, p.out)
	}
	return p
}

// kill9 kills the daemon with SIGKILL and waits until it is gone.
func (p *proc) kill9(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatalf("kill -9: %v", err)
	}
	<-p.exited
}

// stop ends the daemon with SIGTERM and requires a clean exit.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	watchdog := time.NewTimer(30 * time.Second)
	defer watchdog.Stop()
	select {
	case err := <-p.exited:
		if err != nil {
			t.Fatalf("daemon after SIGTERM: %v, want exit 0; its log:\n%s", err, p.out)
		}
	case <-watchdog.C:
		t.Fatalf("daemon did not stop within 30s of SIGTERM; its log:\n%s", p.out)
	}
}

// brokenFiles lists the *.broken copies the log keeps of cut-off torn tails.
func brokenFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*.broken"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// killDuringLoad kills p with SIGKILL at a random moment 0.5-1.5 s into
// the load that stop ends and wait waits out: the fault being injected,
// not a wait for something to happen. killed is set while the kill is
// under way, so the load takes the requests it cuts off for what they
// are. A daemon that exits by itself first fails the test, naming what.
func (p *proc) killDuringLoad(t *testing.T, rng *rand.Rand, what string, killed *atomic.Bool, stop, wait func()) {
	t.Helper()
	load := time.NewTimer(500*time.Millisecond + time.Duration(rng.Int64N(int64(time.Second))))
	defer load.Stop()
	select {
	case <-load.C:
	case err := <-p.exited:
		stop()
		wait()
		t.Fatalf("%s: the daemon exited by itself (%v); its log:\n%s", what, err, p.out)
	}
	killed.Store(true)
	p.kill9(t)
	stop()
	wait()
	killed.Store(false)
}

// faultSeed is the run's random seed: -fault.seed, or one from the clock;
// it is logged with how to run the same again.
func faultSeed(t *testing.T) uint64 {
	t.Helper()
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -fault.seed %d)", seed, seed)
	return seed
}

// ledgerBase is what every kill -9 suite's ledger shares: the test, the
// lock its records are kept under, and whether a kill is under way (a
// request that fails then is the kill's doing, not the daemon's).
type ledgerBase struct {
	t      *testing.T
	mu     sync.Mutex
	killed atomic.Bool
}

// do runs f with the ledger locked.
func (l *ledgerBase) do(f func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f()
}

// failed reports a request of the load that failed, unless the load was
// being stopped or a kill was under way.
func (l *ledgerBase) failed(ctx context.Context, what string, err error) {
	if ctx.Err() == nil && !l.killed.Load() {
		l.t.Errorf("%s before the kill: %v", what, err)
	}
}
