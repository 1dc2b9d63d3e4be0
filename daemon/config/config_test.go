package config

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/daemon/engine"
	"github.com/mailroom/mailroom/internal/testpki"
)

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func writeFile(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mailroom.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func base() Config { return DefaultFor(env(map[string]string{"HOME": "/home/op"})) }

func TestDefaultIsValid(t *testing.T) {
	c := base()
	if err := c.Validate(); err != nil {
		t.Fatalf("Default().Validate() = %v", err)
	}
	if c.Addr != "127.0.0.1:7717" || c.CompactFactor != 4 || c.CompactMinBytes != 1<<20 ||
		c.RetainDone != 10000 || c.SSEHeartbeat != 15*time.Second || c.SSEBuffer != 4096 ||
		c.SSEWriteTimeout != 10*time.Second || c.ShutdownTimeout != 10*time.Second ||
		c.LogLevel != "info" || c.LogFormat != "text" || c.Tokens != nil ||
		c.RetryStaleInterval != 0 || c.RetryStaleMinLeaseAge != 5*time.Minute || c.RetryStaleMaxAttempts != 3 ||
		c.RetryStaleMaxRequeues != 10 || c.RetryStaleScanLimit != 100 ||
		c.ResultCacheMax != 10000 || c.ResultCacheAge != 24*time.Hour || c.AuditMax != 10000 {
		t.Errorf("defaults = %+v", c)
	}
}

func TestDefaultDataDir(t *testing.T) {
	tests := []struct {
		name string
		vars map[string]string
		want string
	}{
		{"xdg wins", map[string]string{"XDG_DATA_HOME": "/xdg", "HOME": "/home/op"}, "/xdg/mailroom"},
		{"home fallback", map[string]string{"HOME": "/home/op"}, "/home/op/.local/share/mailroom"},
		{"relative xdg ignored", map[string]string{"XDG_DATA_HOME": "rel", "HOME": "/home/op"}, "/home/op/.local/share/mailroom"},
		{"nothing set", nil, ""},
	}
	for _, tt := range tests {
		if got := DefaultDataDir(env(tt.vars)); got != tt.want {
			t.Errorf("%s: DefaultDataDir = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestValidateNamesKeyValueAndExpectation(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		want   []string // substrings of the error
	}{
		{"no data dir", func(c *Config) { c.DataDir = "" }, []string{"data_dir", `""`, "MAILROOM_DATA_DIR"}},
		{"bad addr", func(c *Config) { c.Addr = "localhost" }, []string{"addr", `"localhost"`, "host:port"}},
		{"port too big", func(c *Config) { c.Addr = "127.0.0.1:70000" }, []string{"addr", "70000"}},
		{"bad level", func(c *Config) { c.LogLevel = "loud" }, []string{"log_level", `"loud"`, `"debug", "info", "warn", "error"`}},
		{"bad format", func(c *Config) { c.LogFormat = "xml" }, []string{"log_format", `"xml"`, `"text", "json"`}},
		{"factor too small", func(c *Config) { c.CompactFactor = 1 }, []string{"compact_factor", `"1"`, "greater than 1"}},
		{"negative min bytes", func(c *Config) { c.CompactMinBytes = -1 }, []string{"compact_min_bytes", `"-1"`}},
		{"negative retain", func(c *Config) { c.RetainDone = -5 }, []string{"retain_done", `"-5"`, "at least 0"}},
		{"zero heartbeat", func(c *Config) { c.SSEHeartbeat = 0 }, []string{"sse_heartbeat", `"0s"`, "positive"}},
		{"zero buffer", func(c *Config) { c.SSEBuffer = 0 }, []string{"sse_buffer", `"0"`, "at least 1"}},
		{"zero write timeout", func(c *Config) { c.SSEWriteTimeout = 0 }, []string{"sse_write_timeout"}},
		{"negative shutdown", func(c *Config) { c.ShutdownTimeout = -time.Second }, []string{"shutdown_timeout", `"-1s"`}},
		{"negative retry interval", func(c *Config) { c.RetryStaleInterval = -time.Second }, []string{"retry_stale_interval", `"-1s"`, "0 (off)"}},
		{"zero min lease age", func(c *Config) { c.RetryStaleMinLeaseAge = 0 }, []string{"retry_stale_min_lease_age", `"0s"`, "positive"}},
		{"zero max attempts", func(c *Config) { c.RetryStaleMaxAttempts = 0 }, []string{"retry_stale_max_attempts", `"0"`, "at least 1"}},
		{"negative max requeues", func(c *Config) { c.RetryStaleMaxRequeues = -1 }, []string{"retry_stale_max_requeues", `"-1"`, "at least 0"}},
		{"scan limit too big", func(c *Config) { c.RetryStaleScanLimit = 10001 }, []string{"retry_stale_scan_limit", `"10001"`, "from 1 to 10000"}},
		{"zero scan limit", func(c *Config) { c.RetryStaleScanLimit = 0 }, []string{"retry_stale_scan_limit", "from 1 to 10000"}},
		{"negative cache max", func(c *Config) { c.ResultCacheMax = -1 }, []string{"result_cache_max", `"-1"`}},
		{"zero cache age", func(c *Config) { c.ResultCacheAge = 0 }, []string{"result_cache_age", "positive"}},
		{"zero audit max", func(c *Config) { c.AuditMax = 0 }, []string{"audit_max", `"0"`, "at least 1"}},
		{"bad store", func(c *Config) { c.Store = "sqlite" }, []string{"store", `"sqlite"`, `"log", "postgres"`}},
		{"postgres without a url", func(c *Config) { c.Store = "postgres" }, []string{"postgres_url", "empty", "store is postgres"}},
		{"bad postgres url", func(c *Config) { c.PostgresURL = "mysql://root:hunter2@db/x" }, []string{"postgres_url", `"mysql://root:xxxxx@db/x"`, "postgres://"}},
		{"bad schema", func(c *Config) { c.PostgresSchema = "Mail-Room" }, []string{"postgres_schema", `"Mail-Room"`, "lowercase identifier"}},
		{"bad advertise url", func(c *Config) { c.AdvertiseURL = "10.0.0.5:7717" }, []string{"advertise_url", `"10.0.0.5:7717"`, "http://"}},
		{"bad push host", func(c *Config) { c.PushAllowHosts = "loopback, https://hooks.example.com" }, []string{"push_allow_hosts", "*.domain"}},
		{"empty push hosts", func(c *Config) { c.PushAllowHosts = "" }, []string{"push_allow_hosts"}},
		{"zero push attempts", func(c *Config) { c.PushMaxAttempts = 0 }, []string{"push_max_attempts", `"0"`}},
		{"too many resends", func(c *Config) { c.RemoteResendMax = 1001 }, []string{"remote_resend_max", `"1001"`}},
		{"zero push retry max", func(c *Config) { c.PushRetryMax = 0 }, []string{"push_retry_max", "positive"}},
		{"negative outbox bound", func(c *Config) { c.PushOutboxMax = -1 }, []string{"push_outbox_max", `"-1"`}},
		{"negative receiver bound", func(c *Config) { c.PushOutboxPerReceiver = -5 }, []string{"push_outbox_per_receiver", `"-5"`}},
		{"negative dead retention", func(c *Config) { c.PushDeadRetention = -time.Hour }, []string{"push_dead_retention", `"-1h0m0s"`, "168h"}},
		{"session timeout too short", func(c *Config) { c.PostgresSessionTimeout = 500 * time.Millisecond }, []string{"postgres_session_timeout", `"500ms"`, "at least 1s"}},
		{"campaign interval too short", func(c *Config) { c.PostgresCampaignInterval = time.Millisecond }, []string{"postgres_campaign_interval", `"1ms"`, "at least 10ms"}},
		{"bad token", func(c *Config) { c.Tokens = []auth.Token{{Principal: "p", SHA256: "xyz", Caps: []string{"a2a.read"}}} },
			[]string{"tokens[0].sha256", "64 hex digits"}},
	}
	for _, tt := range tests {
		c := base()
		tt.mutate(&c)
		err := c.Validate()
		if err == nil {
			t.Errorf("%s: Validate() = nil, want an error", tt.name)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: Validate() = %q, want it to contain %q", tt.name, err, w)
			}
		}
	}
}

func TestThePostgresPasswordIsNeverShown(t *testing.T) {
	c := base()
	c.Store, c.PostgresURL = "postgres", "postgres://mr:hunter2@db:5432/mail"
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := Set(&c, "postgres_url", "pg://mr:hunter2@db"); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("Set(postgres_url, a bad URL) = %v, want a refusal without the password", err)
	}
	if c.PostgresURL != "postgres://mr:hunter2@db:5432/mail" {
		t.Errorf("a refused Set changed postgres_url to %q", c.PostgresURL)
	}
}

func TestLoadOverlaysFileOnDefaults(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		check func(Config) bool
	}{
		{"empty file", "", func(c Config) bool { return reflect.DeepEqual(c, base()) }},
		{"comments only", "# nothing here\n", func(c Config) bool { return reflect.DeepEqual(c, base()) }},
		{"one key", "addr: 0.0.0.0:9000\n", func(c Config) bool {
			want := base()
			want.Addr = "0.0.0.0:9000"
			return reflect.DeepEqual(c, want)
		}},
		{"every key", `
addr: 127.0.0.1:0
data_dir: /var/lib/mailroom
log_level: debug
log_format: json
compact_factor: 2.5
compact_min_bytes: 512KiB
retain_done: 7
sse_heartbeat: 1m
sse_buffer: 16
sse_write_timeout: 250ms
shutdown_timeout: 3s
tokens:
  - principal: planner@local
    sha256: 0a4d55a8d778e5022fab701977c5d840bbc486d0fd2a3b5e4cc52d5d5f2c6a26
    caps: [a2a.send.*, a2a.drain]
  - principal: oncall
    token: mr_quick-local-secret
    caps: [a2a.admin]
    revoked: true
retry_stale_interval: 30s
retry_stale_min_lease_age: 2m
retry_stale_max_attempts: 5
retry_stale_max_requeues: 0
retry_stale_scan_limit: 10000
result_cache_max: 0
result_cache_age: 1h
audit_max: 50
max_turns: 8
max_turns_bytes: 64KiB
a2a_blocking_timeout: 45s
batch_max: 250
push_allow_hosts: "loopback, hooks.example.com, *.corp.example, 10.0.0.0/8"
push_max_attempts: 3
push_retry_max: 1m
remote_resend_max: 5
push_outbox_per_receiver: 50
push_outbox_max: 5000
push_dead_retention: 72h
store: postgres
postgres_url: postgres://mr:pw@db:5432/mail
postgres_schema: team_a
advertise_url: http://10.0.0.5:7717
postgres_session_timeout: 3s
postgres_campaign_interval: 100ms
mcp_http: true
`, func(c Config) bool {
			return reflect.DeepEqual(c, Config{Addr: "127.0.0.1:0", DataDir: "/var/lib/mailroom", LogLevel: "debug", LogFormat: "json",
				CompactFactor: 2.5, CompactMinBytes: 512 << 10, RetainDone: 7, SSEHeartbeat: time.Minute, SSEBuffer: 16,
				SSEWriteTimeout: 250 * time.Millisecond, ShutdownTimeout: 3 * time.Second,
				Tokens: []auth.Token{
					{Principal: "planner@local", SHA256: "0a4d55a8d778e5022fab701977c5d840bbc486d0fd2a3b5e4cc52d5d5f2c6a26", Caps: []string{"a2a.send.*", "a2a.drain"}},
					{Principal: "oncall", Token: "mr_quick-local-secret", Caps: []string{"a2a.admin"}, Revoked: true},
				},
				RetryStaleInterval: 30 * time.Second, RetryStaleMinLeaseAge: 2 * time.Minute, RetryStaleMaxAttempts: 5,
				RetryStaleMaxRequeues: 0, RetryStaleScanLimit: 10000, ResultCacheMax: 0, ResultCacheAge: time.Hour, AuditMax: 50,
				MaxTurns: 8, MaxTurnsBytes: 64 << 10,
				A2ABlockingTimeout: 45 * time.Second, BatchMax: 250, PushAllowHosts: "loopback, hooks.example.com, *.corp.example, 10.0.0.0/8",
				PushMaxAttempts: 3, PushRetryMax: time.Minute, RemoteResendMax: 5, PushOutboxPerReceiver: 50, PushOutboxMax: 5000, PushDeadRetention: 72 * time.Hour,
				Store: "postgres", PostgresURL: "postgres://mr:pw@db:5432/mail", PostgresSchema: "team_a", AdvertiseURL: "http://10.0.0.5:7717",
				PostgresSessionTimeout: 3 * time.Second, PostgresCampaignInterval: 100 * time.Millisecond, MCPHTTP: true})
		}},
		{"quoted duration", `sse_heartbeat: "5s"`, func(c Config) bool { return c.SSEHeartbeat == 5*time.Second }},
	}
	for _, tt := range tests {
		got, err := LoadOver(base(), writeFile(t, tt.body))
		if err != nil {
			t.Errorf("%s: LoadOver: %v", tt.name, err)
			continue
		}
		if !tt.check(got) {
			t.Errorf("%s: LoadOver = %+v", tt.name, got)
		}
	}
}

