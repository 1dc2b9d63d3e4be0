package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/mailroom/mailroom/daemon/store"
	"github.com/mailroom/mailroom/daemon/store/internal/replay"
	"github.com/mailroom/mailroom/mailbox"
)

// Follow starts following the shared log after seq after (store.Shared):
// the writer goroutine reads every event written since, passes it to
// apply, and campaigns; when it wins it reads to the head, reports
// Leader, and appends from then on.
func (s *Store) Follow(after uint64, apply func(mailbox.Event) error, role func(store.Role)) {
	s.statMu.Lock()
	s.lastSeq = after
	s.statMu.Unlock()
	s.fmu.Lock()
	s.apply, s.roleFn = apply, role
	s.fmu.Unlock()
	s.wq.Expect(after + 1)
	if role != nil {
		role(s.Role())
	}
	s.wq.Control(func() {}) // wakes the writer
}

// stepDown turns a failed leader into a follower: it gives up the lock
// (if its session still lives), so another instance (or this one, later)
// takes over, and reads the log from what it last knew.
func (s *Store) stepDown() {
	if s.following {
		return
	}
	s.following, s.listening = true, false
	if s.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if _, err := s.conn.Exec(ctx, `SELECT pg_advisory_unlock($1, $2)`, int32(lockClass), lockKey(s.o.Schema)); err != nil {
			s.conn.Close(context.Background())
			s.conn = nil
		}
		cancel()
	}
	s.log.Warn("stepped down: following the shared log", "schema", s.o.Schema, "epoch", s.epoch.Load(), "seq", s.LastSeq())
	s.setRole(store.Role{Epoch: s.epoch.Load()})
}

// followStep is one turn of a follower's writer goroutine: run what is
// queued (control steps; appends are refused), read what is new, try to
// lead, then wait for a notification or the campaign interval. It returns
// true when the store is closed and done.
func (s *Store) followStep() (stop bool) {
	s.fmu.Lock()
	apply := s.apply
	s.fmu.Unlock()
	if apply == nil {
		// Follow has not been called yet: Load may still be running.
		select {
		case <-s.wq.Wake():
		case <-time.After(s.o.CampaignInterval):
		}
		return false
	}
	ctx, cancel := context.WithTimeout(s.stopCtx, 30*time.Second)
	defer cancel()
	if err := s.followOnce(ctx, apply); err != nil {
		if s.stopCtx.Err() == nil {
			s.log.Warn("following the shared log", "schema", s.o.Schema, "err", scrub(err.Error(), s.o.URL))
		}
		select {
		case <-s.stopCtx.Done():
		case <-s.wq.Wake():
		case <-time.After(s.o.CampaignInterval):
		}
	}
	return false
}

