package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/mailroom/mailroom/cmd/mailroom/internal/bench"
	"github.com/mailroom/mailroom/daemon"
	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/daemon/store/logstore"
	"github.com/mailroom/mailroom/internal/syncwriter"
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
		usage:   "[--addr URL [--ca-file CA] [--cert C --key K] | --embedded [--dir DIR]] [--pairs N] [--duration D] [--payload-bytes B] [--fanout K [--fanout-only]] [--rate R] [--pipeline | --batch B [--wait D]] [--remote [--via a2a|native] [--rounds N] [--a2a-addr HOST:PORT]] [--a2a [--binding jsonrpc-0.3|http+json-1.0] [--rounds N]] [--json]",
		example: "mailroom bench --embedded --pairs 16 --duration 10s\n" +
			"mailroom bench --embedded --dir /var/lib   # measure the disk the mailbox will live on\n" +
			"mailroom bench --embedded --fanout 200 --rate 500 --json   # 200 consoles at 2,000 events/s\n" +
			"mailroom bench --addr 127.0.0.1:7717 --fanout 500 --fanout-only --duration 30s & mailroom bench --addr 127.0.0.1:7717 --rate 500 --duration 30s   # the consoles in a process of their own\n" +
			"mailroom bench --embedded --batch 32 --wait 1s   # 32 tasks a request; leases and drains long-poll\n" +
			"mailroom bench --addr https://mail.example:7717 --ca-file ca.pem --pairs 16 --duration 5s   # a daemon that serves TLS\n" +
			"mailroom bench --embedded --remote --pairs 16 --duration 10s   # 16 A2A callers through mailroom to a remote A2A agent, through a plain proxy, and directly\n" +
			"mailroom bench --embedded --remote --via native   # native senders (send, then drain) instead of A2A callers\n" +
			"mailroom bench --embedded --a2a --pairs 16 --duration 10s   # 16 A2A callers through mailroom's edge to native workers, and to an A2A server that answers at once",
	})
	var f benchFlags
	f.bind(fs, e)
	if _, err := parseExact(fs, args); err != nil {
		return err
	}
	f.set = map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { f.set[fl.Name] = true })
	if err := f.check(); err != nil {
		return err
	}
	if f.token == "" {
		f.token = e.getenv("MAILROOM_TOKEN")
	}
	if !f.embedded {
		// An embedded daemon serves plain HTTP on loopback: a
		// MAILROOM_CA_FILE set for every command is not for it.
		var err error
		if f.tlsConfig, err = f.tls.config(); err != nil {
			return err
		}
	}
	if f.embedded {
		tuneGC(e.getenv)
		tuneProcs(e.getenv, true)
	}
	// The progress lines and the retry notices of every pair share stderr.
	return f.mode().run(ctx, e, &f, syncwriter.New(e.stderr))
}

// benchFlags are bench's flags as parsed; set names those the command
// line gave.
type benchFlags struct {
	addr, token, dir, via, binding, a2aAddr               string
	embedded, fanoutOnly, pipeline, remote, a2aPath, json bool
	pairs, payload, fanout, batch, idle, rounds           int
	duration, wait                                        time.Duration
	rate                                                  float64
	set                                                   map[string]bool
	// tls is --ca-file, --cert and --key; tlsConfig what they read.
	tls       *tlsFlags
	tlsConfig *tls.Config
}

