// Package pgstore is a store.Store kept in PostgreSQL, so that the
// mailbox outlives the machine a daemon runs on (the design is in
// ARCHITECTURE.md, "PostgreSQL: one leader with fenced appends").
//
// One instance leads: it holds a session advisory lock on its writer
// connection and the epoch in the one-row leader table, and it alone
// appends, with the engine's in-memory decide and group commit as on the
// local log. Each batch is one statement that reads the leader row FOR
// SHARE with the epoch it took over with and checks that the table's head
// is the one it expects, so a leader that lost its lease (a crash, a pause
// past idle_session_timeout, a partition) can never append again: its
// statement writes nothing. The writer session pings while idle, so an
// instance that is alive keeps the lock.
//
// Every instance is one of several sharing the log (store.Shared): one
// that does not lead follows it (Follow), serving what it reads, and
// campaigns; it takes over when the leader goes. A leader that fails steps
// down and follows again.
package pgstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mailroom/mailroom/daemon/store"
	"github.com/mailroom/mailroom/daemon/store/internal/writeq"
	"github.com/mailroom/mailroom/internal/metrics"
	"github.com/mailroom/mailroom/mailbox"
)

// Defaults for Options.
const (
	DefaultSessionTimeout   = 5 * time.Second
	DefaultCampaignInterval = 250 * time.Millisecond
	// DefaultMaxBatch bounds the events of one append statement.
	DefaultMaxBatch = 1024
	// pageSize is how many events one read of the table returns.
	pageSize = 10000
	// deleteChunk is how many compacted events one DELETE removes.
	deleteChunk = 10000
)

// Options configure Open.
type Options struct {
	// URL is a PostgreSQL connection string (postgres://... or key=value).
	// It never appears in errors or logs with its password.
	URL string
	// Schema holds the tables; DefaultSchema when empty.
	Schema string
	// Holder names this instance in the leader table and in its writer
	// session's application_name; host:pid:random when empty.
	Holder string
	// Advertise is where other instances reach this one (advertise_url).
	Advertise string
	// SessionTimeout is the writer session's idle_session_timeout: a leader
	// paused or cut off this long loses the lock. At least 1s; 0 means
	// DefaultSessionTimeout.
	SessionTimeout time.Duration
	// CampaignInterval is how often an instance that does not lead tries
	// to take over; 0 means DefaultCampaignInterval.
	CampaignInterval time.Duration
	// MaxBatch bounds the events of one append statement; 0 means
	// DefaultMaxBatch.
	MaxBatch int
	// Logger receives takeovers, lost sessions and failed writes; nil
	// discards them.
	Logger *slog.Logger
}

// Store is a store.Store in a PostgreSQL schema.
type Store struct {
	o        Options
	log      *slog.Logger
	q        string // the quoted schema
	appName  string
	connCfg  *pgx.ConnConfig
	pool     *pgxpool.Pool
	maxBatch int
	appendQ  string
	snapQ    string

	// The writer goroutine owns conn, following and listening.
	conn      *pgx.Conn
	epoch     atomic.Int64
	following bool
	listening bool
	channel   string // the schema's NOTIFY channel
	role      atomic.Pointer[store.Role]
	knownHead atomic.Uint64 // the newest seq a notification announced
	// confirmed is when (mono) the last round trip that showed this
	// instance's view current started: current.go.
	confirmed atomic.Int64
	// lastCampaign and campaignNow pace a follower's campaigns (writer-owned).
	lastCampaign time.Time
	campaignNow  bool
	// lost counts the campaigns this instance lost: a test waits on it
	// to know a follower has tried, instead of sleeping.
	lost atomic.Uint64

	// apply and roleFn are set by Follow (under fmu).
	fmu    sync.Mutex
	apply  func(mailbox.Event) error
	roleFn func(store.Role)

	// q is the append queue: what Append decides on, the failure (or the
	// following) that refuses appends, and Close.
	wq *writeq.Queue[row]

	// statMu guards the shape of the log as readers see it, and figures.
	statMu    sync.RWMutex
	lastSeq   uint64
	snapSeq   uint64
	logBytes  int64
	snapBytes int64
	counts    struct{ eventsAppended, batches, writeErrors, compactions uint64 }
	commits   *metrics.Histogram // append statement latency, owned by the writer

	compactMu  sync.Mutex
	background sync.WaitGroup
	writerDone chan struct{}
	closeOnce  sync.Once
	closeErr   error
	stop       context.CancelFunc // ends a wait in Open or a settlement on Close
	stopCtx    context.Context
}

