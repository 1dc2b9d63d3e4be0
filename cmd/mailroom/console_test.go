package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/internal/testlog"
	"github.com/mailroom/mailroom/mailbox"
)

// operator is a simulated terminal whose operator presses q once the
// screen shows every text in want.
type operator struct {
	tcell.SimulationScreen
	want []string
	// first, when set, is pressed once the screen shows every text in
	// before; want is then waited for.
	first  tcell.Key
	before []string
	primed bool

	mu      sync.Mutex
	last    string
	pressed bool
}

func newOperator(want ...string) *operator {
	return &operator{SimulationScreen: tcell.NewSimulationScreen("UTF-8"), want: want}
}

// Init sizes the screen wide enough for the header; the simulation resets
// to 80x25 on every Init.
func (s *operator) Init() error {
	err := s.SimulationScreen.Init()
	s.SetSize(160, 30)
	return err
}

// Show runs on the UI goroutine after each draw: the one race-free moment
// to read the cells.
func (s *operator) Show() {
	s.SimulationScreen.Show()
	cells, w, h := s.GetContents()
	var b strings.Builder
	for y := range h {
		for x := range w {
			if r := cells[y*w+x].Runes; len(r) > 0 {
				b.WriteString(string(r))
			} else {
				b.WriteByte(' ')
			}
		}
		b.WriteByte('\n')
	}
	text := b.String()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last = text
	if s.pressed {
		return
	}
	if s.first != 0 && !s.primed {
		for _, w := range s.before {
			if !strings.Contains(text, w) {
				return
			}
		}
		s.primed = true
		go s.InjectKey(s.first, 0, tcell.ModCtrl)
		return
	}
	for _, w := range s.want {
		if !strings.Contains(text, w) {
			return
		}
	}
	s.pressed = true
	// Not on the UI goroutine: the key queue may be full.
	go s.InjectKey(tcell.KeyRune, 'q', tcell.ModNone)
}

func (s *operator) seen() (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last, s.pressed
}

// cliScreen runs the CLI in-process with the console drawing on screen. A
// console that never shows what the operator waits for is stopped after a
// deadline and the test fails with the last screen.
func cliScreen(t *testing.T, screen *operator, vars map[string]string, args ...string) outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	e := &env{stdout: &stdout, stderr: &stderr, getenv: func(k string) string { return vars[k] }, screen: screen}
	code := runEnv(ctx, e, args)
	if last, pressed := screen.seen(); !pressed && len(screen.want) > 0 {
		t.Errorf("mailroom %s: the screen never showed %q; last screen:\n%s", strings.Join(args, " "), screen.want, last)
	}
	return outcome{code, stdout.String(), stderr.String()}
}

func TestConsoleShowsWhomItActsAs(t *testing.T) {
	t.Parallel()
	addr, secret := startDaemonWithToken(t, "oncall", auth.CapRead)
	screen := newOperator("oncall", "read-only", "live", addr)
	o := cliScreen(t, screen, map[string]string{"MAILROOM_ADDR": addr, "MAILROOM_TOKEN": secret}, "console", "--read-only")
	if o.code != 0 {
		t.Errorf("console: exit %d after q, want 0 (stderr %q)", o.code, o.stderr)
	}
}

func TestConsoleStartsWhileTheDaemonIsUnreachable(t *testing.T) {
	addr := closedAddr(t)
	o := cliScreen(t, newOperator("reconnecting", addr), nil, "console", "--addr", addr, "--timeout", "2s")
	if o.code != 0 {
		t.Errorf("console against nothing: exit %d after q, want 0 (stderr %q)", o.code, o.stderr)
	}
}

func TestConsoleRefusesAWrongTokenBeforeDrawing(t *testing.T) {
	t.Parallel()
	addr, _ := startDaemonWithToken(t, "oncall", auth.CapRead)
	screen := newOperator()
	o := cliScreen(t, screen, map[string]string{"MAILROOM_ADDR": addr}, "console", "--token", "mr_wrong")
	if o.code != 1 {
		t.Errorf("console with a wrong token: exit %d, want 1", o.code)
	}
	wantContains(t, "console stderr", o.stderr, "mailroom console: ", "unknown token")
	if last, _ := screen.seen(); last != "" {
		t.Errorf("the console drew before refusing:\n%s", last)
	}
}