func (f *benchFlags) bind(fs *verbFlags, e *env) {
	f.addr = e.getenv("MAILROOM_ADDR")
	if f.addr == "" {
		f.addr = defaultAddr
	}
	fs.StringVar(&f.addr, "addr", f.addr, "daemon address, host:port or URL (env MAILROOM_ADDR)")
	fs.StringVar(&f.token, "token", "", "bearer token for the daemon (env MAILROOM_TOKEN)")
	f.tls = addTLSFlags(fs, e)
	fs.BoolVar(&f.embedded, "embedded", false, "start a daemon in this process (temporary data dir, default durability) instead of using --addr")
	fs.StringVar(&f.dir, "dir", "", "with --embedded: make the temporary data dir inside DIR, to measure that disk (default: the system temp dir)")
	fs.IntVar(&f.pairs, "pairs", bench.DefaultPairs, "sender/recipient pairs running cycles concurrently")
	fs.DurationVar(&f.duration, "duration", bench.DefaultDuration, "how long to start new cycles")
	fs.IntVar(&f.payload, "payload-bytes", bench.DefaultPayloadBytes, "size of each task's intent_text in bytes")
	fs.IntVar(&f.fanout, "fanout", 0, "event-stream subscribers (like consoles) connected during the run")
	fs.BoolVar(&f.fanoutOnly, "fanout-only", false, "with --fanout and --addr: run only the subscribers, for --duration, while another process (another mailroom bench) loads the daemon; reports their delivery latency and whether each got every event once")
	fs.Float64Var(&f.rate, "rate", 0, "start at most this many cycles per second in all (0: as fast as the daemon answers); a cycle is 4 events")
	fs.BoolVar(&f.pipeline, "pipeline", false, "let each pair send its next task while the previous cycle is still in flight (at most two cycles per pair)")
	fs.IntVar(&f.batch, "batch", 1, "tasks per request: each pair sends B tasks in one request, leases and drains up to B a request and posts B results in one (cycles counted per task; the cycle latency is a round's)")
	fs.DurationVar(&f.wait, "wait", 0, "with --batch: how long leases and drains long-poll for work not there yet (at most 20s)")
	fs.IntVar(&f.idle, "idle-workers", 0, "measure long polls instead: K workers wait on empty queues (for --wait, default 20s); reports their requests/s while idle and the delay from a send to a waiting worker's lease")
	fs.BoolVar(&f.remote, "remote", false, "measure remote delivery instead: --pairs senders send tasks to a remote agent (an A2A server in this process that answers at once) through the daemon, alternating with as many callers calling that server with the same client through a plain reverse proxy, and directly; --duration is each way's time in all")
	fs.StringVar(&f.via, "via", bench.ViaA2A, "with --remote: how the senders reach the remote agent: a2a (an A2A client's blocking message/send to the agent's card on the daemon, the client the other ways use) or native (send, then a long-polled drain)")
	fs.BoolVar(&f.a2aPath, "a2a", false, "measure the A2A path instead: --pairs A2A callers send blocking messages to a registered agent's card on the daemon, whose native workers answer at once, alternating with as many calling an A2A server in this process that answers at once; --duration is each way's time in all")
	fs.StringVar(&f.binding, "binding", mailbox.BindingJSONRPC03, "with --a2a: the callers' binding to the daemon's edge: jsonrpc-0.3 or http+json-1.0")
	fs.IntVar(&f.rounds, "rounds", bench.DefaultRounds, "with --remote or --a2a: how many rounds each way's --duration is split in (the ways alternate)")
	fs.StringVar(&f.a2aAddr, "a2a-addr", "127.0.0.1:0", "with --remote: where the in-process A2A server listens (the daemon must reach it there)")
	fs.BoolVar(&f.json, "json", false, "print one JSON object with every figure")
}

// benchMode is one thing bench measures: whether the flags ask for it,
// the flags it refuses beside it, and its run. Cycles (plain, pipelined
// or batched) are measured when no other mode is asked for.
type benchMode struct {
	asked func(f *benchFlags) bool
	check func(f *benchFlags) error
	run   func(ctx context.Context, e *env, f *benchFlags, progress io.Writer) error
}

// benchModes are checked in this order, between the checks every mode
// shares (check), so a command line with two mistakes is refused for the
// same one whichever mode it asks for.
var benchModes = []benchMode{
	{asked: func(f *benchFlags) bool { return f.fanoutOnly }, check: (*benchFlags).checkFanoutOnly, run: runBenchCycles},
	{asked: func(f *benchFlags) bool { return f.idle > 0 }, check: (*benchFlags).checkIdle, run: runBenchCycles},
	{asked: func(f *benchFlags) bool { return f.remote }, check: (*benchFlags).checkRemote, run: runBenchRemote},
	{asked: func(f *benchFlags) bool { return f.a2aPath }, check: (*benchFlags).checkA2A, run: runBenchA2A},
}

// mode is the one mode the flags ask for; check refused two.
func (f *benchFlags) mode() benchMode {
	for _, m := range benchModes {
		if m.asked(f) {
			return m
		}
	}
	return benchMode{run: runBenchCycles}
}

