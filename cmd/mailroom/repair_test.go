package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mailroom/mailroom/internal/testlog"
	"github.com/mailroom/mailroom/mailbox"
)

func TestRequeueAndLeaseGuardConflict(t *testing.T) {
	t.Parallel()
	addr := startDaemon(t)
	id := sendTask(t, addr, "planner@local", "coder@local", "flaky")
	first := leaseTask(t, addr, "coder@local")

	// A guard naming a lease that is not current is refused: exit 1, and the
	// operator is told which lease they expected and which one is current.
	const stale = "00000000-0000-4000-8000-000000000000"
	o := cli(t, addr, "requeue", id, "--reason", "stuck", "--duplicate-risk", "operator-accepted", "--lease-id", stale)
	if o.code != 1 {
		t.Fatalf("requeue with a stale lease: exit %d, want 1 (stderr %q)", o.code, o.stderr)
	}
	wantContains(t, "conflict stderr", o.stderr, "mailroom requeue: ",
		"expected lease: "+stale, "current lease:  "+first.Lease.LeaseID, "held by coder@local", " since ", " ago)", "attempt 1")
	if o.stdout != "" {
		t.Errorf("conflict stdout = %q, want nothing", o.stdout)
	}

	// With the right lease (and the underscore spelling of the risk) it works.
	out := mustCLI(t, addr, "requeue", id, "--reason", "stuck", "--duplicate-risk", "operator_accepted", "--lease-id", first.Lease.LeaseID)
	wantContains(t, "requeue", out, "requeued task "+id, "queued again after 1 attempt(s); the next lease is attempt 2")

	second := leaseTask(t, addr, "coder@local")
	if second.Task.ID != id || second.Lease.Attempt != 2 || second.Lease.LeaseID == first.Lease.LeaseID {
		t.Errorf("lease after requeue = %+v, want the same task at attempt 2 with a new lease", second)
	}

	// The late result from the first lease is refused and never reaches the sender.
	o = cli(t, addr, "result", "post", id, "--status", "ok", "--lease-id", first.Lease.LeaseID)
	if o.code != 1 {
		t.Fatalf("late result: exit %d, want 1", o.code)
	}
	wantContains(t, "late result stderr", o.stderr, "mailroom result post: ", "expected lease: "+first.Lease.LeaseID, "current lease:  "+second.Lease.LeaseID)

	var rep mailbox.RepairedResponse
	mustJSON(t, addr, &rep, "requeue", id, "--reason", "again", "--duplicate-risk", "operator-accepted", "--json")
	if rep.Kind != mailbox.KindRepaired || rep.Outcome.Action != mailbox.OutcomeRequeued || rep.Outcome.State != "queued" || rep.Outcome.Attempt != 2 {
		t.Errorf("requeue --json = %+v", rep)
	}
}

func TestRequeueIdempotentNeedsIdempotentTask(t *testing.T) {
	t.Parallel()
	addr := startDaemon(t)
	id := sendTask(t, addr, "a@x", "b@x", "unsafe work")
	leaseTask(t, addr, "b@x")
	o := cli(t, addr, "requeue", id, "--reason", "r", "--duplicate-risk", "idempotent")
	if o.code != 2 || !strings.HasPrefix(o.stderr, "mailroom requeue: --duplicate-risk: got \"idempotent\", but task "+id+" is unsafe") {
		t.Errorf("idempotent requeue of an unsafe task: exit %d, stderr %q; want exit 2 naming --duplicate-risk", o.code, o.stderr)
	}

	safe := sendTask(t, addr, "a@x", "b@x", "safe work", "--idempotency-key", "k", "--idempotent")
	leaseTask(t, addr, "b@x")
	out := mustCLI(t, addr, "requeue", safe, "--reason", "r", "--duplicate-risk", "idempotent")
	wantContains(t, "idempotent requeue", out, "requeued task "+safe)
}

