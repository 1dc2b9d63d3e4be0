package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/mailroom/mailroom/cmd/mailroom/internal/bench"
	"github.com/mailroom/mailroom/daemon"
	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/daemon/store/logstore"
	"github.com/mailroom/mailroom/mailbox"
)

const benchSummary = "measure a daemon with sender/recipient pairs running full durable cycles"

// runBench drives pairs of agents through full cycles (send, lease, post
// result, drain) and prints what it measured. With --json it prints one
// object whose keys are those of bench.Report:
//
//	kind ("mailroom_bench"), target, embedded, pairs, duration_s, elapsed_s,
//	payload_bytes, rate_limit, pipeline, batch, wait_ms, data_fs ("" with --addr),
//	volatile_log, warnings [string], cycles, cycles_per_s, requests,
//	requests_per_s, latency {send, lease, result, drain, cycle: {count,
//	p50_ms, p90_ms, p99_ms, max_ms}}, errors {"step: kind": n},
//	errors_total, daemon {events_appended, fsync_batches, mean_batch,
//	fsync_seconds, write_errors, subscribers_cut, first_seq, last_seq},
//	fanout (null without --fanout) {subscribers, delivery {count, p50_ms,
//	p90_ms, p99_ms, max_ms}, events_per_s, load_s, complete, final_seq,
//	missed, repeated, reconnects, received_min, received_max,
//	per_subscriber [{snapshot_seq, last_seq, received, missed, repeated,
//	reconnects, snapshots, first_at_ms, last_at_ms}]}, long_poll (null without --idle-workers) {workers, wait_ms,
//	idle_requests_per_s, idle_s, sends, delay {count, p50_ms, ...}, lost}
//
// With --remote it prints bench.RemoteReport instead:
//
//	kind ("mailroom_bench_remote"), target, embedded, data_fs, volatile_log,
//	warnings [string], senders, via ("a2a" or "native"), duration_s (each
//	way), rounds, payload_bytes, a2a_url, agent, binding, concurrency,
//	remote, relay and direct {tasks, elapsed_s, tasks_per_s, latency
//	{count, p50_ms, p90_ms, p99_ms, max_ms}, connections}, ratio (remote's
//	tasks_per_s over direct's), relay_ratio (relay's over direct's),
//	of_relay (remote's over relay's), per_round [{way, tasks, elapsed_s,
//	tasks_per_s, connections}], durable {checked,
//	complete, missing, ok, note}, errors {"way step: kind": n},
//	errors_total, daemon {as above}, events_per_task
//
// With --a2a it prints bench.A2AReport:
//
//	kind ("mailroom_bench_a2a"), target, embedded, data_fs, volatile_log,
//	warnings [string], senders, binding ("jsonrpc-0.3" or "http+json-1.0"),
//	duration_s (each way), rounds, payload_bytes, agent, a2a_url, mailroom
//	and server {tasks, elapsed_s, tasks_per_s, latency {count, p50_ms,
//	p90_ms, p99_ms, max_ms}, connections}, ratio (mailroom's tasks_per_s
//	over the server's), added_p50_ms, added_p99_ms, per_round [{way, tasks,
//	elapsed_s, tasks_per_s, connections}], durable {checked, complete,
//	missing, ok, note}, errors {"way step: kind": n}, errors_total, daemon
//	{as above}, events_per_task
func runBench(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, verbHelp{
		verb:    "bench",
		summary: benchSummary,
		usage:   "[--addr URL | --embedded [--dir DIR]] [--pairs N] [--duration D] [--payload-bytes B] [--fanout K [--fanout-only]] [--rate R] [--pipeline | --batch B [--wait D]] [--remote [--via a2a|native] [--rounds N] [--a2a-addr HOST:PORT]] [--a2a [--binding jsonrpc-0.3|http+json-1.0] [--rounds N]] [--json]",
		example: "mailroom bench --embedded --pairs 16 --duration 10s\n" +
			"mailroom bench --embedded --dir /var/lib   # measure the disk the mailbox will live on\n" +
			"mailroom bench --embedded --fanout 200 --rate 500 --json   # 200 consoles at 2,000 events/s\n" +
			"mailroom bench --addr 127.0.0.1:7717 --fanout 500 --fanout-only --duration 30s & mailroom bench --addr 127.0.0.1:7717 --rate 500 --duration 30s   # the consoles in a process of their own\n" +
			"mailroom bench --embedded --batch 32 --wait 1s   # 32 tasks a request; leases and drains long-poll\n" +
			"mailroom bench --embedded --remote --pairs 16 --duration 10s   # 16 A2A callers through mailroom to a remote A2A agent, through a plain proxy, and directly\n" +
			"mailroom bench --embedded --remote --via native   # native senders (send, then drain) instead of A2A callers\n" +
			"mailroom bench --embedded --a2a --pairs 16 --duration 10s   # 16 A2A callers through mailroom's edge to native workers, and to an A2A server that answers at once",
	})
	addr := e.getenv("MAILROOM_ADDR")
	if addr == "" {
		addr = defaultAddr
	}
	fs.StringVar(&addr, "addr", addr, "daemon address, host:port or URL (env MAILROOM_ADDR)")
	token := fs.String("token", "", "bearer token for the daemon (env MAILROOM_TOKEN)")
	embedded := fs.Bool("embedded", false, "start a daemon in this process (temporary data dir, default durability) instead of using --addr")
	dir := fs.String("dir", "", "with --embedded: make the temporary data dir inside DIR, to measure that disk (default: the system temp dir)")
	pairs := fs.Int("pairs", bench.DefaultPairs, "sender/recipient pairs running cycles concurrently")
	duration := fs.Duration("duration", bench.DefaultDuration, "how long to start new cycles")
	payload := fs.Int("payload-bytes", bench.DefaultPayloadBytes, "size of each task's intent_text in bytes")
	fanout := fs.Int("fanout", 0, "event-stream subscribers (like consoles) connected during the run")
	fanoutOnly := fs.Bool("fanout-only", false, "with --fanout and --addr: run only the subscribers, for --duration, while another process (another mailroom bench) loads the daemon; reports their delivery latency and whether each got every event once")
	rate := fs.Float64("rate", 0, "start at most this many cycles per second in all (0: as fast as the daemon answers); a cycle is 4 events")
	pipeline := fs.Bool("pipeline", false, "let each pair send its next task while the previous cycle is still in flight (at most two cycles per pair)")
	batch := fs.Int("batch", 1, "tasks per request: each pair sends B tasks in one request, leases and drains up to B a request and posts B results in one (cycles counted per task; the cycle latency is a round's)")
	wait := fs.Duration("wait", 0, "with --batch: how long leases and drains long-poll for work not there yet (at most 20s)")
	idle := fs.Int("idle-workers", 0, "measure long polls instead: K workers wait on empty queues (for --wait, default 20s); reports their requests/s while idle and the delay from a send to a waiting worker's lease")
	remote := fs.Bool("remote", false, "measure remote delivery instead: --pairs senders send tasks to a remote agent (an A2A server in this process that answers at once) through the daemon, alternating with as many callers calling that server with the same client through a plain reverse proxy, and directly; --duration is each way's time in all")
	via := fs.String("via", bench.ViaA2A, "with --remote: how the senders reach the remote agent: a2a (an A2A client's blocking message/send to the agent's card on the daemon, the client the other ways use) or native (send, then a long-polled drain)")
	a2aPath := fs.Bool("a2a", false, "measure the A2A path instead: --pairs A2A callers send blocking messages to a registered agent's card on the daemon, whose native workers answer at once, alternating with as many calling an A2A server in this process that answers at once; --duration is each way's time in all")
	binding := fs.String("binding", mailbox.BindingJSONRPC03, "with --a2a: the callers' binding to the daemon's edge: jsonrpc-0.3 or http+json-1.0")
	rounds := fs.Int("rounds", bench.DefaultRounds, "with --remote or --a2a: how many rounds each way's --duration is split in (the ways alternate)")
	a2aAddr := fs.String("a2a-addr", "127.0.0.1:0", "with --remote: where the in-process A2A server listens (the daemon must reach it there)")
	asJSON := fs.Bool("json", false, "print one JSON object with every figure")
	if _, err := parseExact(fs, args); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case *embedded && set["addr"]:
		return usagef("--addr and --embedded: give one, not both")
	case *dir != "" && !*embedded:
		return usagef("--dir %q: only an --embedded daemon has a data dir to place; a daemon at an address keeps its own", *dir)
	case *pairs < 1:
		return usagef("--pairs: got %d, expected at least 1", *pairs)
	case *duration <= 0:
		return usagef("--duration: got %s, expected a positive duration such as 10s", *duration)
	case *payload < 1:
		return usagef("--payload-bytes: got %d, expected at least 1 (the daemon refuses an empty intent)", *payload)
	case *payload > 512<<10:
		return usagef("--payload-bytes: got %d, expected at most %d (a request body may hold 1 MiB)", *payload, 512<<10)
	case *fanout < 0:
		return usagef("--fanout: got %d, expected 0 or more", *fanout)
	case *rate < 0:
		return usagef("--rate: got %g, expected 0 (unlimited) or more", *rate)
	case *batch < 1 || *batch > mailbox.MaxBatch:
		return usagef("--batch: got %d, expected 1 to %d", *batch, mailbox.MaxBatch)
	case *batch > 1 && *pipeline:
		return usagef("--batch and --pipeline: choose one; a batched round already keeps many cycles in flight")
	case *wait < 0 || *wait > 20*time.Second:
		return usagef("--wait: got %s, expected 0 to 20s", *wait)
	case set["wait"] && *batch == 1 && *idle == 0:
		return usagef("--wait: only batched rounds (--batch 2 or more) and --idle-workers long-poll")
	case *idle < 0:
		return usagef("--idle-workers: got %d, expected 0 or more", *idle)
	case *fanoutOnly && *fanout == 0:
		return usagef("--fanout-only: give --fanout K, the subscribers to run")
	case *fanoutOnly && *embedded:
		return usagef("--fanout-only and --embedded: the subscribers measure a daemon at --addr loaded by another process; an embedded daemon has no load")
	case *fanoutOnly && (set["pairs"] || *batch > 1 || *pipeline || *rate > 0 || *idle > 0 || *remote || set["wait"] || set["payload-bytes"]):
		return usagef("--fanout-only runs no load of its own; drop --pairs, --batch, --wait, --pipeline, --rate, --payload-bytes, --idle-workers and --remote (run the load as another mailroom bench)")
	case *idle > 0 && (*batch > 1 || *pipeline || *fanout > 0):
		return usagef("--idle-workers measures long polls alone; drop --batch, --pipeline and --fanout")
	case *remote && (*batch > 1 || *pipeline || *fanout > 0 || *rate > 0 || *idle > 0 || set["wait"]):
		return usagef("--remote measures remote delivery alone; drop --batch, --wait, --pipeline, --fanout, --rate and --idle-workers")
	case *remote && *pairs > mailbox.MaxRemoteConcurrency:
		return usagef("--pairs: got %d with --remote, expected at most %d (the remote agent's concurrency is sized to the senders)", *pairs, mailbox.MaxRemoteConcurrency)
	case *a2aPath && *remote:
		return usagef("--a2a and --remote: choose one (--a2a: callers to an agent whose workers lease natively; --remote: to a remote A2A agent)")
	case *a2aPath && (*batch > 1 || *pipeline || *fanout > 0 || *rate > 0 || *idle > 0 || set["wait"] || set["via"] || set["a2a-addr"]):
		return usagef("--a2a measures the A2A path alone; drop --batch, --wait, --pipeline, --fanout, --rate, --idle-workers, --via and --a2a-addr")
	case !*a2aPath && set["binding"]:
		return usagef("--binding: only --a2a's callers choose a binding")
	case *binding != mailbox.BindingJSONRPC03 && *binding != mailbox.BindingHTTPJSON10:
		return usagef("--binding: got %q, expected jsonrpc-0.3 or http+json-1.0", *binding)
	case !*remote && !*a2aPath && set["rounds"]:
		return usagef("--rounds: only --remote and --a2a run ways in rounds")
	case !*remote && (set["a2a-addr"] || set["via"]):
		return usagef("--via and --a2a-addr: only --remote has senders that choose a way in and an A2A server the daemon reaches")
	case *via != bench.ViaA2A && *via != bench.ViaNative:
		return usagef("--via: got %q, expected a2a or native", *via)
	case *rounds < 1:
		return usagef("--rounds: got %d, expected at least 1", *rounds)
	case *remote && *duration < time.Duration(*rounds)*time.Millisecond:
		return usagef("--duration: got %s for %d rounds, expected at least 1ms a round", *duration, *rounds)
	}
	if *token == "" {
		*token = e.getenv("MAILROOM_TOKEN")
	}
	if *embedded {
		tuneGC(e.getenv)
		tuneProcs(e.getenv, true)
	}
	// The progress lines and the retry notices of every pair share stderr.
	stderr := &serialWriter{w: e.stderr}
	if *a2aPath {
		aopts := bench.A2AOptions{WaysOptions: bench.WaysOptions{Addr: addr, Token: *token, Senders: *pairs, Duration: *duration, Rounds: *rounds,
			PayloadBytes: *payload, Progress: stderr}, Binding: *binding}
		rep, err := benchA2A(ctx, *embedded, *dir, aopts)
		if err != nil {
			return err
		}
		if *asJSON {
			return writeJSON(e.stdout, rep)
		}
		printBenchA2A(e.stdout, rep)
		return nil
	}
	if *remote {
		ropts := bench.RemoteOptions{WaysOptions: bench.WaysOptions{Addr: addr, Token: *token, Senders: *pairs, Duration: *duration, Rounds: *rounds,
			PayloadBytes: *payload, Progress: stderr}, Via: *via, A2AAddr: *a2aAddr}
		rep, err := benchRemote(ctx, *embedded, *dir, ropts)
		if err != nil {
			return err
		}
		if *asJSON {
			return writeJSON(e.stdout, rep)
		}
		printBenchRemote(e.stdout, rep)
		return nil
	}
	opts := bench.Options{Token: *token, Pairs: *pairs, Duration: *duration,
		PayloadBytes: *payload, Fanout: *fanout, FanoutOnly: *fanoutOnly, Rate: *rate, Pipeline: *pipeline, Batch: *batch, Wait: *wait, IdleWorkers: *idle, Progress: stderr,
		RetryNotice: func(reason string) { fmt.Fprintf(stderr, "mailroom bench: %s; retrying\n", reason) }}
	var rep bench.Report
	var err error
	if *embedded {
		rep, err = benchEmbedded(ctx, *dir, opts)
	} else {
		opts.Addr = addr
		rep, err = bench.Run(ctx, opts)
	}
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(e.stdout, rep)
	}
	printBench(e.stdout, rep)
	return nil
}

