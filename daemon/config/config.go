// Package config is the daemon's configuration: defaults, a YAML file,
// environment variables and flags, in that order of precedence. It is pure:
// nothing here reads the process environment except Default, which says so.
package config

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/mailroom/mailroom/daemon/notify"
	"github.com/mailroom/mailroom/daemon/outbound"

	"github.com/mailroom/mailroom/internal/webhook"

	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/daemon/engine"
	"github.com/mailroom/mailroom/daemon/httpapi"
	"github.com/mailroom/mailroom/daemon/store/pgstore"
	"github.com/mailroom/mailroom/mailbox"
)

// Config is everything the daemon can be told. Each field is one key: its
// yaml tag is the key's name in the file, the flag is that name with "-" for
// "_" (--data-dir), and the environment variable is MAILROOM_ and the name in
// capitals (MAILROOM_DATA_DIR). keys.go's key table reads and checks them,
// in the order declared here. Durations are written as Go duration strings
// ("15s").
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
	// MaxTurns and MaxTurnsBytes bound one task's conversation: how many
	// questions and answers it may hold, and their content's total size.
	MaxTurns      int   `yaml:"max_turns"`
	MaxTurnsBytes int64 `yaml:"max_turns_bytes"`
	// A2ABlockingTimeout bounds how long a blocking A2A send waits for its
	// task to finish before answering with the task as it stands.
	A2ABlockingTimeout time.Duration `yaml:"a2a_blocking_timeout"`
	// A2ACardSecurityRequirements, with tokens, has every agent's card
	// list securityRequirements in the A2A 1.0 JSON form beside its
	// securitySchemes; off by default because a2a-go v2.3.1 cannot parse
	// that form (a2aproject/a2a-go#430) and so cannot resolve the card.
	A2ACardSecurityRequirements bool `yaml:"a2a_card_security_requirements"`
	// CardSigningKeyFile, when set, is the PEM private key (ECDSA P-256,
	// Ed25519, or RSA of at least 2048 bits) that signs every agent's card
	// (A2A's AgentCardSignature); its public key is served as a JWKS
	// beside each card.
	CardSigningKeyFile string `yaml:"card_signing_key_file"`
	// BatchMax bounds the items of a batch request and the max of a lease
	// or drain of several.
	BatchMax int `yaml:"batch_max"`
	// PushAllowHosts lists the hosts push notification webhooks may name
	// (comma-separated: loopback, host names, *.domain, IP addresses, CIDR
	// prefixes, or *); the daemon's own address is refused whatever it
	// says. The default, loopback, is for development.
	PushAllowHosts string `yaml:"push_allow_hosts"`
	// PushMaxAttempts is how many times a push notification is tried
	// before it is dead-lettered; PushRetryMax bounds the backoff between
	// tries (it doubles from one second).
	PushMaxAttempts int           `yaml:"push_max_attempts"`
	PushRetryMax    time.Duration `yaml:"push_retry_max"`
	// RemoteResendMax bounds how many times an idempotent task is sent
	// again to a remote agent after sends that may have reached it, when
	// the remote cannot say whether it holds it; past it the lease is
	// left to the operator. 0: never sent again.
	RemoteResendMax int `yaml:"remote_resend_max"`
	// PushOutboxPerReceiver, PushOutboxMax and PushDeadRetention bound
	// the outbox (mailbox.OutboxBounds): the most notifications one
	// receiver (a task's push config, a sender's webhook) may have in
	// it, the most it may hold, and how long a dead letter is kept. Past
	// them the leader drops the oldest (push_dropped, audited). 0: no
	// bound.
	PushOutboxPerReceiver int           `yaml:"push_outbox_per_receiver"`
	PushOutboxMax         int           `yaml:"push_outbox_max"`
	PushDeadRetention     time.Duration `yaml:"push_dead_retention"`
	// PushCAFile is added to the system's CAs to verify push receivers
	// over https (it serves every receiver, some of them public);
	// PushCertFile and PushKeyFile, both or neither, are the client
	// certificate shown to a receiver that asks for one.
	PushCAFile   string `yaml:"push_ca_file"`
	PushCertFile string `yaml:"push_cert_file"`
	PushKeyFile  string `yaml:"push_key_file"`
	// PushReceivers give the receivers they name a TLS of their own
	// instead of the push_* keys' (push_receivers.go).
	PushReceivers []PushReceiver `yaml:"push_receivers"`
	// Store is where the mailbox lives: "log" (files in DataDir, the
	// default) or "postgres" (a schema shared by every instance that
	// names it).
	Store string `yaml:"store"`
	// PostgresURL reaches the database with store: postgres. Its password
	// never appears in logs, errors or Value.
	PostgresURL string `yaml:"postgres_url"`
	// PostgresSchema holds the tables; instances on one schema share one
	// mailbox.
	PostgresSchema string `yaml:"postgres_schema"`
	// AdvertiseURL is where other instances reach this one; empty means
	// the listen address, https:// with TLS (or behind a proxy that ends
	// it), else http://.
	AdvertiseURL string `yaml:"advertise_url"`
	// PostgresSessionTimeout ends the leader's database session when its
	// process stops answering this long (a pause, a partition), which
	// lets another instance take over.
	PostgresSessionTimeout time.Duration `yaml:"postgres_session_timeout"`
	// PostgresCampaignInterval is how often an instance that does not
	// lead tries to.
	PostgresCampaignInterval time.Duration `yaml:"postgres_campaign_interval"`
	// MCPHTTP serves the MCP face over streamable HTTP at /mcp, behind
	// the same bearer tokens as every route; off by default.
	MCPHTTP bool `yaml:"mcp_http"`
	// TLSCertFile and TLSKeyFile, both or neither, serve every route over
	// HTTPS: the server's certificate chain (its own certificate first)
	// and its private key, PEM. The daemon reloads them when they change
	// and on SIGHUP.
	TLSCertFile string `yaml:"tls_cert_file"`
	TLSKeyFile  string `yaml:"tls_key_file"`
	// TLSTerminatedByProxy says that a proxy in front of the daemon ends
	// TLS: the daemon may then listen beyond loopback in plain HTTP with
	// tokens, and writes https URLs (its cards, its advertise_url). See
	// docs/security.md for what it assumes of the proxy.
	TLSTerminatedByProxy bool `yaml:"tls_terminated_by_proxy"`
	// TLSClientCAFile and TLSClientAuth ask clients for certificates of
	// these CAs ("request" or "require"; "" or "none": not asked), which
	// tokens entries map to principals (client_auth.go).
	TLSClientCAFile string `yaml:"tls_client_ca_file"`
	TLSClientAuth   string `yaml:"tls_client_auth"`
	// RevokedCertificates are client certificates refused although their
	// CA signed them. Set in the file only, beside tokens.
	RevokedCertificates []auth.RevokedCertificate `yaml:"revoked_certificates"`
	// OIDCIssuer, with OIDCAudience, accepts that issuer's tokens beside
	// the static ones; OIDCPrincipalClaim ("sub" when empty) names the
	// caller, OIDCCapsClaim a claim listing capabilities, and OIDCCAFile
	// the CAs the issuer is verified with (oidc.go).
	OIDCIssuer         string `yaml:"oidc_issuer"`
	OIDCAudience       string `yaml:"oidc_audience"`
	OIDCPrincipalClaim string `yaml:"oidc_principal_claim"`
	OIDCCapsClaim      string `yaml:"oidc_caps_claim"`
	OIDCCAFile         string `yaml:"oidc_ca_file"`
	// OIDCRefreshInterval bounds how often the issuer's discovery
	// document and keys are fetched again (0: auth.DefaultOIDCRefresh).
	OIDCRefreshInterval time.Duration `yaml:"oidc_refresh_interval"`
	// ClusterCAFile is the PEM bundle of the CAs a follower verifies the
	// leader's certificate with when it forwards writes to an https
	// advertise_url (the instances' own CA, most often private); empty:
	// the system's CAs.
	ClusterCAFile string `yaml:"cluster_ca_file"`
	// ClusterSecretFile holds the secret every instance of one shared
	// mailbox has (the same file on each): a follower sends it to the
	// leader with the identity of the caller whose write it forwards,
	// instead of the caller's token. The secret itself is never in the
	// configuration, a flag or a log.
	ClusterSecretFile string `yaml:"cluster_secret_file"`
	// ClusterCertFile and ClusterKeyFile, both or neither, are the client
	// certificate a follower shows the leader when the leader asks for
	// one (tls_client_auth: require refuses a follower without).
	ClusterCertFile string `yaml:"cluster_cert_file"`
	ClusterKeyFile  string `yaml:"cluster_key_file"`
	// Remotes are the credentials the daemon calls remote agents with,
	// keyed by agent id. Like tokens, they are set in the file only and
	// never shown.
	Remotes []RemoteCredential `yaml:"remotes"`
}