// Redact returns a connection string fit for a log line or an error: a
// URL's password, and a key=value string's password=..., replaced by xxxxx.
func Redact(conn string) string {
	if u, err := url.Parse(conn); err == nil && u.Scheme != "" {
		return u.Redacted()
	}
	fields := strings.Fields(conn)
	for i, f := range fields {
		if k, _, ok := strings.Cut(f, "="); ok && strings.TrimSpace(k) == "password" {
			fields[i] = "password=xxxxx"
		}
	}
	return strings.Join(fields, " ")
}

// scrub removes conn's password from msg, wherever a library put it.
func scrub(msg, conn string) string {
	if u, err := url.Parse(conn); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			msg = strings.ReplaceAll(msg, pw, "xxxxx")
		}
	}
	for _, f := range strings.Fields(conn) {
		if k, v, ok := strings.Cut(f, "="); ok && k == "password" && v != "" {
			msg = strings.ReplaceAll(msg, v, "xxxxx")
		}
	}
	return msg
}

// Open connects, migrates the schema (refusing one newer than this
// binary) and returns at once, following and not leading: appends are
// refused until Follow has been called and the writer wins a campaign
// (every CampaignInterval), takes over (the epoch goes up by one, waiting
// for any append of the old term to finish) and reports Leader.
func Open(ctx context.Context, o Options) (*Store, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	s, err := newStore(o)
	if err != nil {
		return nil, err
	}
	if err := s.openPool(ctx); err != nil {
		return nil, err
	}
	if err := s.connect(ctx); err != nil {
		s.pool.Close()
		return nil, err
	}
	if _, err := migrate(ctx, s.conn, o.Schema); err != nil {
		s.abandon()
		return nil, s.connErr("migrating", err)
	}
	if err := s.readShape(ctx); err != nil {
		s.abandon()
		return nil, s.connErr("reading the log's head", err)
	}
	s.wq = writeq.New[row]("the log in schema "+o.Schema, s.lastSeq+1)
	// Following until the writer wins a campaign.
	s.following = true
	s.setRole(store.Role{Epoch: s.epoch.Load(), Holder: o.Holder, LeaderURL: o.Advertise})
	s.wq.Fail(s.notLeader())
	var r store.Role
	_ = s.conn.QueryRow(ctx, `SELECT epoch, holder, advertise FROM `+s.q+`.leader WHERE id = 1`).Scan(&r.Epoch, &r.Holder, &r.LeaderURL)
	s.setRole(r)
	s.writerDone = make(chan struct{})
	go s.run()
	return s, nil
}