// benchEmbedded runs the bench against a daemon it starts in this process
// on 127.0.0.1:0, with a fresh temporary data dir inside parent ("" for the
// system's temp dir, which disk is measured), the default configuration
// (every write fsynced before its answer) and its logs discarded. The
// report says which filesystem the log was on, with a warning when that
// keeps it in memory. The daemon is shut down and its data dir removed
// before it returns. Only the binary wires an embedded daemon: the bench
// itself is a client of the base URL it is given.
func benchEmbedded(ctx context.Context, parent string, opts bench.Options) (bench.Report, error) {
	d, stop, err := startEmbedded(parent)
	if err != nil {
		return bench.Report{}, err
	}
	defer stop()
	opts.Addr, opts.Embedded = d.Addr(), true
	opts.DataFS, opts.VolatileLog, opts.Warnings = logPlace(d)
	return bench.Run(ctx, opts)
}

// logPlace says which filesystem an embedded daemon's log is on, whether
// it keeps it in memory, and the warnings the report carries about it.
func logPlace(d *daemon.Daemon) (fs string, volatile bool, warnings []string) {
	warnings = []string{}
	fs, volatile, err := logstore.Filesystem(d.DataDir())
	switch {
	case err != nil:
		warnings = append(warnings, err.Error())
	case volatile:
		warnings = append(warnings, fmt.Sprintf("the embedded daemon's log is on %s, kept in memory: syncs reach no disk, so these figures measure the CPU, not durable throughput", fs))
	}
	return fs, volatile, warnings
}

