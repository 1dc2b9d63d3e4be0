package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mailroom/mailroom/daemon/store/internal/replay"
	"github.com/mailroom/mailroom/daemon/store/pgstore"
	"github.com/mailroom/mailroom/daemon/store/pgstore/pgtest"
	"github.com/mailroom/mailroom/daemon/store/storetest"
	"github.com/mailroom/mailroom/mailbox"
)

// appendOne appends ev and waits for its done.
func appendOne(t *testing.T, s *pgstore.Store, ev mailbox.Event) error {
	t.Helper()
	done := make(chan error, 1)
	s.AppendUnit([]mailbox.Event{ev}, func(err error) { done <- err })
	select {
	case err := <-done:
		return err
	case <-time.After(60 * time.Second):
		t.Fatalf("no done for seq %d after 60s", ev.Seq)
		return nil
	}
}

// query returns one int64 from sql.
func query(t *testing.T, url, sql string, args ...any) int64 {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int64
	if err := conn.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// killWriter ends the writer session of the instance holder leads with, as
// a crash of its connection (or idle_session_timeout) would.
func killWriter(t *testing.T, url, holder string) {
	t.Helper()
	n := query(t, url, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
	   WHERE application_name LIKE 'mailroom-writer:%:' || $1`, holder)
	if n != 1 {
		t.Fatalf("terminated %d writer sessions of %s, want 1", n, holder)
	}
}

// waitFor polls cond, a condition the test cannot be told of, until it
// holds; it fails the test after 30 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30s for %s", what)
		}
	}
}

func TestASecondInstanceWaitsThenTakesOverWithTheNextEpoch(t *testing.T) {
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url, t.Name())
	w := storetest.NewWorkload(1)
	a := follow(t, pgstore.Options{URL: url, Schema: schema, Holder: "a", Advertise: "http://a:7717"})
	defer a.Close()
	waitLead(t, a)
	storetest.AppendAll(t, a, w.Events(t, 20)...)

	b := follow(t, pgstore.Options{URL: url, Schema: schema, Holder: "b"})
	defer b.Close()
	if r := b.Role(); r.Holder+" "+r.LeaderURL != "a http://a:7717" {
		t.Errorf("b waits for %q, want a http://a:7717", r.Holder+" "+r.LeaderURL)
	}
	// b campaigns every CampaignInterval; once it has lost three, it has
	// tried and been refused.
	waitFor(t, "b to lose three campaigns", func() bool { return b.LostCampaigns() >= 3 })
	if b.Role().Leader {
		t.Fatal("b leads while a leads")
	}
	a.Close()
	waitLead(t, b)
	if a.Epoch()+1 != b.Epoch() {
		t.Errorf("epochs a %d, b %d: want b = a+1", a.Epoch(), b.Epoch())
	}
	st, _ := storetest.LoadState(t, b)
	storetest.SameState(t, st, w.State)
	storetest.AppendAll(t, b, w.Events(t, 5)...)
	if got := query(t, url, `SELECT count(*) FROM `+schema+`.events WHERE epoch = $1`, b.Epoch()); got != 5 {
		t.Errorf("%d events carry b's epoch, want 5", got)
	}
}

func TestAFencedLeaderWritesNothing(t *testing.T) {
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url, t.Name())
	w := storetest.NewWorkload(2)
	a := follow(t, pgstore.Options{URL: url, Schema: schema, Holder: "fenced-a"})
	defer a.Close()
	waitLead(t, a)
	storetest.AppendAll(t, a, w.Events(t, 10)...)

	// a is paused and its session ends (a pause past idle_session_timeout
	// looks the same to PostgreSQL); b takes over and writes.
	resume := a.Pause()
	defer resume()
	killWriter(t, url, "fenced-a")
	b := openLeading(t, url, schema)
	defer b.Close()
	wb := storetest.NewWorkload(2)
	_ = wb.Events(t, 10) // the same first ten, so b's state matches the table
	storetest.LoadState(t, b)
	storetest.AppendAll(t, b, wb.Events(t, 3)...)

	// a still thinks it leads at seq 10: its append is settled from the
	// table (not written) and refused, and it stays refused.
	resume()
	err := appendOne(t, a, w.Next(t))
	if err == nil {
		t.Fatal("a fenced leader's append succeeded")
	}
	if err := a.Reset(); !errors.Is(err, pgstore.ErrNotLeader) {
		t.Errorf("Reset of the fenced leader: %v, want ErrNotLeader", err)
	}
	if got := query(t, url, `SELECT count(*) FROM `+schema+`.events WHERE epoch = $1 AND seq > 10`, a.Epoch()); got != 0 {
		t.Errorf("%d rows of the fenced epoch after the takeover", got)
	}
	if got := query(t, url, `SELECT max(seq) FROM `+schema+`.events`); got != 13 {
		t.Errorf("head %d, want 13", got)
	}
}

// A leader whose session was lost steps down, refusing appends, and
// takes the lead back by winning a campaign.
func TestALostSessionIsTakenBack(t *testing.T) {
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url, t.Name())
	w := storetest.NewWorkload(3)
	s := follow(t, pgstore.Options{URL: url, Schema: schema, Holder: "lost"})
	defer s.Close()
	waitLead(t, s)
	storetest.AppendAll(t, s, w.Events(t, 10)...)
	epoch := s.Epoch()
	killWriter(t, url, "lost")

	// The append in flight when the session broke is settled from the
	// table: either it was written and done says nil, or it was not and
	// done says why; the table and done agree.
	ev := w.Next(t)
	err := appendOne(t, s, ev)
	in := query(t, url, `SELECT count(*) FROM `+schema+`.events WHERE seq = 11`)
	if (err == nil) != (in == 1) {
		t.Fatalf("done(%v) but the table holds %d rows of seq 11", err, in)
	}
	if err != nil {
		appendAgain(t, s, ev)
	}
	if s.Epoch() <= epoch {
		t.Errorf("epoch %d after taking the lease back, want more than %d", s.Epoch(), epoch)
	}
	storetest.AppendAll(t, s, w.Events(t, 5)...)
	s.Close()
	s2 := openLeading(t, url, schema)
	defer s2.Close()
	st, _ := storetest.LoadState(t, s2)
	storetest.SameState(t, st, w.State)
}

func TestAnIdleLeaderKeepsItsSession(t *testing.T) {
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url, t.Name())
	w := storetest.NewWorkload(4)
	s := follow(t, pgstore.Options{URL: url, Schema: schema, Holder: "idle", SessionTimeout: time.Second})
	defer s.Close()
	waitLead(t, s)
	storetest.AppendAll(t, s, w.Events(t, 3)...)
	epoch := s.Epoch()
	// Three idle_session_timeouts with nothing to write: the writer's
	// pings keep the session, the lock and the epoch.
	time.Sleep(3 * time.Second)
	storetest.AppendAll(t, s, w.Events(t, 3)...)
	if s.Epoch() != epoch || s.Stats().WriteErrors != 0 {
		t.Errorf("after idling: epoch %d (was %d), write errors %d", s.Epoch(), epoch, s.Stats().WriteErrors)
	}
}

func TestASchemaNewerThanTheBinaryIsRefused(t *testing.T) {
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url, t.Name())
	s := openLeading(t, url, schema)
	s.Close()
	pgtest.Exec(t, url, `UPDATE `+schema+`.schema_version SET version = $1`, pgstore.SchemaVersion+1)
	_, err := pgstore.Open(context.Background(), pgstore.Options{URL: url, Schema: schema})
	want := fmt.Sprintf("schema %s is at version %d, newer than this binary's %d", schema, pgstore.SchemaVersion+1, pgstore.SchemaVersion)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Open on a newer schema: %v, want it to say %q", err, want)
	}
}

func TestBadOptionsNameTheSettingAndHideThePassword(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cases := []struct {
		o        pgstore.Options
		want     string
		password string
	}{
		{pgstore.Options{URL: "postgres://u:hunter2@127.0.0.1:1/test?connect_timeout=2"}, "connecting", "hunter2"},
		{pgstore.Options{URL: "postgres://u:hunter2@127.0.0.1:5432/test?sslmode=bogus"}, "postgres_url: got postgres://u:xxxxx@127.0.0.1:5432/test?sslmode=bogus", "hunter2"},
		{pgstore.Options{URL: "host=127.0.0.1 password=s3cret sslmode=bogus"}, "postgres_url: got host=127.0.0.1 password=xxxxx", "s3cret"},
		{pgstore.Options{URL: "postgres://127.0.0.1/test", Schema: "Mail-Room"}, `postgres_schema: got "Mail-Room", expected a lowercase identifier`, ""},
		{pgstore.Options{URL: "postgres://127.0.0.1/test", SessionTimeout: 100 * time.Millisecond}, "postgres_session_timeout: got 100ms, expected at least 1s", ""},
	}
	for _, c := range cases {
		_, err := pgstore.Open(ctx, c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Open(%s): %v, want it to say %q", pgstore.Redact(c.o.URL), err, c.want)
			continue
		}
		if c.password != "" && strings.Contains(err.Error(), c.password) {
			t.Errorf("Open(%s): the error shows the password: %v", pgstore.Redact(c.o.URL), err)
		}
	}
}

func TestTheEpochFencesEveryStatement(t *testing.T) {
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url, t.Name())
	w := storetest.NewWorkload(5)
	// It campaigns once, at once, and not again within the test: the
	// takeover below is another instance's, which holds the lead after.
	s := follow(t, pgstore.Options{URL: url, Schema: schema, CampaignInterval: time.Hour})
	defer s.Close()
	waitLead(t, s)
	storetest.AppendAll(t, s, w.Events(t, 4)...)
	// A takeover this instance did not see (its session and lock are
	// alive): the fence in the statement alone must stop the append and
	// the snapshot.
	pgtest.Exec(t, url, `UPDATE `+schema+`.leader SET epoch = epoch + 1`)
	err := appendOne(t, s, w.Next(t))
	if !errors.Is(err, pgstore.ErrNotLeader) {
		t.Fatalf("append after a takeover: %v, want ErrNotLeader", err)
	}
	if got := query(t, url, `SELECT count(*) FROM `+schema+`.events`); got != 4 {
		t.Errorf("%d events in the table, want the 4 written before the takeover", got)
	}
	if err := s.Reset(); !errors.Is(err, pgstore.ErrNotLeader) {
		t.Errorf("Reset: %v, want ErrNotLeader", err)
	}
	if _, err := s.Compact(func() *mailbox.Snapshot { return w.State.Snapshot(0) }); err == nil {
		t.Error("Compact succeeded after a takeover")
	}
	if got := query(t, url, `SELECT count(*) FROM `+schema+`.snapshots`); got != 0 {
		t.Errorf("%d snapshots written by a fenced instance", got)
	}
}

// A takeover waits for the old leader's statement in flight (it holds the
// leader row FOR SHARE) and then sees what it wrote: the new leader
// continues after it, not over it.
func TestATakeoverWaitsForTheOldLeadersBatchInFlight(t *testing.T) {
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url, t.Name())
	w := storetest.NewWorkload(6)
	a := follow(t, pgstore.Options{URL: url, Schema: schema, Holder: "inflight-a"})
	defer a.Close()
	waitLead(t, a)
	storetest.AppendAll(t, a, w.Events(t, 4)...)
	// a is paused from here: its session ends under it.
	resume := a.Pause()
	defer resume()

	// The old leader's next batch, in flight: fenced in, written, not yet
	// committed.
	ctx := context.Background()
	tx, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close(ctx)
	ev := w.Next(t)
	body, err := replay.Body(ev)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `BEGIN`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT epoch FROM `+schema+`.leader WHERE id = 1 AND epoch = $1 FOR SHARE`, a.Epoch()); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO `+schema+`.events (seq, epoch, at_ms, type, body) VALUES (5, $1, $2, $3, $4)`, a.Epoch(), ev.AtMs, ev.Type, body); err != nil {
		t.Fatal(err)
	}
	killWriter(t, url, "inflight-a")

	b := follow(t, pgstore.Options{URL: url, Schema: schema, Holder: "inflight-b"})
	defer b.Close()
	// b won the lock and now waits, in its takeover, on the row the old
	// term's batch holds.
	waitFor(t, "b's takeover to wait on the old term's batch", func() bool {
		return query(t, url, `SELECT count(*) FROM pg_stat_activity
		   WHERE application_name LIKE 'mailroom-writer:%:' || $1 AND wait_event_type = 'Lock'`, "inflight-b") == 1
	})
	if b.Role().Leader {
		t.Fatal("the takeover finished while the old term's batch was in flight")
	}
	if _, err := tx.Exec(ctx, `COMMIT`); err != nil {
		t.Fatal(err)
	}
	waitLead(t, b)
	if got := b.LastSeq(); got != 5 {
		t.Fatalf("the new leader starts after seq %d, want 5 (the batch that was in flight)", got)
	}
	st, _ := storetest.LoadState(t, b)
	storetest.SameState(t, st, w.State)
	storetest.AppendAll(t, b, w.Events(t, 2)...)
}
