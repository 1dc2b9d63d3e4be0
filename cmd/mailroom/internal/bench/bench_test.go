package bench

import (
	"encoding/json"
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/mailbox"
)

func TestSamplesPercentilesAreNearestRank(t *testing.T) {
	var s samples
	for i := 100; i >= 1; i-- { // out of order on purpose
		s.add(time.Duration(i) * time.Millisecond)
	}
	got := s.summarize()
	want := Latency{Count: 100, P50: 50, P90: 90, P99: 99, Max: 100}
	if got != want {
		t.Errorf("summarize(1..100 ms) = %+v, want %+v", got, want)
	}
	if got := (samples{}).summarize(); got != (Latency{}) {
		t.Errorf("summarize(none) = %+v, want zero", got)
	}
	one := samples{1500 * time.Microsecond}
	if got := one.summarize(); got.P50 != 1.5 || got.P99 != 1.5 || got.Max != 1.5 {
		t.Errorf("summarize(1.5 ms) = %+v, want every figure 1.5", got)
	}
}

func TestMsHistogram(t *testing.T) {
	h := newMsHistogram()
	for i := int64(1); i <= 100; i++ {
		h.add(i)
	}
	h.add(-3) // a clock running ahead counts as 0, not as a negative bucket
	o := newMsHistogram()
	o.add(histogramSpanMs + 5000) // past the span: counted, and it is the max
	h.merge(o)
	got := h.summarize()
	want := Latency{Count: 102, P50: 50, P90: 91, P99: 100, Max: histogramSpanMs + 5000}
	if got != want {
		t.Errorf("summarize = %+v, want %+v", got, want)
	}
	if q := h.quantile(1); q != histogramSpanMs+5000 {
		t.Errorf("quantile(1) = %g, want the max", q)
	}
}

func TestDecodeMetrics(t *testing.T) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(`{
		"mailroom_events_appended_total": 1200,
		"mailroom_fsync_batches_total": 300,
		"mailroom_fsync_duration_seconds": {"buckets": [{"le": 0.001, "count": 12}], "sum": 0.25, "count": 300},
		"mailroom_last_seq": 4.2e+06,
		"mailroom_http_requests_total": [{"labels": {"route": "POST /a2a/tasks", "code": "200"}, "value": 7}]
	}`), &m); err != nil {
		t.Fatal(err)
	}
	s, err := decodeMetrics(m)
	if err != nil {
		t.Fatal(err)
	}
	want := scrape{metricEventsAppended: 1200, metricFsyncBatches: 300, metricFsyncSeconds: 0.25, metricLastSeq: 4.2e6}
	if len(s) != len(want) {
		t.Errorf("decoded %v, want %v", s, want)
	}
	for k, v := range want {
		if s[k] != v {
			t.Errorf("%s = %g, want %g", k, s[k], v)
		}
	}
	before := scrape{metricEventsAppended: 200, metricFsyncBatches: 100, metricLastSeq: 10}
	d := daemonDelta(before, s)
	if d.EventsAppended != 1000 || d.FsyncBatches != 200 || d.MeanBatch != 5 || d.FirstSeq != 10 || d.LastSeq != 4200000 {
		t.Errorf("delta = %+v", d)
	}
	delete(m, metricLastSeq)
	if _, err := decodeMetrics(m); err == nil || !strings.Contains(err.Error(), metricLastSeq) {
		t.Errorf("metrics without %s: %v, want an error naming it", metricLastSeq, err)
	}
}

func TestOptionsRefused(t *testing.T) {
	for _, o := range []Options{
		{},
		{Embedded: true},
		{Addr: "127.0.0.1:1", Pairs: -1},
		{Addr: "127.0.0.1:1", Duration: -time.Second},
		{Addr: "127.0.0.1:1", Cycles: -1},
		{Addr: "127.0.0.1:1", PayloadBytes: -1},
		{Addr: "127.0.0.1:1", Fanout: -1},
		{Addr: "127.0.0.1:1", Rate: -1},
		{Addr: "127.0.0.1:1", DataFS: "ext4"},
		{Addr: "127.0.0.1:1", Batch: 1001},
		{Addr: "127.0.0.1:1", Batch: 4, Pipeline: true},
		{Addr: "127.0.0.1:1", Wait: 21 * time.Second},
		{Addr: "127.0.0.1:1", FanoutOnly: true},
		{Addr: "127.0.0.1:1", FanoutOnly: true, Fanout: 2, Embedded: true},
	} {
		// A refusal, not the unreachable daemon at 127.0.0.1:1.
		if _, err := Run(t.Context(), o); err == nil || !strings.HasPrefix(err.Error(), "bench: ") {
			t.Errorf("Run(%+v) = %v, want a refusal", o, err)
		}
	}
}