// withDefaults checks o and fills in the defaults of what it leaves out.
func (o Options) withDefaults() (Options, error) {
	if o.Schema == "" {
		o.Schema = DefaultSchema
	}
	if err := ValidateSchema(o.Schema); err != nil {
		return o, err
	}
	if o.SessionTimeout == 0 {
		o.SessionTimeout = DefaultSessionTimeout
	}
	if o.SessionTimeout < time.Second {
		return o, fmt.Errorf("postgres_session_timeout: got %v, expected at least 1s (a shorter one fails over a busy leader)", o.SessionTimeout)
	}
	if o.CampaignInterval <= 0 {
		o.CampaignInterval = DefaultCampaignInterval
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = DefaultMaxBatch
	}
	if o.Holder == "" {
		host, _ := os.Hostname()
		o.Holder = fmt.Sprintf("%s:%d:%s", host, os.Getpid(), uuid.NewString()[:8])
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o, nil
}

// newStore is the store of o, connected to nothing yet: its names (the
// writer's application_name, the channel) and statements for o's schema.
func newStore(o Options) (*Store, error) {
	cfg, err := pgx.ParseConfig(o.URL)
	if err != nil {
		return nil, fmt.Errorf("postgres_url: got %s, expected a postgres:// URL or key=value connection string: %s", Redact(o.URL), scrub(errors.Unwrap(err).Error(), o.URL))
	}
	s := &Store{
		o: o, log: o.Logger, q: pgx.Identifier{o.Schema}.Sanitize(),
		appName:  fmt.Sprintf("mailroom-writer:%08x:%s", uint32(lockKey(o.Schema)), o.Holder),
		connCfg:  cfg,
		maxBatch: o.MaxBatch,
		commits:  metrics.NewHistogram(commitBuckets...),
	}
	if len(s.appName) > 63 {
		s.appName = s.appName[:63]
	}
	s.channel = fmt.Sprintf("mailroom_%08x", uint32(lockKey(o.Schema)))
	s.appendQ = strings.ReplaceAll(strings.ReplaceAll(appendSQL, "{{s}}", s.q), "{{channel}}", s.channel)
	s.snapQ = strings.ReplaceAll(snapshotSQL, "{{s}}", s.q)
	s.stopCtx, s.stop = context.WithCancel(context.Background())
	return s, nil
}

// openPool opens the read pool and refuses a server too old to fence a
// paused leader (checkVersion).
func (s *Store) openPool(ctx context.Context) error {
	poolCfg, err := pgxpool.ParseConfig(s.o.URL)
	if err != nil {
		return fmt.Errorf("postgres_url: %s", scrub(err.Error(), s.o.URL))
	}
	poolCfg.MaxConns = 2
	poolCfg.ConnConfig.RuntimeParams["application_name"] = "mailroom-reader:" + s.o.Holder
	if s.pool, err = pgxpool.NewWithConfig(ctx, poolCfg); err != nil {
		return s.connErr("opening the read pool", err)
	}
	var version int
	if err := s.pool.QueryRow(ctx, `SELECT current_setting('server_version_num')::int`).Scan(&version); err != nil {
		s.pool.Close()
		return s.connErr("connecting (to read the server's version)", err)
	}
	if err := checkVersion(version); err != nil {
		s.pool.Close()
		return err
	}
	return nil
}

// checkVersion refuses a server older than PostgreSQL 14: a leader that
// pauses must lose its session (idle_session_timeout, new in 14), or it
// would keep the lead, and the mailbox would wait, for as long as it is
// stopped.
func checkVersion(num int) error {
	if num < 140000 {
		return fmt.Errorf("postgres_url: the server is PostgreSQL %d.%d, expected 14 or newer (a paused leader must lose its session through idle_session_timeout)", num/10000, num%10000)
	}
	return nil
}

// connErr wraps a database error with what was being done, without the
// connection string's password.
func (s *Store) connErr(doing string, err error) error {
	return certRefused(fmt.Errorf("postgres store (schema %s): %s: %s", s.o.Schema, doing, scrub(err.Error(), s.o.URL)), err)
}

// abandon closes what Open opened after a failure.
func (s *Store) abandon() {
	if s.conn != nil {
		s.conn.Close(context.Background())
	}
	s.pool.Close()
}

// connect opens the writer session: idle_session_timeout makes a paused
// or cut-off leader lose the lock; keepalives find a dead peer.
func (s *Store) connect(ctx context.Context) error {
	cfg := s.connCfg.Copy()
	cfg.RuntimeParams["application_name"] = s.appName
	cfg.RuntimeParams["idle_session_timeout"] = strconv.FormatInt(s.o.SessionTimeout.Milliseconds(), 10)
	cfg.RuntimeParams["tcp_keepalives_idle"] = "5"
	cfg.RuntimeParams["tcp_keepalives_interval"] = "2"
	cfg.RuntimeParams["tcp_keepalives_count"] = "3"
	// The same on this side: a leader whose database host vanished while
	// it waits for a commit finds out in about 11 s, not Go's default of
	// minutes, and settles the batch.
	timeout := cfg.ConnectTimeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	d := &net.Dialer{Timeout: timeout, KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: 5 * time.Second, Interval: 2 * time.Second, Count: 3}}
	cfg.DialFunc = d.DialContext
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return s.connErr("connecting the writer session", err)
	}
	s.conn = conn
	return nil
}

