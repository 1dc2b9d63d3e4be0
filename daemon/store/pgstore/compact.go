package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mailroom/mailroom/daemon/store"
	"github.com/mailroom/mailroom/mailbox"
)

// snapshotSQL inserts a snapshot under the same fence as an append: a
// leader that lost its lease writes no snapshot. $1 epoch, $2 seq, $3
// at_ms, $4 body.
const snapshotSQL = `WITH fence AS (
  SELECT epoch FROM {{s}}.leader WHERE id = 1 AND epoch = $1 FOR SHARE
)
INSERT INTO {{s}}.snapshots (seq, epoch, at_ms, body)
SELECT $2, epoch, $3, $4 FROM fence
ON CONFLICT (seq) DO UPDATE SET epoch = EXCLUDED.epoch, at_ms = EXCLUDED.at_ms, body = EXCLUDED.body
RETURNING 1`

// Compact makes snapshot() the new base: the writer, between batches,
// takes the snapshot at the last durable seq and inserts it (fenced);
// from then on events at or before it count as compacted. The rows it
// covers are then deleted in chunks, off the writer, and Compact returns
// when they are gone. A crash at any point loses nothing: Load reads the
// newest snapshot and the events after it.
func (s *Store) Compact(snapshot func() *mailbox.Snapshot) (mailbox.CompactOutcome, error) {
	s.compactMu.Lock()
	defer s.compactMu.Unlock()
	type result struct {
		out mailbox.CompactOutcome
		err error
	}
	res := make(chan result, 1)
	queued := s.wq.Control(func() {
		out, err := s.insertSnapshot(snapshot)
		if err != nil {
			res <- result{err: err}
			return
		}
		s.background.Add(1)
		go func() {
			defer s.background.Done()
			err := s.dropBefore(out.Seq)
			s.statMu.RLock()
			out.BytesAfter = s.logBytes + s.snapBytes
			s.statMu.RUnlock()
			res <- result{out, err}
		}()
	})
	if !queued {
		return mailbox.CompactOutcome{}, store.ErrClosed
	}
	r := <-res
	return r.out, r.err
}

// insertSnapshot runs in the writer.
func (s *Store) insertSnapshot(snapshot func() *mailbox.Snapshot) (mailbox.CompactOutcome, error) {
	if failed := s.wq.Failed(); failed != nil {
		return mailbox.CompactOutcome{}, fmt.Errorf("compacting the log in schema %s: the log cannot be written until Reset: %w", s.o.Schema, failed)
	}
	snap := snapshot()
	if snap == nil {
		return mailbox.CompactOutcome{}, fmt.Errorf("compacting the log in schema %s: the snapshot function returned nil", s.o.Schema)
	}
	s.statMu.RLock()
	last, before := s.lastSeq, s.logBytes+s.snapBytes
	s.statMu.RUnlock()
	if snap.Seq != last {
		return mailbox.CompactOutcome{}, fmt.Errorf("compacting the log in schema %s: the snapshot is at seq %d, but the last durable event is %d", s.o.Schema, snap.Seq, last)
	}
	body, err := json.Marshal(snap)
	if err != nil {
		return mailbox.CompactOutcome{}, fmt.Errorf("compacting the log in schema %s: encoding the snapshot: %w", s.o.Schema, err)
	}
	if s.conn == nil {
		return mailbox.CompactOutcome{}, fmt.Errorf("compacting the log in schema %s: no writer session", s.o.Schema)
	}
	var one int
	if err := s.conn.QueryRow(context.Background(), s.snapQ, s.epoch.Load(), int64(snap.Seq), snap.AtMs, body).Scan(&one); err != nil {
		s.statMu.Lock()
		s.counts.writeErrors++
		s.statMu.Unlock()
		if errors.Is(err, pgx.ErrNoRows) {
			return mailbox.CompactOutcome{}, fmt.Errorf("compacting the log in schema %s: %w (the log is unchanged)", s.o.Schema, ErrNotLeader)
		}
		return mailbox.CompactOutcome{}, s.connErr("writing the snapshot (the log is unchanged and complete)", err)
	}
	s.statMu.Lock()
	s.snapSeq, s.snapBytes, s.logBytes = snap.Seq, int64(len(body)), 0
	s.counts.compactions++
	s.statMu.Unlock()
	return mailbox.CompactOutcome{Seq: snap.Seq, BytesBefore: before}, nil
}

// dropBefore deletes what the snapshot at seq covers, in chunks, so no
// single statement holds locks on a million rows.
func (s *Store) dropBefore(seq uint64) error {
	ctx, cancel := context.WithTimeout(s.stopCtx, 10*time.Minute)
	defer cancel()
	for {
		tag, err := s.pool.Exec(ctx, `DELETE FROM `+s.q+`.events WHERE seq IN
		    (SELECT seq FROM `+s.q+`.events WHERE seq <= $1 ORDER BY seq LIMIT $2)`, int64(seq), deleteChunk)
		if err != nil {
			return s.connErr("deleting compacted events (the snapshot is written; the next compaction deletes them)", err)
		}
		if tag.RowsAffected() < deleteChunk {
			break
		}
	}
	if _, err := s.pool.Exec(ctx, `DELETE FROM `+s.q+`.snapshots WHERE seq < $1`, int64(seq)); err != nil {
		return s.connErr("deleting older snapshots", err)
	}
	return nil
}
