package client_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/mailbox"
)

// watcher collects a subscription's events and connection states.
type watcher struct {
	events <-chan mailbox.Event
	states chan client.ConnState
	last   uint64
}

func subscribe(t *testing.T, c *client.Client, fromSeq uint64) (*watcher, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	w := &watcher{states: make(chan client.ConnState, 1000), last: fromSeq}
	w.events = c.Subscribe(ctx, fromSeq, func(s client.ConnState) { w.states <- s })
	return w, cancel
}

// next returns the next event, failing after 20 s.
func (w *watcher) next(t *testing.T) mailbox.Event {
	t.Helper()
	select {
	case ev, ok := <-w.events:
		if !ok {
			t.Fatal("the event channel closed")
		}
		return ev
	case <-time.After(20 * time.Second):
		t.Fatalf("no event after seq %d within 20 s", w.last)
	}
	panic("unreachable")
}

// expect takes the next events and checks they are exactly seqs
// w.last+1 .. w.last+len(types), of those types.
func (w *watcher) expect(t *testing.T, types ...string) {
	t.Helper()
	for _, typ := range types {
		ev := w.next(t)
		if ev.Seq != w.last+1 || ev.Type != typ {
			t.Fatalf("got seq %d %s, want seq %d %s", ev.Seq, ev.Type, w.last+1, typ)
		}
		w.last = ev.Seq
	}
}

// snapshot takes the next event and checks it is a snapshot at seq.
func (w *watcher) snapshot(t *testing.T, seq uint64) *mailbox.Snapshot {
	t.Helper()
	ev := w.next(t)
	if ev.Type != mailbox.EventSnapshot || ev.Seq != seq || ev.Snapshot == nil || ev.Snapshot.Seq != seq {
		t.Fatalf("got seq %d %s, want a snapshot at seq %d", ev.Seq, ev.Type, seq)
	}
	w.last = seq
	return ev.Snapshot
}

// state waits for the next connection state with the given liveness.
func (w *watcher) state(t *testing.T, live bool) client.ConnState {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case s := <-w.states:
			if s.Live == live {
				return s
			}
		case <-timeout:
			t.Fatalf("no connection state with Live=%v within 20 s", live)
		}
	}
}

// TestSubscribeSnapshotThenEvents: a fresh subscription gets the whole state
// (here over r3labs' 64 KiB default) and then every event in order.
func TestSubscribeSnapshotThenEvents(t *testing.T) {
	t.Parallel()
	_, c := start(t)
	big := send(t, c, "p@x", "w@x", strings.Repeat("large ", 40000))
	send(t, c, "p@x", "w@x", "small")
	w, _ := subscribe(t, c, 0)
	if s := w.state(t, true); s.Attempt != 0 || s.Err != nil {
		t.Errorf("live state = %+v, want attempt 0 and no error", s)
	}
	snap := w.snapshot(t, 2)
	if len(snap.Tasks) != 2 || snap.Tasks[0].Task.ID != big {
		t.Fatalf("snapshot tasks = %d, first %v; want 2, first %s", len(snap.Tasks), snap.Tasks[0].Task.ID, big)
	}
	task, l := lease(t, c, "w@x")
	if err := c.PostResult(t.Context(), mailbox.Result{TaskID: task.ID, Status: mailbox.StatusOK, LeaseID: l.LeaseID}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Drain(t.Context(), "p@x"); err != nil {
		t.Fatal(err)
	}
	w.expect(t, mailbox.EventTaskLeased, mailbox.EventResultPosted, mailbox.EventResultDrained)
}

// TestSubscribeResumesAfterDrop: the connection is cut while events keep
// coming; the subscription reconnects with Last-Event-ID and delivers the
// rest, none missing, none twice, no second snapshot.
func TestSubscribeResumesAfterDrop(t *testing.T) {
	t.Parallel()
	d, c := start(t)
	w, _ := subscribe(t, c, 0)
	w.snapshot(t, 0)
	for range 3 {
		send(t, c, "p@x", "w@x", "before")
	}
	w.expect(t, mailbox.EventTaskSent, mailbox.EventTaskSent, mailbox.EventTaskSent)
	w.state(t, true)

	d.DropConnections()
	down := w.state(t, false)
	if down.Attempt != 1 || down.Err == nil || down.LastSeq != 3 {
		t.Errorf("state after the drop = %+v, want attempt 1 with an error at seq 3", down)
	}
	// The drop also closed the idle keep-alive connections of the process's
	// shared transport, and a POST on one the transport has not yet noticed
	// is dead is not retried (it may have been processed); the writes go
	// through a client with a transport of its own.
	fresh := mustClient(t, d.Addr(), client.WithHTTPClient(&http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}))
	for range 3 {
		send(t, fresh, "p@x", "w@x", "during")
	}
	w.state(t, true)
	send(t, fresh, "p@x", "w@x", "after")
	w.expect(t, mailbox.EventTaskSent, mailbox.EventTaskSent, mailbox.EventTaskSent, mailbox.EventTaskSent)
}