// check refuses what no mode can run, then what each mode asked for
// refuses beside it, then the ways' flags.
func (f *benchFlags) check() error {
	if err := f.checkTarget(); err != nil {
		return err
	}
	if err := f.checkLoad(); err != nil {
		return err
	}
	for _, m := range benchModes {
		if m.asked(f) {
			if err := m.check(f); err != nil {
				return err
			}
		}
	}
	if err := f.checkBinding(); err != nil {
		return err
	}
	return f.checkRounds()
}

func (f *benchFlags) checkTarget() error {
	switch {
	case f.embedded && f.set["addr"]:
		return usagef("--addr and --embedded: give one, not both")
	case f.dir != "" && !f.embedded:
		return usagef("--dir %q: only an --embedded daemon has a data dir to place; a daemon at an address keeps its own", f.dir)
	case f.embedded && (f.set["ca-file"] || f.set["cert"] || f.set["key"]):
		return usagef("--ca-file, --cert and --key are for a daemon at --addr that serves TLS; an --embedded daemon serves plain HTTP on loopback")
	}
	return nil
}

// checkLoad checks the numbers that size the load, whatever the mode.
func (f *benchFlags) checkLoad() error {
	switch {
	case f.pairs < 1:
		return usagef("--pairs: got %d, expected at least 1", f.pairs)
	case f.duration <= 0:
		return usagef("--duration: got %s, expected a positive duration such as 10s", f.duration)
	case f.payload < 1:
		return usagef("--payload-bytes: got %d, expected at least 1 (the daemon refuses an empty intent)", f.payload)
	case f.payload > 512<<10:
		return usagef("--payload-bytes: got %d, expected at most %d (a request body may hold 1 MiB)", f.payload, 512<<10)
	case f.fanout < 0:
		return usagef("--fanout: got %d, expected 0 or more", f.fanout)
	case f.rate < 0:
		return usagef("--rate: got %g, expected 0 (unlimited) or more", f.rate)
	case f.batch < 1 || f.batch > mailbox.MaxBatch:
		return usagef("--batch: got %d, expected 1 to %d", f.batch, mailbox.MaxBatch)
	case f.batch > 1 && f.pipeline:
		return usagef("--batch and --pipeline: choose one; a batched round already keeps many cycles in flight")
	case f.wait < 0 || f.wait > 20*time.Second:
		return usagef("--wait: got %s, expected 0 to 20s", f.wait)
	case f.set["wait"] && f.batch == 1 && f.idle == 0:
		return usagef("--wait: only batched rounds (--batch 2 or more) and --idle-workers long-poll")
	case f.idle < 0:
		return usagef("--idle-workers: got %d, expected 0 or more", f.idle)
	}
	return nil
}

func (f *benchFlags) checkFanoutOnly() error {
	switch {
	case f.fanout == 0:
		return usagef("--fanout-only: give --fanout K, the subscribers to run")
	case f.embedded:
		return usagef("--fanout-only and --embedded: the subscribers measure a daemon at --addr loaded by another process; an embedded daemon has no load")
	case f.set["pairs"] || f.batch > 1 || f.pipeline || f.rate > 0 || f.idle > 0 || f.remote || f.set["wait"] || f.set["payload-bytes"]:
		return usagef("--fanout-only runs no load of its own; drop --pairs, --batch, --wait, --pipeline, --rate, --payload-bytes, --idle-workers and --remote (run the load as another mailroom bench)")
	}
	return nil
}

func (f *benchFlags) checkIdle() error {
	if f.batch > 1 || f.pipeline || f.fanout > 0 {
		return usagef("--idle-workers measures long polls alone; drop --batch, --pipeline and --fanout")
	}
	return nil
}

func (f *benchFlags) checkRemote() error {
	switch {
	case f.batch > 1 || f.pipeline || f.fanout > 0 || f.rate > 0 || f.idle > 0 || f.set["wait"]:
		return usagef("--remote measures remote delivery alone; drop --batch, --wait, --pipeline, --fanout, --rate and --idle-workers")
	case f.pairs > mailbox.MaxRemoteConcurrency:
		return usagef("--pairs: got %d with --remote, expected at most %d (the remote agent's concurrency is sized to the senders)", f.pairs, mailbox.MaxRemoteConcurrency)
	}
	return nil
}