func TestLoadErrorsNameKeyAndLine(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []string
	}{
		{"unknown key", "addr: 127.0.0.1:1\nlisten: x\n", []string{"line 2", `unknown key "listen"`, "known keys: addr, tokens, data_dir"}},
		{"duplicate key", "addr: 127.0.0.1:1\naddr: 127.0.0.1:2\n", []string{"line 2", `"addr"`, "line 1"}},
		{"duration as number", "sse_heartbeat: 15\n", []string{"line 1", "sse_heartbeat", `"15"`, "duration"}},
		{"bad float", "compact_factor: lots\n", []string{"compact_factor", `"lots"`, "number"}},
		{"factor out of range", "compact_factor: 0.5\n", []string{"compact_factor", `"0.5"`, "greater than 1"}},
		{"bad enum", "log_level: verbose\n", []string{"log_level", `"verbose"`, "one of"}},
		{"list value", "addr: [a, b]\n", []string{"addr", "a list"}},
		{"null value", "addr:\n", []string{"addr", "nothing"}},
		{"not a mapping", "- addr\n", []string{"expected a mapping"}},
		{"two documents", "addr: 127.0.0.1:1\n---\naddr: 127.0.0.1:2\n", []string{"one YAML document"}},
		{"bad yaml", "addr: [\n", []string{"mailroom.yaml"}},
	}
	for _, tt := range tests {
		path := writeFile(t, tt.body)
		got, err := LoadOver(base(), path)
		if err == nil {
			t.Errorf("%s: LoadOver = %+v, want an error", tt.name, got)
			continue
		}
		if !reflect.DeepEqual(got, base()) {
			t.Errorf("%s: LoadOver returned a changed config alongside its error", tt.name)
		}
		for _, w := range append(tt.want, path) {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: LoadOver error %q, want it to contain %q", tt.name, err, w)
			}
		}
	}
}

func TestLoadMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "absent.yaml")
	if _, err := LoadOver(base(), path); err == nil || !strings.Contains(err.Error(), "absent.yaml") {
		t.Errorf("Load(missing) = %v, want an error naming the file", err)
	}
}

func TestApplyEnv(t *testing.T) {
	tests := []struct {
		name string
		vars map[string]string
		want func(*Config)
		err  []string
	}{
		{"nothing set", nil, func(*Config) {}, nil},
		{"addr and data dir", map[string]string{"MAILROOM_ADDR": "127.0.0.1:0", "MAILROOM_DATA_DIR": "/d"},
			func(c *Config) { c.Addr, c.DataDir = "127.0.0.1:0", "/d" }, nil},
		{"numbers and durations", map[string]string{"MAILROOM_COMPACT_FACTOR": "8", "MAILROOM_COMPACT_MIN_BYTES": "2MiB",
			"MAILROOM_RETAIN_DONE": "0", "MAILROOM_SSE_BUFFER": "1", "MAILROOM_SHUTDOWN_TIMEOUT": "1s",
			"MAILROOM_SSE_HEARTBEAT": "2s", "MAILROOM_SSE_WRITE_TIMEOUT": "3s", "MAILROOM_LOG_LEVEL": "warn", "MAILROOM_LOG_FORMAT": "json"},
			func(c *Config) {
				c.CompactFactor, c.CompactMinBytes, c.RetainDone, c.SSEBuffer = 8, 2<<20, 0, 1
				c.ShutdownTimeout, c.SSEHeartbeat, c.SSEWriteTimeout = time.Second, 2*time.Second, 3*time.Second
				c.LogLevel, c.LogFormat = "warn", "json"
			}, nil},
		{"bad number names the variable", map[string]string{"MAILROOM_SSE_BUFFER": "many"}, nil,
			[]string{"MAILROOM_SSE_BUFFER", "sse_buffer", `"many"`}},
		{"out of range names the variable", map[string]string{"MAILROOM_LOG_FORMAT": "xml"}, nil,
			[]string{"MAILROOM_LOG_FORMAT", `"xml"`}},
		{"bad duration names the variable", map[string]string{"MAILROOM_SHUTDOWN_TIMEOUT": "10"}, nil,
			[]string{"MAILROOM_SHUTDOWN_TIMEOUT", "duration"}},
		{"retry stale and caches", map[string]string{"MAILROOM_RETRY_STALE_INTERVAL": "1m", "MAILROOM_RETRY_STALE_MIN_LEASE_AGE": "90s",
			"MAILROOM_RETRY_STALE_MAX_ATTEMPTS": "4", "MAILROOM_RETRY_STALE_MAX_REQUEUES": "2", "MAILROOM_RETRY_STALE_SCAN_LIMIT": "7",
			"MAILROOM_RESULT_CACHE_MAX": "9", "MAILROOM_RESULT_CACHE_AGE": "2h", "MAILROOM_AUDIT_MAX": "11"},
			func(c *Config) {
				c.RetryStaleInterval, c.RetryStaleMinLeaseAge = time.Minute, 90*time.Second
				c.RetryStaleMaxAttempts, c.RetryStaleMaxRequeues, c.RetryStaleScanLimit = 4, 2, 7
				c.ResultCacheMax, c.ResultCacheAge, c.AuditMax = 9, 2*time.Hour, 11
			}, nil},
		// Secrets do not belong in the environment: the variable is not read.
		{"no tokens variable", map[string]string{"MAILROOM_TOKENS": "mr_x"}, func(*Config) {}, nil},
		{"scan limit out of range names the variable", map[string]string{"MAILROOM_RETRY_STALE_SCAN_LIMIT": "0"}, nil,
			[]string{"MAILROOM_RETRY_STALE_SCAN_LIMIT", "from 1 to 10000"}},
	}
	for _, tt := range tests {
		c := base()
		err := ApplyEnv(&c, env(tt.vars))
		if tt.err != nil {
			if err == nil {
				t.Errorf("%s: ApplyEnv = nil, want an error", tt.name)
			}
			for _, w := range tt.err {
				if err != nil && !strings.Contains(err.Error(), w) {
					t.Errorf("%s: ApplyEnv = %q, want it to contain %q", tt.name, err, w)
				}
			}
			if !reflect.DeepEqual(c, base()) {
				t.Errorf("%s: ApplyEnv changed the config alongside its error", tt.name)
			}
			continue
		}
		want := base()
		tt.want(&want)
		if err != nil || !reflect.DeepEqual(c, want) {
			t.Errorf("%s: ApplyEnv = %v, %+v; want %+v", tt.name, err, c, want)
		}
	}
}

