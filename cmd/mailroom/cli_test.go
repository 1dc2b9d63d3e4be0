package main

import (
	"strings"
	"testing"
)

func TestTopLevelHelpListsEveryVerb(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		o := cliEnv(t, nil, args...)
		if o.code != 0 {
			t.Errorf("mailroom %s: exit %d, want 0", args[0], o.code)
		}
		for _, c := range commands() {
			wantContains(t, "mailroom "+args[0], o.stdout, "  "+c.name+" ", c.summary)
		}
	}
	if o := cliEnv(t, nil); o.code != 2 || !strings.Contains(o.stderr, "Commands:") {
		t.Errorf("mailroom (no args) = exit %d, stderr %q; want exit 2 and the command list", o.code, o.stderr)
	}
	o := cliEnv(t, nil, "frobnicate")
	if o.code != 2 {
		t.Errorf("mailroom frobnicate: exit %d, want 2", o.code)
	}
	wantContains(t, "unknown verb stderr", o.stderr, `unknown command "frobnicate"`, "mailroom --help")
}

func TestEveryVerbHasHelp(t *testing.T) {
	tests := []struct {
		args  []string
		flags []string
	}{
		{[]string{"daemon", "--help"}, []string{"-config", "-addr", "-data-dir", "-log-level", "-compact-factor", "-shutdown-timeout", "MAILROOM_DATA_DIR"}},
		{[]string{"send", "--help"}, []string{"-from", "-to", "-intent", "-kind", "-parent", "-deadline", "-idempotency-key", "-idempotent", "-id", "-json"}},
		{[]string{"lease", "-h"}, []string{"-recipient", "-json"}},
		{[]string{"result", "post", "--help"}, []string{"-status", "-text", "-json-value", "-error-message", "-lease-id"}},
		{[]string{"result", "next", "--help"}, []string{"-sender", "-json"}},
		{[]string{"status", "--help"}, []string{"-n ", "-min-lease-age-ms", "-deadline-within-ms", "-state", "-json"}},
		{[]string{"requeue", "--help"}, []string{"-reason", "-duplicate-risk", "-lease-id", "-json"}},
		{[]string{"force-error", "--help"}, []string{"-reason", "-message", "-lease-id", "-json"}},
		{[]string{"compact", "--help"}, []string{"-json"}},
		{[]string{"help", "send"}, []string{"-from"}},
	}
	for _, tt := range tests {
		name := strings.Join(tt.args, " ")
		o := cliEnv(t, nil, tt.args...)
		if o.code != 0 {
			t.Errorf("mailroom %s: exit %d, want 0 (stderr %q)", name, o.code, o.stderr)
			continue
		}
		wantContains(t, "mailroom "+name, o.stdout, append(tt.flags, "Usage:", "Example:\n  mailroom ", "Flags:")...)
		if n := strings.Count(o.stdout, "Usage:"); n != 1 {
			t.Errorf("mailroom %s printed its help %d times", name, n)
		}
		if tt.args[0] != "daemon" {
			wantContains(t, "mailroom "+name, o.stdout, "-addr", "-token", "-timeout")
		}
	}
	o := cliEnv(t, nil, "result", "--help")
	if o.code != 0 {
		t.Errorf("mailroom result --help: exit %d", o.code)
	}
	wantContains(t, "mailroom result --help", o.stdout, "mailroom result post", "mailroom result next", "Example:")
}

