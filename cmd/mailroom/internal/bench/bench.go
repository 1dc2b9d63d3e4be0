// Package bench measures a mailroom daemon the way agents use it: N
// sender/recipient pairs run full cycles over HTTP (send a task, lease it as
// the recipient, post its result under the lease, drain the result as the
// sender) while optional console-like subscribers follow the event stream.
//
// Every figure is honest: a cycle counts only when all four requests got a
// 2xx answer (which the daemon gives only once the event is fsynced) and
// the lease and the drain returned the very task the pair sent. Throughput
// is divided by the time the load really ran, including the cycles still
// in flight when the duration ended.
package bench

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/mailbox"
)

// Defaults for the zero Options.
const (
	DefaultPairs        = 16
	DefaultDuration     = 10 * time.Second
	DefaultPayloadBytes = 64
)

// Options say what to measure. The bench is a client only: it measures the
// daemon at Addr, whoever started it.
type Options struct {
	// Addr is the daemon to measure: host:port or a URL.
	Addr string
	// Embedded says the daemon at Addr runs in the caller's process
	// (`mailroom bench --embedded` starts one): the report names its target
	// "embedded" and carries DataFS, VolatileLog and Warnings, what the
	// caller found out about the disk its log is on (Report's fields).
	Embedded    bool
	DataFS      string
	VolatileLog bool
	Warnings    []string
	// Token is sent as a bearer token.
	Token string
	// TLS, when set, is the TLS to the daemon (client.TLSFiles): every
	// transport of the run carries it, and a host:port Addr is https.
	// Each pair keeps its own HTTP/1.1 connection, as over plain HTTP, so
	// the two compare TLS alone.
	TLS *tls.Config
	// Pairs is how many sender/recipient pairs run cycles concurrently.
	Pairs int
	// Duration is how long new cycles are started.
	Duration time.Duration
	// Cycles, when above 0, ends the run once this many cycles have been
	// started, even before Duration has passed: a run of a known size.
	Cycles int
	// PayloadBytes is the size of each task's intent_text.
	PayloadBytes int
	// Rate caps the cycles started per second across all pairs; 0 runs as
	// fast as the daemon answers. Fan-out is measured at a given event rate
	// (4 events per cycle), not at whatever the pairs manage.
	Rate float64
	// Pipeline lets each pair keep a second cycle in flight: the sender
	// sends the next task while the previous one is being worked on or
	// drained. Off, each pair runs one cycle at a time.
	Pipeline bool
	// Batch, above 1, runs rounds instead of cycles: each pair sends Batch
	// tasks in one request, leases and drains up to Batch a request, and
	// posts Batch results in one request; cycles are counted per task and
	// the cycle latency is the round's.
	Batch int
	// Wait is how long a batched round's leases and drains long-poll when
	// nothing is there yet.
	Wait time.Duration
	// IdleWorkers, above 0, measures long polls instead of cycles: this
	// many workers long-poll (for Wait, default 20s) on empty queues for
	// half the duration, then tasks are sent one at a time to random
	// waiting workers (see LongPollReport).
	IdleWorkers int
	// Fanout connects this many event-stream subscribers for the run.
	Fanout int
	// FanoutOnly runs the subscribers alone for Duration, with no load of
	// its own: the load comes from elsewhere (another `mailroom bench`),
	// so the figures are the daemon's, not shared with a load in the
	// same process.
	FanoutOnly bool
	// Progress, when set, gets one line a second while the load runs.
	Progress io.Writer
	// RetryNotice, when set, is told each time the client sends a request
	// again by itself (a shared mailbox's lead changed; client.WithRetryNotice),
	// from the goroutines running the load.
	RetryNotice func(reason string)
}