// TestPrecedence walks the documented order: defaults < file < env < flags.
func TestPrecedence(t *testing.T) {
	path := writeFile(t, "addr: 127.0.0.1:1\nlog_level: debug\nretain_done: 5\n")
	c, err := LoadOver(base(), path)
	if err != nil {
		t.Fatal(err)
	}
	if err := ApplyEnv(&c, env(map[string]string{"MAILROOM_ADDR": "127.0.0.1:2", "MAILROOM_RETAIN_DONE": "6"})); err != nil {
		t.Fatal(err)
	}
	// The flags bound to the config the file and the environment made,
	// parsed last, as the daemon does.
	flags := flag.NewFlagSet("daemon", flag.ContinueOnError)
	c.AddFlags(flags)
	if err := flags.Parse([]string{"--addr", "127.0.0.1:3"}); err != nil {
		t.Fatal(err)
	}
	if c.Addr != "127.0.0.1:3" || c.RetainDone != 6 || c.LogLevel != "debug" || c.SSEBuffer != engine.DefaultSubscriberBuffer {
		t.Errorf("after file, env, flag: %+v", c)
	}
}

func TestSet(t *testing.T) {
	tests := []struct {
		key, value string
		err        string
	}{
		{"data_dir", "/x", ""},
		{"compact_min_bytes", "1GiB", ""},
		{"compact_min_bytes", "1TiB", "compact_min_bytes"},
		{"nope", "1", `unknown key "nope"`},
		{"sse_buffer", "0", "at least 1"},
		{"retry_stale_interval", "0", ""},
		{"retry_stale_interval", "5", "0 (off) or a positive Go duration"},
		{"tokens", "mr_x", "config file only"},
		{"mcp_http", "true", ""},
		{"mcp_http", "yes", `mcp_http: got "yes", expected true or false`},
		{"a2a_card_security_requirements", "true", ""},
		{"a2a_card_security_requirements", "1x", `a2a_card_security_requirements: got "1x", expected true or false`},
	}
	for _, tt := range tests {
		c := base()
		err := Set(&c, tt.key, tt.value)
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("Set(%q, %q) = %v, want error containing %q", tt.key, tt.value, err, tt.err)
		}
		if tt.err == "" && tt.key == "data_dir" && c.DataDir != tt.value {
			t.Errorf("data_dir is %q after Set(%q)", c.DataDir, tt.value)
		}
	}
}