// benchRemote runs the remote bench against the daemon at opts.Addr, or
// against one it starts in this process (as benchEmbedded does).
func benchRemote(ctx context.Context, embedded bool, parent string, opts bench.RemoteOptions) (bench.RemoteReport, error) {
	if !embedded {
		return bench.RunRemote(ctx, opts)
	}
	d, stop, err := startEmbedded(parent)
	if err != nil {
		return bench.RemoteReport{}, err
	}
	defer stop()
	opts.Addr, opts.Embedded = d.Addr(), true
	opts.DataFS, opts.VolatileLog, opts.Warnings = logPlace(d)
	return bench.RunRemote(ctx, opts)
}

// benchA2A runs the A2A path bench against the daemon at opts.Addr, or
// against one it starts in this process (as benchEmbedded does).
func benchA2A(ctx context.Context, embedded bool, parent string, opts bench.A2AOptions) (bench.A2AReport, error) {
	if !embedded {
		return bench.RunA2A(ctx, opts)
	}
	d, stop, err := startEmbedded(parent)
	if err != nil {
		return bench.A2AReport{}, err
	}
	defer stop()
	opts.Addr, opts.Embedded = d.Addr(), true
	opts.DataFS, opts.VolatileLog, opts.Warnings = logPlace(d)
	return bench.RunA2A(ctx, opts)
}