func (s *Store) followOnce(ctx context.Context, apply func(mailbox.Event) error) error {
	if s.conn == nil {
		if err := s.connect(ctx); err != nil {
			return err
		}
		s.listening = false
	}
	if !s.listening {
		if _, err := s.conn.Exec(ctx, `LISTEN `+s.channel); err != nil {
			s.dropConn()
			return s.connErr("listening for new events", err)
		}
		s.listening = true
	}
	start := time.Now()
	if err := s.tail(ctx, apply); err != nil {
		return err
	}
	s.confirm(start)
	// Campaign (and look at the leader row) every campaign interval, or
	// at once when the leader resigned; in between, a notification only
	// means "read": a follower answers a forwarded write once it has read
	// it, so reading must not wait behind two more round trips.
	if s.campaignNow || time.Since(s.lastCampaign) >= s.o.CampaignInterval {
		s.campaignNow, s.lastCampaign = false, time.Now()
		var got bool
		if err := s.conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, $2)`, int32(lockClass), lockKey(s.o.Schema)).Scan(&got); err != nil {
			s.dropConn()
			return s.connErr("campaigning", err)
		}
		if got {
			return s.lead(ctx, apply)
		}
		var r store.Role
		if err := s.conn.QueryRow(ctx, `SELECT epoch, holder, advertise FROM `+s.q+`.leader WHERE id = 1`).Scan(&r.Epoch, &r.Holder, &r.LeaderURL); err != nil {
			s.dropConn()
			return s.connErr("reading the leader row", err)
		}
		s.setRole(r)
		s.lost.Add(1)
	}
	// Wait for the leader's next batch (or a resignation), at most until
	// the next campaign; a wake (Close, a control step) waits that long
	// at worst.
	wait := max(time.Millisecond, s.o.CampaignInterval-time.Since(s.lastCampaign))
	wctx, wcancel := context.WithTimeout(s.stopCtx, wait)
	n, err := s.conn.WaitForNotification(wctx)
	wcancel()
	switch {
	case err == nil:
		if head, perr := strconv.ParseUint(n.Payload, 10, 64); perr == nil {
			if head > s.knownHead.Load() {
				s.knownHead.Store(head)
			}
		} else {
			// "resigned": the lock is free now.
			s.campaignNow = true
		}
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
	default:
		s.dropConn()
		return s.connErr("waiting for new events", err)
	}
	return nil
}

// lead runs once this follower holds the lock: it takes over (the epoch
// goes up, waiting for the old leader's last statement), reads every event
// up to the head, and only then lets appends through.
func (s *Store) lead(ctx context.Context, apply func(mailbox.Event) error) error {
	if err := s.takeOver(ctx); err != nil {
		s.dropConn()
		return err
	}
	if err := s.tail(ctx, apply); err != nil {
		s.dropConn()
		return err
	}
	if err := s.readShape(ctx); err != nil {
		s.dropConn()
		return s.connErr("reading the log's head", err)
	}
	if _, err := s.conn.Exec(ctx, `UNLISTEN *`); err != nil {
		s.dropConn()
		return s.connErr("leaving the notification channel", err)
	}
	s.listening = false
	last := s.LastSeq()
	s.wq.Resume(last + 1)
	s.following = false
	s.knownHead.Store(last)
	s.log.Info("leading the shared log", "schema", s.o.Schema, "epoch", s.epoch.Load(), "seq", last)
	s.setRole(store.Role{Leader: true, Epoch: s.epoch.Load(), Holder: s.o.Holder, LeaderURL: s.o.Advertise})
	return nil
}

// tail applies every event after the last one this instance knows, page by
// page.
func (s *Store) tail(ctx context.Context, apply func(mailbox.Event) error) error {
	for {
		after := s.LastSeq()
		n := 0
		err := s.page(ctx, s.pool, after, pageSize, func(ev mailbox.Event) error {
			if err := apply(ev); err != nil {
				return fmt.Errorf("applying event %d (%s): %w", ev.Seq, ev.Type, err)
			}
			n++
			s.statMu.Lock()
			s.lastSeq = ev.Seq
			s.statMu.Unlock()
			return nil
		})
		var gap *gapError
		if errors.As(err, &gap) {
			// A compaction removed events this instance had not read:
			// start again from the snapshot that replaced them.
			if rerr := s.reload(ctx, apply); rerr != nil {
				return fmt.Errorf("%w; reloading from the snapshot: %v", err, rerr)
			}
			continue
		}
		if err != nil {
			return err
		}
		if n < pageSize {
			if h := s.LastSeq(); h > s.knownHead.Load() {
				s.knownHead.Store(h)
			}
			return nil
		}
	}
}

func (s *Store) dropConn() {
	if s.conn != nil {
		s.conn.Close(context.Background())
		s.conn = nil
	}
	s.listening = false
}

// reload applies the newest snapshot, when it is past what this instance
// has read: a follower that fell behind a compaction starts again from it.
func (s *Store) reload(ctx context.Context, apply func(mailbox.Event) error) error {
	var seq, atMs int64
	var body []byte
	if err := s.pool.QueryRow(ctx, `SELECT seq, at_ms, body FROM `+s.q+`.snapshots ORDER BY seq DESC LIMIT 1`).Scan(&seq, &atMs, &body); err != nil {
		return s.connErr("reading the newest snapshot", err)
	}
	if uint64(seq) <= s.LastSeq() {
		return fmt.Errorf("the newest snapshot is at seq %d, not past seq %d: the log has a gap", seq, s.LastSeq())
	}
	var snap mailbox.Snapshot
	if err := replay.DecodeSnapshot(body, &snap); err != nil || snap.Seq != uint64(seq) {
		return fmt.Errorf("the snapshot at seq %d does not decode (%v)", seq, err)
	}
	s.log.Warn("this instance fell behind a compaction; reloading from the snapshot", "schema", s.o.Schema, "from_seq", s.LastSeq(), "snapshot_seq", seq)
	if err := apply(mailbox.Event{Seq: snap.Seq, AtMs: atMs, Type: mailbox.EventSnapshot, Snapshot: &snap}); err != nil {
		return err
	}
	s.statMu.Lock()
	s.lastSeq = snap.Seq
	s.snapSeq = max(s.snapSeq, snap.Seq)
	s.statMu.Unlock()
	return nil
}

// Pause stops this instance's writer goroutine until resume is called:
// no appends, no pings, no reading. It is a test hook that stands in for
// a process the operating system stopped (SIGSTOP) or starved: PostgreSQL
// ends its idle session after SessionTimeout, and the lock with it.
func (s *Store) Pause() (resume func()) {
	held := make(chan struct{})
	release := make(chan struct{})
	if !s.wq.Control(func() {
		close(held)
		<-release
	}) {
		return func() {}
	}
	<-held
	var once sync.Once
	return func() { once.Do(func() { close(release) }) }
}
