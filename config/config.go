// Package config is the daemon's configuration: defaults, a YAML file,
// environment variables and flags, in that order of precedence. It is pure:
// nothing here reads the process environment except Default, which says so.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/mailbox"
)

// Config is everything the daemon can be told. The YAML tags are the file's
// keys; durations are written as Go duration strings ("15s").
type Config struct {
	// Addr is the listen address, host:port; port 0 picks a free port.
	Addr string `yaml:"addr"`
	// Tokens bind bearer tokens to principals and capabilities. With none
	// the daemon authenticates nobody, so it listens on loopback only.
	// They are set in the file only: a secret in a flag or an environment
	// variable ends up in process listings and shell histories.
	Tokens  []auth.Token `yaml:"tokens"`
	DataDir string       `yaml:"data_dir"`
	// LogLevel is debug, info, warn or error; LogFormat is text or json.
	LogLevel  string `yaml:"log_level"`
	LogFormat string `yaml:"log_format"`
	// CompactFactor: compact when the log outgrows the snapshot by this factor,
	// once the log is at least CompactMinBytes long.
	CompactFactor   float64 `yaml:"compact_factor"`
	CompactMinBytes int64   `yaml:"compact_min_bytes"`
	// RetainDone is how many drained tasks are remembered, so a late result
	// for one of them is told "already resolved" rather than "never sent".
	RetainDone int `yaml:"retain_done"`
	// SSEHeartbeat is how often an idle event stream gets a comment, so
	// proxies and consoles can tell a quiet daemon from a dead one.
	SSEHeartbeat time.Duration `yaml:"sse_heartbeat"`
	// SSEBuffer is how many events one subscriber may fall behind before it
	// is cut off (it reconnects and catches up from the log).
	SSEBuffer int `yaml:"sse_buffer"`
	// SSEWriteTimeout cuts off a subscriber whose connection stalls.
	SSEWriteTimeout time.Duration `yaml:"sse_write_timeout"`
	// ShutdownTimeout bounds how long SIGINT/SIGTERM waits for in-flight
	// requests before the log is flushed and closed anyway.
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout"`
	// RetryStaleInterval runs the enabled retry-stale scan this often; 0
	// (the default) leaves the scheduler off, so nothing is requeued
	// unless an operator asks.
	RetryStaleInterval time.Duration `yaml:"retry_stale_interval"`
	// The scheduled scan's policy; see mailbox.RetryPolicy.
	RetryStaleMinLeaseAge time.Duration `yaml:"retry_stale_min_lease_age"`
	RetryStaleMaxAttempts int           `yaml:"retry_stale_max_attempts"`
	RetryStaleMaxRequeues int           `yaml:"retry_stale_max_requeues"`
	RetryStaleScanLimit   int           `yaml:"retry_stale_scan_limit"`
	// ResultCacheMax and ResultCacheAge bound the results kept to answer a
	// duplicate of an idempotent task that already finished.
	ResultCacheMax int           `yaml:"result_cache_max"`
	ResultCacheAge time.Duration `yaml:"result_cache_age"`
	// AuditMax is how many repair records GET /a2a/audit can list; the log
	// keeps every repair regardless.
	AuditMax int `yaml:"audit_max"`
}

// Defaults that do not depend on the environment.
const (
	DefaultAddr            = "127.0.0.1:7717"
	DefaultLogLevel        = "info"
	DefaultLogFormat       = "text"
	DefaultCompactFactor   = 4
	DefaultCompactMinBytes = 1 << 20
	DefaultRetainDone      = 10000
	DefaultSSEHeartbeat    = 15 * time.Second
	DefaultSSEBuffer       = 4096
	DefaultSSEWriteTimeout = 10 * time.Second
	DefaultShutdownTimeout = 10 * time.Second
	DefaultResultCacheMax  = 10000
	DefaultResultCacheAge  = 24 * time.Hour
	DefaultAuditMax        = mailbox.DefaultAuditMax
)

// DefaultRetryStale is the scheduled scan's policy unless configured: the
// same bounds as a manual 'mailroom retry-stale'.
var DefaultRetryStale = mailbox.DefaultRetryPolicy()

// Default returns the defaults, with the data directory taken from the
// process environment ($XDG_DATA_HOME or $HOME). Use DefaultFor to supply
// the environment yourself.
func Default() Config { return DefaultFor(os.Getenv) }