func TestForceError(t *testing.T) {
	t.Parallel()
	addr := startDaemon(t)
	id := sendTask(t, addr, "planner@local", "coder@local", "hangs")
	l := leaseTask(t, addr, "coder@local")

	o := cli(t, addr, "force-error", id, "--reason", "r", "--message", "m", "--lease-id", "00000000-0000-4000-8000-000000000000")
	if o.code != 1 || !strings.Contains(o.stderr, "current lease:  "+l.Lease.LeaseID) {
		t.Errorf("force-error with a stale lease: exit %d, stderr %q", o.code, o.stderr)
	}

	out := mustCLI(t, addr, "force-error", id, "--reason", "agent gone", "--message", "coder stopped answering", "--lease-id", l.Lease.LeaseID)
	wantContains(t, "force-error", out, "forced an error on task "+id, "after 1 attempt(s)", "planner@local", "coder stopped answering")

	out = mustCLI(t, addr, "result", "next", "--sender", "planner@local")
	wantContains(t, "forced result", out, "status     error", "forced     yes", "error      coder stopped answering")

	// The task is resolved now: a second repair is a conflict, not a usage error.
	o = cli(t, addr, "force-error", id, "--reason", "r", "--message", "m", "--json")
	if o.code != 1 || !strings.HasPrefix(o.stderr, "mailroom force-error: ") {
		t.Errorf("force-error of a resolved task: exit %d, stderr %q", o.code, o.stderr)
	}
}

func TestDaemonRefusalsExit1WithTheDaemonsMessage(t *testing.T) {
	t.Parallel()
	addr := startDaemon(t)
	const never = "6f9619ff-8b86-4d11-b42d-00c04fc964ff"
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"result", "post", never, "--status", "ok"}, "mailroom result post: "},
		{[]string{"requeue", never, "--reason", "r", "--duplicate-risk", "operator-accepted"}, "mailroom requeue: "},
	}
	for _, tt := range tests {
		name := strings.Join(tt.args, " ")
		o := cli(t, addr, tt.args...)
		if o.code != 1 || !strings.HasPrefix(o.stderr, tt.want) {
			t.Errorf("mailroom %s: exit %d, stderr %q; want exit 1 and %q", name, o.code, o.stderr, tt.want)
		}
		if strings.Contains(o.stderr, "not_found:") || strings.Contains(o.stderr, "invalid:") {
			t.Errorf("mailroom %s: stderr %q shows the error code prefix, want the daemon's message", name, o.stderr)
		}
	}
}

func TestUnreachableDaemon(t *testing.T) {
	addr := closedAddr(t)
	for _, args := range [][]string{
		{"status"},
		{"send", "--from", "a", "--to", "b", "--intent", "x"},
		{"lease", "--recipient", "b"},
		{"compact", "--addr", "http://" + addr},
	} {
		o := cli(t, addr, args...)
		if o.code != 1 {
			t.Errorf("mailroom %s against nothing: exit %d, want 1", args[0], o.code)
		}
		wantContains(t, "unreachable stderr", o.stderr, "cannot reach mailroom daemon at ")
		if !strings.HasPrefix(o.stderr, "cannot reach mailroom daemon at ") || !strings.Contains(o.stderr, addr) {
			t.Errorf("mailroom %s: stderr %q, want it to start with the unreachable message naming %s", args[0], o.stderr, addr)
		}
	}
}

// TestDaemonVerb runs "mailroom daemon" in-process: it prints its address,
// serves clients, and exits 0 when its context ends (as SIGTERM does).
func TestDaemonVerb(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pr, pw := io.Pipe()
	var stderr testlog.Buffer
	exited := make(chan int, 1)
	go func() {
		code := run(ctx, []string{"daemon", "--addr", "127.0.0.1:0", "--data-dir", dir}, pw, &stderr, func(string) string { return "" })
		pw.Close()
		exited <- code
	}()
	sc := bufio.NewScanner(pr)
	if !sc.Scan() {
		t.Fatalf("daemon printed nothing; exit %d", <-exited)
	}
	m := regexp.MustCompile(`^mailroom daemon listening on (127\.0\.0\.1:\d+)$`).FindStringSubmatch(sc.Text())
	if m == nil {
		t.Fatalf("first stdout line = %q, want the listen address", sc.Text())
	}
	go io.Copy(io.Discard, pr)

	id := sendTask(t, m[1], "a@x", "b@x", "survives a clean stop")
	cancel()
	if code := <-exited; code != 0 {
		t.Fatalf("daemon exit %d after shutdown, want 0", code)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	}

	// The data directory holds the task for the next daemon.
	addr := startDaemonIn(t, dir)
	var st statusReport
	mustJSON(t, addr, &st, "status", "--json")
	if len(st.Tasks) != 1 || st.Tasks[0].Task.ID != id {
		t.Errorf("after restart status has %+v, want task %s", st.Tasks, id)
	}
}

