package config

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mailroom/mailroom/internal/editdist"
	"github.com/mailroom/mailroom/internal/webhook"

	"github.com/mailroom/mailroom/daemon/store/pgstore"
	"github.com/mailroom/mailroom/mailbox"
)

// The key table (keyTable) is written once, in the order Config declares
// its fields, and given to a flag.FlagSet: every key but tokens and remotes
// is a flag whose Value parses text into the key's field of a Config and
// refuses what the key does not allow, naming the key, the value and what
// was expected. The file and the environment go through its Set, the
// command line through its Parse, so all three are read by the same code
// and refused in the same words; Validate sets each field again from its
// own text. The daemon binds the flags to the Config it will run with and
// parses its command line last, over the file and the environment, so the
// flags win with nothing copied. tokens and remotes have no flag: a secret
// in argv or the environment ends up in process listings and shell
// histories, so only the file sets them.

const aDuration = " (a duration such as 15s)"

// AddFlags defines on fs a flag for every key but tokens and remotes,
// bound to the key's field in c and showing c's value as its default.
func (c *Config) AddFlags(fs *flag.FlagSet) {
	for _, k := range c.keyTable() {
		if !fileOnly(k.v.name()) {
			fs.Var(k.v, flagName(k.v.name()), k.usage+" (env "+envName(k.v.name())+")")
		}
	}
}

// keyDef is one key of the table: its Value and its help line.
type keyDef struct {
	v     keyValue
	usage string
}