// The defaults that belong to no other package. The rest are defined once
// by the package that uses them (mailbox, engine, httpapi), and DefaultFor
// refers to them.
const (
	// StoreLog and StorePostgres are the values of store.
	StoreLog      = "log"
	StorePostgres = "postgres"

	// DefaultAddr is where the daemon listens, and so where the CLI looks
	// for it, unless told otherwise.
	DefaultAddr            = "127.0.0.1:7717"
	DefaultLogLevel        = "info"
	DefaultLogFormat       = "text"
	DefaultShutdownTimeout = 10 * time.Second
	// DefaultA2ABlockingTimeout is how long a blocking A2A send waits.
	DefaultA2ABlockingTimeout = 30 * time.Second
)

// Default returns the defaults, with the data directory taken from the
// process environment ($XDG_DATA_HOME or $HOME). Use DefaultFor to supply
// the environment yourself.
func Default() Config { return DefaultFor(os.Getenv) }

// DefaultFor returns the defaults with the data directory derived from
// getenv, so callers and tests decide what the environment is.
func DefaultFor(getenv func(string) string) Config {
	// The scheduled scan's bounds are those of a manual 'mailroom retry-stale'.
	retry := mailbox.DefaultRetryPolicy()
	return Config{
		Addr:            DefaultAddr,
		DataDir:         DefaultDataDir(getenv),
		LogLevel:        DefaultLogLevel,
		LogFormat:       DefaultLogFormat,
		CompactFactor:   engine.DefaultAutoCompactFactor,
		CompactMinBytes: engine.DefaultAutoCompactMinBytes,
		RetainDone:      mailbox.DefaultRetainDone,
		SSEHeartbeat:    httpapi.DefaultHeartbeatInterval,
		SSEBuffer:       engine.DefaultSubscriberBuffer,
		SSEWriteTimeout: httpapi.DefaultWriteTimeout,
		ShutdownTimeout: DefaultShutdownTimeout,

		RetryStaleMinLeaseAge: time.Duration(retry.MinLeaseAgeMs) * time.Millisecond,
		RetryStaleMaxAttempts: retry.MaxAttempts,
		RetryStaleMaxRequeues: retry.MaxRequeues,
		RetryStaleScanLimit:   retry.ScanLimit,
		ResultCacheMax:        mailbox.DefaultResultCacheMax,
		ResultCacheAge:        time.Duration(mailbox.DefaultResultCacheAgeMs) * time.Millisecond,
		AuditMax:              mailbox.DefaultAuditMax,
		MaxTurns:              mailbox.DefaultMaxTurns,
		MaxTurnsBytes:         mailbox.DefaultMaxTurnsBytes,
		A2ABlockingTimeout:    DefaultA2ABlockingTimeout,
		BatchMax:              mailbox.DefaultBatchMax,
		PushAllowHosts:        webhook.DefaultAllow,
		PushMaxAttempts:       notify.DefaultMaxAttempts,
		PushRetryMax:          notify.DefaultRetryMax,
		RemoteResendMax:       outbound.DefaultResendMax,
		PushOutboxPerReceiver: mailbox.DefaultOutboxPerReceiver,
		PushOutboxMax:         mailbox.DefaultOutboxTotal,
		PushDeadRetention:     mailbox.DefaultDeadRetention,

		Store:                    StoreLog,
		PostgresSchema:           pgstore.DefaultSchema,
		PostgresSessionTimeout:   pgstore.DefaultSessionTimeout,
		PostgresCampaignInterval: pgstore.DefaultCampaignInterval,
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
// its value and what was expected; then the rules that span keys. It
// reads the TLS files the config names, so that a certificate that would
// fail the first handshake is refused at start.
func (c Config) Validate() error {
	keys := c.keys()
	for _, name := range keyNames() {
		var err error
		if name == "tokens" {
			// auth.New is the one validator, so the daemon and Validate can
			// never disagree about what a good entry is. Its messages name
			// tokens[i] and never the secret.
			_, err = auth.New(c.Tokens)
		} else if name == "remotes" {
			err = ValidateRemotes(c.Remotes)
		} else if name == "push_receivers" {
			err = ValidatePushReceivers(c.PushReceivers)
		} else if name == "revoked_certificates" {
			err = auth.ValidateRevoked(c.RevokedCertificates)
		} else {
			// A field is valid when its own text would be accepted by its
			// flag, so the rules are written once, in keys.go.
			v := keys.Lookup(flagName(name)).Value
			err = v.Set(v.String())
		}
		if err != nil {
			return err
		}
	}
	// Checked here, not per key: a file may name addr before tokens, and
	// flags and the environment override one key at a time.
	if c.Store == StorePostgres && c.PostgresURL == "" {
		return fmt.Errorf("postgres_url: empty, expected a PostgreSQL URL such as postgres://mailroom@db:5432/mailroom (store is postgres)")
	}
	if err := checkTLS(c); err != nil {
		return err
	}
	if _, err := c.CardSigner(); err != nil {
		return err
	}
	if err := checkClientAuth(c); err != nil {
		return err
	}
	if _, err := c.OIDC(); err != nil {
		return err
	}
	if err := checkCluster(c); err != nil {
		return err
	}
	if _, err := c.PushTLSConfig(); err != nil {
		return err
	}
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
