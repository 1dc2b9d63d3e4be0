package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/mailroom/mailroom/daemon/store"
	"github.com/mailroom/mailroom/daemon/store/internal/replay"
	"github.com/mailroom/mailroom/daemon/store/internal/writeq"
	"github.com/mailroom/mailroom/mailbox"
)

// appendSQL writes one batch as one statement, one round trip, one
// commit: fenced by the epoch (a takeover's UPDATE waits for the FOR SHARE
// lock; after a committed takeover the fence finds no row) and by the
// head (the table's newest seq, or the snapshot's when compaction left no
// event, must be the one this writer expects). A fenced batch writes
// nothing and returns no row.
//
// $1 epoch, $2 head before the batch, $3 snapshot seq, $4..$7 the events.
const appendSQL = `WITH fence AS (
  SELECT epoch FROM {{s}}.leader WHERE id = 1 AND epoch = $1 FOR SHARE
), ok AS (
  SELECT f.epoch FROM fence f
  WHERE coalesce((SELECT max(seq) FROM {{s}}.events), $3) = $2
), ins AS (
  INSERT INTO {{s}}.events (seq, epoch, at_ms, type, body)
  SELECT u.seq, ok.epoch, u.at_ms, u.type, u.body
  FROM ok, unnest($4::bigint[], $5::bigint[], $6::text[], $7::bytea[]) AS u(seq, at_ms, type, body)
  RETURNING 1
)
SELECT (SELECT count(*) FROM ins), pg_notify('{{channel}}', $8::text) FROM ok`

// ErrNotLeader is store.ErrNotLeader: this instance does not hold the
// lease, and nothing was written.
var ErrNotLeader = store.ErrNotLeader

// row is what the writer writes for an event.
type row struct {
	atMs int64
	typ  string
	body []byte
}

// AppendUnit hands evs to the writer as one unit and returns without
// waiting; see store.Store. A unit's items are never split across two
// statements, and a statement commits all or none. An event whose body
// replay could not read back is refused like one with the wrong seq,
// without failing the store. A single event (the common case) is made
// into arrays on the stack.
func (s *Store) AppendUnit(evs []mailbox.Event, done func(error)) {
	var oneRow [1]row
	var oneErr [1]error
	rows, errs := oneRow[:], oneErr[:]
	if len(evs) != 1 {
		rows, errs = make([]row, len(evs)), make([]error, len(evs))
	}
	for i, ev := range evs {
		var body []byte
		body, errs[i] = replay.Body(ev)
		rows[i] = row{ev.AtMs, ev.Type, body}
	}
	s.wq.Append(evs, rows, errs, done)
}

// pingEvery keeps the writer session busy enough that idle_session_timeout
// only ends it when this process stops answering.
func (s *Store) pingEvery() time.Duration {
	return min(time.Second, s.o.SessionTimeout/4)
}

// run is the writer goroutine: the only user of the writer session.
func (s *Store) run() {
	defer close(s.writerDone)
	for {
		batch, last := s.wq.Take(s.maxBatch)
		switch {
		case len(batch) == 1 && batch[0].Ctl != nil:
			batch[0].Ctl()
		case len(batch) > 0:
			s.commit(batch)
		case last:
			s.finish()
			return
		case s.following:
			if s.followStep() {
				return
			}
		default:
			select {
			case <-s.wq.Wake():
			case <-time.After(s.pingEvery()):
				s.keepAlive()
			}
		}
		clear(batch)
	}
}

// keepAlive pings the idle writer session. A session found dead lost the
// lock with it: the store fails and steps down until it leads again.
func (s *Store) keepAlive() {
	if s.wq.Failed() != nil || s.conn == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.o.SessionTimeout)
	defer cancel()
	start := time.Now()
	if _, err := s.conn.Exec(ctx, `SELECT 1`); err != nil {
		s.lostSession(err)
		return
	}
	s.confirm(start)
}

// lostSession gives up a leader's writer session that failed a round
// trip: the lock went with it. The store fails and follows until it wins
// the lead again.
func (s *Store) lostSession(err error) {
	s.log.Error("the writer session to PostgreSQL is lost, and the lease with it; appends are refused until it is taken back", "schema", s.o.Schema, "err", scrub(err.Error(), s.o.URL))
	s.conn.Close(context.Background())
	s.conn = nil
	s.setFailed(fmt.Errorf("postgres store (schema %s): the writer session was lost: %s", s.o.Schema, scrub(err.Error(), s.o.URL)))
	s.stepDown()
}