// DefaultFor returns the defaults with the data directory derived from
// getenv, so callers and tests decide what the environment is.
func DefaultFor(getenv func(string) string) Config {
	return Config{
		Addr:            DefaultAddr,
		DataDir:         DefaultDataDir(getenv),
		LogLevel:        DefaultLogLevel,
		LogFormat:       DefaultLogFormat,
		CompactFactor:   DefaultCompactFactor,
		CompactMinBytes: DefaultCompactMinBytes,
		RetainDone:      DefaultRetainDone,
		SSEHeartbeat:    DefaultSSEHeartbeat,
		SSEBuffer:       DefaultSSEBuffer,
		SSEWriteTimeout: DefaultSSEWriteTimeout,
		ShutdownTimeout: DefaultShutdownTimeout,

		RetryStaleMinLeaseAge: time.Duration(DefaultRetryStale.MinLeaseAgeMs) * time.Millisecond,
		RetryStaleMaxAttempts: DefaultRetryStale.MaxAttempts,
		RetryStaleMaxRequeues: DefaultRetryStale.MaxRequeues,
		RetryStaleScanLimit:   DefaultRetryStale.ScanLimit,
		ResultCacheMax:        DefaultResultCacheMax,
		ResultCacheAge:        DefaultResultCacheAge,
		AuditMax:              DefaultAuditMax,
	}
}

// RetryPolicy is the enabled policy the retry-stale scheduler runs with.
func (c Config) RetryPolicy() mailbox.RetryPolicy {
	return mailbox.RetryPolicy{
		Enabled:       true,
		MinLeaseAgeMs: c.RetryStaleMinLeaseAge.Milliseconds(),
		MaxAttempts:   c.RetryStaleMaxAttempts,
		MaxRequeues:   c.RetryStaleMaxRequeues,
		ScanLimit:     c.RetryStaleScanLimit,
	}
}

// DefaultDataDir follows the XDG base directory spec: $XDG_DATA_HOME/mailroom,
// else ~/.local/share/mailroom. It is "" when neither variable is set, which
// Validate then refuses with a message saying how to set data_dir.
func DefaultDataDir(getenv func(string) string) string {
	// The spec says a relative XDG_DATA_HOME is invalid and must be ignored.
	if x := getenv("XDG_DATA_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "mailroom")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".local", "share", "mailroom")
	}
	return ""
}

// Validate checks every key and reports the first bad one, naming the key,
// its value and what was expected; then the rules that span keys.
func (c Config) Validate() error {
	for _, k := range keyTable() {
		if err := k.validate(c); err != nil {
			return err
		}
	}
	// Checked here, not per key: a file may name addr before tokens, and
	// flags and the environment override one key at a time.
	return checkExposure(c)
}

