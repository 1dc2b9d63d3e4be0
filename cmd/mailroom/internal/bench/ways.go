package bench

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/a2a/remote"
)

// The benches that compare ways to the same A2A work (--remote, --a2a)
// share their options, their report's header and how they run: each way
// in turn for a round, round after round, so that the noise of a shared
// machine falls on every way alike.

// WaysOptions are what every ways bench is told.
type WaysOptions struct {
	// Addr, Embedded, DataFS, VolatileLog, Warnings, Token and TLS are as
	// in Options.
	Addr        string
	Embedded    bool
	DataFS      string
	VolatileLog bool
	Warnings    []string
	Token       string
	TLS         *tls.Config
	// Senders is how many callers run at once, each way.
	Senders int
	// Duration is how long each way is measured in all, split in Rounds
	// rounds that alternate with the other ways'.
	Duration time.Duration
	Rounds   int
	// PayloadBytes is the size of each task's text.
	PayloadBytes int
	// Progress, when set, gets a line at the end of each round.
	Progress io.Writer
}

func (o *WaysOptions) fill() error {
	if o.Senders == 0 {
		o.Senders = DefaultPairs
	}
	if o.Duration == 0 {
		o.Duration = DefaultDuration
	}
	if o.Rounds == 0 {
		o.Rounds = DefaultRounds
	}
	if o.PayloadBytes == 0 {
		o.PayloadBytes = DefaultPayloadBytes
	}
	if err := checkTarget(o.Addr, o.Embedded, o.DataFS, o.VolatileLog, o.Warnings); err != nil {
		return err
	}
	switch {
	case o.Senders < 1:
		return fmt.Errorf("bench: senders: got %d, expected at least 1", o.Senders)
	case o.Duration < 0:
		return fmt.Errorf("bench: duration: got %s, expected a positive duration", o.Duration)
	case o.Rounds < 1:
		return fmt.Errorf("bench: rounds: got %d, expected at least 1", o.Rounds)
	case o.PayloadBytes < 1:
		return fmt.Errorf("bench: payload bytes: got %d, expected at least 1", o.PayloadBytes)
	}
	return nil
}

// WaysResults is what every ways report ends with.
type WaysResults struct {
	// PerRound is each round in the order run.
	PerRound []RoundFigures `json:"per_round"`
	// Durable is the check, after the run, that the daemon's log holds
	// every task completed through it.
	Durable DurableCheck `json:"durable"`
	// Errors counts failures by "way step: kind", such as "remote drain:
	// empty" or "direct send: transport"; ErrorsTotal is their sum.
	Errors      map[string]uint64 `json:"errors"`
	ErrorsTotal uint64            `json:"errors_total"`
	// Daemon is the daemon's counters over the whole run (the ways that
	// do not go through it append nothing).
	Daemon DaemonFigures `json:"daemon"`
	// EventsPerTask is Daemon.EventsAppended over the tasks completed
	// through the daemon.
	EventsPerTask float64 `json:"events_per_task"`
}

// checkTarget refuses a run without a daemon, or one that describes the
// log of a daemon it did not start.
func checkTarget(addr string, embedded bool, dataFS string, volatile bool, warnings []string) error {
	switch {
	case addr == "":
		return errors.New("bench: Addr: the daemon to measure is missing")
	case !embedded && (dataFS != "" || volatile || len(warnings) != 0):
		return errors.New("bench: DataFS, VolatileLog and Warnings describe an embedded daemon only")
	}
	return nil
}

// WaysHeader is what every ways report starts with.
type WaysHeader struct {
	Kind         string   `json:"kind"`
	Target       string   `json:"target"`
	Embedded     bool     `json:"embedded"`
	DataFS       string   `json:"data_fs"`
	VolatileLog  bool     `json:"volatile_log"`
	Warnings     []string `json:"warnings"`
	Senders      int      `json:"senders"`
	DurationS    float64  `json:"duration_s"` // asked for, each way
	Rounds       int      `json:"rounds"`
	PayloadBytes int      `json:"payload_bytes"`
}

func (o *WaysOptions) header(kind string) WaysHeader {
	target := o.Addr
	if o.Embedded {
		target = "embedded"
	}
	warnings := o.Warnings
	if warnings == nil {
		warnings = []string{}
	}
	return WaysHeader{Kind: kind, Target: target, Embedded: o.Embedded, DataFS: o.DataFS, VolatileLog: o.VolatileLog, Warnings: warnings,
		Senders: o.Senders, DurationS: o.Duration.Seconds(), Rounds: o.Rounds, PayloadBytes: o.PayloadBytes}
}

