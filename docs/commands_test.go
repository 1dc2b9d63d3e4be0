package docs

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// A shell block is run by a test when the line before it is
// `<!-- run: HOW -->`, HOW one of these, and says why it is not when that
// line is `<!-- not run: REASON -->`.
const (
	runDaemon    = "daemon"     // README's walk: its daemon, started on a free port and a temporary data dir
	runWalk      = "walk"       // README's walk: its blocks in order, one script, against that daemon
	runAfterWalk = "after-walk" // any page: each block alone, against the walk's daemon once the walk is done
)

// block is a fenced shell block and how it is marked.
type block struct {
	page string
	line int
	how  string // "run", "not run", or "" when unmarked
	what string // HOW or REASON
	body string
}

var (
	shellFence = regexp.MustCompile("^```(sh|bash|shell|console|zsh)\\b")
	marker     = regexp.MustCompile(`^<!-- (run|not run): (.+?) -->$`)
)

// shellBlocks lists every shell block of every page, marked or not.
func shellBlocks(t *testing.T) []block {
	t.Helper()
	var out []block
	for _, p := range pages(t) {
		last := "" // the last non-blank line outside a block
		for i := 0; i < len(p.lines); i++ {
			l := p.lines[i]
			if !strings.HasPrefix(l, "```") {
				if strings.TrimSpace(l) != "" {
					last = strings.TrimSpace(l)
				}
				continue
			}
			b := block{page: p.path, line: i + 1}
			shell := shellFence.MatchString(l)
			var body []string
			for i++; i < len(p.lines) && !strings.HasPrefix(p.lines[i], "```"); i++ {
				body = append(body, p.lines[i])
			}
			if shell {
				if m := marker.FindStringSubmatch(last); m != nil {
					b.how, b.what = m[1], m[2]
				}
				b.body = strings.Join(body, "\n") + "\n"
				out = append(out, b)
			}
			last = ""
		}
	}
	return out
}

// TestShellBlocksRunOrSayWhyNot: a command in the docs that no test runs
// rots unnoticed, so every shell block is either run by TestWalk or marked
// with the reason it is not (it needs a terminal, PostgreSQL, a remote
// agent, minutes; its ids are placeholders).
func TestShellBlocksRunOrSayWhyNot(t *testing.T) {
	runs := map[string]int{}
	for _, b := range shellBlocks(t) {
		switch {
		case b.how == "":
			t.Errorf("%s:%d: a shell block neither run nor marked: put <!-- run: %s|%s|%s --> or <!-- not run: the reason --> on the line before it", b.page, b.line, runDaemon, runWalk, runAfterWalk)
		case b.how == "run" && b.what != runDaemon && b.what != runWalk && b.what != runAfterWalk:
			t.Errorf("%s:%d: <!-- run: %s -->: no test runs blocks so; say %s, %s or %s", b.page, b.line, b.what, runDaemon, runWalk, runAfterWalk)
		case b.how == "run" && b.what != runAfterWalk && filepath.Base(b.page) != "README.md":
			t.Errorf("%s:%d: <!-- run: %s --> is the README's walk; elsewhere say %s", b.page, b.line, b.what, runAfterWalk)
		case b.how == "run":
			runs[b.what]++
		}
	}
	if runs[runDaemon] != 1 || runs[runWalk] == 0 {
		t.Errorf("README.md's walk has %d daemon block(s) and %d walk block(s); want one daemon block and the walk", runs[runDaemon], runs[runWalk])
	}
}

// TestWalk runs README's five-minute walk as a newcomer would, with the
// binary built from this tree first on PATH: the daemon its daemon block
// starts (on 127.0.0.1:0, in a temporary data dir), then its walk blocks as
// one script under bash -e, then every after-walk block of every page
// against the same daemon. Each must succeed, and the walk must print what
// README says it prints.
func TestWalk(t *testing.T) {
	var daemon *block
	var walk []string
	var after []block
	for _, b := range shellBlocks(t) {
		switch {
		case b.how != "run":
		case b.what == runDaemon:
			daemon = &b
		case b.what == runWalk:
			walk = append(walk, b.body)
		case b.what == runAfterWalk:
			after = append(after, b)
		}
	}
	if daemon == nil || len(walk) == 0 {
		t.Fatal("README.md has no walk to run (see TestShellBlocksRunOrSayWhyNot)")
	}
	bin := buildMailroom(t)
	addr, stdout := startDaemon(t, bin, *daemon)

	out := runScript(t, bin, addr, strings.Join(walk, ""))
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	says := strings.Join(strings.Fields(string(readme)), " ")
	printed := stdout + out
	for _, want := range []string{
		"mailroom daemon listening on",
		"posted ok result for task",
		"fixed in abc123",
		"no result pending for planner@local",
		"0 queued, 1 in flight",
		"queued again after 1 attempt(s); the next lease is attempt 2",
		"it is queued and not leased",
		"refused, as it should be",
		"worker crashed",
	} {
		if !strings.Contains(says, want) {
			t.Errorf("README's walk does not say %q, which the test expects it to print", want)
		}
		if !strings.Contains(printed, want) {
			t.Errorf("the walk did not print %q, as README says it does; it printed:\n%s", want, printed)
		}
	}
	if !regexp.MustCompile(`(?m)^lease\s+[0-9a-f-]{36}$`).MatchString(out) {
		t.Errorf("the walk's lease printed no lease id for the script to take; it printed:\n%s", out)
	}

	for _, b := range after {
		runScript(t, bin, addr, b.body)
	}
}

