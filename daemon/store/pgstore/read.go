package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/mailroom/mailroom/daemon/store"
	"github.com/mailroom/mailroom/daemon/store/internal/replay"
	"github.com/mailroom/mailroom/mailbox"
)

// Load passes the newest snapshot (as an event of type snapshot) and every
// event after it to fn, in seq order, from one REPEATABLE READ snapshot of
// the database, so a compaction running meanwhile cannot open a gap
// between the two reads. A gap in the seqs is an error naming it.
func (s *Store) Load(fn func(mailbox.Event) error) error {
	if s.isClosed() {
		return store.ErrClosed
	}
	ctx := context.Background()
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return s.connErr("loading", err)
	}
	defer tx.Rollback(ctx)

	var after uint64
	var snapSeq, atMs int64
	var body []byte
	err = tx.QueryRow(ctx, `SELECT seq, at_ms, body FROM `+s.q+`.snapshots ORDER BY seq DESC LIMIT 1`).Scan(&snapSeq, &atMs, &body)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return s.connErr("loading the snapshot", err)
	default:
		var snap mailbox.Snapshot
		if err := replay.DecodeSnapshot(body, &snap); err != nil {
			return fmt.Errorf("postgres store (schema %s): the snapshot at seq %d does not decode: %w", s.o.Schema, snapSeq, err)
		}
		if snap.Seq != uint64(snapSeq) {
			return fmt.Errorf("postgres store (schema %s): the snapshot row at seq %d holds a snapshot of seq %d", s.o.Schema, snapSeq, snap.Seq)
		}
		if err := fn(mailbox.Event{Seq: snap.Seq, AtMs: atMs, Type: mailbox.EventSnapshot, Snapshot: &snap}); err != nil {
			return err
		}
		after = snap.Seq
	}
	for {
		n := 0
		err := s.page(ctx, tx, after, pageSize, func(ev mailbox.Event) error {
			n++
			after = ev.Seq
			return fn(ev)
		})
		if err != nil {
			return err
		}
		if n < pageSize {
			return nil
		}
	}
}

// querier is a transaction or the pool.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// page reads up to limit events after seq after, checking that they
// continue it without a gap.
func (s *Store) page(ctx context.Context, q querier, after uint64, limit int, fn func(mailbox.Event) error) error {
	rows, err := q.Query(ctx, `SELECT seq, body FROM `+s.q+`.events WHERE seq > $1 ORDER BY seq LIMIT $2`, int64(after), limit)
	if err != nil {
		return s.connErr("reading events", err)
	}
	defer rows.Close()
	next := after + 1
	for rows.Next() {
		var seq int64
		var body []byte
		if err := rows.Scan(&seq, &body); err != nil {
			return s.connErr("reading events", err)
		}
		if uint64(seq) != next {
			return &gapError{schema: s.o.Schema, after: next - 1, got: uint64(seq)}
		}
		ev, err := replay.Decode(uint64(seq), body)
		if err != nil {
			return fmt.Errorf("postgres store (schema %s): event %d does not decode: %w", s.o.Schema, seq, err)
		}
		// The leader's bytes: every instance streams an event exactly as
		// the leader encoded it.
		ev.Encoded = body
		if err := fn(ev); err != nil {
			return err
		}
		next++
	}
	if err := rows.Err(); err != nil {
		return s.connErr("reading events", err)
	}
	return nil
}

// EventsSince returns up to limit durable events after seq after. Whether
// they were compacted away is decided by the snapshot's seq, not by which
// rows the chunked delete has reached.
func (s *Store) EventsSince(after uint64, limit int) ([]mailbox.Event, error) {
	if s.isClosed() {
		return nil, store.ErrClosed
	}
	s.statMu.RLock()
	last, snap := s.lastSeq, s.snapSeq
	s.statMu.RUnlock()
	if after >= last || limit <= 0 {
		return nil, nil
	}
	if after < snap {
		return nil, store.ErrCompacted
	}
	events := make([]mailbox.Event, 0, min(limit, 1024))
	err := s.page(context.Background(), s.pool, after, min(limit, int(last-after)), func(ev mailbox.Event) error {
		events = append(events, ev)
		return nil
	})
	var gap *gapError
	if errors.As(err, &gap) {
		// A compaction deleted them: one that began after the check above,
		// or, on a follower, one the leader ran.
		var newest int64
		if qerr := s.pool.QueryRow(context.Background(), `SELECT coalesce(max(seq), 0) FROM `+s.q+`.snapshots`).Scan(&newest); qerr == nil {
			s.statMu.Lock()
			s.snapSeq = max(s.snapSeq, uint64(newest))
			snap = s.snapSeq
			s.statMu.Unlock()
		}
		if after < snap {
			return nil, store.ErrCompacted
		}
	}
	if err != nil {
		return nil, err
	}
	return events, nil
}

// gapError is a read that found seqs missing.
type gapError struct {
	schema     string
	after, got uint64
}

func (e *gapError) Error() string {
	return fmt.Sprintf("postgres store (schema %s): the log skips from seq %d to %d", e.schema, e.after, e.got)
}