// startEmbedded opens a daemon on a fresh temporary directory inside
// parent ("" for the system's temp dir) and runs it; stop shuts it down
// and removes the directory.
func startEmbedded(parent string) (*daemon.Daemon, func(), error) {
	dir, err := os.MkdirTemp(parent, "mailroom-bench-")
	if err != nil {
		return nil, nil, fmt.Errorf("making the embedded daemon's data dir: %w", err)
	}
	cfg := config.Default()
	cfg.Addr, cfg.DataDir = "127.0.0.1:0", dir
	d, err := daemon.Open(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, fmt.Errorf("starting the embedded daemon: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		d.Run(ctx)
	}()
	stop := func() {
		cancel()
		<-ran
		os.RemoveAll(dir)
	}
	return d, stop, nil
}

func printBench(w io.Writer, r bench.Report) {
	if lp := r.LongPoll; lp != nil {
		fmt.Fprintf(w, "mailroom bench: long polls, %d idle workers waiting %dms each\n", lp.Workers, lp.WaitMs)
		fmt.Fprintf(w, "idle      %10.2f requests/s from all the workers over %.1fs\n", lp.IdleRequestsPerS, lp.IdleS)
		fmt.Fprintf(w, "delay     send to a waiting worker's lease: p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms over %d sends (%d lost)\n",
			lp.Delay.P50, lp.Delay.P90, lp.Delay.P99, lp.Delay.Max, lp.Sends, lp.Lost)
		return
	}
	target := "daemon at " + r.Target
	if r.Embedded {
		target = "embedded daemon"
		if r.DataFS != "" { // "" when the filesystem could not be told: a warning says why
			target += " (log on " + r.DataFS + ")"
		}
	}
	if r.Pairs == 0 && r.Fanout != nil {
		fmt.Fprintf(w, "mailroom bench --fanout-only: %s, %s asked (ran %.2fs), the load from another process\n", target,
			time.Duration(r.DurationS*float64(time.Second)), r.ElapsedS)
		printFanout(w, r.Fanout)
		return
	}
	fmt.Fprintf(w, "mailroom bench: %s, %d pairs, %s asked (ran %.2fs), payload %d B", target, r.Pairs,
		time.Duration(r.DurationS*float64(time.Second)), r.ElapsedS, r.PayloadBytes)
	if r.RateLimit > 0 {
		fmt.Fprintf(w, ", capped at %g cycles/s", r.RateLimit)
	}
	if r.Pipeline {
		fmt.Fprint(w, ", pipelined (two cycles per pair)")
	}
	if r.Batch > 1 {
		fmt.Fprintf(w, ", %d tasks per request (cycle latency is a round's)", r.Batch)
		if r.WaitMs > 0 {
			fmt.Fprintf(w, ", long polls of %dms", r.WaitMs)
		}
	}
	fmt.Fprintln(w)
	for _, warning := range r.Warnings {
		fmt.Fprintf(w, "WARNING: %s\n", warning)
	}
	counted := "each 2xx and durable"
	if r.VolatileLog {
		counted = "each 2xx and synced, to memory only"
	}
	fmt.Fprintf(w, "cycles    %10d  %10.1f/s  (send, lease, result, drain: %s)\n", r.Cycles, r.CyclesPerS, counted)
	fmt.Fprintf(w, "requests  %10d  %10.1f/s\n", r.Requests, r.RequestsPerS)
	fmt.Fprintf(w, "errors    %10d\n", r.ErrorsTotal)
	for _, k := range slices.Sorted(maps.Keys(r.Errors)) {
		fmt.Fprintf(w, "  %-20s %d\n", k, r.Errors[k])
	}
	d := r.Daemon
	fmt.Fprintf(w, "fsync     %10d batches, %.1f events per batch (%d events, %.2fs syncing)\n", d.FsyncBatches, d.MeanBatch, d.EventsAppended, d.FsyncSeconds)

	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "latency ms\tp50\tp90\tp99\tmax\t")
	for _, s := range []struct {
		name string
		l    bench.Latency
	}{{"send", r.Latency.Send}, {"lease", r.Latency.Lease}, {"result", r.Latency.Result}, {"drain", r.Latency.Drain}, {"cycle", r.Latency.Cycle}} {
		fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%.3f\t%.3f\t\n", s.name, s.l.P50, s.l.P90, s.l.P99, s.l.Max)
	}
	tw.Flush()

	if f := r.Fanout; f != nil {
		fmt.Fprintln(w)
		printFanout(w, f)
	}
}