// keyTable is every key bound to its field in c, in the order Config
// declares them: the order Validate checks them in and messages list
// them. It is longer than a function should be because it is one table,
// a key to a row, read as a list: split, it would be two lists to keep
// in Config's order.
func (c *Config) keyTable() []keyDef {
	return []keyDef{
		{&text{"addr", &c.Addr, validListenAddr, "host:port such as 127.0.0.1:7717 (port 0 picks a free port)"},
			"listen address host:port (port 0 picks a free port)"},
		{v: fileList("tokens")},
		{&text{"data_dir", &c.DataDir, func(s string) bool { return strings.TrimSpace(s) != "" },
			"a directory path (set data_dir, MAILROOM_DATA_DIR or --data-dir; the default needs $XDG_DATA_HOME or $HOME)"},
			"directory holding the log and snapshots"},
		{oneOf("log_level", &c.LogLevel, "debug", "info", "warn", "error"), "log verbosity: debug|info|warn|error"},
		{oneOf("log_format", &c.LogFormat, "text", "json"), "log line format: text|json"},
		{&factor{"compact_factor", &c.CompactFactor}, "compact when the log outgrows the snapshot by this factor"},
		{&size{"compact_min_bytes", &c.CompactMinBytes}, "never compact automatically below this log size (bytes, or 512KiB, 1MiB, 1GiB)"},
		{&count{"retain_done", &c.RetainDone, 0, math.MaxInt}, "how many drained tasks are remembered"},
		{positive("sse_heartbeat", &c.SSEHeartbeat), "how often an idle event stream gets a heartbeat" + aDuration},
		{&count{"sse_buffer", &c.SSEBuffer, 1, math.MaxInt}, "events one console may fall behind before it is cut off"},
		{positive("sse_write_timeout", &c.SSEWriteTimeout), "cut off a console whose connection stalls this long" + aDuration},
		{positive("shutdown_timeout", &c.ShutdownTimeout), "how long shutdown waits for in-flight requests" + aDuration},
		{&duration{"retry_stale_interval", &c.RetryStaleInterval, 0, "0 (off) or a positive Go duration such as 30s or 5m"},
			"run the retry-stale scan this often; 0 leaves the scheduler off" + aDuration},
		{positive("retry_stale_min_lease_age", &c.RetryStaleMinLeaseAge), "the scheduled scan requeues only leases held at least this long" + aDuration},
		{&count{"retry_stale_max_attempts", &c.RetryStaleMaxAttempts, 1, math.MaxInt}, "the scheduled scan leaves tasks alone after this many attempts"},
		{&count{"retry_stale_max_requeues", &c.RetryStaleMaxRequeues, 0, math.MaxInt}, "the scheduled scan requeues at most this many leases per run"},
		{&count{"retry_stale_scan_limit", &c.RetryStaleScanLimit, 1, mailbox.MaxLimit}, "the scheduled scan looks at most at this many in-flight leases, oldest first"},
		{&count{"result_cache_max", &c.ResultCacheMax, 0, math.MaxInt}, "finished idempotent tasks whose result answers a duplicate send"},
		{positive("result_cache_age", &c.ResultCacheAge), "forget a finished idempotent task's result for duplicates after this long" + aDuration},
		{&count{"audit_max", &c.AuditMax, 1, math.MaxInt}, "repair records kept for the audit list (the log keeps all)"},
		{&count{"max_turns", &c.MaxTurns, 1, 10000}, "questions and answers one task's conversation may hold"},
		{&size{"max_turns_bytes", &c.MaxTurnsBytes}, "total content size of one task's conversation (bytes, or 512KiB, 1MiB)"},
		{positive("a2a_blocking_timeout", &c.A2ABlockingTimeout), "a blocking A2A send answers with the task as it stands after this long" + aDuration},
		{&boolean{"a2a_card_security_requirements", &c.A2ACardSecurityRequirements}, "with tokens, agents' cards also list securityRequirements (A2A 1.0's form, which a2a-go v2.3.1 cannot parse): true or false"},
		{&text{"card_signing_key_file", &c.CardSigningKeyFile, anyText, "a path to a PEM private key (ECDSA P-256, Ed25519, or RSA of at least 2048 bits), or empty"},
			"sign every agent's card with this PEM private key; its public key is served at /agents/{agent}/.well-known/jwks.json"},
		{&count{"batch_max", &c.BatchMax, 1, mailbox.MaxBatch}, "most items in a batch request, and most tasks (results) one lease (drain) takes"},
		{&text{"push_allow_hosts", &c.PushAllowHosts, func(s string) bool { _, err := webhook.ParseAllow(s); return err == nil },
			"a comma-separated list of hosts: loopback, a host name, *.domain, an IP address, a CIDR prefix, or *"},
			"the hosts push notification webhooks may name (the daemon's own address never)"},
		{&count{"push_max_attempts", &c.PushMaxAttempts, 1, 1000}, "tries of a push notification before it is dead-lettered"},
		{positive("push_retry_max", &c.PushRetryMax), "the longest wait between tries of a push notification (the wait doubles from 1s)" + aDuration},
		{&count{"remote_resend_max", &c.RemoteResendMax, 0, 1000}, "times an idempotent task is sent again to a remote agent after sends that may have reached it, when the remote cannot say whether it holds it; past it the lease is left to the operator (0: never)"},
		{&count{"push_outbox_per_receiver", &c.PushOutboxPerReceiver, 0, math.MaxInt}, "most undelivered push notifications one receiver (a task's push config, a sender's webhook) may have; past it the oldest are dropped (0: no bound)"},
		{&count{"push_outbox_max", &c.PushOutboxMax, 0, math.MaxInt}, "most undelivered push notifications the outbox may hold; past it the oldest are dropped (0: no bound)"},
		{&duration{"push_dead_retention", &c.PushDeadRetention, 0, "0 (kept until an operator acts) or a positive Go duration such as 168h"},
			"how long a dead-lettered push notification is kept before it is dropped (0: until an operator acts)" + aDuration},
		{&text{"push_ca_file", &c.PushCAFile, anyText, "a path to a PEM file of CA certificates, or empty"},
			"verify push receivers over https with these CAs as well as the system's"},
		{&text{"push_cert_file", &c.PushCertFile, anyText, "a path to a PEM file holding a client certificate and its chain, or empty"},
			"the client certificate shown to push receivers that ask for one (with push_key_file)"},
		{&text{"push_key_file", &c.PushKeyFile, anyText, "a path to a PEM file holding the private key of push_cert_file, or empty"},
			"the PEM private key of push_cert_file"},
		{v: fileList("push_receivers")},
		{oneOf("store", &c.Store, StoreLog, StorePostgres), "where the mailbox lives: log (files in data_dir) or postgres (a schema several instances share)"},
		{&connString{"postgres_url", &c.PostgresURL}, "with store postgres: the database, postgres://user:password@host:5432/db (the password is never shown)"},
		{&text{"postgres_schema", &c.PostgresSchema, func(s string) bool { return pgstore.ValidateSchema(s) == nil },
			"a lowercase identifier (a-z, 0-9, _; not starting with a digit; at most 63 bytes)"},
			"with store postgres: the schema holding the tables; instances on one schema share one mailbox"},
		{&text{"advertise_url", &c.AdvertiseURL, validAdvertise, "an http:// or https:// URL with a host, such as http://10.0.0.5:7717, or empty"},
			"where other instances reach this one (default: the listen address, https:// with TLS, else http://)"},
		{&duration{"postgres_session_timeout", &c.PostgresSessionTimeout, time.Second, "a Go duration of at least 1s such as 5s"},
			"with store postgres: a leader that stops answering this long loses the lead to another instance" + aDuration},
		{&duration{"postgres_campaign_interval", &c.PostgresCampaignInterval, 10 * time.Millisecond, "a Go duration of at least 10ms such as 250ms"},
			"with store postgres: how often an instance that does not lead tries to" + aDuration},
		{&boolean{"mcp_http", &c.MCPHTTP}, "serve the MCP face over streamable HTTP at /mcp, behind the bearer tokens: true or false"},
		{&text{"tls_cert_file", &c.TLSCertFile, anyText, "a path to a PEM file holding the server's certificate chain, or empty"},
			"serve HTTPS with this PEM certificate chain (the server's own first; with tls_key_file; reloaded when it changes and on SIGHUP)"},
		{&text{"tls_key_file", &c.TLSKeyFile, anyText, "a path to a PEM file holding the private key of tls_cert_file, or empty"},
			"the PEM private key of tls_cert_file"},
		{&boolean{"tls_terminated_by_proxy", &c.TLSTerminatedByProxy}, "a proxy in front of the daemon ends TLS: listen beyond loopback in plain HTTP with tokens, and write https URLs: true or false"},
		{&text{"tls_client_ca_file", &c.TLSClientCAFile, anyText, "a path to a PEM file holding the CAs client certificates are issued by, or empty"},
			"accept client certificates issued by the CAs of this PEM file (with tls_client_auth; reloaded with tls_cert_file)"},
		{&text{"tls_client_auth", &c.TLSClientAuth, validClientAuth, `one of "none", "request" or "require"`},
			"ask clients for a certificate of tls_client_ca_file: none, request (a token still does) or require (refused at the handshake without one)"},
		{v: fileList("revoked_certificates")},
		{&text{"oidc_issuer", &c.OIDCIssuer, validIssuer, "an https:// URL, exactly as the issuer's tokens say it in iss, or empty"},
			"accept OpenID Connect tokens of this issuer (discovery at <issuer>/.well-known/openid-configuration), with oidc_audience"},
		{&text{"oidc_audience", &c.OIDCAudience, anyText, "the audience the daemon's tokens are issued for, or empty"},
			"with oidc_issuer: an OIDC token must name this audience in aud"},
		{&text{"oidc_principal_claim", &c.OIDCPrincipalClaim, anyText, "a claim name such as sub, or empty for sub"},
			"the claim naming an OIDC token's caller (default sub)"},
		{&text{"oidc_caps_claim", &c.OIDCCapsClaim, anyText, "a claim name, or empty"},
			"a claim listing the capabilities an OIDC token grants, beside its tokens entry's"},
		{&text{"oidc_ca_file", &c.OIDCCAFile, anyText, "a path to a PEM file holding CA certificates, or empty"},
			"the CAs the OIDC issuer's certificate is verified with (default: the system's)"},
		{&duration{"oidc_refresh_interval", &c.OIDCRefreshInterval, 0, "0 (30s) or a positive Go duration such as 30s or 5m"},
			"fetch the OIDC issuer's keys again, for a token of a key not yet seen, at most this often (0: 30s)" + aDuration},
		{&text{"cluster_ca_file", &c.ClusterCAFile, anyText, "a path to a PEM file holding the CA certificates that issued the instances' certificates, or empty"},
			"with store postgres: the CAs a follower verifies the leader's certificate with when it forwards writes over https (default: the system's)"},
		{&text{"cluster_secret_file", &c.ClusterSecretFile, anyText, "a path to a file holding the cluster's secret (at least 32 bytes), the same on every instance, or empty"},
			"with store postgres: a follower authenticates to the leader with this secret and forwards the caller's identity, never the caller's token"},
		{&text{"cluster_cert_file", &c.ClusterCertFile, anyText, "a path to a PEM file holding a client certificate and its chain, or empty"},
			"with store postgres: the client certificate a follower shows a leader that asks for one (with cluster_key_file)"},
		{&text{"cluster_key_file", &c.ClusterKeyFile, anyText, "a path to a PEM file holding the private key of cluster_cert_file, or empty"},
			"the PEM private key of cluster_cert_file"},
		{v: fileList("remotes")},
	}
}