// buildMailroom builds ./cmd/mailroom into a temporary directory, as the
// walk's go install does into GOPATH/bin.
func buildMailroom(t *testing.T) string {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is not on PATH: the walk needs the mailroom binary built: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "mailroom")
	cmd := exec.CommandContext(t.Context(), goCmd, "build", "-o", bin, "./cmd/mailroom")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/mailroom: %v\n%s", err, out)
	}
	return bin
}

// startDaemon starts the daemon b's line starts, on 127.0.0.1:0 and a
// temporary data dir whatever the line names, waits for the line saying
// where it listens, and returns that address and the line. The daemon is
// stopped with SIGTERM when the test ends.
func startDaemon(t *testing.T, bin string, b block) (addr, printed string) {
	t.Helper()
	line, _, _ := strings.Cut(strings.TrimSpace(b.body), " #")
	args := strings.Fields(strings.TrimSuffix(strings.TrimSpace(line), "&"))
	if len(args) < 2 || args[0] != "mailroom" || args[1] != "daemon" || strings.ContainsAny(line, "'\"\n$") {
		t.Fatalf("%s:%d: the walk's daemon block must be one plain `mailroom daemon ...` line, got %q", b.page, b.line, b.body)
	}
	args = setFlag(setFlag(args[1:], "--addr", "127.0.0.1:0"), "--data-dir", t.TempDir())
	cmd := exec.Command(bin, args...)
	cmd.Env = environ()
	stdout := &firstLine{done: make(chan struct{})}
	cmd.Stdout = stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if err := <-exited; err != nil {
			t.Errorf("the walk's daemon did not stop cleanly on SIGTERM: %v", err)
		}
	})
	select {
	case <-stdout.done:
	case err := <-exited:
		exited <- err // for the cleanup
		t.Fatalf("the walk's daemon (%s) exited before it said where it listens: %v", strings.Join(args, " "), err)
	}
	printed = stdout.line()
	addr, ok := strings.CutPrefix(strings.TrimSpace(printed), "mailroom daemon listening on ")
	if !ok {
		t.Fatalf("the walk's daemon printed %q, not where it listens", printed)
	}
	return addr, printed
}

// firstLine keeps what a process prints up to its first newline, and
// closes done when that line is complete.
type firstLine struct {
	mu   sync.Mutex
	buf  []byte
	done chan struct{}
}

func (w *firstLine) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if bytes.IndexByte(w.buf, '\n') < 0 {
		w.buf = append(w.buf, p...)
		if bytes.IndexByte(w.buf, '\n') >= 0 {
			close(w.done)
		}
	}
	return len(p), nil
}

func (w *firstLine) line() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	l, _, _ := bytes.Cut(w.buf, []byte("\n"))
	return string(l) + "\n"
}

// setFlag gives flag the value v in args, in place of the one written, or
// added when none is.
func setFlag(args []string, flag, v string) []string {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			args[i+1] = v
			return args
		}
		if strings.HasPrefix(a, flag+"=") {
			args[i] = flag + "=" + v
			return args
		}
	}
	return append(args, flag, v)
}

// runScript runs script with bash -e (and pipefail), the binary first on
// PATH and MAILROOM_ADDR naming the walk's daemon, in a directory of its
// own; it fails the test unless the script succeeds, and returns what it
// printed on stdout and stderr.
func runScript(t *testing.T, bin, addr, script string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "bash", "-e", "-o", "pipefail", "-c", script)
	cmd.Dir = t.TempDir()
	cmd.Env = append(environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"), "MAILROOM_ADDR="+addr)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("bash -e:\n%s\nfailed: %v\nit printed:\n%s", script, err, out)
	}
	return string(out)
}

// environ is the test's environment without MAILROOM_* variables and PATH:
// the daemon refuses a MAILROOM_* variable it does not know, and the
// scripts get their own address and PATH.
func environ() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MAILROOM_") && !strings.HasPrefix(kv, "PATH=") {
			out = append(out, kv)
		}
	}
	return append(out, "PATH="+os.Getenv("PATH"))
}