func TestKeysCoverEveryField(t *testing.T) {
	c := base()
	flags := flag.NewFlagSet("daemon", flag.ContinueOnError)
	c.AddFlags(flags)
	typ := reflect.TypeOf(Config{})
	n := 0
	flags.VisitAll(func(*flag.Flag) { n++ })
	// tokens, remotes, revoked_certificates and push_receivers are file only: no flag (and no variable, see TestApplyEnv).
	if n != typ.NumField()-4 {
		t.Fatalf("AddFlags defines %d flags, want one per Config field but tokens, remotes, revoked_certificates and push_receivers (%d)", n, typ.NumField()-4)
	}
	// The key table lists the keys in the order Config declares them:
	// Validate checks them so, and a message naming them all lists them so.
	if names := keyNames(); len(names) != typ.NumField() {
		t.Errorf("the key table has %d keys %v, want one per Config field (%d)", len(names), names, typ.NumField())
	}
	for i := range typ.NumField() {
		name := typ.Field(i).Tag.Get("yaml")
		if names := keyNames(); i < len(names) && names[i] != name {
			t.Errorf("key %d of the table is %s, want %s, Config's field %d", i, names[i], name, i)
		}
		f := flags.Lookup(strings.ReplaceAll(name, "_", "-"))
		if fileOnly(name) {
			if f != nil {
				t.Errorf("%s has a flag, want it set in the config file only", name)
			}
			continue
		}
		env := "(env MAILROOM_" + strings.ToUpper(name) + ")"
		if f == nil || !strings.HasSuffix(f.Usage, " "+env) || strings.HasPrefix(f.Usage, env) {
			t.Errorf("key %s: flag %+v, want one with a usage line ending in %s", name, f, env)
		}
		if !isKey(name) {
			t.Errorf("key %s is not a key Set takes", name)
		}
	}
	if flags.Lookup("data-dir") == nil {
		t.Errorf("no flag data-dir for key data_dir")
	}
}