// TestConsoleNeedsATerminal: without a terminal the console and the demo
// say so and where to go instead, exit 1, and start nothing.
func TestConsoleNeedsATerminal(t *testing.T) {
	t.Parallel()
	addr := startDaemon(t)
	const console = "mailroom console needs a terminal; for a one-shot view run 'mailroom status'\n"
	// In process, writing to a buffer rather than a terminal.
	if o := cli(t, addr, "console"); o.code != 1 || o.stderr != console || o.stdout != "" {
		t.Errorf("console without a terminal: exit %d, stdout %q, stderr %q; want 1 and %q", o.code, o.stdout, o.stderr, console)
	}
	o := cliEnv(t, nil, "demo", "--data", t.TempDir())
	if want := "mailroom demo needs a terminal for its console; without one run 'mailroom demo --headless'\n"; o.code != 1 || o.stderr != want || o.stdout != "" {
		t.Errorf("demo without a terminal: exit %d, stdout %q, stderr %q; want 1 and %q (and no demo started)", o.code, o.stdout, o.stderr, want)
	}

	// The real binary, as a script or a service manager would run it:
	// stdin from /dev/null, stdout a pipe.
	cmd := exec.Command(binPath, "console", "--addr", addr)
	cmd.Env = append(os.Environ(), asMainEnv+"=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || stderr.String() != console || stdout.Len() != 0 {
		t.Errorf("mailroom console in a pipe: %v, stdout %q, stderr %q; want exit 1 and %q", err, stdout.String(), stderr.String(), console)
	}
}

// --export-dir (or MAILROOM_EXPORT_DIR) is where Ctrl-S saves a pane, and
// the status line says the file's full path.
func TestConsoleExportDir(t *testing.T) {
	t.Parallel()
	addr := startDaemon(t)
	sendTask(t, addr, "p@x", "w@x", "exported")
	dir := t.TempDir()
	screen := newOperator("saved 1 Queue rows to " + dir + string(filepath.Separator) + "mailroom-queue-")
	screen.first, screen.before = tcell.KeyCtrlS, []string{"exported"}
	o := cliScreen(t, screen, map[string]string{"MAILROOM_ADDR": addr, "MAILROOM_EXPORT_DIR": dir}, "console")
	if o.code != 0 {
		t.Fatalf("console: exit %d (stderr %q)", o.code, o.stderr)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "mailroom-queue-*.csv"))
	if len(files) != 1 {
		t.Fatalf("files in the export dir: %v, want the saved pane", files)
	}
	b, err := os.ReadFile(files[0])
	if err != nil || !strings.Contains(string(b), "exported") {
		t.Errorf("the saved pane = %q, %v", b, err)
	}
}

func TestConsoleAndDemoUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"console", "--stale-after", "0s"}, "--stale-after: got 0s, expected a positive duration"},
		{[]string{"console", "--stale-after", "soon"}, `--stale-after: got "soon", expected a duration such as 90s, 5m or 1h30m`},
		{[]string{"console", "--addr", "nowhere"}, `--addr: bad daemon address "nowhere"`},
		{[]string{"console", "--timeout", "-1s"}, "--timeout: got -1s"},
		{[]string{"console", "extra"}, `unexpected argument "extra"`},
		{[]string{"console", "--export-dir", "/no/such/dir"}, `--export-dir: got "/no/such/dir", expected an existing directory`},
		{[]string{"demo", "--stale-after", "-5s"}, "--stale-after: got -5s"},
		{[]string{"demo", "--seed", "x"}, "seed"},
		{[]string{"demo", "now"}, `unexpected argument "now"`},
	}
	for _, tt := range tests {
		// A terminal is supplied so that a missed check would draw rather
		// than take over the real one; nothing may be drawn.
		screen := newOperator()
		o := cliScreen(t, screen, nil, tt.args...)
		name := strings.Join(tt.args, " ")
		if o.code != 2 {
			t.Errorf("mailroom %s: exit %d, want 2 (stderr %q)", name, o.code, o.stderr)
		}
		wantContains(t, "mailroom "+name, o.stderr, tt.want, "mailroom "+tt.args[0]+" --help")
		if last, _ := screen.seen(); last != "" {
			t.Errorf("mailroom %s drew on the terminal", name)
		}
	}
	for verb, flags := range map[string][]string{
		"console": {"-addr", "-token", "-read-only", "-stale-after"},
		"demo":    {"-data", "-headless", "-seed", "-stale-after"},
	} {
		o := cliEnv(t, nil, verb, "--help")
		if o.code != 0 {
			t.Errorf("mailroom %s --help: exit %d", verb, o.code)
		}
		wantContains(t, "mailroom "+verb+" --help", o.stdout, append(flags, "Usage:", "Example:\n  mailroom "+verb)...)
	}
}

// demoRun is a headless demo running in-process until stop.
type demoRun struct {
	stdout *testlog.Buffer
	stop   context.CancelFunc
	exited chan outcome
}

func startDemo(t *testing.T, args ...string) *demoRun {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	d := &demoRun{stdout: &testlog.Buffer{}, stop: cancel, exited: make(chan outcome, 1)}
	go func() {
		var stderr bytes.Buffer
		code := run(ctx, append([]string{"demo", "--headless"}, args...), d.stdout, &stderr, func(string) string { return "" })
		d.exited <- outcome{code: code, stderr: stderr.String()}
	}()
	t.Cleanup(func() {
		cancel()
		<-d.exited
	})
	return d
}