// TestSubscribeResumesAfterRestart: the daemon restarts on its log; the
// subscription resumes where it was, since event ids are log seqs.
func TestSubscribeResumesAfterRestart(t *testing.T) {
	t.Parallel()
	d, c := start(t)
	send(t, c, "p@x", "w@x", "one")
	w, _ := subscribe(t, c, 0)
	w.snapshot(t, 1)
	lease(t, c, "w@x")
	w.expect(t, mailbox.EventTaskLeased)

	d.Offline(func(addr string) {
		send(t, mustClient(t, addr), "p@x", "w@x", "while down")
	})
	send(t, c, "p@x", "w@x", "after")
	w.expect(t, mailbox.EventTaskSent, mailbox.EventTaskSent)
	if w.last != 4 {
		t.Errorf("last seq %d, want 4", w.last)
	}
}

// TestSubscribeAfterCompaction: events the subscriber missed were compacted
// away, so it gets a snapshot instead, then carries on.
func TestSubscribeAfterCompaction(t *testing.T) {
	t.Parallel()
	d, c := start(t)
	send(t, c, "p@x", "w@x", "one")
	w, _ := subscribe(t, c, 0)
	w.snapshot(t, 1)

	var missed string
	d.Offline(func(addr string) {
		elsewhere := mustClient(t, addr)
		missed = send(t, elsewhere, "p@x", "w@x", "missed")
		if _, err := elsewhere.Compact(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
	snap := w.snapshot(t, 2)
	if len(snap.Tasks) != 2 || snap.Tasks[1].Task.ID != missed {
		t.Fatalf("snapshot after compaction has %d tasks, want 2 ending with %s", len(snap.Tasks), missed)
	}
	send(t, c, "p@x", "w@x", "after")
	w.expect(t, mailbox.EventTaskSent)

	// A new subscription asking for a compacted position gets a snapshot too.
	w2, _ := subscribe(t, c, 1)
	w2.snapshot(t, 3)
}

// TestSubscribeWaitsForDaemon: a subscription started while the daemon is
// down reports the failed attempts and connects once it is up.
func TestSubscribeWaitsForDaemon(t *testing.T) {
	t.Parallel()
	d, c := start(t)
	d.Stop()
	w, _ := subscribe(t, c, 0)
	for attempt := 1; attempt <= 2; attempt++ {
		s := w.state(t, false)
		if s.Attempt != attempt || !errors.Is(s.Err, client.ErrUnreachable) {
			t.Fatalf("state = %+v, want attempt %d unreachable", s, attempt)
		}
	}
	d.Restart()
	w.snapshot(t, 0)
}

// TestSubscribeNoticesSilence: a stream that carries nothing, not even a
// heartbeat, for the idle timeout is abandoned and resumed.
func TestSubscribeNoticesSilence(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Options{Config: func(c *config.Config) { c.SSEHeartbeat = time.Hour }})
	c := mustClient(t, d.Addr(), client.WithStreamIdleTimeout(100*time.Millisecond))
	w, _ := subscribe(t, c, 0)
	w.snapshot(t, 0)
	w.state(t, true)
	if s := w.state(t, false); s.Err == nil || !strings.Contains(s.Err.Error(), "silent") {
		t.Errorf("state after silence = %+v, want an error saying the stream went silent", s)
	}
	w.state(t, true)
	send(t, c, "p@x", "w@x", "after the silence")
	w.expect(t, mailbox.EventTaskSent)
}

// TestSubscribeEndsWithContext: cancelling the context closes the channel.
func TestSubscribeEndsWithContext(t *testing.T) {
	t.Parallel()
	_, c := start(t)
	w, cancel := subscribe(t, c, 0)
	w.snapshot(t, 0)
	cancel()
	for {
		select {
		case _, ok := <-w.events:
			if !ok {
				return
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the channel stayed open after cancel")
		}
	}
}

// TestToken: the bearer token travels with requests and with the event
// stream, and the token's principal reaches the service.
func TestToken(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Options{Tokens: []auth.Token{{Principal: "op@x", Token: "s3cret", Caps: []string{auth.CapAdmin}}}})
	anon := mustClient(t, d.Addr())
	// Health needs no token on a daemon with tokens; the queue does.
	if _, err := anon.Queue(t.Context(), mailbox.QueueFilter{}); !errors.Is(err, mailbox.ErrUnauthorized) {
		t.Errorf("Queue without a token = %v, want unauthorized", err)
	}
	w, cancel := subscribe(t, anon, 0)
	if s := w.state(t, false); !errors.Is(s.Err, mailbox.ErrUnauthorized) {
		t.Errorf("stream without a token: state %+v, want unauthorized", s)
	}
	cancel()

	c := mustClient(t, d.Addr(), client.WithToken("s3cret"))
	w, _ = subscribe(t, c, 0)
	w.snapshot(t, 0)
	id := send(t, c, "p@x", "w@x", "work")
	_, l := lease(t, c, "w@x")
	if _, err := c.Repair(t.Context(), mailbox.RepairRequest{TaskID: id, Reason: "stuck",
		Command: mailbox.RepairCommand{Action: mailbox.ActionForceError, LeaseID: l.LeaseID, Message: "m"}}); err != nil {
		t.Fatal(err)
	}
	w.expect(t, mailbox.EventTaskSent, mailbox.EventTaskLeased)
	if ev := w.next(t); ev.Type != mailbox.EventTaskForceErrored || ev.Principal != "op@x" {
		t.Errorf("repair event %s by %q, want task_force_errored by op@x", ev.Type, ev.Principal)
	}
}

// TestSubscribeAgentsKeepsResumePoint: a subscription that asked for the
// agents listing gets it beside its events; a listing, which has no id,
// neither makes it reconnect nor moves the point it resumes from.
func TestSubscribeAgentsKeepsResumePoint(t *testing.T) {
	t.Parallel()
	d, c := start(t)
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	listings := make(chan mailbox.AgentsUpdate, 100)
	w := &watcher{states: make(chan client.ConnState, 1000)}
	w.events = c.SubscribeWith(ctx, 0, client.SubscribeOptions{
		OnState:  func(s client.ConnState) { w.states <- s },
		OnAgents: func(u mailbox.AgentsUpdate) { listings <- u },
	})
	w.snapshot(t, 0)
	w.state(t, true)

	send(t, c, "p@x", "w@x", "one")
	w.expect(t, mailbox.EventTaskSent)
	var up mailbox.AgentsUpdate
	select {
	case up = <-listings:
	case <-time.After(20 * time.Second):
		t.Fatal("no agents listing within 20 s of a send")
	}
	if up.Type != mailbox.EventAgents || len(up.Agents) != 2 || up.Agents[0].Agent != "p@x" || up.Agents[1].Agent != "w@x" || up.Agents[1].Queued != 1 {
		t.Errorf("listing = %+v, want p@x and w@x with one task queued", up)
	}
	list, err := c.Agents(t.Context())
	if err != nil || len(list) != 2 || list[1] != up.Agents[1] {
		t.Errorf("Agents = %+v, %v; want the listing's %+v", list, err, up.Agents)
	}

	send(t, c, "p@x", "w@x", "two")
	w.expect(t, mailbox.EventTaskSent)
	select {
	case s := <-w.states:
		t.Errorf("the connection changed after the listing: %+v", s)
	default:
	}

	// The resume point is still the last event: after a drop the
	// subscription resumes after seq 2, with no snapshot and no repeat.
	d.DropConnections()
	if down := w.state(t, false); down.LastSeq != 2 {
		t.Errorf("state after the drop = %+v, want the last seq 2", down)
	}
	fresh := mustClient(t, d.Addr(), client.WithHTTPClient(&http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}))
	w.state(t, true)
	send(t, fresh, "p@x", "w@x", "three")
	w.expect(t, mailbox.EventTaskSent)
}
