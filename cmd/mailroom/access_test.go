package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/internal/testlog"
)

// tokenFrom picks the token line out of 'token new's text output.
func tokenFrom(t *testing.T, out string) string {
	t.Helper()
	for line := range strings.SplitSeq(out, "\n") {
		if tok, ok := strings.CutPrefix(line, "  mr_"); ok {
			return "mr_" + tok
		}
	}
	t.Fatalf("no token in:\n%s", out)
	return ""
}

// TestTokenNewSnippetIsWhatTheDaemonAccepts pastes the printed snippet into
// a config and authenticates the printed token against it.
func TestTokenNewSnippetIsWhatTheDaemonAccepts(t *testing.T) {
	o := cliEnv(t, nil, "token", "new", "--principal", "planner@local", "--cap", "a2a.send.*", "--cap", auth.CapDrain)
	if o.code != 0 {
		t.Fatalf("token new: exit %d, stderr %q", o.code, o.stderr)
	}
	tok := tokenFrom(t, o.stdout)
	wantContains(t, "token new", o.stdout, "shown only now", "MAILROOM_TOKEN", "tokens:")
	_, snippet, ok := strings.Cut(o.stdout, "restart the daemon:\n\n")
	if !ok {
		t.Fatalf("no snippet in:\n%s", o.stdout)
	}
	if strings.Contains(snippet, tok) {
		t.Errorf("the config snippet holds the token itself, want only its hash:\n%s", snippet)
	}
	cfg, err := config.Parse(config.DefaultFor(func(string) string { return "" }), []byte(snippet))
	if err != nil {
		t.Fatalf("the printed snippet does not parse: %v\n%s", err, snippet)
	}
	a, err := auth.New(cfg.Tokens)
	if err != nil {
		t.Fatal(err)
	}
	id, err := a.Authenticate("Bearer " + tok)
	if err != nil || id.Principal != "planner@local" || !id.Can("a2a.send.anyone@local") || !id.Can(auth.CapDrain) || id.Can(auth.CapRead) {
		t.Errorf("the printed token against the printed snippet: %+v, %v", id, err)
	}
}

func TestTokenNewJSON(t *testing.T) {
	var a, b newToken
	mustJSON(t, "", &a, "token", "new", "--principal", "oncall", "--cap", auth.CapAdmin, "--json")
	mustJSON(t, "", &b, "token", "new", "--principal", "oncall", "--cap", auth.CapAdmin, "--json")
	sum := sha256.Sum256([]byte(a.Token))
	if a.Principal != "oncall" || a.SHA256 != hex.EncodeToString(sum[:]) || !slices.Equal(a.Caps, []string{auth.CapAdmin}) {
		t.Errorf("token new --json = %+v", a)
	}
	if a.Token == b.Token {
		t.Errorf("two runs printed the same token %q", a.Token)
	}
	var keys map[string]any
	out := mustCLI(t, "", "token", "new", "--principal", "oncall", "--cap", auth.CapRead, "--json")
	if err := json.Unmarshal([]byte(out), &keys); err != nil || len(keys) != 4 {
		t.Errorf("token new --json keys = %v, want principal, token, sha256, caps", keys)
	}
}

func TestTokenUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"token"}, "missing sub-command: new"},
		{[]string{"token", "mint"}, `unknown sub-command "mint"`},
		{[]string{"token", "new", "--cap", "a2a.read"}, "--principal is required"},
		{[]string{"token", "new", "--principal", "p"}, "--cap is required"},
		{[]string{"token", "new", "--principal", "p", "--cap", "a2a.fly"}, `unknown capability "a2a.fly"`},
		{[]string{"token", "new", "--principal", "two words", "--cap", "a2a.read"}, "--principal"},
		{[]string{"token", "new", "--principal", "p", "--cap", "a2a.read", "extra"}, `unexpected argument "extra"`},
	}
	for _, tt := range tests {
		o := cliEnv(t, nil, tt.args...)
		name := strings.Join(tt.args, " ")
		if o.code != 2 || o.stdout != "" {
			t.Errorf("mailroom %s: exit %d, stdout %q; want exit 2 and nothing printed", name, o.code, o.stdout)
		}
		wantContains(t, "mailroom "+name, o.stderr, tt.want, "--help")
	}
	for _, args := range [][]string{{"token", "--help"}, {"token", "new", "--help"}} {
		o := cliEnv(t, nil, args...)
		if o.code != 0 {
			t.Errorf("mailroom %s: exit %d", strings.Join(args, " "), o.code)
		}
		wantContains(t, "mailroom "+strings.Join(args, " "), o.stdout, "Example:", "mailroom token new --principal")
	}
	wantContains(t, "token new --help", cliEnv(t, nil, "token", "new", "--help").stdout, "-principal", "-cap", "-json")
}

// TestDaemonWithTokens: a token from 'token new' opens the daemon to its
// principal, a wrong one exits 1 with the daemon's 401, and the daemon's
// log never holds either token.
func TestDaemonWithTokens(t *testing.T) {
	t.Parallel()
	var good newToken
	mustJSON(t, "", &good, "token", "new", "--principal", "oncall", "--cap", auth.CapRead, "--json")
	logs := &testlog.Buffer{}
	logger := logs.Logger()
	addr := startDaemonWith(t, func(c *config.Config) {
		c.Tokens = []auth.Token{{Principal: "oncall", SHA256: good.SHA256, Caps: good.Caps}}
	}, logger)

	const wrong = "mr_not-a-configured-token"
	if o := cliEnv(t, map[string]string{"MAILROOM_ADDR": addr, "MAILROOM_TOKEN": good.Token}, "status"); o.code != 0 {
		t.Errorf("status with the token: exit %d, stderr %q", o.code, o.stderr)
	}
	o := cliEnv(t, map[string]string{"MAILROOM_ADDR": addr}, "status", "--token", wrong)
	if o.code != 1 {
		t.Errorf("status with a wrong token: exit %d, want 1", o.code)
	}
	wantContains(t, "wrong token stderr", o.stderr, "mailroom status: ", "unknown token")
	// Read-only token: a repair is refused 403, naming the capability.
	o = cliEnv(t, map[string]string{"MAILROOM_ADDR": addr, "MAILROOM_TOKEN": good.Token}, "retry-stale", "--enable")
	if o.code != 1 {
		t.Errorf("retry-stale --enable with a read token: exit %d, want 1", o.code)
	}
	wantContains(t, "forbidden stderr", o.stderr, auth.CapRequeue)

	text := logs.String()
	for _, secret := range []string{good.Token, wrong} {
		if strings.Contains(text, secret) || strings.Contains(o.stderr, secret) {
			t.Errorf("a token appears in the daemon's log or the CLI's output")
		}
	}
}

func TestDaemonRefusesToListenBeyondLoopbackWithoutTokens(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0"} {
		o := cliEnv(t, nil, "daemon", "--addr", addr, "--data-dir", t.TempDir())
		if o.code != 2 {
			t.Errorf("daemon --addr %s without tokens: exit %d, want 2", addr, o.code)
		}
		wantContains(t, "daemon --addr "+addr, o.stderr, `addr: got "`+addr+`"`, "refusing to listen beyond loopback without tokens", "mailroom token new")
	}
	// Tokens are a file-only key: no flag can put a secret in argv.
	help := cliEnv(t, nil, "daemon", "--help").stdout
	wantContains(t, "daemon --help", help, "-retry-stale-interval", "-retry-stale-scan-limit", "-result-cache-age", "-audit-max")
	if strings.Contains(help, "-tokens") {
		t.Errorf("daemon --help offers a -tokens flag")
	}
}
