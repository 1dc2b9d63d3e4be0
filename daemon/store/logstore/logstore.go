// Package logstore keeps the mailbox's events in an append-only JSONL log
// (ARCHITECTURE.md, "The durability contract"): one writer goroutine, group commit with
// one fdatasync per batch, a CRC-32C per line, torn-tail repair on open, and
// snapshots that let the log before them go.
//
// A data dir holds
//
//	LOCK                                 flock'd while a store has the dir open
//	log-<seq of its first event>.jsonl   log segments, one record per line
//	snapshot-<seq>.json                  the mailbox state at seq
//
// with seqs as 20 zero-padded digits, plus snapshot-*.json.tmp while a
// snapshot is being written and *.broken copies of segments whose torn last
// line was cut off. Compaction is never automatic here: the engine decides
// when, from Stats.
package logstore

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/mailroom/mailroom/daemon/store"
	"github.com/mailroom/mailroom/daemon/store/internal/writeq"
	"github.com/mailroom/mailroom/internal/metrics"
)

var _ store.Store = (*Store)(nil)

// DefaultMaxBatch is how many events one group commit writes at most.
const DefaultMaxBatch = 4096

// Options tune a Store. The zero value is ready to use. There is no way to
// turn syncing off: every acknowledged event is on disk.
type Options struct {
	// Logger receives warnings about repaired files and failed writes; nil
	// discards them.
	Logger *slog.Logger
	// MaxBatch bounds the events written by one write and one sync;
	// 0 means DefaultMaxBatch.
	MaxBatch int
}

// Store is a store.Store backed by files in one data dir.
type Store struct {
	dir      string
	log      *slog.Logger
	maxBatch int
	lockFile *os.File

	// q is the append queue: what Append decides on, the failure that
	// refuses appends until Reset, and Close.
	q *writeq.Queue[[]byte]

	// segMu guards the log's shape as readers see it, and the figures.
	segMu     sync.RWMutex
	segs      []*segment // the segments after the snapshot; the last is written to
	lastSeq   uint64     // the last durable event (or the snapshot's seq)
	snapSeq   uint64
	snapPath  string // "" without a snapshot
	snapBytes int64
	counts    counters
	syncs     *metrics.Histogram // sync latency, owned by the writer

	// Owned by the writer goroutine.
	active    *os.File
	activeSeg *segment
	dirty     bool // the active file may hold bytes past activeSeg.size
	buf       []byte
	// releaseUntil: syncs until then give the writer's P back to the
	// scheduler (an ordinary system call), because one was slow.
	releaseUntil time.Time
	finishErr    error

	compactMu  sync.Mutex     // one compaction at a time
	background sync.WaitGroup // snapshot writers still running
	writerDone chan struct{}
	closeOnce  sync.Once
	closeErr   error
}

// counters are the writer's figures for Stats.
type counters struct {
	eventsAppended uint64
	batches        uint64
	writeErrors    uint64
	compactions    uint64
}

// segment is one log file as far as it is durable.
type segment struct {
	path  string
	start uint64 // seq of its first event (from its name)
	next  uint64 // seq after its last durable event
	size  int64  // bytes of durable records
	index []indexEntry
}

// indexEvery is the spacing of the sparse seq -> offset index: EventsSince
// reads at most this many records before the first one it returns.
const indexEvery = 64

type indexEntry struct {
	seq uint64
	off int64
}

// noteRecord indexes the record of seq at off when it falls on the grid.
func (g *segment) noteRecord(seq uint64, off int64) {
	if (seq-g.start)%indexEvery == 0 {
		g.index = append(g.index, indexEntry{seq, off})
	}
}

// offsetOf returns where to start reading to find seq in g.
func (g *segment) offsetOf(seq uint64) (off int64, line int) {
	i, _ := slices.BinarySearchFunc(g.index, seq, func(e indexEntry, seq uint64) int {
		switch {
		case e.seq < seq:
			return -1
		case e.seq > seq:
			return 1
		}
		return 0
	})
	if i < len(g.index) && g.index[i].seq == seq {
		return g.index[i].off, int(seq-g.start) + 1
	}
	if i == 0 {
		return 0, 1
	}
	e := g.index[i-1]
	return e.off, int(e.seq-g.start) + 1
}