// Set parses value for the key called name (its name in the file, such as
// "data_dir") into cfg, checking it as Validate would; on error cfg is
// unchanged. The file and the environment set every key through it.
func Set(cfg *Config, name, value string) error {
	switch {
	case !isKey(name):
		return unknownKey(name)
	case name == "tokens":
		return errors.New("tokens: set in the config file only")
	case name == "remotes":
		return errRemotesFileOnly
	case name == "revoked_certificates":
		return errors.New("revoked_certificates: set in the config file only")
	case name == "push_receivers":
		return errors.New("push_receivers: set in the config file only")
	}
	return cfg.keys().Set(flagName(name), value)
}

// ApplyEnv overrides cfg with MAILROOM_<KEY> variables (MAILROOM_ADDR,
// MAILROOM_DATA_DIR, ...). Unset or empty variables change nothing. A bad
// value is an error naming the variable; cfg is left unchanged.
func ApplyEnv(cfg *Config, getenv func(string) string) error {
	next := *cfg
	for _, name := range keyNames() {
		v := getenv(envName(name))
		if fileOnly(name) || v == "" {
			continue
		}
		if err := Set(&next, name, v); err != nil {
			return fmt.Errorf("environment variable %s: %w", envName(name), err)
		}
	}
	*cfg = next
	return nil
}