// TestFlagsHelpAndErrors: --help lists every key with its variable and
// default, and a bad flag is refused in the key's own words, changing
// nothing.
func TestFlagsHelpAndErrors(t *testing.T) {
	c := base()
	flags := flag.NewFlagSet("daemon", flag.ContinueOnError)
	c.AddFlags(flags)
	var help strings.Builder
	flags.SetOutput(&help)
	flags.PrintDefaults()
	for _, w := range []string{"-addr value", "(env MAILROOM_ADDR) (default 127.0.0.1:7717)", "(env MAILROOM_SSE_HEARTBEAT) (default 15s)",
		"(default 1048576)", "(default /home/op/.local/share/mailroom)", "(env MAILROOM_RETRY_STALE_INTERVAL) (default 0s)"} {
		if !strings.Contains(help.String(), w) {
			t.Errorf("PrintDefaults = %q, want it to contain %q", help.String(), w)
		}
	}
	if strings.Contains(help.String(), "panic") {
		t.Errorf("PrintDefaults = %q", help.String())
	}
	flags.SetOutput(io.Discard)
	err := flags.Parse([]string{"--sse-buffer", "many"})
	want := `invalid value "many" for flag -sse-buffer: sse_buffer: got "many", expected a whole number of at least 1`
	if err == nil || err.Error() != want {
		t.Errorf("Parse(--sse-buffer many) = %v, want %q", err, want)
	}
	if !reflect.DeepEqual(c, base()) {
		t.Errorf("a refused flag changed the config: %+v", c)
	}
}