// Open opens (creating if needed) the store in dir, takes the dir's lock,
// checks the log, cuts a torn last line off, finishes an interrupted
// compaction, and starts the writer. It refuses a log damaged anywhere but
// at its very end, naming the file, line and byte offset.
func Open(dir string, opts Options) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating data dir %s: %w", dir, err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	s := &Store{
		dir:        dir,
		log:        opts.Logger,
		maxBatch:   opts.MaxBatch,
		lockFile:   lock,
		writerDone: make(chan struct{}),
		syncs:      metrics.NewHistogram(syncBuckets...),
	}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if s.maxBatch <= 0 {
		s.maxBatch = DefaultMaxBatch
	}
	if err := s.recover(); err != nil {
		unlockDir(lock)
		return nil, err
	}
	s.q = writeq.New[[]byte]("the log in "+dir, s.lastSeq+1)
	go s.run()
	return s, nil
}

// LastSeq returns the seq of the last durable event, or of the snapshot when
// no event follows it.
func (s *Store) LastSeq() uint64 {
	s.segMu.RLock()
	defer s.segMu.RUnlock()
	return s.lastSeq
}

// Stats reports sizes and writer figures.
func (s *Store) Stats() store.Stats {
	s.segMu.RLock()
	defer s.segMu.RUnlock()
	c := s.counts
	return store.Stats{
		LastSeq:        s.lastSeq,
		LogBytes:       s.logBytesLocked(),
		SnapshotBytes:  s.snapBytes,
		EventsAppended: c.eventsAppended,
		Batches:        c.batches,
		WriteErrors:    c.writeErrors,
		Compactions:    c.compactions,
	}
}

// syncBuckets are the upper bounds, in seconds, of the sync-latency
// histogram.
var syncBuckets = []float64{0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1}

// WriteMetrics reports the log's own figures: what it made durable, how
// long its syncs take, its size and its failures.
func (s *Store) WriteMetrics(w *metrics.Writer) {
	st := s.Stats()
	w.Counter("mailroom_events_appended_total", "Events made durable since start.", float64(st.EventsAppended))
	w.Counter("mailroom_fsync_batches_total", "Group commits (one sync each) since start.", float64(st.Batches))
	w.Histogram("mailroom_fsync_duration_seconds", "Time per log sync (one per group commit).", s.syncs)
	w.Counter("mailroom_log_write_errors_total", "Failed log writes since start.", float64(st.WriteErrors))
	w.Counter("mailroom_compactions_total", "Log compactions since start.", float64(st.Compactions))
	w.Gauge("mailroom_log_bytes", "Size of the log after the latest snapshot.", float64(st.LogBytes))
	w.Gauge("mailroom_snapshot_bytes", "Size of the latest snapshot.", float64(st.SnapshotBytes))
}

func (s *Store) logBytesLocked() int64 {
	var n int64
	for _, g := range s.segs {
		n += g.size
	}
	return n
}

// isClosed reports whether Close has begun.
func (s *Store) isClosed() bool { return s.q.Closed() }

// Close writes and syncs everything appended so far, calls every pending
// done, waits for a running compaction, closes the files and releases the
// data dir's lock. Calling it again returns the first call's result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.q.Close()
		<-s.writerDone
		s.background.Wait()
		s.closeErr = errors.Join(s.finishErr, unlockDir(s.lockFile))
		if s.closeErr != nil {
			s.closeErr = fmt.Errorf("closing the log in %s: %w", s.dir, s.closeErr)
		}
	})
	return s.closeErr
}

// segmentPath returns the path of the segment that starts at seq.
func (s *Store) segmentPath(start uint64) string { return filepath.Join(s.dir, segmentName(start)) }