// otherEnv are the MAILROOM_* variables that are no key: the CLI's token
// (the daemon's tokens come from its file only) and TLS files (a shell
// that runs the CLI against a TLS daemon may start a daemon too), and the
// tests' PostgreSQL.
var otherEnv = map[string]bool{"MAILROOM_TOKEN": true, "MAILROOM_CA_FILE": true, "MAILROOM_CERT_FILE": true, "MAILROOM_KEY_FILE": true,
	"MAILROOM_TEST_PG": true}

// CheckEnv refuses a MAILROOM_* variable in environ (as os.Environ lists
// it) that names no key: a typo such as MAILROOM_DATA_DRI would otherwise
// be ignored, and the daemon would run on its default data dir while its
// operator believes otherwise. The error names the variable and the
// closest known one.
func CheckEnv(environ []string) error {
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		key, ok := strings.CutPrefix(name, "MAILROOM_")
		if !ok || otherEnv[name] {
			continue
		}
		switch k := strings.ToLower(key); {
		case fileOnly(k):
			return fmt.Errorf("environment variable %s: %s are set in the config file only (a secret in the environment ends up in process listings); remove it", name, k)
		case isKey(k) && envName(k) == name:
			continue
		}
		return fmt.Errorf("environment variable %s: no such setting; did you mean %s? Known: %s", name, closestEnv(name), strings.Join(envNames(), ", "))
	}
	return nil
}

