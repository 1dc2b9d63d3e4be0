package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/internal/golden"
	"github.com/mailroom/mailroom/internal/sse/ssetest"
	"github.com/mailroom/mailroom/mailbox"
)

var update = flag.Bool("update", false, "rewrite testdata/sse.v*.golden from what the daemon streams")

// goldenStreams pairs the log store's frozen data dirs with the stream a
// daemon on each must send (see the log store's testdata/README.md). v1 is
// a snapshot at seq 13 and a segment holding every event type of its day;
// v2 adds the agent registry, task_canceled and A2A tasks; v3 a batch of
// tasks and one of results, each one unit; v4 tasks sent through
// Covenant's dialect, with their public keys; v5 conversations: questions
// (input_required, auth_required), task_replied, a rejected result, tasks
// waiting on their sender in the snapshot and at the end, and limits with
// max_turns; v6 a remote agent's registration and remote_accepted; v7
// push configs and the outbox (in the snapshot too) and every push event;
// v8 a native sender's webhook (card.webhook) and its notification; v9 a
// dead agent's queued tasks moved (task_moved) and canceled
// (task_withdrawn); v10 a dead sender's question and an undrained result
// handed to other senders (task_handed_over).
// maxTurns and maxTurnsBytes are the conversation bounds the
// log ends with (zero: the defaults, as v1 to v4 record none).
var goldenStreams = []struct {
	dataDir, golden         string
	maxTurns, maxTurnsBytes int
}{
	{"../store/logstore/testdata/v1/datadir", "testdata/sse.v1.golden", 0, 0},
	{"../store/logstore/testdata/v2/datadir", "testdata/sse.v2.golden", 0, 0},
	{"../store/logstore/testdata/v3/datadir", "testdata/sse.v3.golden", 0, 0},
	{"../store/logstore/testdata/v4/datadir", "testdata/sse.v4.golden", 0, 0},
	{"../store/logstore/testdata/v5/datadir", "testdata/sse.v5.golden", 8, 65536},
	{"../store/logstore/testdata/v6/datadir", "testdata/sse.v6.golden", 8, 65536},
	{"../store/logstore/testdata/v7/datadir", "testdata/sse.v7.golden", 8, 65536},
	{"../store/logstore/testdata/v8/datadir", "testdata/sse.v8.golden", 8, 65536},
	{"../store/logstore/testdata/v9/datadir", "testdata/sse.v9.golden", 8, 65536},
	{"../store/logstore/testdata/v10/datadir", "testdata/sse.v10.golden", 8, 65536},
}

// TestGoldenEventStream freezes the SSE wire: a daemon on a copy of each
// golden data dir streams, byte for byte, what its golden file holds:
// every event after the snapshot replayed from the log, then a stream from
// id 0, which the compacted log answers with a snapshot of the whole state.
// The daemon is the real one (daemontest: config, daemon.Open, Run).
// Heartbeats are comments and are left out; the snapshot's at_ms is the
// daemon's clock, fixed here.
func TestGoldenEventStream(t *testing.T) {
	for _, g := range goldenStreams {
		t.Run(filepath.Base(g.golden), func(t *testing.T) { checkGoldenStream(t, g.dataDir, g.golden, g.maxTurns, g.maxTurnsBytes) })
	}
}

func checkGoldenStream(t *testing.T, dataDir, path string, maxTurns, maxTurnsBytes int) {
	dir := t.TempDir()
	snapSeq, lastSeq := copyGoldenDataDir(t, dataDir, dir)
	d := daemontest.Start(t, daemontest.Options{
		Dir: dir,
		Now: func() time.Time { return time.UnixMilli(1735693200000) }, // 2025-01-01T01:00:00Z
		Config: func(c *config.Config) {
			// The limits the golden log ends with, so the daemon appends
			// no limits_set on start.
			c.RetainDone, c.ResultCacheMax, c.ResultCacheAge, c.AuditMax = 200, 100, 2*time.Hour, 50
			if maxTurns != 0 {
				c.MaxTurns, c.MaxTurnsBytes = maxTurns, int64(maxTurnsBytes)
			}
			c.SSEHeartbeat = time.Hour
		},
	})
	if got := d.State(t).Seq; got != lastSeq {
		t.Fatalf("the daemon is at seq %d after starting on the golden log, which ends at %d: it appended something on start (limits_set, when its limits differ from the log's)", got, lastSeq)
	}

	var got bytes.Buffer
	readGoldenStream(t, d, snapSeq, lastSeq, &got)
	readGoldenStream(t, d, 0, lastSeq, &got)

	if d := compareRedacted(t, path, got.Bytes()); d != "" {
		t.Errorf("the event stream is no longer what %s holds (its secrets redacted):\n%s\nConsoles and scripts read this wire. If the change is meant, add the new stream as a new golden file beside the old one and say what changed.", path, d)
	}
}

