//go:build linux

package tui

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/mailbox"
)

// What an idle console costs: its CPU and the bytes it writes to its
// terminal, at 200x50 over a mailbox of 1,000 rows. The console runs in a
// process of its own (this test binary again, TestConsoleCostChild), so
// its CPU is not the daemon's, and draws through tcell's real terminal
// code onto a tty that counts the bytes instead of showing them: what an
// operator's SSH session would carry.
//
//	go test ./tui -run '^$' -bench ConsoleCost -benchtime 1x -bench.span 20s

var benchSpanFlag = flag.Duration("bench.span", 20*time.Second, "tui ConsoleCost benchmark: how long each console is measured")

// costEnv are the child's instructions: the daemon's URL, and how long to
// measure after the console settled.
const (
	costEnvAddr = "MAILROOM_TUI_COST_ADDR"
	costEnvSpan = "MAILROOM_TUI_COST_SPAN"
)

// costReport is what the child measured over its span.
type costReport struct {
	SpanNs  int64 `json:"span_ns"`
	CPUNs   int64 `json:"cpu_ns"`
	Bytes   int64 `json:"bytes"`
	Frames  int64 `json:"frames"`
	Settled bool  `json:"settled"`
}

func BenchmarkConsoleCost(b *testing.B) {
	for _, background := range []bool{false, true} {
		name := "idle"
		if background {
			name = "background"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				rep := measureConsole(b, background, *benchSpanFlag)
				secs := float64(rep.SpanNs) / 1e9
				b.ReportMetric(100*float64(rep.CPUNs)/float64(rep.SpanNs), "%core")
				b.ReportMetric(float64(rep.Bytes)/secs, "bytes/s")
				b.ReportMetric(float64(rep.Frames)/secs, "frames/s")
			}
		})
	}
}

// measureConsole starts a daemon holding 1,000 rows (700 queued, 200 in
// flight, 100 results pending), a console on it in a child process, and,
// with background, what happens in an incident without changing what the
// console shows: workers long-polling empty queues, a webhook that keeps
// refusing, retried by the daemon, and an agent registering its card
// again unchanged.
func measureConsole(tb testing.TB, background bool, span time.Duration) costReport {
	tb.Helper()
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "receiver down", http.StatusBadGateway)
	}))
	defer refusing.Close()
	d := daemontest.Start(tb, daemontest.Options{Config: func(c *config.Config) { c.PushMaxAttempts = 1000 }})
	c, err := client.New(d.URL(), client.WithTimeout(10*time.Second))
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	send := func(recipient, intent string) {
		if _, err := c.Send(ctx, mailbox.Task{Sender: "planner@local", Recipient: recipient, IntentText: intent}); err != nil {
			tb.Fatal(err)
		}
	}
	for i := range 700 {
		send(fmt.Sprintf("worker-%d@local", i%4), fmt.Sprintf("summarize report %04d for the weekly review", i))
	}
	for i := range 300 {
		send("coder@local", fmt.Sprintf("fix issue %04d in the parser", i))
	}
	for range 100 {
		task, lease, err := c.Lease(ctx, "coder@local")
		if err != nil || task == nil {
			tb.Fatalf("lease: %v, %v", task, err)
		}
		err = c.PostResult(ctx, mailbox.Result{TaskID: task.ID, LeaseID: lease.LeaseID, Status: mailbox.StatusOK, Content: []mailbox.Content{}})
		if err != nil {
			tb.Fatal(err)
		}
	}
	if leased, err := c.LeaseN(ctx, "coder@local", 100, 0); err != nil || len(leased) != 100 {
		tb.Fatalf("lease 100: %d, %v", len(leased), err)
	}
	if _, err := c.RegisterAgent(ctx, "coder@local", mailbox.AgentCard{Name: "Coder"}); err != nil {
		tb.Fatal(err)
	}
	if background {
		body := `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"m-1","parts":[{"kind":"text","text":"hi"}]},` +
			`"configuration":{"blocking":false,"pushNotificationConfig":{"url":"` + refusing.URL + `/hook"}}}}`
		resp, err := http.Post(d.URL()+"/agents/coder@local/", "application/json", strings.NewReader(body))
		if err != nil {
			tb.Fatal(err)
		}
		resp.Body.Close()
	}

	bg, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		stop()
		wg.Wait()
	}()
	if background {
		for i := range 8 {
			wg.Go(func() {
				for bg.Err() == nil {
					_, _ = c.LeaseN(bg, fmt.Sprintf("idle-%d@local", i), 1, time.Second)
				}
			})
		}
		wg.Go(func() {
			t := time.NewTicker(250 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-bg.Done():
					return
				case <-t.C:
					_, _ = c.RegisterAgent(bg, "coder@local", mailbox.AgentCard{Name: "Coder"})
				}
			}
		})
	}

	cmd := exec.Command(os.Args[0], "-test.run=^TestConsoleCostChild$", "-test.count=1", "-test.v")
	if p := os.Getenv("MAILROOM_TUI_COST_PROFILE"); p != "" {
		// Where the console's CPU goes: a profile of the child.
		cmd.Args = append(cmd.Args, "-test.cpuprofile="+p)
	}
	cmd.Env = append(os.Environ(), "TERM=xterm-256color", costEnvAddr+"="+d.URL(), costEnvSpan+"="+span.String())
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("the console's process: %v\n%s", err, out)
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), "console cost: "); ok {
			var rep costReport
			if err := json.Unmarshal([]byte(line), &rep); err != nil {
				tb.Fatal(err)
			}
			if !rep.Settled {
				tb.Fatalf("the console never showed the mailbox:\n%s", out)
			}
			return rep
		}
	}
	tb.Fatalf("the console's process said no cost:\n%s", out)
	return costReport{}
}