// Level is the slog level log_level names (info when it names none; Validate
// refuses such a config before it gets here).
func (c Config) Level() slog.Level {
	switch c.LogLevel {
	case "debug":
		return slog.LevelDebug
	case "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}

// ApplyEnv overrides cfg with MAILROOM_<KEY> variables (MAILROOM_ADDR,
// MAILROOM_DATA_DIR, ...). Unset or empty variables change nothing. A bad
// value is an error naming the variable; cfg is left unchanged.
func ApplyEnv(cfg *Config, getenv func(string) string) error {
	next := *cfg
	for _, k := range keyTable() {
		if k.FileOnly {
			continue
		}
		v := getenv(k.Env)
		if v == "" {
			continue
		}
		if err := k.set(&next, v); err != nil {
			return fmt.Errorf("environment variable %s: %w", k.Env, err)
		}
	}
	*cfg = next
	return nil
}

// Set parses value for the key named name (a YAML key such as "addr") into
// cfg, checking it as Validate would. Flags use it so that a flag, an
// environment variable and a file line are parsed by the same code.
func Set(cfg *Config, name, value string) error {
	k, ok := lookup(name)
	if !ok {
		return fmt.Errorf("unknown key %q; known keys: %s", name, strings.Join(KeyNames(), ", "))
	}
	if k.FileOnly {
		return fmt.Errorf("%s: set in the config file only", name)
	}
	return k.set(cfg, value)
}

// Key describes one configuration key for help texts and flag wiring.
type Key struct {
	// Name is the YAML key; the flag is the same with "-" for "_".
	Name string
	// Env is the environment variable that overrides it; "" when FileOnly.
	Env   string
	Usage string
	// FileOnly keys (tokens) have no environment variable and no flag.
	FileOnly bool
}

// Flag is the command-line flag name for the key (data_dir -> data-dir).
func (k Key) Flag() string { return strings.ReplaceAll(k.Name, "_", "-") }

// Keys lists every key in a stable order.
func Keys() []Key {
	t := keyTable()
	out := make([]Key, len(t))
	for i, k := range t {
		out[i] = k.Key
	}
	return out
}

// KeyNames lists every YAML key in a stable order.
func KeyNames() []string {
	t := keyTable()
	out := make([]string, len(t))
	for i, k := range t {
		out[i] = k.Name
	}
	return out
}

// Value returns the key's current value in cfg as it would be written in a
// file, environment variable or flag. For tokens it is only a count: secrets
// are never shown.
func Value(cfg Config, name string) (string, bool) {
	k, ok := lookup(name)
	if !ok {
		return "", false
	}
	return k.show(cfg), true
}

// key is one entry of the table that drives file, environment, flags and
// validation, so adding a key is one entry and no source can forget it.
type key struct {
	Key
	parse func(c *Config, v string) error // syntax only
	// parseNode reads a value that is not a single scalar (tokens).
	parseNode func(c *Config, n *yaml.Node) error
	show      func(c Config) string
	// expect returns "" when the value is acceptable, else what was expected.
	expect func(c Config) string
	// check replaces expect for keys whose message must not quote the value.
	check func(c Config) error
}

func (k key) validate(c Config) error {
	if k.check != nil {
		return k.check(c)
	}
	if want := k.expect(c); want != "" {
		return fmt.Errorf("%s: got %q, expected %s", k.Name, k.show(c), want)
	}
	return nil
}

// set parses v into c and checks it; on error c is unchanged.
func (k key) set(c *Config, v string) error {
	next := *c
	if err := k.parse(&next, v); err != nil {
		return fmt.Errorf("%s: got %q, expected %w", k.Name, v, err)
	}
	if err := k.validate(next); err != nil {
		return err
	}
	*c = next
	return nil
}

func lookup(name string) (key, bool) {
	for _, k := range keyTable() {
		if k.Name == name {
			return k, true
		}
	}
	return key{}, false
}

func newKey(name, usage string) Key {
	return Key{Name: name, Env: "MAILROOM_" + strings.ToUpper(name), Usage: usage}
}

func keyTable() []key {
	return []key{
		{
			Key:   newKey("addr", "listen address host:port (port 0 picks a free port)"),
			parse: func(c *Config, v string) error { c.Addr = v; return nil },
			show:  func(c Config) string { return c.Addr },
			expect: func(c Config) string {
				if !validListenAddr(c.Addr) {
					return "host:port such as 127.0.0.1:7717 (port 0 picks a free port)"
				}
				return ""
			},
		},
		tokensKey(),
		{
			Key:   newKey("data_dir", "directory holding the log and snapshots"),
			parse: func(c *Config, v string) error { c.DataDir = v; return nil },
			show:  func(c Config) string { return c.DataDir },
			expect: func(c Config) string {
				if strings.TrimSpace(c.DataDir) == "" {
					return "a directory path (set data_dir, MAILROOM_DATA_DIR or --data-dir; the default needs $XDG_DATA_HOME or $HOME)"
				}
				return ""
			},
		},
		enumKey("log_level", "log verbosity", func(c *Config) *string { return &c.LogLevel }, "debug", "info", "warn", "error"),
		enumKey("log_format", "log line format", func(c *Config) *string { return &c.LogFormat }, "text", "json"),
		{
			Key: newKey("compact_factor", "compact when the log outgrows the snapshot by this factor"),
			parse: func(c *Config, v string) error {
				f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil {
					return errors.New("a number such as 4")
				}
				c.CompactFactor = f
				return nil
			},
			show: func(c Config) string { return strconv.FormatFloat(c.CompactFactor, 'g', -1, 64) },
			expect: func(c Config) string {
				// At or below 1 every append would trigger a compaction.
				if math.IsNaN(c.CompactFactor) || math.IsInf(c.CompactFactor, 0) || c.CompactFactor <= 1 {
					return "a number greater than 1, such as 4"
				}
				return ""
			},
		},
		{
			Key: newKey("compact_min_bytes", "never compact automatically below this log size (bytes, or 512KiB, 1MiB, 1GiB)"),
			parse: func(c *Config, v string) error {
				n, err := parseBytes(v)
				if err != nil {
					return err
				}
				c.CompactMinBytes = n
				return nil
			},
			show:   func(c Config) string { return strconv.FormatInt(c.CompactMinBytes, 10) },
			expect: func(c Config) string { return nonNegative(c.CompactMinBytes) },
		},
		intKey("retain_done", "how many drained tasks are remembered", func(c *Config) *int { return &c.RetainDone }, 0),
		durationKey("sse_heartbeat", "how often an idle event stream gets a heartbeat", func(c *Config) *time.Duration { return &c.SSEHeartbeat }),
		intKey("sse_buffer", "events one console may fall behind before it is cut off", func(c *Config) *int { return &c.SSEBuffer }, 1),
		durationKey("sse_write_timeout", "cut off a console whose connection stalls this long", func(c *Config) *time.Duration { return &c.SSEWriteTimeout }),
		durationKey("shutdown_timeout", "how long shutdown waits for in-flight requests", func(c *Config) *time.Duration { return &c.ShutdownTimeout }),
		optionalDurationKey("retry_stale_interval", "run the retry-stale scan this often; 0 leaves the scheduler off", func(c *Config) *time.Duration { return &c.RetryStaleInterval }),
		durationKey("retry_stale_min_lease_age", "the scheduled scan requeues only leases held at least this long", func(c *Config) *time.Duration { return &c.RetryStaleMinLeaseAge }),
		intKey("retry_stale_max_attempts", "the scheduled scan leaves tasks alone after this many attempts", func(c *Config) *int { return &c.RetryStaleMaxAttempts }, 1),
		intKey("retry_stale_max_requeues", "the scheduled scan requeues at most this many leases per run", func(c *Config) *int { return &c.RetryStaleMaxRequeues }, 0),
		boundedIntKey("retry_stale_scan_limit", "the scheduled scan looks at most at this many in-flight leases, oldest first", func(c *Config) *int { return &c.RetryStaleScanLimit }, 1, mailbox.MaxLimit),
		intKey("result_cache_max", "finished idempotent tasks whose result answers a duplicate send", func(c *Config) *int { return &c.ResultCacheMax }, 0),
		durationKey("result_cache_age", "forget a finished idempotent task's result for duplicates after this long", func(c *Config) *time.Duration { return &c.ResultCacheAge }),
		intKey("audit_max", "repair records kept for the audit list (the log keeps all)", func(c *Config) *int { return &c.AuditMax }, 1),
	}
}

func enumKey(name, usage string, field func(*Config) *string, allowed ...string) key {
	list := `"` + strings.Join(allowed, `", "`) + `"`
	return key{
		Key:   newKey(name, usage+": "+strings.Join(allowed, "|")),
		parse: func(c *Config, v string) error { *field(c) = v; return nil },
		show:  func(c Config) string { return *field(&c) },
		expect: func(c Config) string {
			for _, a := range allowed {
				if *field(&c) == a {
					return ""
				}
			}
			return "one of " + list
		},
	}
}

func intKey(name, usage string, field func(*Config) *int, minimum int) key {
	return boundedIntKey(name, usage, field, minimum, math.MaxInt)
}

// boundedIntKey is an integer key from minimum to maximum (math.MaxInt:
// no upper bound).
func boundedIntKey(name, usage string, field func(*Config) *int, minimum, maximum int) key {
	want := fmt.Sprintf("a whole number of at least %d", minimum)
	if maximum != math.MaxInt {
		want = fmt.Sprintf("a whole number from %d to %d", minimum, maximum)
	}
	return key{
		Key: newKey(name, usage),
		parse: func(c *Config, v string) error {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return errors.New(want)
			}
			*field(c) = n
			return nil
		},
		show: func(c Config) string { return strconv.Itoa(*field(&c)) },
		expect: func(c Config) string {
			if n := *field(&c); n < minimum || n > maximum {
				return want
			}
			return ""
		},
	}
}

// optionalDurationKey is a duration where 0 means "off".
func optionalDurationKey(name, usage string, field func(*Config) *time.Duration) key {
	return durationKeyFrom(name, usage, field, "0 (off) or a positive Go duration such as 30s or 5m", 0)
}

func durationKey(name, usage string, field func(*Config) *time.Duration) key {
	return durationKeyFrom(name, usage, field, "a positive Go duration such as 15s, 500ms or 2m", 1)
}

func durationKeyFrom(name, usage string, field func(*Config) *time.Duration, want string, minimum time.Duration) key {
	return key{
		Key: newKey(name, usage+" (a duration such as 15s)"),
		parse: func(c *Config, v string) error {
			d, err := time.ParseDuration(strings.TrimSpace(v))
			if err != nil {
				return errors.New(want)
			}
			*field(c) = d
			return nil
		},
		show: func(c Config) string { return field(&c).String() },
		expect: func(c Config) string {
			if *field(&c) < minimum {
				return want
			}
			return ""
		},
	}
}

func nonNegative(n int64) string {
	if n < 0 {
		return "a size of at least 0 bytes"
	}
	return ""
}

// parseBytes accepts a plain byte count or one with a binary unit, because
// "1MiB" in a config file is easier to check by eye than 1048576.
func parseBytes(v string) (int64, error) {
	s := strings.TrimSpace(v)
	units := []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}}
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n > math.MaxInt64/mult {
		return 0, errors.New("a byte count such as 1048576 or 1MiB")
	}
	return n * mult, nil
}

func validListenAddr(addr string) bool {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || strings.ContainsAny(host, " /") {
		return false
	}
	p, err := strconv.Atoi(port)
	return err == nil && p >= 0 && p <= 65535
}