func envNames() []string {
	var out []string
	for _, k := range keyNames() {
		if !fileOnly(k) {
			out = append(out, envName(k))
		}
	}
	return append(out, "MAILROOM_TOKEN (the CLI's)")
}

// closestEnv is the known variable nearest to name by edit distance.
func closestEnv(name string) string {
	best, bestD := "", -1
	for _, k := range keyNames() {
		if fileOnly(k) {
			continue
		}
		if d := editdist.Distance(name, envName(k)); bestD < 0 || d < bestD {
			best, bestD = envName(k), d
		}
	}
	if d := editdist.Distance(name, "MAILROOM_TOKEN"); d < bestD {
		best = "MAILROOM_TOKEN"
	}
	return best
}

// keys is the key table bound to c.
func (c *Config) keys() *flag.FlagSet {
	fs := flag.NewFlagSet("config", flag.ContinueOnError)
	c.AddFlags(fs)
	return fs
}

// keyNames lists the keys in the order Config declares them, from the
// key table (bound to a Config of its own: only the names are read).
var keyNames = sync.OnceValue(func() []string {
	var names []string
	for _, k := range new(Config).keyTable() {
		names = append(names, k.v.name())
	}
	return names
})

func isKey(name string) bool { return slices.Contains(keyNames(), name) }

func unknownKey(name string) error {
	return fmt.Errorf("unknown key %q; known keys: %s", name, strings.Join(keyNames(), ", "))
}

func flagName(key string) string { return strings.ReplaceAll(key, "_", "-") }

func envName(key string) string { return "MAILROOM_" + strings.ToUpper(key) }

// keyValue is one key's flag.Value.
type keyValue interface {
	flag.Value
	name() string
}

// key is the name a Value's flag and messages go by.
type key string

func (k key) name() string { return string(k) }

func (k key) refuse(got, want string) error {
	return fmt.Errorf("%s: got %q, expected %s", k, got, want)
}

// show formats *p; the flag package asks a zero Value, whose p is nil, for
// its String when it prints defaults.
func show[T any](p *T, format func(T) string) string {
	if p == nil {
		return ""
	}
	return format(*p)
}

// fileList is a list the file alone sets (tokens, remotes): it is in the
// table for its name and place, and no flag or variable ever reaches it.
type fileList string

func (v fileList) name() string { return string(v) }

func (v fileList) String() string { return "" }

func (v fileList) Set(string) error { return fmt.Errorf("%s: set in the config file only", string(v)) }

// The Values below store nothing they refuse, and their String is text
// their Set accepts, which is how Validate checks a field with their rules.

// text is a key whose value is the text as written; ok says which texts
// the key allows, want describes them.
type text struct {
	key
	p    *string
	ok   func(string) bool
	want string
}

func oneOf(name string, p *string, allowed ...string) *text {
	return &text{key(name), p, func(s string) bool { return slices.Contains(allowed, s) },
		`one of "` + strings.Join(allowed, `", "`) + `"`}
}

func (v *text) String() string { return show(v.p, func(s string) string { return s }) }

func (v *text) Set(s string) error {
	if !v.ok(s) {
		return v.refuse(s, v.want)
	}
	*v.p = s
	return nil
}

// connString is postgres_url: empty, a postgres:// (postgresql://) URL or
// a key=value connection string. A refusal shows it without its password.
type connString struct {
	key
	p *string
}