// commit writes the batch's accepted events with one statement and
// answers every event in queue order.
func (s *Store) commit(batch []writeq.Item[row]) {
	n := 0
	for i := range batch {
		if batch[i].Err == nil {
			n++
		}
	}
	if n == 0 {
		writeq.Answer(batch, nil)
		return
	}
	seqs, atMs, types, bodies := make([]int64, 0, n), make([]int64, 0, n), make([]string, 0, n), make([][]byte, 0, n)
	var bytes int64
	for i := range batch {
		if it := &batch[i]; it.Err == nil {
			seqs, atMs, types, bodies = append(seqs, int64(it.Seq)), append(atMs, it.P.atMs), append(types, it.P.typ), append(bodies, it.P.body)
			bytes += int64(len(it.P.body))
		}
	}
	s.statMu.RLock()
	head, snap := s.lastSeq, s.snapSeq
	s.statMu.RUnlock()

	if s.conn == nil {
		s.fail(batch, fmt.Errorf("postgres store (schema %s): no writer session", s.o.Schema))
		return
	}
	start := time.Now()
	// Never cancelled: a cancelled statement closes the connection and
	// would turn a commit into an ambiguous one.
	var written int64
	var notified string
	err := s.conn.QueryRow(context.Background(), s.appendQ, s.epoch.Load(), int64(head), int64(snap), seqs, atMs, types, bodies,
		strconv.FormatInt(seqs[n-1], 10)).Scan(&written, &notified)
	took := time.Since(start)
	var pe *pgconn.PgError
	switch {
	case err == nil && written == int64(n):
		s.confirm(start)
	case err == nil:
		s.fail(batch, fmt.Errorf("postgres store (schema %s): appending seq %d..%d wrote %d of %d events", s.o.Schema, seqs[0], seqs[n-1], written, n))
		return
	case errors.Is(err, pgx.ErrNoRows):
		// Fenced: another instance took over, or wrote past our head.
		s.fail(batch, fmt.Errorf("postgres store (schema %s): appending seq %d..%d: %w (epoch %d is no longer current, or the log moved past seq %d)", s.o.Schema, seqs[0], seqs[n-1], ErrNotLeader, s.epoch.Load(), head))
		return
	case errors.As(err, &pe) && pe.Severity == "ERROR":
		// The server refused the statement: it rolled back, nothing was
		// written. (A FATAL error ends the session, and with a
		// synchronous standby the commit may already be local: that is
		// settled below like a broken connection.)
		s.fail(batch, s.connErr(fmt.Sprintf("appending seq %d..%d", seqs[0], seqs[n-1]), err))
		return
	default:
		// The connection broke: the batch may or may not have committed.
		if !s.settle(batch, seqs[0], seqs[n-1], err) {
			return
		}
	}
	s.statMu.Lock()
	s.lastSeq = uint64(seqs[n-1])
	s.logBytes += bytes
	s.counts.eventsAppended += uint64(n)
	s.counts.batches++
	s.statMu.Unlock()
	s.commits.Observe(took.Seconds())
	writeq.Answer(batch, nil)
}

// settle finds out whether a batch whose commit outcome is unknown was
// written, before anyone is told: it takes the lease back on a new session
// (the takeover waits for or ends the old backend, so no statement of the
// old term can commit after it) and counts the batch's rows of the old
// epoch. True when they are all there: the caller answers nil. Otherwise
// the batch and everything queued behind it are refused, and the store
// fails (and steps down) until it leads again.
func (s *Store) settle(batch []writeq.Item[row], first, last int64, cause error) bool {
	old := s.epoch.Load()
	s.log.Warn("the writer session broke during an append; settling its outcome from the table", "schema", s.o.Schema, "first_seq", first, "last_seq", last, "err", scrub(cause.Error(), s.o.URL))
	oldPID := uint32(0)
	if s.conn != nil {
		oldPID = s.conn.PgConn().PID()
		s.conn.Close(context.Background())
		s.conn = nil
	}
	for {
		if s.stopCtx.Err() != nil {
			s.fail(batch, fmt.Errorf("postgres store (schema %s): closed while the outcome of seq %d..%d was unknown (it may be in the log; it is there after a restart if it was written)", s.o.Schema, first, last))
			return false
		}
		leads, count, err := s.countAfterTakeover(old, oldPID, first, last)
		if err != nil {
			s.log.Warn("settling an append: not settled yet", "schema", s.o.Schema, "err", err)
			select {
			case <-s.stopCtx.Done():
			case <-time.After(s.o.CampaignInterval):
			}
			continue
		}
		switch count {
		case last - first + 1:
			s.log.Info("the append was written after all", "schema", s.o.Schema, "first_seq", first, "last_seq", last)
			if !leads {
				// Durable, but what was decided on top of it can no
				// longer be written here.
				s.setFailed(fmt.Errorf("postgres store (schema %s): %w", s.o.Schema, ErrNotLeader))
				s.stepDown()
			}
			return true
		case 0:
			s.fail(batch, fmt.Errorf("postgres store (schema %s): appending seq %d..%d: the connection broke and the table shows it was not written: %s", s.o.Schema, first, last, scrub(cause.Error(), s.o.URL)))
			return false
		default:
			s.fail(batch, fmt.Errorf("postgres store (schema %s): appending seq %d..%d: the table holds %d of its events: a statement is not atomic; stop every instance and check the database", s.o.Schema, first, last, count))
			return false
		}
	}
}

