package engine

import (
	"context"
	"errors"

	"github.com/mailroom/mailroom/daemon/store"
	"github.com/mailroom/mailroom/mailbox"
)

// Compaction: the log folded into a snapshot of the durable state, by an
// operator or by itself once the log outgrows the last snapshot.

// Compact folds the log into a snapshot of the durable state.
func (e *Engine) Compact(ctx context.Context) (mailbox.CompactOutcome, error) {
	out, err := e.st.Compact(e.snapshot)
	if err != nil {
		if errors.Is(err, store.ErrClosed) {
			return out, mailbox.Errorf(mailbox.CodeUnavailable, "the mailbox is shutting down")
		}
		return out, &mailbox.Error{Code: mailbox.CodeUnavailable, Message: "compaction failed, the log is unchanged: " + err.Error()}
	}
	e.log.Info("log compacted", "seq", out.Seq, "bytes_before", out.BytesBefore, "bytes_after", out.BytesAfter, "principal", mailbox.PrincipalFrom(ctx))
	return out, nil
}

// maybeCompact starts a background compaction when the log has outgrown the
// last snapshot by the configured factor. Stats is cheap but not free, so it
// is looked at every 256 commits.
func (e *Engine) maybeCompact() {
	if e.opts.AutoCompactFactor < 0 || e.sinceCheck.Add(1)%256 != 0 {
		return
	}
	st := e.st.Stats()
	limit := int64(e.opts.AutoCompactFactor * float64(st.SnapshotBytes))
	if limit < e.opts.AutoCompactMinBytes {
		limit = e.opts.AutoCompactMinBytes
	}
	if st.LogBytes <= limit || !e.compacting.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer e.compacting.Store(false)
		out, err := e.st.Compact(e.snapshot)
		if err != nil {
			e.log.Error("automatic compaction failed", "err", err)
			return
		}
		e.log.Info("log compacted automatically", "seq", out.Seq, "bytes_before", out.BytesBefore, "bytes_after", out.BytesAfter)
	}()
}

func (e *Engine) snapshot() *mailbox.Snapshot {
	e.durableMu.RLock()
	defer e.durableMu.RUnlock()
	return e.durable.Snapshot(e.opts.Now().UnixMilli())
}