// compareRedacted compares a stream with the golden file at path, the
// file's events redacted as the daemon redacts them on the way out. A
// golden file holds the events as the log encodes them, secrets and all
// (the log keeps them); the stream shows every push config's and
// webhook's secret as mailbox.RedactedSecret. So the golden files do not
// depend on the redaction: v7 and v8 hold tokens, and a file written by
// -update before the redaction existed compares the same. -update writes
// only a file that differs, or is missing.
func compareRedacted(t *testing.T, path string, got []byte) string {
	t.Helper()
	want, err := os.ReadFile(path)
	if err != nil && !(*update && os.IsNotExist(err)) {
		t.Fatalf("%v (run with -update to write it, then read it)", err)
	}
	d := golden.Diff(got, redactedStream(t, want))
	if *update && (d != "" || err != nil) {
		return golden.Compare(t, path, got, true)
	}
	return d
}

// redactedStream is stream with each event that carries a secret encoded
// again redacted (mailbox.Event.Redacted), every other byte as it is.
func redactedStream(t *testing.T, stream []byte) []byte {
	t.Helper()
	lines := bytes.Split(stream, []byte("\n"))
	for i, l := range lines {
		data, ok := bytes.CutPrefix(l, []byte("data: "))
		if !ok {
			continue
		}
		var ev mailbox.Event
		if err := json.Unmarshal(data, &ev); err != nil {
			t.Fatalf("a golden event that does not decode: %v: %.200s", err, data)
		}
		if !ev.HasSecret() {
			continue
		}
		b, err := json.Marshal(ev.Redacted())
		if err != nil {
			t.Fatal(err)
		}
		lines[i] = append([]byte("data: "), b...)
	}
	return bytes.Join(lines, []byte("\n"))
}

// copyGoldenDataDir copies the golden data dir's segments and snapshot into
// dst (the daemon may tidy its data dir; the checked-in one must never
// change) and returns the snapshot's seq and the log's last seq.
func copyGoldenDataDir(t *testing.T, src, dst string) (snapSeq, lastSeq uint64) {
	t.Helper()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := e.Name()
		data, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
		seqIn := func(prefix, suffix string) uint64 {
			n, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(name, prefix), suffix), 10, 64)
			if err != nil {
				t.Fatalf("%s: not a golden file name: %v", name, err)
			}
			return n
		}
		switch {
		case strings.HasPrefix(name, "snapshot-"):
			snapSeq = seqIn("snapshot-", ".json")
		case strings.HasPrefix(name, "log-"):
			start := seqIn("log-", ".jsonl")
			lastSeq = max(lastSeq, start+uint64(bytes.Count(data, []byte("\n")))-1)
		}
	}
	if snapSeq == 0 || lastSeq <= snapSeq {
		t.Fatalf("%s holds a snapshot at seq %d and events up to %d; want a snapshot followed by events", src, snapSeq, lastSeq)
	}
	return snapSeq, lastSeq
}

// readGoldenStream reads GET /a2a/events?last_event_id=after up to the
// event with id last and appends its events to out as they came over the
// wire, after a comment line naming the request. Comment lines (heartbeats)
// are left out.
func readGoldenStream(t *testing.T, d *daemontest.Daemon, after, last uint64, out *bytes.Buffer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	target := "/a2a/events?last_event_id=" + strconv.FormatUint(after, 10)
	req, err := http.NewRequestWithContext(ctx, "GET", d.URL()+target, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
		t.Fatalf("GET %s = %d, Content-Type %q; want 200 text/event-stream", target, resp.StatusCode, ct)
	}
	fmt.Fprintf(out, ": GET %s\n", target)

	rd := ssetest.NewReader(resp.Body)
	for {
		b, err := rd.Next()
		if err != nil {
			t.Fatalf("GET %s: reading the stream after %q: %v", target, out.String()[max(0, out.Len()-200):], err)
		}
		if b.Heartbeat() {
			continue
		}
		id := b.ID
		out.WriteString(b.Raw)
		out.WriteString("\n")
		seq, err := strconv.ParseUint(id, 10, 64)
		switch {
		case err != nil:
			t.Fatalf("GET %s: an event with id %q: %s", target, id, b.Raw)
		case seq > last:
			t.Fatalf("GET %s: event %d is past the end of the golden log, %d", target, seq, last)
		case seq == last:
			return
		}
	}
}