// countAfterTakeover counts the rows of seq first..last written in epoch
// old, once no statement of that epoch can still commit: this instance
// took the lease back (its takeover waited for the old statement), or
// another instance's takeover has committed. Until then it ends the old
// backend (ours, by its pid) so that the lock it holds is let go.
func (s *Store) countAfterTakeover(old int64, oldPID uint32, first, last int64) (leads bool, count int64, err error) {
	ctx, cancel := context.WithTimeout(s.stopCtx, 30*time.Second)
	defer cancel()
	err = s.regain(ctx)
	switch {
	case err == nil:
		leads = true
	case errors.Is(err, ErrNotLeader) && s.conn != nil:
		var epoch int64
		if err := s.conn.QueryRow(ctx, `SELECT epoch FROM `+s.q+`.leader WHERE id = 1`).Scan(&epoch); err != nil {
			return false, 0, s.connErr("reading the leader row", err)
		}
		if epoch == old {
			// Nobody took over yet: our old backend may still hold the
			// lock, and its statement may still commit.
			if oldPID != 0 {
				_, _ = s.conn.Exec(ctx, `SELECT pg_terminate_backend($1)`, int32(oldPID))
			}
			return false, 0, fmt.Errorf("postgres store (schema %s): waiting for the old session (pid %d) to end", s.o.Schema, oldPID)
		}
	default:
		return false, 0, err
	}
	err = s.conn.QueryRow(ctx, `SELECT count(*) FROM `+s.q+`.events WHERE seq BETWEEN $1 AND $2 AND epoch = $3`, first, last, old).Scan(&count)
	if err != nil {
		return false, 0, s.connErr("counting the unsettled append", err)
	}
	return leads, count, nil
}

// regain opens a new writer session and takes the lease back. It fails
// with ErrNotLeader when another instance holds it.
func (s *Store) regain(ctx context.Context) error {
	if s.conn == nil {
		if err := s.connect(ctx); err != nil {
			return err
		}
	}
	var got bool
	if err := s.conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, $2)`, int32(lockClass), lockKey(s.o.Schema)).Scan(&got); err != nil {
		s.conn.Close(context.Background())
		s.conn = nil
		return s.connErr("taking the lease back", err)
	}
	if !got {
		return fmt.Errorf("postgres store (schema %s): %w (the lease is held by another session)", s.o.Schema, ErrNotLeader)
	}
	if err := s.takeOver(ctx); err != nil {
		s.conn.Close(context.Background())
		s.conn = nil
		return err
	}
	s.setRole(store.Role{Leader: true, Epoch: s.epoch.Load(), Holder: s.o.Holder, LeaderURL: s.o.Advertise})
	return nil
}

func (s *Store) setFailed(err error) { s.wq.Fail(err) }

// fail refuses the batch and everything queued, and every append until
// the store leads again: the engine decided them on top of the failed
// ones. The store steps down.
func (s *Store) fail(batch []writeq.Item[row], err error) {
	s.log.Error("PostgreSQL append failed; appends are refused until Reset", "schema", s.o.Schema, "err", err)
	s.setFailed(err)
	s.statMu.Lock()
	s.counts.writeErrors++
	s.statMu.Unlock()
	writeq.Answer(batch, err)
	s.stepDown()
}

// Reset lets appends through again after a failure only by leading: a
// store that failed has stepped down and appends again only by winning a
// campaign, which the writer runs by itself, so Reset answers ErrNotLeader
// while the store is failed (ErrClosed once closed, nil when nothing
// failed).
func (s *Store) Reset() error {
	if !s.wq.Closed() && s.wq.Failed() != nil {
		return s.notLeader()
	}
	return s.wq.Reset(func() error { return nil })
}

// finish runs when the writer stops: everything was answered. The lease
// is given up at once, so another instance need not wait for the session
// to time out.
func (s *Store) finish() {
	if s.conn == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if !s.following {
		if _, err := s.conn.Exec(ctx, `SELECT pg_advisory_unlock($1, $2), pg_notify($3, 'resigned')`, int32(lockClass), lockKey(s.o.Schema), s.channel); err != nil {
			s.log.Warn("giving up the lease failed; another instance takes over when the session ends", "schema", s.o.Schema, "err", scrub(err.Error(), s.o.URL))
		}
	}
	if err := s.conn.Close(ctx); err != nil {
		s.closeErr = s.connErr("closing the writer session", err)
	}
	s.conn = nil
}