func printFanout(w io.Writer, f *bench.FanoutReport) {
	over := ""
	if f.LoadS >= 1 {
		over = fmt.Sprintf(" over %.1f s of events", f.LoadS)
	}
	fmt.Fprintf(w, "fanout    %d subscribers at %.0f events/s%s: delivery p50 %.0f ms, p90 %.0f ms, p99 %.0f ms, max %.0f ms\n",
		f.Subscribers, f.EventsPerS, over, f.Delivery.P50, f.Delivery.P90, f.Delivery.P99, f.Delivery.Max)
	verdict := "yes"
	if !f.Complete {
		verdict = "NO"
	}
	fmt.Fprintf(w, "          every subscriber got every event once: %s (missed %d, repeated %d, reconnects %d; %d to %d events each, up to seq %d)\n",
		verdict, f.Missed, f.Repeated, f.Reconnect, f.ReceivedMin, f.ReceivedMax, f.FinalSeq)
}

func printBenchA2A(w io.Writer, r bench.A2AReport) {
	target := "daemon at " + r.Target
	if r.Embedded {
		target = "embedded daemon"
		if r.DataFS != "" {
			target += " (log on " + r.DataFS + ")"
		}
	}
	fmt.Fprintf(w, "mailroom bench --a2a: %s, %d A2A callers (blocking message/send, %s to the edge), %s each way in %d rounds (mailroom, server, ...), payload %d B\n",
		target, r.Senders, r.Binding, time.Duration(r.DurationS*float64(time.Second)), r.Rounds, r.PayloadBytes)
	fmt.Fprintf(w, "agent %s (%d native workers answering at once); A2A server in this process at %s (answers at once)\n", r.Agent, r.Senders, r.A2AURL)
	for _, warning := range r.Warnings {
		fmt.Fprintf(w, "WARNING: %s\n", warning)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "way\ttasks\ttasks/s\tp50 ms\tp90 ms\tp99 ms\tmax ms\t")
	for _, x := range []struct {
		name string
		f    bench.WayFigures
	}{{"mailroom", r.Mailroom}, {"server", r.Server}} {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.2f\t%.2f\t%.2f\t%.2f\t\n", x.name, x.f.Tasks, x.f.TasksPerS, x.f.Latency.P50, x.f.Latency.P90, x.f.Latency.P99, x.f.Latency.Max)
	}
	tw.Flush()
	fmt.Fprintf(w, "ratio     %.2f of the server's tasks/s; mailroom adds %.2f ms at p50, %.2f ms at p99\n", r.Ratio, r.AddedP50Ms, r.AddedP99Ms)
	verdict := "yes"
	if !r.Durable.OK {
		verdict = "NO"
	}
	fmt.Fprintf(w, "durable   every task answered through the daemon sent, leased, answered and delivered in its log: %s (%d of %d", verdict, r.Durable.Complete, r.Durable.Checked)
	if r.Durable.Note != "" {
		fmt.Fprintf(w, "; %s", r.Durable.Note)
	}
	fmt.Fprintf(w, "); %.2f events a task\n", r.EventsPerTask)
	fmt.Fprintf(w, "errors    %d\n", r.ErrorsTotal)
	for _, k := range slices.Sorted(maps.Keys(r.Errors)) {
		fmt.Fprintf(w, "  %-28s %d\n", k, r.Errors[k])
	}
}