func TestDaemonVerbRefusesBadConfig(t *testing.T) {
	dir := t.TempDir()
	file := func(body string) string {
		p := filepath.Join(t.TempDir(), "mailroom.yaml")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name string
		vars map[string]string
		args []string
		want []string
	}{
		{"unknown file key", nil, []string{"--config", file("listen: 1\n"), "--data-dir", dir}, []string{`unknown key "listen"`, "line 1"}},
		{"bad file value", nil, []string{"--config", file("compact_factor: 0.5\n"), "--data-dir", dir}, []string{"compact_factor", `"0.5"`, "greater than 1"}},
		{"missing file", nil, []string{"--config", filepath.Join(dir, "absent.yaml")}, []string{"absent.yaml"}},
		{"bad env", map[string]string{"MAILROOM_SSE_BUFFER": "lots"}, []string{"--data-dir", dir}, []string{"MAILROOM_SSE_BUFFER", `"lots"`}},
		{"bad flag", nil, []string{"--data-dir", dir, "--shutdown-timeout", "10"}, []string{"shutdown-timeout", "shutdown_timeout", "duration"}},
		{"no data dir", nil, nil, []string{"data_dir", "MAILROOM_DATA_DIR"}},
	}
	for _, tt := range tests {
		o := cliEnv(t, tt.vars, append([]string{"daemon"}, tt.args...)...)
		if o.code != 2 {
			t.Errorf("%s: exit %d, want 2 (stderr %q)", tt.name, o.code, o.stderr)
			continue
		}
		wantContains(t, tt.name+" stderr", o.stderr, append(tt.want, "mailroom daemon: ")...)
	}
}

func TestDaemonConfigPrecedence(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mailroom.yaml")
	body := "addr: 127.0.0.1:1001\ndata_dir: /from/file\nretain_done: 5\nlog_level: debug\n"
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"HOME": "/home/op", "MAILROOM_ADDR": "127.0.0.1:1002", "MAILROOM_RETAIN_DONE": "6"}
	e := &env{stdout: io.Discard, stderr: io.Discard, getenv: func(k string) string { return vars[k] }}
	cfg, err := loadDaemonConfig(e, path, []string{"--config", path, "--addr", "127.0.0.1:1003"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Addr != "127.0.0.1:1003" || cfg.RetainDone != 6 || cfg.DataDir != "/from/file" || cfg.LogLevel != "debug" || cfg.SSEBuffer != 4096 {
		t.Errorf("defaults < file < env < flags gave %+v", cfg)
	}
}

func TestDaemonVerbRuntimeFailureExits1(t *testing.T) {
	t.Parallel()
	busy := startDaemon(t) // holds the port
	o := cliEnv(t, nil, "daemon", "--addr", busy, "--data-dir", t.TempDir())
	if o.code != 1 {
		t.Fatalf("daemon on a busy port: exit %d, want 1 (stderr %q)", o.code, o.stderr)
	}
	wantContains(t, "busy port stderr", o.stderr, "mailroom daemon: ", busy)
}

// TestTokenIsSent checks --token and MAILROOM_TOKEN reach the daemon as a
// bearer token, the flag winning, using a stand-in daemon that records it.
func TestTokenIsSent(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/healthz" { // open to every caller: status sends it no token
			io.WriteString(w, `{"kind":"a2a_health","status":"ok","last_seq":0,"queued":0,"in_flight":0,"results_pending":0,"known":0}`)
			return
		}
		mu.Lock()
		got = append(got, r.Header.Get("Authorization"))
		mu.Unlock()
		io.WriteString(w, `{"kind":"a2a_queue","tasks":[],"results":[]}`)
	}))
	defer srv.Close()
	tests := []struct {
		vars map[string]string
		args []string
		want string
	}{
		{map[string]string{"MAILROOM_TOKEN": "from-env"}, nil, "Bearer from-env"},
		{map[string]string{"MAILROOM_TOKEN": "from-env"}, []string{"--token", "from-flag"}, "Bearer from-flag"},
		{nil, nil, ""},
	}
	for _, tt := range tests {
		mu.Lock()
		got = nil
		mu.Unlock()
		o := cliEnv(t, tt.vars, append([]string{"status", "--addr", srv.URL}, tt.args...)...)
		if o.code != 0 {
			t.Fatalf("status against the stand-in: exit %d, stderr %q", o.code, o.stderr)
		}
		mu.Lock()
		if len(got) == 0 || slices.ContainsFunc(got, func(h string) bool { return h != tt.want }) {
			t.Errorf("env %v, flags %v: Authorization %q, want %q on every request", tt.vars, tt.args, got, tt.want)
		}
		mu.Unlock()
	}
}