// connect makes the run's HTTP client, keeping idle connections per
// host, and the daemon's client over it.
func (o *WaysOptions) connect(idle int) (*http.Client, *client.Client, error) {
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: idle, IdleConnTimeout: 90 * time.Second, TLSClientConfig: o.TLS}}
	copts := []client.Option{client.WithHTTPClient(hc), client.WithTimeout(30 * time.Second)}
	if o.Token != "" {
		copts = append(copts, client.WithToken(o.Token))
	}
	if o.TLS != nil {
		copts = append(copts, client.WithTLS(o.TLS))
	}
	c, err := client.New(o.Addr, copts...)
	if err != nil {
		return nil, nil, err
	}
	return hc, c, nil
}

// resolveA2A reads the card at u with the outbound client, to call what
// it describes in binding.
func resolveA2A(ctx context.Context, hc *http.Client, what, u, binding, bearer string) (*remote.Client, error) {
	r, _, err := remote.Resolve(ctx, hc, remote.Spec{URL: u, Binding: binding}, remote.Auth{Bearer: bearer})
	if err != nil {
		return nil, fmt.Errorf("bench: the outbound client cannot resolve %s at %s: %w", what, u, err)
	}
	return r, nil
}

// way is one way a ways bench measures: its callers, one task at a time
// each, and the figures it adds up to.
type way struct {
	name    string
	callers []func(context.Context) bool
	figures *WayFigures
}

// runWays runs the ways in turn for a round each, o.Rounds times, and
// returns the rounds in the order run; conns counts the connections the
// server in this process accepted.
func runWays(ctx context.Context, o *WaysOptions, ways []way, conns *atomic.Uint64) []RoundFigures {
	var rounds []RoundFigures
	per := o.Duration / time.Duration(o.Rounds)
	for round := 1; round <= o.Rounds && ctx.Err() == nil; round++ {
		for _, w := range ways {
			dialed := conns.Load()
			tasks, elapsed := runRound(ctx, w.callers, per)
			rf := RoundFigures{Way: w.name, Tasks: tasks, ElapsedS: elapsed.Seconds(), Connections: conns.Load() - dialed}
			if s := elapsed.Seconds(); s > 0 {
				rf.TasksPerS = float64(tasks) / s
			}
			rounds = append(rounds, rf)
			w.figures.Tasks += tasks
			w.figures.ElapsedS += elapsed.Seconds()
			w.figures.Connections += rf.Connections
			if o.Progress != nil {
				fmt.Fprintf(o.Progress, "bench: round %d/%d %-8s %8d tasks  %8.0f tasks/s\n", round, o.Rounds, w.name, tasks, rf.TasksPerS)
			}
		}
	}
	for _, w := range ways {
		if w.figures.ElapsedS > 0 {
			w.figures.TasksPerS = float64(w.figures.Tasks) / w.figures.ElapsedS
		}
	}
	return rounds
}

// tasksOf are the callers' task functions.
func tasksOf(cs []*a2aCaller) []func(context.Context) bool {
	out := make([]func(context.Context) bool, len(cs))
	for i, c := range cs {
		out[i] = c.task
	}
	return out
}

// latencyOf summarizes the callers' latencies and adds their errors to
// errs under way's name; done collects the tasks they completed.
func latencyOf(way string, cs []*a2aCaller, errs map[string]uint64, done *[]string) Latency {
	var all samples
	for _, c := range cs {
		all = append(all, c.latency...)
		for k, n := range c.errors {
			errs[way+" "+k] += n
		}
		if done != nil {
			*done = append(*done, c.done...)
		}
	}
	return all.summarize()
}

// serveA2A starts the A2A server that answers at once (NewA2AServer) on
// addr, counting the connections it accepts in conns: how well each way's
// client reuses them, counted per round. stop closes it. An error is
// the listener's.
func serveA2A(addr string, conns *atomic.Uint64) (a2aURL string, stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: NewA2AServer(), ReadHeaderTimeout: 10 * time.Second, ConnState: func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}}
	go srv.Serve(ln)
	return "http://" + ln.Addr().String() + "/", func() { srv.Close() }, nil
}

// settle completes the results once the rounds are run: the errors'
// total, the daemon's counters since before, the events per task of the
// tasks completed through it, and the check that its log holds every one
// of done.
func (r *WaysResults) settle(ctx context.Context, c *client.Client, before scrape, tasks uint64, tlog *taskLog, done []string) error {
	for _, n := range r.Errors {
		r.ErrorsTotal += n
	}
	after, err := scrapeMetrics(context.WithoutCancel(ctx), c)
	if err != nil {
		return err
	}
	r.Daemon = daemonDelta(before, after)
	if tasks > 0 {
		r.EventsPerTask = float64(r.Daemon.EventsAppended) / float64(tasks)
	}
	r.Durable = tlog.check(r.Daemon.LastSeq, done)
	return nil
}