// takeOver bumps the epoch. The UPDATE waits for an old leader's append in
// flight (it holds the row FOR SHARE); if that takes longer than 10s the
// old backend is stuck (a half-sent message, a sync standby that does not
// answer), and it is terminated.
func (s *Store) takeOver(ctx context.Context) error {
	start := time.Now()
	for attempt := 0; ; attempt++ {
		_, err := s.conn.Exec(ctx, `SET lock_timeout = '10s'`)
		var epoch int64
		if err == nil {
			err = s.conn.QueryRow(ctx, `UPDATE `+s.q+`.leader SET epoch = epoch + 1, holder = $1, advertise = $2, elected_at = now() WHERE id = 1 RETURNING epoch`,
				s.o.Holder, s.o.Advertise).Scan(&epoch)
		}
		if err == nil {
			s.epoch.Store(epoch)
			_, err = s.conn.Exec(ctx, `RESET lock_timeout`)
		}
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "55P03" && attempt < 3 {
			s.log.Warn("an old leader's append is stuck; terminating its session", "schema", s.o.Schema)
			prefix := fmt.Sprintf("mailroom-writer:%08x:%%", uint32(lockKey(s.o.Schema)))
			if _, terr := s.conn.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			   WHERE datname = current_database() AND application_name LIKE $1 AND pid <> pg_backend_pid()`, prefix); terr != nil {
				return s.connErr("terminating a stuck old leader", terr)
			}
			continue
		}
		if err != nil {
			return s.connErr("taking over the lease", err)
		}
		s.log.Info("leading", "schema", s.o.Schema, "epoch", s.epoch.Load(), "holder", s.o.Holder)
		s.confirm(start)
		return nil
	}
}

// readShape reads the head, the snapshot and the log's size.
func (s *Store) readShape(ctx context.Context) error {
	var snapSeq, snapBytes, head, logBytes int64
	err := s.conn.QueryRow(ctx, `SELECT
	    coalesce((SELECT seq FROM `+s.q+`.snapshots ORDER BY seq DESC LIMIT 1), 0),
	    coalesce((SELECT octet_length(body) FROM `+s.q+`.snapshots ORDER BY seq DESC LIMIT 1), 0),
	    coalesce((SELECT max(seq) FROM `+s.q+`.events), 0)`).Scan(&snapSeq, &snapBytes, &head)
	if err != nil {
		return err
	}
	if err := s.conn.QueryRow(ctx, `SELECT coalesce(sum(octet_length(body)), 0) FROM `+s.q+`.events WHERE seq > $1`, snapSeq).Scan(&logBytes); err != nil {
		return err
	}
	s.statMu.Lock()
	defer s.statMu.Unlock()
	s.snapSeq, s.snapBytes, s.logBytes = uint64(snapSeq), snapBytes, logBytes
	s.lastSeq = uint64(max(head, snapSeq))
	return nil
}

// Epoch is the term this instance took over with.
func (s *Store) Epoch() int64 { return s.epoch.Load() }

// Role is this instance's role now (store.Shared).
func (s *Store) Role() store.Role { return *s.role.Load() }

// Behind is how many events the newest notification announced that this
// instance has not applied yet (0 for a leader).
func (s *Store) Behind() uint64 {
	if h, last := s.knownHead.Load(), s.LastSeq(); h > last {
		return h - last
	}
	return 0
}

func (s *Store) setRole(r store.Role) {
	old := s.role.Swap(&r)
	if old == nil || *old == r {
		return
	}
	s.fmu.Lock()
	fn := s.roleFn
	s.fmu.Unlock()
	if fn != nil {
		fn(r)
	}
}

// notLeader is the refusal while following, naming the leader.
func (s *Store) notLeader() error {
	r := s.role.Load()
	if r == nil || r.LeaderURL == "" {
		return fmt.Errorf("postgres store (schema %s): %w (no instance leads right now)", s.o.Schema, store.ErrNotLeader)
	}
	return fmt.Errorf("postgres store (schema %s): %w (%s at %s leads, epoch %d)", s.o.Schema, store.ErrNotLeader, r.Holder, r.LeaderURL, r.Epoch)
}

// Advertise is where other instances reach this one.
func (s *Store) Advertise() string { return s.o.Advertise }

// Schema is the schema the store lives in.
func (s *Store) Schema() string { return s.o.Schema }

// LastSeq is the seq of the last durable event (or of the snapshot).
func (s *Store) LastSeq() uint64 {
	s.statMu.RLock()
	defer s.statMu.RUnlock()
	return s.lastSeq
}

// Stats reports the store's figures. LogBytes counts event bodies after
// the snapshot; SnapshotBytes the snapshot's body.
func (s *Store) Stats() store.Stats {
	s.statMu.RLock()
	defer s.statMu.RUnlock()
	return store.Stats{
		LastSeq: s.lastSeq, LogBytes: s.logBytes, SnapshotBytes: s.snapBytes,
		EventsAppended: s.counts.eventsAppended, Batches: s.counts.batches,
		WriteErrors: s.counts.writeErrors, Compactions: s.counts.compactions,
	}
}

// commitBuckets are the upper bounds, in seconds, of the commit-latency
// histogram.
var commitBuckets = []float64{0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1}

// WriteMetrics reports the store's figures under the names the local log
// uses (a group commit is one append statement here), and the term this
// instance leads.
func (s *Store) WriteMetrics(w *metrics.Writer) {
	st := s.Stats()
	w.Counter("mailroom_events_appended_total", "Events made durable since start.", float64(st.EventsAppended))
	w.Counter("mailroom_fsync_batches_total", "Group commits (one append statement each in PostgreSQL) since start.", float64(st.Batches))
	w.Histogram("mailroom_fsync_duration_seconds", "Time per group commit (an append statement's round trip and commit in PostgreSQL).", s.commits)
	w.Counter("mailroom_log_write_errors_total", "Failed appends since start.", float64(st.WriteErrors))
	w.Counter("mailroom_compactions_total", "Log compactions since start.", float64(st.Compactions))
	w.Gauge("mailroom_log_bytes", "Bytes of event bodies after the latest snapshot.", float64(st.LogBytes))
	w.Gauge("mailroom_snapshot_bytes", "Size of the latest snapshot.", float64(st.SnapshotBytes))
	r := s.Role()
	w.Gauge("mailroom_store_epoch", "The newest term this instance has seen (PostgreSQL store).", float64(r.Epoch))
	leader := 0.0
	if r.Leader {
		leader = 1
	}
	w.Gauge("mailroom_store_leader", "1 while this instance leads the shared log, else 0 (PostgreSQL store).", leader)
	w.Gauge("mailroom_store_behind_events", "Events the newest notification announced that this instance has not applied (PostgreSQL store).", float64(s.Behind()))
}

func (s *Store) isClosed() bool { return s.wq.Closed() }

// Close writes everything appended so far, answers every pending done,
// gives up the lease and closes the connections.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.wq.Close()
		// A settlement waiting for PostgreSQL gives up: nobody is left
		// to answer.
		s.stop()
		<-s.writerDone
		s.background.Wait()
		s.pool.Close()
	})
	return s.closeErr
}