// TestRepairIDPrefixes: requeue and force-error take a unique prefix of 6
// or more characters for the task and the lease, as every id argument does.
func TestRepairIDPrefixes(t *testing.T) {
	t.Parallel()
	addr := startDaemon(t)
	id := sendTask(t, addr, "planner@local", "coder@local", "stuck", "--id", "6f9619ff-8b86-4d11-b42d-00c04fc96401")
	sendTask(t, addr, "planner@local", "coder@local", "waiting", "--id", "6f9619ff-0000-4000-8000-000000000002")
	l := leaseTask(t, addr, "coder@local")

	o := cli(t, addr, "requeue", "6f9619", "--reason", "r", "--duplicate-risk", "operator-accepted")
	if o.code != 2 {
		t.Fatalf("requeue with an ambiguous prefix: exit %d, want 2 (stderr %q)", o.code, o.stderr)
	}
	wantContains(t, "ambiguous requeue", o.stderr, `mailroom requeue: TASK_ID: "6f9619" is ambiguous`, id+"  in_flight  coder@local", "6f9619ff-0000-4000-8000-000000000002  queued     coder@local")

	out := mustCLI(t, addr, "requeue", "6f9619ff-8b", "--reason", "worker crashed", "--duplicate-risk", "operator-accepted", "--lease-id", l.Lease.LeaseID[:8])
	wantContains(t, "requeue by prefix", out, "requeued task "+id)

	l = leaseTask(t, addr, "coder@local")
	o = cli(t, addr, "force-error", "6f9619ff-8b", "--reason", "r", "--message", "m", "--lease-id", "fffff")
	if o.code != 2 || !strings.Contains(o.stderr, `mailroom force-error: --lease-id: got "fffff" (5 characters), expected a lease id`) {
		t.Errorf("force-error with a 5-character lease: exit %d, stderr %q", o.code, o.stderr)
	}
	out = mustCLI(t, addr, "force-error", "6f9619ff-8b", "--reason", "agent gone", "--message", "no answer", "--lease-id", l.Lease.LeaseID[:6])
	wantContains(t, "force-error by prefix", out, "forced an error on task "+id)
}

// TestCompactSaysWhyTheDataDirGrewCLI: the first compaction of a young log
// grows the data dir, and 'mailroom compact' says why.
func TestCompactSaysWhyTheDataDirGrewCLI(t *testing.T) {
	t.Parallel()
	addr := startDaemon(t)
	sendTask(t, addr, "planner@local", "coder@local", "a task the snapshot must hold")
	out := mustCLI(t, addr, "compact")
	wantContains(t, "compact", out, "compacted at seq 1: log and snapshot ", "the data dir grew by ", "compact_factor")
}