func (o *Options) fill() error {
	if o.Pairs == 0 {
		o.Pairs = DefaultPairs
	}
	if o.Duration == 0 {
		o.Duration = DefaultDuration
	}
	if o.PayloadBytes == 0 {
		o.PayloadBytes = DefaultPayloadBytes
	}
	if err := checkTarget(o.Addr, o.Embedded, o.DataFS, o.VolatileLog, o.Warnings); err != nil {
		return err
	}
	switch {
	case o.Pairs < 1:
		return fmt.Errorf("bench: pairs: got %d, expected at least 1", o.Pairs)
	case o.Duration < 0:
		return fmt.Errorf("bench: duration: got %s, expected a positive duration", o.Duration)
	case o.Cycles < 0:
		return fmt.Errorf("bench: cycles: got %d, expected 0 (no limit) or more", o.Cycles)
	case o.PayloadBytes < 1:
		// The daemon refuses an empty intent_text.
		return fmt.Errorf("bench: payload bytes: got %d, expected at least 1", o.PayloadBytes)
	case o.Rate < 0:
		return fmt.Errorf("bench: rate: got %g, expected 0 (unlimited) or more", o.Rate)
	case o.Fanout < 0:
		return fmt.Errorf("bench: fanout: got %d, expected 0 or more", o.Fanout)
	case o.FanoutOnly && o.Fanout == 0:
		return errors.New("bench: fanout only: without subscribers (fanout 0) there is nothing to measure")
	case o.FanoutOnly && o.Embedded:
		return errors.New("bench: fanout only measures a daemon at an address, with its load from another process; an embedded daemon has no load")
	case o.Batch < 0 || o.Batch > mailbox.MaxBatch:
		return fmt.Errorf("bench: batch: got %d, expected 1 to %d", o.Batch, mailbox.MaxBatch)
	case o.Batch > 1 && o.Pipeline:
		return errors.New("bench: batch and pipeline: choose one (a round already keeps many cycles in flight)")
	case o.IdleWorkers < 0:
		return fmt.Errorf("bench: idle workers: got %d, expected 0 or more", o.IdleWorkers)
	case o.Wait < 0 || o.Wait > time.Duration(mailbox.MaxWaitMs)*time.Millisecond:
		return fmt.Errorf("bench: wait: got %s, expected 0 to 20s", o.Wait)
	}
	return nil
}

// Report is what one run measured. Its JSON keys are documented in
// cmd/mailroom/bench.go and are a contract for scripts.
type Report struct {
	Kind         string  `json:"kind"` // "mailroom_bench"
	Target       string  `json:"target"`
	Embedded     bool    `json:"embedded"`
	Pairs        int     `json:"pairs"`
	DurationS    float64 `json:"duration_s"` // asked for
	ElapsedS     float64 `json:"elapsed_s"`  // the load really ran
	PayloadBytes int     `json:"payload_bytes"`
	RateLimit    float64 `json:"rate_limit"` // cycles/s cap, 0 = none
	Pipeline     bool    `json:"pipeline"`   // pairs kept a second cycle in flight
	// Batch is the tasks per request of a batched run (1: one task per
	// request); Latency.Cycle is then a round's. WaitMs is its long poll.
	Batch  int   `json:"batch"`
	WaitMs int64 `json:"wait_ms"`
	// DataFS is the filesystem the embedded daemon's log was on, such as
	// "ext4" or "tmpfs"; "" for a daemon at an address.
	DataFS string `json:"data_fs"`
	// VolatileLog is true when DataFS keeps its files in memory only
	// (tmpfs): the cycles were synced, but to no disk.
	VolatileLog bool `json:"volatile_log"`
	// Warnings say why figures may not mean what they seem, such as a log
	// on a filesystem whose syncs reach no disk.
	Warnings []string `json:"warnings"`

	Cycles       uint64  `json:"cycles"`
	CyclesPerS   float64 `json:"cycles_per_s"`
	Requests     uint64  `json:"requests"`
	RequestsPerS float64 `json:"requests_per_s"`
	// Latency per step and per whole cycle, over completed requests only.
	Latency StepLatency `json:"latency"`
	// Errors counts failures by "step: kind", such as "lease: unavailable"
	// or "drain: wrong_task"; ErrorsTotal is their sum.
	Errors      map[string]uint64 `json:"errors"`
	ErrorsTotal uint64            `json:"errors_total"`
	Daemon      DaemonFigures     `json:"daemon"`
	Fanout      *FanoutReport     `json:"fanout"` // null without --fanout
	// LongPoll is the long-poll run of --idle-workers (null otherwise).
	LongPoll *LongPollReport `json:"long_poll"`
}

// StepLatency is one Latency per step of a cycle and for the whole cycle.
type StepLatency struct {
	Send   Latency `json:"send"`
	Lease  Latency `json:"lease"`
	Result Latency `json:"result"`
	Drain  Latency `json:"drain"`
	Cycle  Latency `json:"cycle"`
}

// ReportKind is Report.Kind.
const ReportKind = "mailroom_bench"