// TestConsoleCostChild is the console process of BenchmarkConsoleCost; it
// runs only when the benchmark starts it.
func TestConsoleCostChild(t *testing.T) {
	addr := os.Getenv(costEnvAddr)
	if addr == "" {
		t.Skip("run by BenchmarkConsoleCost")
	}
	span, err := time.ParseDuration(os.Getenv(costEnvSpan))
	if err != nil {
		t.Fatal(err)
	}
	tty := newCountingTTY(200, 50)
	scr, err := tcell.NewTerminfoScreenFromTty(tty)
	if err != nil {
		t.Fatal(err)
	}
	counted := &showCounter{Screen: scr}
	con := New(newClient(t, addr), Options{Addr: addr, Screen: counted})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- con.Run(ctx) }()

	// Settled: the snapshot is on screen and the first listings read.
	rep := costReport{}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if st := con.model.status(); st.synced && st.applied > 0 && counted.shows.Load() > 0 {
			rep.Settled = true
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The span measured is an idle console's, not its start: the first
	// frames and listings pass in a stretch of real time first, as the
	// span itself is real time.
	time.Sleep(3 * time.Second)
	bytes0, shows0, cpu0, at0 := tty.written.Load(), counted.shows.Load(), cpuNs(), time.Now()
	time.Sleep(span)
	rep.Bytes, rep.Frames, rep.CPUNs, rep.SpanNs = tty.written.Load()-bytes0, counted.shows.Load()-shows0, cpuNs()-cpu0, time.Since(at0).Nanoseconds()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(rep)
	fmt.Println("console cost: " + string(js))
}

// cpuNs is the CPU this process used so far, user and system.
func cpuNs() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// showCounter counts the frames shown.
type showCounter struct {
	tcell.Screen
	shows atomic.Int64
}

func (s *showCounter) Show() {
	s.shows.Add(1)
	s.Screen.Show()
}

// countingTTY is a terminal of a fixed size that nobody types on: what is
// written to it is counted and dropped.
type countingTTY struct {
	w, h    int
	written atomic.Int64
	once    sync.Once
	stopped chan struct{}
}

func newCountingTTY(w, h int) *countingTTY {
	return &countingTTY{w: w, h: h, stopped: make(chan struct{})}
}

func (t *countingTTY) Start() error { return nil }
func (t *countingTTY) Stop() error  { t.once.Do(func() { close(t.stopped) }); return nil }
func (t *countingTTY) Drain() error { return t.Stop() }
func (t *countingTTY) Close() error { return t.Stop() }

func (t *countingTTY) NotifyResize(func()) {}

func (t *countingTTY) WindowSize() (tcell.WindowSize, error) {
	return tcell.WindowSize{Width: t.w, Height: t.h}, nil
}

func (t *countingTTY) Read(p []byte) (int, error) {
	<-t.stopped
	return 0, io.EOF
}

func (t *countingTTY) Write(p []byte) (int, error) {
	t.written.Add(int64(len(p)))
	return len(p), nil
}