// TestRequeueTo hands a leased task to another agent with --to: the new
// recipient leases it next, the old one cannot, and the audit trail
// records the move; a blank --to is a usage error naming the flag.
func TestRequeueTo(t *testing.T) {
	t.Parallel()
	addr := startDaemon(t)
	id := sendTask(t, addr, "planner@local", "coder@local", "flaky")
	first := leaseTask(t, addr, "coder@local")

	for _, blank := range []string{"", " "} {
		o := cli(t, addr, "requeue", id, "--reason", "coder is down", "--duplicate-risk", "operator-accepted", "--to", blank)
		if o.code != 2 || !strings.Contains(o.stderr, "--to: got") || !strings.Contains(o.stderr, "mailroom requeue --help") {
			t.Errorf("--to %q: exit %d, stderr %q; want 2 naming --to", blank, o.code, o.stderr)
		}
	}
	// The daemon checks the id; its refusal of command.recipient is told
	// as a usage error naming --to.
	o := cli(t, addr, "requeue", id, "--reason", "coder is down", "--duplicate-risk", "operator-accepted", "--to", "Coder2@local")
	if o.code != 2 || !strings.Contains(o.stderr, `--to: got "Coder2@local"`) || !strings.Contains(o.stderr, "lowercase") {
		t.Errorf("--to Coder2@local: exit %d, stderr %q; want 2 naming --to and saying ids are lowercase", o.code, o.stderr)
	}

	// An agent the mailbox has never heard of is refused, naming the
	// known agents it is close to; coder2@local is known once it polls.
	mustCLI(t, addr, "lease", "--recipient", "coder2@local")
	o = cli(t, addr, "requeue", id, "--reason", "coder is down", "--duplicate-risk", "operator-accepted", "--to", "codr2@local")
	if o.code != 2 || !strings.Contains(o.stderr, `--to: got "codr2@local", an agent the mailbox does not know`) ||
		!strings.Contains(o.stderr, "did you mean coder2@local, coder@local;") || !strings.Contains(o.stderr, "or --new-agent to confirm a new one") {
		t.Errorf("--to codr2@local: exit %d, stderr %q; want 2 refusing an unknown agent, offering coder2@local and --new-agent", o.code, o.stderr)
	}
	wantUsage(t, addr, []string{"requeue", id, "--reason", "r", "--operator-accepted", "--new-agent"}, "--new-agent: only with --to AGENT")

	out := mustCLI(t, addr, "requeue", id, "--reason", "coder is down", "--duplicate-risk", "operator-accepted", "--lease-id", first.Lease.LeaseID, "--to", "coder2@local")
	wantContains(t, "requeue --to", out, "requeued task "+id+": queued again for coder2@local after 1 attempt(s); the next lease is attempt 2")

	if o := mustCLI(t, addr, "lease", "--recipient", "coder@local"); !strings.Contains(o, "nothing queued for coder@local") {
		t.Errorf("coder@local's lease after the move = %q, want nothing queued", o)
	}
	second := leaseTask(t, addr, "coder2@local")
	if second.Task.ID != id || second.Lease.Attempt != 2 {
		t.Errorf("coder2@local leased %s at attempt %d, want %s at attempt 2", second.Task.ID, second.Lease.Attempt, id)
	}

	var audit mailbox.AuditResponse
	mustJSON(t, addr, &audit, "audit", "--task", id, "--json")
	if len(audit.Repairs) != 1 || audit.Repairs[0].FromRecipient != "coder@local" || audit.Repairs[0].ToRecipient != "coder2@local" {
		t.Errorf("audit = %+v, want one requeue from coder@local to coder2@local", audit.Repairs)
	}

	// --new-agent confirms one the mailbox does not know yet.
	out = mustCLI(t, addr, "requeue", id, "--reason", "coder2 is busy", "--operator-accepted", "--to", "brand-new@local", "--new-agent")
	wantContains(t, "requeue --to --new-agent", out, "queued again for brand-new@local")

	help := cli(t, addr, "requeue", "--help")
	wantContains(t, "requeue --help", help.stdout, "--to AGENT", "--to coder2@local", "a2a.send.AGENT")
}