// Run measures until opts.Duration has passed, opts.Cycles have been
// started, or ctx ends, and reports.
// It returns an error only when it could not measure at all: the daemon
// unreachable at the start or subscribers that never connect. Failed requests during the run are
// counted in Report.Errors.
func Run(ctx context.Context, opts Options) (Report, error) {
	if err := opts.fill(); err != nil {
		return Report{}, err
	}
	target, warnings := opts.Addr, opts.Warnings
	if opts.Embedded {
		target = "embedded"
	}
	if warnings == nil {
		warnings = []string{}
	}
	hc, c, err := opts.connect()
	if err != nil {
		return Report{}, err
	}
	defer hc.CloseIdleConnections()

	var subs *fanout
	if opts.Fanout > 0 {
		if subs, err = startFanout(ctx, c, opts.Token, opts.TLS, opts.Fanout); err != nil {
			return Report{}, err
		}
		defer subs.stop()
	}
	before, err := scrapeMetrics(ctx, c)
	if err != nil {
		return Report{}, err
	}
	if opts.FanoutOnly {
		return runFanoutOnly(ctx, c, opts, subs, before, target, warnings)
	}
	if opts.IdleWorkers > 0 {
		lp := runLongPoll(ctx, c, opts)
		after, err := scrapeMetrics(context.WithoutCancel(ctx), c)
		if err != nil {
			return Report{}, err
		}
		return Report{Kind: ReportKind, Target: target, Embedded: opts.Embedded, DurationS: opts.Duration.Seconds(),
			DataFS: opts.DataFS, VolatileLog: opts.VolatileLog, Warnings: warnings, Errors: map[string]uint64{},
			Daemon: daemonDelta(before, after), WaitMs: lp.WaitMs, Batch: 1, LongPoll: &lp}, nil
	}
	res := runLoad(ctx, c, opts)
	// The answers the load got were sent after their events were durable,
	// so this scrape counts every event of the run.
	after, err := scrapeMetrics(context.WithoutCancel(ctx), c)
	if err != nil {
		return Report{}, err
	}

	rep := opts.loadReport(res, daemonDelta(before, after), target, warnings)
	if subs != nil {
		fr := subs.finish(rep.Daemon.LastSeq)
		if s := res.elapsed.Seconds(); s > 0 {
			fr.EventsPerS = float64(rep.Daemon.EventsAppended) / s
		}
		rep.Fanout = &fr
	}
	return rep, nil
}

// connect makes the run's client: one keep-alive connection per pair and
// per subscriber (the default of 2 idle connections per host would make
// most requests dial anew). Close the http.Client's idle connections when
// done.
func (o *Options) connect() (*http.Client, *client.Client, error) {
	hc := &http.Client{Transport: &http.Transport{
		MaxIdleConns:        0,
		MaxIdleConnsPerHost: o.Pairs + o.Fanout + o.IdleWorkers + 4,
		IdleConnTimeout:     90 * time.Second,
		TLSClientConfig:     o.TLS,
	}}
	copts := []client.Option{client.WithHTTPClient(hc), client.WithTimeout(30 * time.Second)}
	if o.Token != "" {
		copts = append(copts, client.WithToken(o.Token))
	}
	if o.TLS != nil {
		copts = append(copts, client.WithTLS(o.TLS))
	}
	if o.RetryNotice != nil {
		copts = append(copts, client.WithRetryNotice(o.RetryNotice))
	}
	c, err := client.New(o.Addr, copts...)
	if err != nil {
		hc.CloseIdleConnections()
		return nil, nil, err
	}
	return hc, c, nil
}

// loadReport is the report of a load run: its figures, and the daemon's
// over the run.
func (o *Options) loadReport(res loadResult, daemon DaemonFigures, target string, warnings []string) Report {
	rep := Report{
		Kind: ReportKind, Target: target, Embedded: o.Embedded, Pairs: o.Pairs,
		DurationS: o.Duration.Seconds(), ElapsedS: res.elapsed.Seconds(),
		PayloadBytes: o.PayloadBytes, RateLimit: o.Rate, Pipeline: o.Pipeline, Batch: max(o.Batch, 1), WaitMs: o.Wait.Milliseconds(),
		DataFS: o.DataFS, VolatileLog: o.VolatileLog, Warnings: warnings,
		Cycles: res.cycles, Requests: res.requests,
		Latency: StepLatency{Send: res.send.summarize(), Lease: res.lease.summarize(),
			Result: res.result.summarize(), Drain: res.drain.summarize(), Cycle: res.cycle.summarize()},
		Errors: res.errors,
		Daemon: daemon,
	}
	for _, n := range res.errors {
		rep.ErrorsTotal += n
	}
	if s := res.elapsed.Seconds(); s > 0 {
		rep.CyclesPerS = float64(res.cycles) / s
		rep.RequestsPerS = float64(res.requests) / s
	}
	return rep
}