func (d *demoRun) output() string {
	return d.stdout.String()
}

// waitFor polls the demo's output until re matches it.
func (d *demoRun) waitFor(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	var m []string
	poll(t, "demo output matching "+re.String(), func() bool {
		select {
		case o := <-d.exited:
			d.exited <- o // for the cleanup
			t.Fatalf("demo exited %d before printing %s; stdout %q, stderr %q", o.code, re, d.output(), o.stderr)
		default:
		}
		m = re.FindStringSubmatch(d.output())
		return m != nil
	})
	return m
}

// poll checks cond every 20ms until it holds, failing the test after 20s.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(20 * time.Second)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("no %s within 20s", what)
		}
	}
}

var (
	demoAddrLine = regexp.MustCompile(`mailroom demo: daemon on (http://127\.0\.0\.1:\d+) — run 'mailroom console --addr http://127\.0\.0\.1:\d+ --stale-after (\S+)' in another terminal\n`)
	demoDataLine = regexp.MustCompile(`mailroom demo: data in (\S+), daemon log in (\S+); SIGINT`)
)

// TestDemoHeadless: the demo serves, its agents make tasks flow, and
// cancelling (as SIGINT does) stops everything with exit 0.
func TestDemoHeadless(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := startDemo(t, "--data", dir, "--seed", "7", "--stale-after", "45s")
	m := d.waitFor(t, demoAddrLine)
	url := m[1]
	// The console it suggests marks the same leases stale as it would.
	if m[2] != "45s" {
		t.Errorf("the demo suggests a console with --stale-after %s, want its own 45s", m[2])
	}
	c, err := client.New(url)
	if err != nil {
		t.Fatal(err)
	}
	// Tasks flow: wait for one that a worker has leased or answered.
	poll(t, "a task leased by a demo worker", func() bool {
		v, err := c.Queue(t.Context(), mailbox.QueueFilter{})
		return err == nil && (len(v.Results) > 0 || len(v.Tasks) > 0 && v.Tasks[0].Attempt > 0)
	})
	d.stop()
	o := <-d.exited
	d.exited <- o // for the cleanup
	if o.code != 0 || o.stderr != "" {
		t.Errorf("demo after cancel: exit %d, stderr %q; want 0 and nothing on stderr", o.code, o.stderr)
	}
	logPath := filepath.Join(dir, "demo.log")
	wantContains(t, "demo stdout", d.output(), "data in "+dir, "stopped; daemon log in "+logPath)
	if b, err := os.ReadFile(logPath); err != nil || !strings.Contains(string(b), "mailroom daemon listening") {
		t.Errorf("the daemon's log %s: %v, %q; want its start-up line", logPath, err, b)
	}
	if err := c.Health(t.Context()); err == nil {
		t.Errorf("the daemon still answers after the demo stopped")
	}
	// --data keeps the mailbox: a daemon on it sees the demo's tasks.
	addr := startDaemonIn(t, dir)
	var st statusReport
	mustJSON(t, addr, &st, "status", "--json")
	if len(st.Tasks)+len(st.Results) == 0 {
		t.Errorf("--data %s kept no tasks", dir)
	}
}

func TestDemoRemovesItsTemporaryData(t *testing.T) {
	d := startDemo(t)
	m := d.waitFor(t, demoDataLine)
	data, logPath := m[1], m[2]
	t.Cleanup(func() { os.RemoveAll(filepath.Dir(logPath)) })
	if _, err := os.Stat(data); err != nil {
		t.Fatalf("data dir while running: %v", err)
	}
	d.stop()
	o := <-d.exited
	d.exited <- o
	if o.code != 0 {
		t.Errorf("demo after cancel: exit %d (stderr %q)", o.code, o.stderr)
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Errorf("temporary data %s after exit: %v, want it removed", data, err)
	}
	if _, err := os.Stat(logPath); err != nil {
		t.Errorf("the log %s should outlive the demo: %v", logPath, err)
	}
}

// TestDemoConsole is 'mailroom demo' as a person runs it: the console on
// the demo's daemon; q stops everything and nothing but the exit note
// reaches the terminal's streams.
func TestDemoConsole(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	o := cliScreen(t, newOperator("live", "127.0.0.1:"), nil, "demo", "--data", dir)
	if o.code != 0 {
		t.Errorf("demo: exit %d after q, want 0 (stderr %q)", o.code, o.stderr)
	}
	if want := "mailroom demo: stopped; daemon log in " + filepath.Join(dir, "demo.log") + "\n"; o.stdout != want || o.stderr != "" {
		t.Errorf("demo printed stdout %q, stderr %q; want only %q", o.stdout, o.stderr, want)
	}
}
