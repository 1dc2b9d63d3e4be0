package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/daemon/httpapi"
	"github.com/mailroom/mailroom/daemon/store/pgstore/pgtest"
	"github.com/mailroom/mailroom/internal/sse/ssetest"
	"github.com/mailroom/mailroom/internal/testlog"
	"github.com/mailroom/mailroom/mailbox"
)

// health reads an instance's /healthz.
func health(t *testing.T, base string) httpapi.HealthResponse {
	t.Helper()
	resp, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h httpapi.HealthResponse
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	return h
}

// waitRole waits until the instance at base reports role.
func waitRole(t *testing.T, base, role string) httpapi.HealthResponse {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		h := health(t, base)
		if h.Store != nil && h.Store.Role == role {
			return h
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never became %s: %+v", base, role, h.Store)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestTwoInstancesShareOnePostgresMailbox runs two daemons on one schema:
// the second follows, serves reads, forwards writes to the leader and
// answers them only once it has applied them; when the leader stops, the
// follower leads with every lease as it was.
func TestTwoInstancesShareOnePostgresMailbox(t *testing.T) {
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url, t.Name())
	onPG := func(c *config.Config) {
		c.Store, c.PostgresURL, c.PostgresSchema = config.StorePostgres, url, schema
		c.PostgresCampaignInterval = 20 * time.Millisecond
	}
	logs := &testlog.Buffer{}
	a := daemontest.Start(t, daemontest.Options{Config: onPG, Logger: logs.Logger()})
	ha := waitRole(t, a.URL(), "leader")
	if ha.Store.Self != a.URL() || ha.Store.LeaderURL != a.URL() {
		t.Errorf("a's health: %+v, want it to lead at %s", ha.Store, a.URL())
	}
	if !strings.Contains(logs.String(), "mailbox store: PostgreSQL") || !strings.Contains(logs.String(), "schema="+schema) {
		t.Errorf("the daemon did not log which store it runs on:\n%s", logs.String())
	}
	b := daemontest.Start(t, daemontest.Options{Config: onPG})
	hb := waitRole(t, b.URL(), "follower")
	if hb.Store.LeaderURL != a.URL() {
		t.Errorf("b's health names the leader %q, want %s", hb.Store.LeaderURL, a.URL())
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cb, err := client.New(b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	// A write through the follower reaches the leader, and a read from
	// the follower right after sees it.
	q, err := cb.Send(ctx, mailbox.Task{Sender: "planner@pg", Recipient: "worker@pg", IntentText: "through b"})
	if err != nil {
		t.Fatalf("send through the follower: %v", err)
	}
	view, err := cb.Queue(ctx, mailbox.QueueFilter{})
	if err != nil || len(view.Tasks) != 1 || view.Tasks[0].Task.ID != q.TaskID {
		t.Fatalf("the follower's queue right after its forwarded send: %+v, %v", view.Tasks, err)
	}
	// A lease by GET takes the task too: it goes to the leader.
	q2, err := cb.Send(ctx, mailbox.Task{Sender: "planner@pg", Recipient: "other@pg", IntentText: "by GET"})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(b.URL() + "/a2a/tasks/next?recipient=other@pg")
	if err != nil {
		t.Fatal(err)
	}
	var got mailbox.TaskOptResponse
	err = json.NewDecoder(resp.Body).Decode(&got)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || got.Task == nil || got.Task.ID != q2.TaskID {
		t.Fatalf("GET /a2a/tasks/next through the follower: %s, %+v, %v", resp.Status, got, err)
	}
	if rec := findTask(a.State(t), q2.TaskID); rec == nil || rec.State != mailbox.TaskInFlight {
		t.Fatalf("the leader holds %+v after a GET lease through the follower, want in flight", rec)
	}
	task, lease, err := cb.Lease(ctx, "worker@pg")
	if err != nil || task == nil || task.ID != q.TaskID {
		t.Fatalf("lease through the follower = %v, %v, %v", task, lease, err)
	}
	if got := findTask(a.State(t), q.TaskID); got == nil || got.LeaseID != lease.LeaseID {
		t.Fatalf("the leader holds %+v, want the lease taken through the follower", got)
	}

	// The leader goes; the follower takes over with the lease as it was.
	a.Stop()
	waitRole(t, b.URL(), "leader")
	if got := findTask(b.State(t), q.TaskID); got == nil || got.State != mailbox.TaskInFlight || got.LeaseID != lease.LeaseID {
		t.Fatalf("after the takeover the task is %+v, want in flight under lease %s", got, lease.LeaseID)
	}
	if err := cb.PostResult(ctx, mailbox.Result{TaskID: q.TaskID, LeaseID: lease.LeaseID, Status: mailbox.StatusOK, Content: []mailbox.Content{}}); err != nil {
		t.Fatalf("posting the result to the new leader: %v", err)
	}
	r, err := cb.Drain(ctx, "planner@pg")
	if err != nil || r == nil || r.TaskID != q.TaskID {
		t.Fatalf("Drain from the new leader = %v, %v", r, err)
	}

	// a comes back as a follower of b, with everything b wrote.
	a.Restart()
	h := waitRole(t, a.URL(), "follower")
	if h.Store.LeaderURL != b.URL() {
		t.Errorf("a follows %q, want %s", h.Store.LeaderURL, b.URL())
	}
	deadline := time.Now().Add(30 * time.Second)
	for health(t, a.URL()).LastSeq < health(t, b.URL()).LastSeq {
		if time.Now().After(deadline) {
			t.Fatal("a never caught up with b")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := findTask(a.State(t), q.TaskID); got == nil || got.State != mailbox.TaskDone {
		t.Errorf("a sees the task as %+v, want done", got)
	}
}

func findTask(snap *mailbox.Snapshot, id string) *mailbox.TaskRecord {
	for i := range snap.Tasks {
		if snap.Tasks[i].Task.ID == id {
			return &snap.Tasks[i]
		}
	}
	return nil
}

// TestAStreamResumesFromAnIdAnotherInstanceGaveOut: a console that moves
// from an instance that is ahead to one that is behind gives an id the
// second has not reached yet; it waits for it and continues, with no
// snapshot and no gap.
func TestAStreamResumesFromAnIdAnotherInstanceGaveOut(t *testing.T) {
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url, t.Name())
	onPG := func(c *config.Config) {
		c.Store, c.PostgresURL, c.PostgresSchema = config.StorePostgres, url, schema
		c.PostgresCampaignInterval = 20 * time.Millisecond
	}
	a := daemontest.Start(t, daemontest.Options{Config: onPG})
	waitRole(t, a.URL(), "leader")
	b := daemontest.Start(t, daemontest.Options{Config: onPG})
	waitRole(t, b.URL(), "follower")
	head := health(t, a.URL()).LastSeq

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// The id is 3 past what anyone has written: b holds the stream open
	// until the events arrive.
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.URL()+"/a2a/events", nil)
	req.Header.Set("Last-Event-ID", strconv.FormatUint(head+3, 10))
	type opened struct {
		resp *http.Response
		err  error
	}
	got := make(chan opened, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		got <- opened{resp, err}
	}()
	ca, err := client.New(a.Addr())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		if _, err := ca.Send(ctx, mailbox.Task{Sender: "planner@pg", Recipient: "worker@pg", IntentText: fmt.Sprint("n", i)}); err != nil {
			t.Fatal(err)
		}
	}
	o := <-got
	if o.err != nil {
		t.Fatal(o.err)
	}
	defer o.resp.Body.Close()
	rd := ssetest.NewReader(o.resp.Body)
	var ids []uint64
	for len(ids) < 3 {
		b, err := rd.NextEvent()
		if err != nil {
			break
		}
		if b.Event == "snapshot" {
			t.Fatal("the stream began with a snapshot instead of waiting for the id")
		}
		if b.ID != "" {
			n, _ := strconv.ParseUint(b.ID, 10, 64)
			ids = append(ids, n)
		}
	}
	if want := []uint64{head + 4, head + 5, head + 6}; fmt.Sprint(ids) != fmt.Sprint(want) {
		t.Errorf("the resumed stream's ids are %v, want %v", ids, want)
	}
}

// Only the instance that leads scans for stale leases: a follower's
// scheduler lets its ticks pass.
func TestOnlyTheLeaderScansForStaleLeases(t *testing.T) {
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url, t.Name())
	ticksA, ticksB := make(chan time.Time), make(chan time.Time)
	onPG := func(c *config.Config) {
		c.Store, c.PostgresURL, c.PostgresSchema = config.StorePostgres, url, schema
		c.PostgresCampaignInterval = 20 * time.Millisecond
		c.RetryStaleInterval, c.RetryStaleMinLeaseAge = time.Minute, time.Millisecond
	}
	a := daemontest.Start(t, daemontest.Options{Config: onPG, RetryStaleTicks: ticksA})
	waitRole(t, a.URL(), "leader")
	bLogs := &testlog.Buffer{}
	b := daemontest.Start(t, daemontest.Options{Config: onPG, RetryStaleTicks: ticksB, Logger: bLogs.Logger()})
	waitRole(t, b.URL(), "follower")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ca, err := client.New(a.Addr())
	if err != nil {
		t.Fatal(err)
	}
	q, err := ca.Send(ctx, mailbox.Task{Sender: "planner@pg", Recipient: "worker@pg", IntentText: "reindex",
		Idempotency: &mailbox.Idempotency{DuplicateSafety: mailbox.DuplicateIdempotent, Key: "reindex-1"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ca.Lease(ctx, "worker@pg"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond) // older than the 1 ms the scan asks for
	// A tick is taken only when the scheduler waits for it, so the second
	// one proves the first scan is over.
	ticksB <- time.Now()
	ticksB <- time.Now()
	if got := findTask(a.State(t), q.TaskID); got == nil || got.State != mailbox.TaskInFlight {
		t.Fatalf("after the follower's scans the task is %+v, want still in flight", got)
	}
	if strings.Contains(bLogs.String(), "retry-stale scan") {
		t.Errorf("the follower scanned:\n%s", bLogs.String())
	}
	ticksA <- time.Now()
	ticksA <- time.Now()
	if got := findTask(a.State(t), q.TaskID); got == nil || got.State != mailbox.TaskQueued {
		t.Fatalf("after the leader's scan the task is %+v, want requeued", got)
	}
}

// The A2A edge of a follower: registering, the card, and a message all
// reach the leader (reading a finished task there marks its result
// delivered, a write), and the follower answers once it has the task.
func TestTheA2AEdgeThroughAFollower(t *testing.T) {
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url, t.Name())
	onPG := func(c *config.Config) {
		c.Store, c.PostgresURL, c.PostgresSchema = config.StorePostgres, url, schema
		c.PostgresCampaignInterval = 20 * time.Millisecond
	}
	a := daemontest.Start(t, daemontest.Options{Config: onPG})
	waitRole(t, a.URL(), "leader")
	b := daemontest.Start(t, daemontest.Options{Config: onPG})
	waitRole(t, b.URL(), "follower")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cb, err := client.New(b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cb.RegisterAgent(ctx, "coder@pg", mailbox.AgentCard{Name: "Coder"}); err != nil {
		t.Fatalf("registering through the follower: %v", err)
	}
	resp, err := http.Get(b.URL() + "/agents/coder@pg/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	var card struct{ Name string }
	err = json.NewDecoder(resp.Body).Decode(&card)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || card.Name != "Coder" {
		t.Fatalf("the card through the follower: %s, %+v, %v", resp.Status, card, err)
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"m1","parts":[{"kind":"text","text":"fix it"}]},"configuration":{"blocking":false}}}`
	resp, err = http.Post(b.URL()+"/agents/coder@pg/", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var rpc struct {
		Result struct{ ID string }
		Error  any
	}
	err = json.NewDecoder(resp.Body).Decode(&rpc)
	resp.Body.Close()
	if err != nil || rpc.Error != nil || rpc.Result.ID == "" {
		t.Fatalf("message/send through the follower: %+v, %v", rpc, err)
	}
	if rec := findTask(b.State(t), rpc.Result.ID); rec == nil || rec.Task.Recipient != "coder@pg" {
		t.Fatalf("the follower does not hold the task it answered for: %+v", rec)
	}
}