func (v *connString) String() string { return show(v.p, func(s string) string { return s }) }

func (v *connString) Set(s string) error {
	ok := s == "" || strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://") ||
		(strings.Contains(s, "=") && !strings.Contains(s, "://"))
	if !ok {
		return fmt.Errorf("%s: got %q, expected a postgres:// URL (postgres://user:password@host:5432/db) or a key=value connection string", v.key, pgstore.Redact(s))
	}
	*v.p = s
	return nil
}

// anyText accepts any text: a path is checked when the file is read.
func anyText(string) bool { return true }

// validAdvertise accepts "" or an http(s) URL with a host.
func validAdvertise(s string) bool {
	if s == "" {
		return true
	}
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.User == nil
}

// boolean is true or false; as a flag it may be given without a value.
type boolean struct {
	key
	p *bool
}

func (v *boolean) String() string { return show(v.p, strconv.FormatBool) }

func (v *boolean) IsBoolFlag() bool { return true }

func (v *boolean) Set(s string) error {
	b, err := strconv.ParseBool(strings.TrimSpace(s))
	if err != nil {
		return v.refuse(s, "true or false")
	}
	*v.p = b
	return nil
}

// count is a whole number from min to max (math.MaxInt: no upper bound).
type count struct {
	key
	p        *int
	min, max int
}

func (v *count) String() string { return show(v.p, strconv.Itoa) }

func (v *count) Set(s string) error {
	want := fmt.Sprintf("a whole number of at least %d", v.min)
	if v.max != math.MaxInt {
		want = fmt.Sprintf("a whole number from %d to %d", v.min, v.max)
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return v.refuse(s, want)
	}
	if n < v.min || n > v.max {
		return v.refuse(strconv.Itoa(n), want)
	}
	*v.p = n
	return nil
}

// duration is a Go duration of at least min; want describes it.
type duration struct {
	key
	p    *time.Duration
	min  time.Duration
	want string
}

func positive(name string, p *time.Duration) *duration {
	return &duration{key(name), p, 1, "a positive Go duration such as 15s, 500ms or 2m"}
}

func (v *duration) String() string { return show(v.p, time.Duration.String) }

func (v *duration) Set(s string) error {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return v.refuse(s, v.want)
	}
	if d < v.min {
		return v.refuse(d.String(), v.want)
	}
	*v.p = d
	return nil
}

// factor is compact_factor: at or below 1 every append would trigger a
// compaction.
type factor struct {
	key
	p *float64
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func (v *factor) String() string { return show(v.p, formatFloat) }

func (v *factor) Set(s string) error {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return v.refuse(s, "a number such as 4")
	}
	if math.IsNaN(f) || math.IsInf(f, 0) || f <= 1 {
		return v.refuse(formatFloat(f), "a number greater than 1, such as 4")
	}
	*v.p = f
	return nil
}

// size is a byte count of at least 0.
type size struct {
	key
	p *int64
}

func formatInt(n int64) string { return strconv.FormatInt(n, 10) }

func (v *size) String() string { return show(v.p, formatInt) }

func (v *size) Set(s string) error {
	n, ok := parseBytes(s)
	if !ok {
		return v.refuse(s, "a byte count such as 1048576 or 1MiB")
	}
	if n < 0 {
		return v.refuse(formatInt(n), "a size of at least 0 bytes")
	}
	*v.p = n
	return nil
}

// parseBytes accepts a plain byte count or one with a binary unit, because
// "1MiB" in a config file is easier to check by eye than 1048576.
func parseBytes(v string) (int64, bool) {
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
		return 0, false
	}
	return n * mult, true
}

func validListenAddr(addr string) bool {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || strings.ContainsAny(host, " /") {
		return false
	}
	p, err := strconv.Atoi(port)
	return err == nil && p >= 0 && p <= 65535
}
