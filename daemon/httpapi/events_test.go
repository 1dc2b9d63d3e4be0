package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/internal/sse/ssetest"
	"github.com/mailroom/mailroom/mailbox"
)

// sseBlock is one block of an event stream as it appears on the wire.
type sseBlock struct {
	id, event, data string
	comment         bool
}

// stream reads an event stream's blocks from a raw HTTP response.
type stream struct {
	resp *http.Response
	rd   *ssetest.Reader
}

func openStream(t *testing.T, ctx context.Context, d *daemontest.Daemon, query string, header map[string]string) *stream {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", d.URL()+"/a2a/events"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 {
		t.Fatalf("GET /a2a/events = %d", resp.StatusCode)
	}
	return &stream{resp: resp, rd: ssetest.NewReader(resp.Body)}
}

func (s *stream) next(t *testing.T) sseBlock {
	t.Helper()
	b, err := s.rd.Next()
	if err != nil {
		t.Fatal(err)
	}
	return sseBlock{id: b.ID, event: b.Event, data: b.Data, comment: b.Comment}
}

// nextEvent skips heartbeats and checks that id, event and data agree.
func (s *stream) nextEvent(t *testing.T) mailbox.Event {
	t.Helper()
	for {
		b := s.next(t)
		if b.comment && b.id == "" && b.data == "" {
			continue
		}
		var ev mailbox.Event
		if err := json.Unmarshal([]byte(b.data), &ev); err != nil {
			t.Fatalf("event data %q: %v", b.data, err)
		}
		if b.id != strconv.FormatUint(ev.Seq, 10) || b.event != ev.Type {
			t.Fatalf("block id %q event %q carries seq %d type %q", b.id, b.event, ev.Seq, ev.Type)
		}
		return ev
	}
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestEventStreamWire checks the stream's headers, the snapshot first, then
// each event with id = seq and event = type, and heartbeats.
func TestEventStreamWire(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Options{Config: func(c *config.Config) { c.SSEHeartbeat = 20 * time.Millisecond }})
	first := sendTask(t, d, task("p@x", "w@x", "before"))
	s := openStream(t, testContext(t), d, "", nil)
	if ct, cc := s.resp.Header.Get("Content-Type"), s.resp.Header.Get("Cache-Control"); ct != "text/event-stream" || cc != "no-cache" {
		t.Errorf("Content-Type %q, Cache-Control %q", ct, cc)
	}
	snap := s.nextEvent(t)
	if snap.Type != mailbox.EventSnapshot || snap.Seq != 1 || snap.Snapshot == nil || len(snap.Snapshot.Tasks) != 1 || snap.Snapshot.Tasks[0].Task.ID != first {
		t.Fatalf("first event = %+v, want a snapshot at seq 1 holding %s", snap, first)
	}
	second := sendTask(t, d, task("p@x", "w@x", "after\nwith a newline"))
	leaseTask(t, d, "w@x")
	want := []struct {
		seq uint64
		typ string
	}{{2, mailbox.EventTaskSent}, {3, mailbox.EventTaskLeased}}
	for _, w := range want {
		ev := s.nextEvent(t)
		if ev.Seq != w.seq || ev.Type != w.typ {
			t.Fatalf("event = seq %d %s, want seq %d %s", ev.Seq, ev.Type, w.seq, w.typ)
		}
		if w.typ == mailbox.EventTaskSent && (ev.Task == nil || ev.Task.ID != second) {
			t.Errorf("task_sent carries %+v, want %s", ev.Task, second)
		}
	}
	for !s.next(t).comment {
	}
}

// TestEventStreamResume checks that Last-Event-ID (or ?last_event_id=)
// resumes right after the given seq, replayed from the log.
func TestEventStreamResume(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Options{})
	for i := range 5 {
		sendTask(t, d, task("p@x", "w@x", fmt.Sprint("t", i)))
	}
	tests := []struct {
		name   string
		query  string
		header map[string]string
		first  uint64
	}{
		{"header", "", map[string]string{"Last-Event-ID": "2"}, 3},
		{"query", "?last_event_id=4", nil, 5},
		{"header wins", "?last_event_id=1", map[string]string{"Last-Event-ID": "3"}, 4},
		{"zero", "", map[string]string{"Last-Event-ID": "0"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openStream(t, testContext(t), d, tt.query, tt.header)
			for seq := tt.first; seq <= 5; seq++ {
				if ev := s.nextEvent(t); ev.Seq != seq || ev.Type != mailbox.EventTaskSent {
					t.Fatalf("event = seq %d %s, want seq %d task_sent", ev.Seq, ev.Type, seq)
				}
			}
		})
	}
}

// TestStalledSubscriberDoesNotHoldOthers connects a subscriber that sends
// its request and never reads, with a tiny socket buffer, then sends more
// than every buffer holds. A second subscriber must still get every event
// in order, and the stalled one must be cut off.
func TestStalledSubscriberDoesNotHoldOthers(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Options{Config: func(c *config.Config) {
		c.SSEBuffer = 8
		c.SSEWriteTimeout = time.Second
	}})
	ctx := testContext(t)

	conn, err := net.Dial("tcp", d.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.(*net.TCPConn).SetReadBuffer(4096); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "GET /a2a/events HTTP/1.1\r\nHost: %s\r\n\r\n", d.Addr())
	waitFor(t, "the stalled subscriber to register", func() bool { return d.Metric(t, "mailroom_sse_subscribers") == 1 })

	c, err := client.New(d.Addr())
	if err != nil {
		t.Fatal(err)
	}
	events := c.Subscribe(ctx, 0, nil)
	snap := <-events
	if snap.Type != mailbox.EventSnapshot {
		t.Fatalf("first event %s, want a snapshot", snap.Type)
	}

	// 64 events of 200 KB: far more than the stalled socket's buffers and
	// its 8-event subscriber buffer.
	const n, workers = 64, 4
	intent := strings.Repeat("x", 200<<10)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				if _, err := c.Send(ctx, task("p@x", "w@x", intent)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	seen := map[string]bool{}
	last := snap.Seq
	for range n {
		select {
		case ev := <-events:
			if ev.Seq != last+1 || ev.Type != mailbox.EventTaskSent {
				t.Fatalf("got seq %d %s after %d, want seq %d task_sent", ev.Seq, ev.Type, last, last+1)
			}
			seen[ev.Task.ID] = true
			last = ev.Seq
		case <-ctx.Done():
			t.Fatalf("after seq %d: %v", last, ctx.Err())
		}
	}
	wg.Wait()
	if len(seen) != n {
		t.Errorf("saw %d distinct tasks, want %d", len(seen), n)
	}
	waitFor(t, "the stalled subscriber to be cut off", func() bool { return d.Metric(t, "mailroom_sse_subscribers") == 1 })
	t.Logf("subscribers cut for falling behind: %g", d.Metric(t, "mailroom_sse_subscribers_cut_total"))
}

// waitFor polls cond until it holds or 20 s pass. Only for facts no event
// announces (a server-side registration or disconnect).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