// TestUsageErrors runs each mistake against a real daemon, so a check the
// CLI forgot would reach the daemon and exit 1 instead of 2.
func TestUsageErrors(t *testing.T) {
	t.Parallel()
	addr := startDaemon(t)
	const id = "6f9619ff-8b86-4d11-b42d-00c04fc964ff"
	tests := []struct {
		args []string
		verb string
		want string
	}{
		{[]string{"send", "--to", "b", "--intent", "x"}, "send", "--from is required"},
		{[]string{"send", "--from", "a", "--intent", "x"}, "send", "--to is required"},
		{[]string{"send", "--from", "a", "--to", "b"}, "send", "--intent is required"},
		{[]string{"send", "--from", "a", "--to", "b", "--intent", "x", "--deadline", "soon"}, "send", `--deadline: got "soon"`},
		{[]string{"send", "--from", "a", "--to", "b", "--intent", "x", "--deadline", "-5m"}, "send", "positive duration"},
		{[]string{"send", "--from", "a", "--to", "b", "--intent", "x", "--idempotent"}, "send", "--idempotent needs --idempotency-key"},
		{[]string{"send", "--from", "a", "--to", "b", "--intent", "x", "extra"}, "send", `unexpected argument "extra"`},
		{[]string{"send", "--bogus"}, "send", "flag provided but not defined: -bogus"},
		{[]string{"send", "--from", "a", "--to", "b", "--intent", "x", "--addr", "ftp://x"}, "send", "--addr"},
		{[]string{"send", "--from", "a", "--to", "b", "--intent", "x", "--timeout", "-1s"}, "send", "--timeout"},
		{[]string{"lease"}, "lease", "--recipient is required"},
		{[]string{"lease", "--recipient", " "}, "lease", "--recipient"},
		{[]string{"result"}, "result", "missing sub-command"},
		{[]string{"result", "fetch"}, "result", `unknown sub-command "fetch"`},
		{[]string{"result", "post", "--status", "ok"}, "result post", "missing TASK_ID"},
		{[]string{"result", "post", id}, "result post", "--status is required"},
		{[]string{"result", "post", id, "--status", "fine"}, "result post", `--status: got "fine", expected ok, error, partial, rejected, input_required or auth_required`},
		{[]string{"result", "post", id, "--status", "ok", "--json-value", "{nope"}, "result post", "--json-value"},
		{[]string{"result", "next"}, "result next", "--sender is required"},
		{[]string{"status", "-n", "0"}, "status", "-n: got 0"},
		{[]string{"status", "-n", "10001"}, "status", "-n: got 10001"},
		{[]string{"status", "--state", "done"}, "status", `--state: got "done", expected queued, in_flight or waiting`},
		{[]string{"status", "--min-lease-age-ms", "abc"}, "status", "min-lease-age-ms"},
		{[]string{"status", "--min-lease-age-ms", "-1"}, "status", "--min-lease-age-ms: got -1"},
		{[]string{"requeue", "--reason", "r", "--duplicate-risk", "idempotent"}, "requeue", "missing TASK_ID"},
		{[]string{"requeue", id, "--duplicate-risk", "idempotent"}, "requeue", "--reason is required"},
		{[]string{"requeue", id, "--reason", "r"}, "requeue", "--duplicate-risk is required"},
		{[]string{"requeue", id, "--reason", "r", "--duplicate-risk", "yolo"}, "requeue", `--duplicate-risk: got "yolo"`},
		{[]string{"requeue", id, "--reason", "  ", "--duplicate-risk", "idempotent"}, "requeue", "--reason"},
		{[]string{"force-error", id, "--reason", "r"}, "force-error", "--message is required"},
		{[]string{"force-error", id, "--message", "m"}, "force-error", "--reason is required"},
		{[]string{"force-error", id, id, "--reason", "r", "--message", "m"}, "force-error", "unexpected argument"},
		{[]string{"compact", "now"}, "compact", `unexpected argument "now"`},
		{[]string{"daemon", "--log-level", "loud"}, "daemon", "log_level"},
	}
	for _, tt := range tests {
		name := strings.Join(tt.args, " ")
		o := cli(t, addr, tt.args...)
		if o.code != 2 {
			t.Errorf("mailroom %s: exit %d, want 2 (stderr %q)", name, o.code, o.stderr)
			continue
		}
		wantContains(t, "mailroom "+name+" stderr", o.stderr, "mailroom "+tt.verb+": ", tt.want, "run 'mailroom "+tt.verb+" --help'")
		if o.stdout != "" {
			t.Errorf("mailroom %s: stdout %q, want nothing", name, o.stdout)
		}
	}
}

func TestParseArgsInterleaved(t *testing.T) {
	tests := []struct {
		args     []string
		wantPos  string
		wantFlag string
	}{
		{[]string{"ID", "--status", "ok"}, "ID", "ok"},
		{[]string{"--status", "ok", "ID"}, "ID", "ok"},
		{[]string{"A", "--status", "ok", "B"}, "A,B", "ok"},
		{[]string{"--status", "ok", "--", "--not-a-flag"}, "--not-a-flag", "ok"},
		{[]string{"--", "A", "--status"}, "A,--status", ""},
	}
	for _, tt := range tests {
		fs := newFlagSet(&env{}, verbHelp{verb: "t"})
		status := fs.String("status", "", "")
		pos, err := parseArgs(fs, tt.args)
		if err != nil || strings.Join(pos, ",") != tt.wantPos || *status != tt.wantFlag {
			t.Errorf("parseArgs(%q) = %q, status %q, %v; want %q, status %q", tt.args, pos, *status, err, tt.wantPos, tt.wantFlag)
		}
	}
}