func (f *benchFlags) checkA2A() error {
	switch {
	case f.remote:
		return usagef("--a2a and --remote: choose one (--a2a: callers to an agent whose workers lease natively; --remote: to a remote A2A agent)")
	case f.batch > 1 || f.pipeline || f.fanout > 0 || f.rate > 0 || f.idle > 0 || f.set["wait"] || f.set["via"] || f.set["a2a-addr"]:
		return usagef("--a2a measures the A2A path alone; drop --batch, --wait, --pipeline, --fanout, --rate, --idle-workers, --via and --a2a-addr")
	}
	return nil
}

func (f *benchFlags) checkBinding() error {
	switch {
	case !f.a2aPath && f.set["binding"]:
		return usagef("--binding: only --a2a's callers choose a binding")
	case f.binding != mailbox.BindingJSONRPC03 && f.binding != mailbox.BindingHTTPJSON10:
		return usagef("--binding: got %q, expected jsonrpc-0.3 or http+json-1.0", f.binding)
	}
	return nil
}

// checkRounds checks the flags of the modes that run ways in rounds
// (--remote, --a2a).
func (f *benchFlags) checkRounds() error {
	switch {
	case !f.remote && !f.a2aPath && f.set["rounds"]:
		return usagef("--rounds: only --remote and --a2a run ways in rounds")
	case !f.remote && (f.set["a2a-addr"] || f.set["via"]):
		return usagef("--via and --a2a-addr: only --remote has senders that choose a way in and an A2A server the daemon reaches")
	case f.via != bench.ViaA2A && f.via != bench.ViaNative:
		return usagef("--via: got %q, expected a2a or native", f.via)
	case f.rounds < 1:
		return usagef("--rounds: got %d, expected at least 1", f.rounds)
	case f.remote && f.duration < time.Duration(f.rounds)*time.Millisecond:
		return usagef("--duration: got %s for %d rounds, expected at least 1ms a round", f.duration, f.rounds)
	}
	return nil
}

// runBenchCycles measures cycles, long polls (--idle-workers) or, with
// --fanout-only, only the subscribers: bench.Run tells them apart.
func runBenchCycles(ctx context.Context, e *env, f *benchFlags, progress io.Writer) error {
	opts := bench.Options{Token: f.token, TLS: f.tlsConfig, Pairs: f.pairs, Duration: f.duration,
		PayloadBytes: f.payload, Fanout: f.fanout, FanoutOnly: f.fanoutOnly, Rate: f.rate, Pipeline: f.pipeline, Batch: f.batch, Wait: f.wait, IdleWorkers: f.idle, Progress: progress,
		RetryNotice: func(reason string) { fmt.Fprintf(progress, "mailroom bench: %s; retrying\n", reason) }}
	var rep bench.Report
	var err error
	if f.embedded {
		rep, err = benchEmbedded(ctx, f.dir, opts)
	} else {
		opts.Addr = f.addr
		rep, err = bench.Run(ctx, opts)
	}
	if err != nil {
		return err
	}
	return printReport(e, f.json, rep, printBench)
}

func runBenchRemote(ctx context.Context, e *env, f *benchFlags, progress io.Writer) error {
	opts := bench.RemoteOptions{WaysOptions: f.ways(progress), Via: f.via, A2AAddr: f.a2aAddr}
	rep, err := benchRemote(ctx, f.embedded, f.dir, opts)
	if err != nil {
		return err
	}
	return printReport(e, f.json, rep, printBenchRemote)
}

func runBenchA2A(ctx context.Context, e *env, f *benchFlags, progress io.Writer) error {
	opts := bench.A2AOptions{WaysOptions: f.ways(progress), Binding: f.binding}
	rep, err := benchA2A(ctx, f.embedded, f.dir, opts)
	if err != nil {
		return err
	}
	return printReport(e, f.json, rep, printBenchA2A)
}

// ways are the options --remote and --a2a share.
func (f *benchFlags) ways(progress io.Writer) bench.WaysOptions {
	return bench.WaysOptions{Addr: f.addr, Token: f.token, TLS: f.tlsConfig, Senders: f.pairs, Duration: f.duration, Rounds: f.rounds,
		PayloadBytes: f.payload, Progress: progress}
}

// printReport prints rep as one JSON object, or for a reader.
func printReport[R any](e *env, asJSON bool, rep R, print func(io.Writer, R)) error {
	if asJSON {
		return writeJSON(e.stdout, rep)
	}
	print(e.stdout, rep)
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