// embedded starts a daemon for the test (the binary's `bench --embedded`
// wiring is cmd/mailroom's benchEmbedded) and returns the options to measure
// it as an embedded one.
func embedded(t testing.TB) Options {
	return Options{Addr: daemontest.Start(t, daemontest.Options{}).Addr(), Embedded: true}
}

// TestRunEmbedded is a whole short run: every cycle counted is reflected in
// the daemon's own counters, and every subscriber saw every event once.
// Pipelined pairs keep two cycles in flight and must be just as exact.
func TestRunEmbedded(t *testing.T) {
	t.Parallel()
	for _, pipeline := range []bool{false, true} {
		t.Run(fmt.Sprintf("pipeline=%v", pipeline), func(t *testing.T) {
			t.Parallel()
			testRunEmbedded(t, pipeline)
		})
	}
}

func testRunEmbedded(t *testing.T, pipeline bool) {
	var progress strings.Builder
	const cycles = 200
	opts := embedded(t)
	opts.Pairs, opts.Cycles, opts.Fanout, opts.Pipeline, opts.Progress = 2, cycles, 2, pipeline, &progress
	rep, err := Run(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Pipeline != pipeline {
		t.Errorf("report says pipeline %v, want %v", rep.Pipeline, pipeline)
	}
	if rep.Cycles != cycles || rep.ErrorsTotal != 0 {
		t.Fatalf("cycles %d, errors %v; want the %d cycles asked for and no errors", rep.Cycles, rep.Errors, cycles)
	}
	// Four durable events per cycle, and nothing else happened.
	if rep.Daemon.EventsAppended != 4*rep.Cycles || rep.Requests != 4*rep.Cycles {
		t.Errorf("%d cycles, %d requests, daemon appended %d events; want 4 of each per cycle", rep.Cycles, rep.Requests, rep.Daemon.EventsAppended)
	}
	if rep.Daemon.FsyncBatches == 0 || rep.Daemon.MeanBatch < 1 {
		t.Errorf("daemon figures %+v: want batches and a mean batch of at least 1", rep.Daemon)
	}
	for name, l := range map[string]Latency{"send": rep.Latency.Send, "lease": rep.Latency.Lease, "result": rep.Latency.Result, "drain": rep.Latency.Drain, "cycle": rep.Latency.Cycle} {
		if uint64(l.Count) != rep.Cycles || l.P50 <= 0 || l.P50 > l.P90 || l.P90 > l.P99 || l.P99 > l.Max {
			t.Errorf("%s latency %+v over %d cycles: want one sample per cycle, ordered percentiles", name, l, rep.Cycles)
		}
	}
	// The elapsed time covers every cycle counted (and a run bounded by
	// time, its whole duration: cmd/mailroom's TestRunEmbeddedSaysWhereItsLogIs).
	if rep.ElapsedS*1000 < rep.Latency.Cycle.Max || rep.CyclesPerS <= 0 {
		t.Errorf("elapsed %gs with a %gms cycle in it, %g cycles/s", rep.ElapsedS, rep.Latency.Cycle.Max, rep.CyclesPerS)
	}
	f := rep.Fanout
	if f == nil || f.Subscribers != 2 || !f.Complete || f.Missed != 0 || f.Repeated != 0 {
		t.Fatalf("fanout %+v: want 2 subscribers, none missing or repeating", f)
	}
	for i, s := range f.PerSub {
		if s.Received != f.FinalSeq-s.SnapshotSeq || s.LastSeq != f.FinalSeq {
			t.Errorf("subscriber %d: %+v, want every event from its snapshot to seq %d", i, s, f.FinalSeq)
		}
	}
	if f.Delivery.Count != int(f.ReceivedMin+f.ReceivedMax) {
		t.Errorf("delivery latency over %d events, want one per event received", f.Delivery.Count)
	}
	if !strings.Contains(progress.String(), "cycles/s") {
		t.Errorf("progress = %q, want a line a second and one at the end", progress.String())
	}
}

// TestRunFanoutOnly runs subscribers alone while another run (standing in
// for another process) loads the daemon: they report the other run's
// events, each received once, with a latency for each.
func TestRunFanoutOnly(t *testing.T) {
	t.Parallel()
	addr := daemontest.Start(t, daemontest.Options{}).Addr()
	var progress strings.Builder
	subs := Options{Addr: addr, Fanout: 3, FanoutOnly: true, Duration: 5 * time.Second, Progress: &progress}
	done := make(chan Report, 1)
	go func() {
		rep, err := Run(t.Context(), subs)
		if err != nil {
			t.Error(err)
		}
		done <- rep
	}()
	// The load starts about when the subscribers are listening, and ends
	// well before they stop (100 cycles take under a second, five seconds
	// even on a loaded machine with the race detector).
	time.Sleep(300 * time.Millisecond)
	load, err := Run(t.Context(), Options{Addr: addr, Pairs: 2, Cycles: 100})
	if err != nil || load.Cycles != 100 {
		t.Fatalf("the load: %d cycles, %v", load.Cycles, err)
	}
	rep := <-done
	f := rep.Fanout
	if f == nil || f.Subscribers != 3 || !f.Complete || f.Missed != 0 || f.Repeated != 0 {
		t.Fatalf("fanout %+v: want 3 subscribers, none missing or repeating", f)
	}
	// The subscribers were surely listening before the load's last cycle.
	if rep.Cycles != 0 || rep.Requests != 0 || rep.Daemon.EventsAppended == 0 || f.EventsPerS <= 0 || f.FinalSeq != 400 {
		t.Errorf("report %+v: want no load of its own, and the other run's events, up to seq 400", rep)
	}
	for i, s := range f.PerSub {
		if s.LastSeq != f.FinalSeq || s.Received != f.FinalSeq-s.SnapshotSeq || s.Received == 0 {
			t.Errorf("subscriber %d: %+v, want every event from its snapshot to seq %d", i, s, f.FinalSeq)
		}
		if s.FirstAtMs == 0 || s.LastAtMs < s.FirstAtMs {
			t.Errorf("subscriber %d: first and last event at %d and %d ms, want both, in order", i, s.FirstAtMs, s.LastAtMs)
		}
	}
	// The load's span is what the events took, within the subscribers'
	// run; the rate is over it once it is a second or more.
	if f.LoadS < 0 || f.LoadS > rep.ElapsedS {
		t.Errorf("load span %.3f s, want within the run's %.3f s", f.LoadS, rep.ElapsedS)
	}
	span := rep.ElapsedS
	if f.LoadS >= 1 {
		span = f.LoadS
	}
	if want := float64(rep.Daemon.EventsAppended) / span; f.EventsPerS != want {
		t.Errorf("%.1f events/s, want %.1f (%d events over %.3f s)", f.EventsPerS, want, rep.Daemon.EventsAppended, span)
	}
	if f.Delivery.Count != int(3*f.ReceivedMin) || f.ReceivedMin != f.ReceivedMax {
		t.Errorf("delivery latency over %d events, want one per event received (%d to %d each)", f.Delivery.Count, f.ReceivedMin, f.ReceivedMax)
	}
	if !strings.Contains(progress.String(), "3 subscribers at seq") {
		t.Errorf("progress = %q, want a line a second", progress.String())
	}
}

// TestRunHealsLeftovers runs against a daemon that already holds a task
// and a result for a bench pair (an interrupted earlier run): the pair
// clears them, counts them as stale, and goes on with honest cycles.
func TestRunHealsLeftovers(t *testing.T) {
	t.Parallel()
	for _, pipeline := range []bool{false, true} {
		t.Run(fmt.Sprintf("pipeline=%v", pipeline), func(t *testing.T) {
			t.Parallel()
			testRunHealsLeftovers(t, pipeline)
		})
	}
}

func testRunHealsLeftovers(t *testing.T, pipeline bool) {
	d := daemontest.Start(t, daemontest.Options{})
	c, err := client.New(d.Addr())
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	const s0, r0 = "bench-s-0@local", "bench-r-0@local"
	// A result left pending for the sender...
	if _, err := c.Send(ctx, mailbox.Task{Sender: s0, Recipient: r0, IntentText: "old"}); err != nil {
		t.Fatal(err)
	}
	task, lease, err := c.Lease(ctx, r0)
	if err != nil || task == nil {
		t.Fatalf("lease = %v, %v", task, err)
	}
	if err := c.PostResult(ctx, mailbox.Result{TaskID: task.ID, Status: mailbox.StatusOK, LeaseID: lease.LeaseID, Content: []mailbox.Content{}}); err != nil {
		t.Fatal(err)
	}
	// ...and a task left queued for the recipient.
	if _, err := c.Send(ctx, mailbox.Task{Sender: s0, Recipient: r0, IntentText: "old"}); err != nil {
		t.Fatal(err)
	}

	rep, err := Run(ctx, Options{Addr: "http://" + d.Addr(), Pairs: 1, Cycles: 5, Pipeline: pipeline})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Cycles == 0 || rep.Target != "http://"+d.Addr() || rep.Embedded {
		t.Fatalf("cycles %d target %q: want cycles against the daemon", rep.Cycles, rep.Target)
	}
	// The queued leftover is finished with an error result, which the
	// drain then meets as a second stale result.
	want := map[string]uint64{"lease: stale": 1, "drain: stale": 2}
	if len(rep.Errors) != len(want) || rep.Errors["lease: stale"] != 1 || rep.Errors["drain: stale"] != 2 {
		t.Errorf("errors = %v, want %v", rep.Errors, want)
	}
	view, err := c.Queue(ctx, mailbox.QueueFilter{})
	if err != nil || len(view.Tasks) != 0 || len(view.Results) != 0 {
		t.Errorf("after the run: %d tasks, %d results (%v); want the mailbox empty", len(view.Tasks), len(view.Results), err)
	}
}

// TestRunRate checks that a rate cap holds cycles to it.
func TestRunRate(t *testing.T) {
	t.Parallel()
	opts := embedded(t)
	opts.Pairs, opts.Duration, opts.Rate = 4, 300*time.Millisecond, 50
	rep, err := Run(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	// Slots are handed out up to the duration: at most rate*duration cycles.
	if rep.Cycles == 0 || rep.Cycles > 15 || rep.RateLimit != 50 {
		t.Errorf("%d cycles in 300ms at a cap of 50/s (rate_limit %g)", rep.Cycles, rep.RateLimit)
	}
}

func TestRunUnreachable(t *testing.T) {
	_, err := Run(t.Context(), Options{Addr: "127.0.0.1:1", Pairs: 1, Duration: time.Second})
	if err == nil || !strings.Contains(err.Error(), "cannot reach mailroom daemon at 127.0.0.1:1") {
		t.Errorf("Run against nothing = %v, want an unreachable error", err)
	}
}

var (
	benchDuration = flag.Duration("bench.duration", 5*time.Second, "how long each BenchmarkEmbedded run lasts")
	benchPairs    = flag.Int("bench.pairs", DefaultPairs, "BenchmarkEmbedded: sender/recipient pairs")
	benchFanout   = flag.Int("bench.fanout", 0, "BenchmarkEmbedded: event-stream subscribers")
	benchRate     = flag.Float64("bench.rate", 0, "BenchmarkEmbedded: cycles/s cap (0: none)")
	benchVia      = flag.String("bench.via", ViaA2A, "BenchmarkRemote: how the senders reach the remote agent (a2a or native)")
)

// BenchmarkEmbedded runs the bench against an embedded daemon, for
// profiling the whole path (client, HTTP, engine, log, event stream) in
// one process:
//
//	go test -c -o bench.test ./cmd/mailroom/internal/bench
//	./bench.test -test.run '^$' -test.bench Embedded -test.benchtime 1x -test.cpuprofile cpu.out -bench.duration 10s [-bench.fanout 200]
//	go tool pprof -top -cum bench.test cpu.out
//
// The load generator and the subscribers run in the same process, so part
// of the profile is theirs, not the daemon's (pprof -focus net/http.\(\*conn\).serve
// shows the server side); the figures it reports are the bench's own.
func BenchmarkEmbedded(b *testing.B) {
	name := fmt.Sprintf("pairs=%d/fanout=%d", *benchPairs, *benchFanout)
	b.Run(name, func(b *testing.B) {
		for b.Loop() {
			opts := embedded(b)
			opts.Pairs, opts.Duration, opts.Fanout, opts.Rate = *benchPairs, *benchDuration, *benchFanout, *benchRate
			rep, err := Run(b.Context(), opts)
			if err != nil {
				b.Fatal(err)
			}
			if rep.ErrorsTotal != 0 {
				b.Errorf("errors: %v", rep.Errors)
			}
			b.ReportMetric(rep.CyclesPerS, "cycles/s")
			b.ReportMetric(rep.Latency.Cycle.P99, "cycle-p99-ms")
			b.ReportMetric(rep.Daemon.MeanBatch, "events/fsync")
			if f := rep.Fanout; f != nil {
				b.ReportMetric(f.Delivery.P99, "delivery-p99-ms")
				if !f.Complete {
					b.Errorf("fanout: %d missed, %d repeated", f.Missed, f.Repeated)
				}
			}
		}
	})
}

// A batched run counts every task of a round as a cycle, each daemon event
// is accounted for, and leftovers of an earlier run are healed as in
// single cycles.
func TestRunBatched(t *testing.T) {
	d := daemontest.Start(t, daemontest.Options{})
	c, err := client.New(d.Addr())
	if err != nil {
		t.Fatal(err)
	}
	// A task left queued for the first pair's recipient.
	if _, err := c.Send(t.Context(), mailbox.Task{Sender: "bench-s-0@local", Recipient: "bench-r-0@local", IntentText: "old"}); err != nil {
		t.Fatal(err)
	}
	rep, err := Run(t.Context(), Options{Addr: "http://" + d.Addr(), Pairs: 2, Cycles: 6, Batch: 4, Wait: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Batch != 4 || rep.WaitMs != 200 || rep.Cycles == 0 || rep.Cycles%4 != 0 {
		t.Fatalf("report: batch %d wait %d cycles %d; want cycles counted per task of whole rounds", rep.Batch, rep.WaitMs, rep.Cycles)
	}
	if rep.Errors["lease: stale"] != 1 || rep.Errors["drain: stale"] != 1 || rep.ErrorsTotal != 2 {
		t.Errorf("errors %v: want the leftover healed (one stale lease, its error result one stale drain)", rep.Errors)
	}
	// Four events a task, and the leftover's three.
	if want := rep.Cycles*4 + 3; rep.Daemon.EventsAppended != want {
		t.Errorf("the daemon appended %d events for %d cycles, want %d", rep.Daemon.EventsAppended, rep.Cycles, want)
	}
	view, err := c.Queue(t.Context(), mailbox.QueueFilter{})
	if err != nil || len(view.Tasks) != 0 || len(view.Results) != 0 {
		t.Errorf("after the run: %d tasks, %d results (%v); want the mailbox empty", len(view.Tasks), len(view.Results), err)
	}
}

// Idle long-polling workers make no requests while they wait, and a task
// sent to one is leased by it.
func TestRunLongPoll(t *testing.T) {
	opts := embedded(t)
	opts.IdleWorkers, opts.Wait, opts.Duration = 10, 5*time.Second, time.Second
	rep, err := Run(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	lp := rep.LongPoll
	if lp == nil || lp.Workers != 10 || lp.WaitMs != 5000 {
		t.Fatalf("long-poll report %+v", lp)
	}
	if lp.IdleRequestsPerS != 0 {
		t.Errorf("idle workers made %.2f requests/s while waiting, want none before their wait ends", lp.IdleRequestsPerS)
	}
	if lp.Sends == 0 || lp.Lost != 0 || lp.Delay.Count != lp.Sends {
		t.Errorf("sends %d lost %d delays %d: want every send leased by its waiting worker", lp.Sends, lp.Lost, lp.Delay.Count)
	}
	if rep.Daemon.EventsAppended != uint64(2*lp.Sends) {
		t.Errorf("the daemon appended %d events for %d sends, want a send and a lease each", rep.Daemon.EventsAppended, lp.Sends)
	}
}

// BenchmarkRemote runs the remote bench against an embedded daemon, for
// profiling the outbound path in one process:
//
//	go test -c -o bench.test ./cmd/mailroom/internal/bench
//	./bench.test -test.run '^$' -test.bench Remote -test.benchtime 1x -test.cpuprofile cpu.out -bench.duration 10s
//	go tool pprof -top -cum bench.test cpu.out
//
// All three ways run in the profile (they alternate); the A2A server's
// and the callers' share is the direct way's cost.
func BenchmarkRemote(b *testing.B) {
	b.Run(fmt.Sprintf("senders=%d/via=%s", *benchPairs, *benchVia), func(b *testing.B) {
		for b.Loop() {
			opts := embedded(b)
			rep, err := RunRemote(b.Context(), RemoteOptions{WaysOptions: WaysOptions{Addr: opts.Addr, Embedded: true, Senders: *benchPairs, Duration: *benchDuration}, Via: *benchVia})
			if err != nil {
				b.Fatal(err)
			}
			if rep.ErrorsTotal != 0 || !rep.Durable.OK {
				b.Errorf("errors %v, durable %+v", rep.Errors, rep.Durable)
			}
			b.ReportMetric(rep.Remote.TasksPerS, "remote-tasks/s")
			b.ReportMetric(rep.Relay.TasksPerS, "relay-tasks/s")
			b.ReportMetric(rep.Direct.TasksPerS, "direct-tasks/s")
			b.ReportMetric(rep.Ratio, "ratio")
		}
	})
}
