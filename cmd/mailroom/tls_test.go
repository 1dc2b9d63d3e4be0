package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/internal/testlog"
	"github.com/mailroom/mailroom/mcpface/facetest"
)

// TestStatusOverTLS: a daemon that serves TLS is reached with its CA given
// by flag or variable; without it the CLI says, in one line naming the
// address, that the daemon's authority is not trusted and how to give it,
// and exits as for a daemon it cannot reach.
func TestStatusOverTLS(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Options{TLS: true})
	mustCLI(t, d.URL(), "status", "--ca-file", d.CAFile)
	// A host:port with a CA file is https.
	o := cliEnv(t, map[string]string{"MAILROOM_ADDR": d.Addr(), "MAILROOM_CA_FILE": d.CAFile}, "send", "--from", "a@x", "--to", "b@x", "--intent", "over tls")
	if o.code != exitOK {
		t.Fatalf("send with MAILROOM_CA_FILE and a host:port: exit %d, stderr %q", o.code, o.stderr)
	}

	o = cli(t, d.URL(), "status")
	if o.code != exitFailure {
		t.Errorf("status without --ca-file: exit %d, want %d", o.code, exitFailure)
	}
	want := "cannot reach mailroom daemon at " + d.URL() + `: its certificate is signed by "` + d.CA.Cert.Subject.CommonName +
		`", an authority this client does not trust; give the CA with --ca-file or MAILROOM_CA_FILE` + "\n"
	if o.stderr != want {
		t.Errorf("status without --ca-file: stderr\n%q\nwant\n%q", o.stderr, want)
	}

	o = cli(t, "http://"+d.Addr(), "status", "--ca-file", d.CAFile)
	if o.code != exitFailure || !strings.HasPrefix(o.stderr, "cannot reach mailroom daemon at http://"+d.Addr()+": it serves TLS and this client spoke plain HTTP; address it as https://"+d.Addr()) ||
		strings.Count(o.stderr, "\n") != 1 {
		t.Errorf("status over http to the TLS port: exit %d, stderr %q; want 1 and the one line saying so", o.code, o.stderr)
	}
}

// TestTLSFlagMistakes: a wrong TLS file is a usage error naming the flag,
// its variable, the path and what was expected.
func TestTLSFlagMistakes(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Options{TLS: true})
	missing := filepath.Join(t.TempDir(), "nope.pem")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"status", "--ca-file", missing}, `--ca-file (MAILROOM_CA_FILE): got "` + missing + `": cannot read it: no such file or directory`},
		{[]string{"status", "--ca-file", d.KeyFile}, `--ca-file (MAILROOM_CA_FILE): got "` + d.KeyFile + `": holds a PRIVATE KEY, not a certificate`},
		{[]string{"status", "--ca-file", d.CAFile, "--cert", d.CertFile}, "--key (MAILROOM_KEY_FILE): missing; --cert and --key go together"},
		{[]string{"lease", "--recipient", "b@x", "--key", d.KeyFile}, "--cert (MAILROOM_CERT_FILE): missing; --cert and --key go together"},
		{[]string{"status", "--cert", d.CertFile, "--key", d.CAFile}, `--key (MAILROOM_KEY_FILE): got "` + d.CAFile + `": `},
		{[]string{"bench", "--embedded", "--ca-file", d.CAFile}, "--ca-file, --cert and --key are for a daemon at --addr that serves TLS"},
	}
	for _, tt := range tests {
		wantUsage(t, d.URL(), tt.args, tt.want)
	}
}

// TestBenchOverTLS: a short bench of a daemon that serves TLS, unbatched
// and batched, completes cycles without errors.
func TestBenchOverTLS(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Options{TLS: true})
	for _, extra := range [][]string{nil, {"--batch", "4"}} {
		args := append([]string{"--addr", d.URL(), "--ca-file", d.CAFile, "--pairs", "2", "--duration", "300ms", "--fanout", "1", "--json"}, extra...)
		o := benchCLI(t, nil, args...)
		if o.code != exitOK {
			t.Fatalf("bench %v: exit %d; stderr:\n%s", extra, o.code, o.stderr)
		}
		var rep struct {
			Cycles      int    `json:"cycles"`
			ErrorsTotal int    `json:"errors_total"`
			Target      string `json:"target"`
			Fanout      struct {
				Complete bool `json:"complete"`
			} `json:"fanout"`
		}
		if err := json.Unmarshal([]byte(o.stdout), &rep); err != nil {
			t.Fatalf("bench %v: %v\n%s", extra, err, o.stdout)
		}
		if rep.Cycles == 0 || rep.ErrorsTotal != 0 || !rep.Fanout.Complete || rep.Target != d.URL() {
			t.Errorf("bench %v over TLS: %+v, want cycles, no errors, every event to the subscriber, target %s", extra, rep, d.URL())
		}
	}
	o := benchCLI(t, nil, "--addr", d.URL(), "--pairs", "1", "--duration", "100ms")
	if o.code != exitFailure || !strings.Contains(o.stderr, "give the CA with --ca-file or MAILROOM_CA_FILE") {
		t.Errorf("bench without --ca-file: exit %d, stderr %q; want 1 and the unknown authority", o.code, o.stderr)
	}
}

// TestConsoleOverTLS: the console reaches a TLS daemon with its CA and
// goes live (its event stream over TLS too); without the CA it does not
// start, and says why in one line.
func TestConsoleOverTLS(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Options{TLS: true})
	sendTask(t, d.URL(), "planner@x", "coder@x", "shown over tls", "--ca-file", d.CAFile)
	screen := newOperator("live", "coder@x", d.URL())
	o := cliScreen(t, screen, map[string]string{"MAILROOM_ADDR": d.URL(), "MAILROOM_CA_FILE": d.CAFile}, "console")
	if o.code != exitOK {
		t.Errorf("console over TLS: exit %d after q, want 0 (stderr %q)", o.code, o.stderr)
	}

	o = cliScreen(t, newOperator(), map[string]string{"MAILROOM_ADDR": d.URL()}, "console")
	if o.code != exitFailure || !strings.Contains(o.stderr, "an authority this client does not trust; give the CA with --ca-file") || strings.Count(o.stderr, "\n") != 1 {
		t.Errorf("console without the CA: exit %d, stderr %q; want 1 and the one line", o.code, o.stderr)
	}
}

// TestMCPOverTLS: `mailroom mcp`, launched by a host as its MCP server,
// reaches a TLS daemon with MAILROOM_CA_FILE and serves its tools; its
// sends reach the daemon.
func TestMCPOverTLS(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Options{TLS: true})
	cmd := exec.Command(binPath, "mcp", "--addr", d.Addr(), "--agent", "planner@x")
	cmd.Env = []string{asMainEnv + "=1", "MAILROOM_CA_FILE=" + d.CAFile}
	logs := &testlog.Buffer{}
	cmd.Stderr = logs
	session := facetest.ClientSession(t, &mcp.CommandTransport{Command: cmd}, facetest.Session{})
	res, err := session.CallTool(t.Context(), &mcp.CallToolParams{Name: "send_task", Arguments: map[string]any{"to": "coder@x", "intent": "sent over tls"}})
	if err != nil || res.IsError {
		t.Fatalf("send_task over TLS: %v %+v; mailroom mcp's log:\n%s", err, res, logs)
	}
	if s := d.State(t); len(s.Tasks) != 1 {
		t.Errorf("the daemon holds %d tasks after send_task, want 1", len(s.Tasks))
	}
}