func printBenchRemote(w io.Writer, r bench.RemoteReport) {
	target := "daemon at " + r.Target
	if r.Embedded {
		target = "embedded daemon"
		if r.DataFS != "" {
			target += " (log on " + r.DataFS + ")"
		}
	}
	how := "A2A callers (blocking message/send to the agent's card on the daemon)"
	if r.Via == bench.ViaNative {
		how = "native senders (send, then drain)"
	}
	fmt.Fprintf(w, "mailroom bench --remote: %s, %d %s, %s each way in %d rounds (remote, relay, direct, ...), payload %d B\n", target, r.Senders, how,
		time.Duration(r.DurationS*float64(time.Second)), r.Rounds, r.PayloadBytes)
	fmt.Fprintf(w, "A2A server in this process at %s (answers at once); remote agent %s, binding %s, concurrency %d\n", r.A2AURL, r.Agent, r.Binding, r.Concurrency)
	for _, warning := range r.Warnings {
		fmt.Fprintf(w, "WARNING: %s\n", warning)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\ttasks\ttasks/s\tp50 ms\tp90 ms\tp99 ms\tmax ms\tconnections\t")
	for _, x := range []struct {
		name string
		f    bench.WayFigures
	}{{"through mailroom", r.Remote}, {"through a proxy", r.Relay}, {"direct", r.Direct}} {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.3f\t%.3f\t%.3f\t%.3f\t%d\t\n", x.name, x.f.Tasks, x.f.TasksPerS, x.f.Latency.P50, x.f.Latency.P90, x.f.Latency.P99, x.f.Latency.Max, x.f.Connections)
	}
	tw.Flush()
	fmt.Fprintf(w, "ratio     %.2f of direct (through mailroom's tasks/s over direct's); %.2f of the proxy's\n", r.Ratio, r.OfRelay)
	fmt.Fprintf(w, "          the proxy (net/http/httputil, keeping nothing): %.2f of direct, the floor of any hop in front of the server here\n", r.RelayRatio)
	fmt.Fprintln(w, "          (connections: those the A2A server accepted from each way's client; about one per sender is a client that keeps them)")
	fmt.Fprint(w, "rounds   ")
	for _, rf := range r.PerRound {
		fmt.Fprintf(w, " %s %.0f/s", rf.Way, rf.TasksPerS)
	}
	fmt.Fprintln(w)
	d := r.Durable
	label, where := "durable  ", "the daemon's log"
	if r.VolatileLog {
		label, where = "synced   ", "the daemon's log (on "+r.DataFS+": in memory only, not durable)"
	}
	switch {
	case d.OK:
		fmt.Fprintf(w, "%s yes: %s holds task_sent, task_leased, remote_accepted, result_posted and result_drained of all %d tasks\n", label, where, d.Checked)
	default:
		fmt.Fprintf(w, "%s NO: %d of %d tasks have all five events in %s, %d do not", label, d.Complete, d.Checked, where, d.Missing)
		if d.Note != "" {
			fmt.Fprintf(w, " (%s)", d.Note)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "errors    %d\n", r.ErrorsTotal)
	for _, k := range slices.Sorted(maps.Keys(r.Errors)) {
		fmt.Fprintf(w, "  %-24s %d\n", k, r.Errors[k])
	}
	dm := r.Daemon
	fmt.Fprintf(w, "fsync     %d batches, %.1f events per batch, %.1f events per task (%d events, %.2fs syncing)\n",
		dm.FsyncBatches, dm.MeanBatch, r.EventsPerTask, dm.EventsAppended, dm.FsyncSeconds)
}

// serialWriter lets goroutines share one writer, a line at a time.
type serialWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *serialWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