// TestReadmeConfigExample keeps the README's example file true: it must
// load and validate as it stands, but for the certificate files it names,
// which are made by the test at paths of its own.
func TestReadmeConfigExample(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "# Configuration\n")
	_, block, ok2 := strings.Cut(section, "```yaml\n")
	example, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("docs/configuration.md has no ```yaml example under # Configuration")
	}
	dir := t.TempDir()
	certFile, keyFile := testpki.NewCA(t, "example CA").Issue(t, testpki.Options{}).WriteFiles(t, dir, "tls")
	for _, p := range [][2]string{{"/etc/mailroom/tls.crt", certFile}, {"/etc/mailroom/tls.key", keyFile}} {
		if !strings.Contains(example, p[0]) {
			t.Errorf("the example names no %s", p[0])
		}
		example = strings.ReplaceAll(example, p[0], p[1])
	}
	c, err := Parse(base(), []byte(example))
	if err == nil {
		err = c.Validate()
	}
	if err != nil {
		t.Errorf("README's example config: %v\n%s", err, example)
	}
}

// An unknown MAILROOM_* variable is refused, naming it and the closest
// known one: a typo would otherwise be ignored, and the daemon would run
// on a default the operator did not mean.
func TestCheckEnvRefusesUnknownVariables(t *testing.T) {
	if err := CheckEnv([]string{"HOME=/root", "MAILROOM_ADDR=127.0.0.1:0", "MAILROOM_DATA_DIR=/x", "MAILROOM_TOKEN=t", "MAILROOM_TEST_PG=postgres://", "MAILROOM_A2A_BLOCKING_TIMEOUT=5s", "MAILROOMX=1"}); err != nil {
		t.Fatalf("known variables refused: %v", err)
	}
	for _, c := range []struct {
		kv, want string
	}{
		{"MAILROOM_DATA_DRI=/var/lib/mailroom", "did you mean MAILROOM_DATA_DIR?"},
		{"MAILROOM_ADRR=0.0.0.0:1", "did you mean MAILROOM_ADDR?"},
		{"MAILROOM_data_dir=/x", "did you mean MAILROOM_DATA_DIR?"},
		{"MAILROOM_TOKENS=secret", "config file only"},
		{"MAILROOM_=1", "no such setting"},
	} {
		err := CheckEnv([]string{"HOME=/root", c.kv})
		name, _, _ := strings.Cut(c.kv, "=")
		if err == nil || !strings.Contains(err.Error(), "environment variable "+name+":") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CheckEnv(%s) = %v, want a refusal naming %s and saying %q", c.kv, err, name, c.want)
		}
	}
}
