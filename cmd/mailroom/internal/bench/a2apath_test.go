package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/remotetest"
	"github.com/mailroom/mailroom/mailbox"
)

// TestRunA2A is a whole short A2A path run in each binding the callers
// may speak to the edge: both ways answer, nothing fails, every task
// answered through the daemon is durable with its four events (sent,
// leased, answered, delivered), and the rounds alternate.
func TestRunA2A(t *testing.T) {
	t.Parallel()
	for _, binding := range []string{mailbox.BindingJSONRPC03, mailbox.BindingHTTPJSON10} {
		t.Run(binding, func(t *testing.T) {
			t.Parallel()
			var progress strings.Builder
			opts := embedded(t)
			rep, err := RunA2A(t.Context(), A2AOptions{WaysOptions: WaysOptions{Addr: opts.Addr, Embedded: true, Senders: 2,
				Duration: 600 * time.Millisecond, Rounds: 2, Progress: &progress}, Binding: binding})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Kind != A2AReportKind || rep.Binding != binding || rep.Senders != 2 || !strings.HasPrefix(rep.Agent, "bench-a2a-") {
				t.Errorf("report header %+v", rep)
			}
			if rep.Mailroom.Tasks == 0 || rep.Server.Tasks == 0 || rep.ErrorsTotal != 0 {
				t.Fatalf("mailroom %d tasks, server %d, errors %v: want tasks both ways and no errors", rep.Mailroom.Tasks, rep.Server.Tasks, rep.Errors)
			}
			if d := rep.Durable; !d.OK || d.Checked != rep.Mailroom.Tasks || d.Complete != d.Checked || d.Note != "" {
				t.Errorf("durable %+v over %d tasks: want every one complete", d, rep.Mailroom.Tasks)
			}
			if rep.EventsPerTask != 4 {
				t.Errorf("%g events a task, want 4 (sent, leased, answered, delivered)", rep.EventsPerTask)
			}
			if rep.Ratio <= 0 || rep.Ratio != rep.Mailroom.TasksPerS/rep.Server.TasksPerS || rep.AddedP50Ms != rep.Mailroom.Latency.P50-rep.Server.Latency.P50 {
				t.Errorf("ratio %g, added p50 %g: want them from the ways' figures %+v %+v", rep.Ratio, rep.AddedP50Ms, rep.Mailroom, rep.Server)
			}
			var ways []string
			for _, r := range rep.PerRound {
				ways = append(ways, r.Way)
			}
			if strings.Join(ways, ",") != "mailroom,server,mailroom,server" {
				t.Errorf("rounds ran %v, want the ways alternating", ways)
			}
			if !strings.Contains(progress.String(), "round 2/2 server") {
				t.Errorf("progress = %q", progress.String())
			}
		})
	}
}

func TestA2AOptionsRefused(t *testing.T) {
	for _, o := range []A2AOptions{
		{},
		{WaysOptions: WaysOptions{Addr: "127.0.0.1:1"}, Binding: "grpc"},
		{WaysOptions: WaysOptions{Addr: "127.0.0.1:1", Senders: -1}},
		{WaysOptions: WaysOptions{Addr: "127.0.0.1:1", Rounds: -1}},
		{WaysOptions: WaysOptions{Addr: "127.0.0.1:1", PayloadBytes: -1}},
		{WaysOptions: WaysOptions{Addr: "127.0.0.1:1", DataFS: "ext4"}},
	} {
		if _, err := RunA2A(t.Context(), o); err == nil || !strings.HasPrefix(err.Error(), "bench: ") {
			t.Errorf("RunA2A(%+v) = %v, want a refusal", o, err)
		}
	}
}

// BenchmarkA2APath is the A2A path against the yardstick the issue names:
// the same callers calling an in-memory a2a-go v0.3.3 server (a2asrv, its
// executor answering at once) in the same run, the ways alternating. It
// reports both ways' tasks/s, the ratio and the latency Mailroom adds.
//
//	go test ./cmd/mailroom/internal/bench -run '^$' -bench A2APath -benchtime 1x -bench.pairs 16 -bench.duration 20s
func BenchmarkA2APath(b *testing.B) {
	for _, binding := range []string{mailbox.BindingJSONRPC03, mailbox.BindingHTTPJSON10} {
		b.Run("binding="+binding, func(b *testing.B) {
			yardstick := remotetest.StartGoRemote(b, "yardstick", false)
			opts := embedded(b)
			for b.Loop() {
				rep, err := RunA2A(b.Context(), A2AOptions{WaysOptions: WaysOptions{Addr: opts.Addr, Embedded: true, Senders: *benchPairs, Duration: *benchDuration},
					Binding: binding, ServerURL: yardstick.Srv.URL, ServerEchoes: true})
				if err != nil {
					b.Fatal(err)
				}
				if rep.ErrorsTotal != 0 || !rep.Durable.OK {
					b.Fatalf("errors %v, durable %+v", rep.Errors, rep.Durable)
				}
				b.ReportMetric(rep.Mailroom.TasksPerS, "mailroom_tasks/s")
				b.ReportMetric(rep.Server.TasksPerS, "a2a-go_tasks/s")
				b.ReportMetric(rep.Ratio, "ratio")
				b.ReportMetric(rep.Mailroom.Latency.P50, "mailroom_p50_ms")
				b.ReportMetric(rep.AddedP50Ms, "added_p50_ms")
				b.ReportMetric(rep.AddedP99Ms, "added_p99_ms")
			}
		})
	}
}
