package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/a2a/remote"
	"github.com/mailroom/mailroom/mailbox"
)

// The remote bench (`mailroom bench --remote`): senders send tasks to a
// remote agent, whose tasks the daemon's dispatcher leases, delivers to an
// A2A server in this process (A2AServer: it answers at once), and posts
// the answers of. By default the senders are A2A clients (remote.Client, a
// blocking message/send) calling the remote agent's card on the daemon's
// A2A edge: what a caller does once Mailroom is put in front of an
// existing A2A agent. With Via "native" they send natively and drain the
// results. In the same run, as many callers call the same server with the
// same client twice more: directly, and through a plain reverse proxy in
// this process (net/http/httputil), the floor of any hop put in front of
// the server on this machine. The ways alternate, round by round, so
// that the noise of a shared machine falls on all three; the ratio of
// their tasks/s is what the daemon's durable path costs a remote agent's
// callers.

// RemoteReportKind is RemoteReport.Kind.
const RemoteReportKind = "mailroom_bench_remote"

// DefaultRounds is how many rounds each way is measured in.
const DefaultRounds = 3

// How the senders reach the remote agent (RemoteOptions.Via).
const (
	ViaA2A    = "a2a"    // the daemon's A2A edge, with the direct callers' client
	ViaNative = "native" // native send, then a long-polled drain
)

// The ways a remote bench measures, in the order each round runs them.
const (
	WayRemote = "remote" // through the daemon
	WayRelay  = "relay"  // through a reverse proxy that keeps nothing
	WayDirect = "direct" // the server itself
)

// RemoteOptions say what the remote bench measures; Senders (and the
// remote agent's concurrency) is at most mailbox.MaxRemoteConcurrency.
type RemoteOptions struct {
	WaysOptions
	// Via is how the senders reach the remote agent: ViaA2A (the
	// default) or ViaNative.
	Via string
	// A2AAddr is where the A2A server listens ("" is 127.0.0.1:0). The
	// daemon must reach it there.
	A2AAddr string
}

func (o *RemoteOptions) fill() error {
	if o.A2AAddr == "" {
		o.A2AAddr = "127.0.0.1:0"
	}
	if o.Via == "" {
		o.Via = ViaA2A
	}
	if o.Via != ViaA2A && o.Via != ViaNative {
		return fmt.Errorf("bench: via: got %q, expected %q or %q", o.Via, ViaA2A, ViaNative)
	}
	if err := o.WaysOptions.fill(); err != nil {
		return err
	}
	if o.Senders > mailbox.MaxRemoteConcurrency {
		return fmt.Errorf("bench: senders: got %d, expected 1 to %d (a remote agent's concurrency is sized to them)", o.Senders, mailbox.MaxRemoteConcurrency)
	}
	return nil
}

// RemoteReport is what a remote bench measured. Its JSON keys are
// documented in cmd/mailroom/bench.go.
type RemoteReport struct {
	WaysHeader        // Kind "mailroom_bench_remote"
	Via        string `json:"via"` // "a2a" or "native"
	// A2AURL is the in-process A2A server; Agent the remote agent
	// registered for it (deregistered after the run) with Concurrency.
	A2AURL      string `json:"a2a_url"`
	Agent       string `json:"agent"`
	Binding     string `json:"binding"`
	Concurrency int    `json:"concurrency"`

	// Remote is through the daemon, Relay through the reverse proxy,
	// Direct the same server called directly. Ratio is Remote's tasks/s
	// over Direct's, RelayRatio Relay's over Direct's (what a hop that
	// keeps nothing costs on this machine), OfRelay Remote's over Relay's.
	Remote     WayFigures `json:"remote"`
	Relay      WayFigures `json:"relay"`
	Direct     WayFigures `json:"direct"`
	Ratio      float64    `json:"ratio"`
	RelayRatio float64    `json:"relay_ratio"`
	OfRelay    float64    `json:"of_relay"`
	WaysResults
}

// WayFigures are one way's figures over all its rounds: a task counts
// when its answer came back completed ("done"); Latency is per task, from
// its send to its answer returned (or, natively, drained).
type WayFigures struct {
	Tasks     uint64  `json:"tasks"`
	ElapsedS  float64 `json:"elapsed_s"`
	TasksPerS float64 `json:"tasks_per_s"`
	Latency   Latency `json:"latency"`
	// Connections counts the connections the A2A server accepted during
	// the way's rounds: a client that keeps its connections makes about
	// one per concurrent caller; one near Tasks dials for every call.
	Connections uint64 `json:"connections"`
}

// RoundFigures is one round of one way.
type RoundFigures struct {
	Way         string  `json:"way"` // WayRemote, WayRelay or WayDirect
	Tasks       uint64  `json:"tasks"`
	ElapsedS    float64 `json:"elapsed_s"`
	TasksPerS   float64 `json:"tasks_per_s"`
	Connections uint64  `json:"connections"`
}

// resolveTimeout bounds the wait for the dispatcher to read the A2A
// server's card after the agent is registered.
const resolveTimeout = 30 * time.Second

// RunRemote measures both ways and reports. It returns an error only when
// it could not measure: the daemon unreachable, the agent not registered,
// the remote not resolved.
func RunRemote(ctx context.Context, opts RemoteOptions) (RemoteReport, error) {
	if err := opts.fill(); err != nil {
		return RemoteReport{}, err
	}
	var conns atomic.Uint64
	a2aURL, stop, err := serveA2A(opts.A2AAddr, &conns)
	if err != nil {
		return RemoteReport{}, fmt.Errorf("bench: the A2A server cannot listen on %s: %w", opts.A2AAddr, err)
	}
	defer stop()

	hc, c, err := opts.connect(opts.Senders + 4)
	if err != nil {
		return RemoteReport{}, err
	}
	defer hc.CloseIdleConnections()

	run := runID()
	agent := "bench-remote-" + run + "@local"
	if _, err := c.RegisterAgent(ctx, agent, mailbox.AgentCard{Description: "mailroom bench --remote: the A2A server in the bench's process",
		Remote: &mailbox.RemoteSpec{URL: a2aURL, Binding: mailbox.BindingJSONRPC03, Concurrency: opts.Senders}}); err != nil {
		return RemoteReport{}, fmt.Errorf("bench: registering the remote agent %s: %w", agent, err)
	}
	// Deregistered whatever happens: a daemon that lives on would probe
	// a server that is gone.
	defer c.DeregisterAgent(context.WithoutCancel(ctx), agent)
	if err := waitResolved(ctx, c, agent); err != nil {
		return RemoteReport{}, err
	}
	relayURL, stopRelay, err := serveRelay(a2aURL, opts.Senders+4)
	if err != nil {
		return RemoteReport{}, err
	}
	defer stopRelay()
	ways, err := resolveWays(ctx, hc, c, &opts, a2aURL, relayURL, agent)
	if err != nil {
		return RemoteReport{}, err
	}

	before, err := scrapeMetrics(ctx, c)
	if err != nil {
		return RemoteReport{}, err
	}
	tlog := followLog(ctx, hc, c.BaseURL(), opts.Token, agent, uint64(before[metricLastSeq]), seenAll)
	defer tlog.cancel()
	payload := strings.Repeat("x", opts.PayloadBytes)
	senders := make([]*remoteSender, opts.Senders)
	relayed := make([]*a2aCaller, opts.Senders)
	callers := make([]*a2aCaller, opts.Senders)
	for i := range senders {
		senders[i] = &remoteSender{c: c, sender: fmt.Sprintf("bench-rs-%s-%d@local", run, i), agent: agent, payload: payload, errors: map[string]uint64{}}
		if ways.edge != nil {
			senders[i].edge = &a2aCaller{r: ways.edge, payload: payload, errors: senders[i].errors}
		}
		relayed[i] = &a2aCaller{r: ways.relay, payload: payload, errors: map[string]uint64{}}
		callers[i] = &a2aCaller{r: ways.direct, payload: payload, errors: map[string]uint64{}}
	}
	rep := RemoteReport{WaysHeader: opts.header(RemoteReportKind), Via: opts.Via,
		A2AURL: a2aURL, Agent: agent, Binding: mailbox.BindingJSONRPC03, Concurrency: opts.Senders, WaysResults: WaysResults{Errors: map[string]uint64{}}}
	remoteTasks := make([]func(context.Context) bool, len(senders))
	for i, sd := range senders {
		remoteTasks[i] = sd.task
	}
	rep.PerRound = runWays(ctx, &opts.WaysOptions, []way{
		{WayRemote, remoteTasks, &rep.Remote},
		{WayRelay, tasksOf(relayed), &rep.Relay},
		{WayDirect, tasksOf(callers), &rep.Direct},
	}, &conns)
	done := rep.summarize(senders, relayed, callers)
	if err := rep.settle(ctx, c, before, rep.Remote.Tasks, tlog, done); err != nil {
		return RemoteReport{}, err
	}
	return rep, nil
}

// serveRelay starts the relay: a reverse proxy in this process that keeps
// nothing, with a pooled transport of its own to the server. stop closes
// it.
func serveRelay(a2aURL string, idle int) (relayURL string, stop func(), err error) {
	relayLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("bench: the relay cannot listen: %w", err)
	}
	serverURL, _ := url.Parse(a2aURL)
	proxy := httputil.NewSingleHostReverseProxy(serverURL)
	relayTransport := &http.Transport{MaxIdleConnsPerHost: idle, IdleConnTimeout: 90 * time.Second}
	proxy.Transport = relayTransport
	relaySrv := &http.Server{Handler: proxy, ReadHeaderTimeout: 10 * time.Second}
	go relaySrv.Serve(relayLn)
	return "http://" + relayLn.Addr().String() + "/", func() {
		relaySrv.Close()
		relayTransport.CloseIdleConnections()
	}, nil
}

// remoteWays are the callers' outbound clients, the same one the
// dispatcher uses, the card read the same way, over a pooled transport:
// to the server directly, through the relay, and (with Via a2a) to the
// remote agent's card on the daemon's A2A edge.
type remoteWays struct {
	direct, relay, edge *remote.Client
}

func resolveWays(ctx context.Context, hc *http.Client, c *client.Client, opts *RemoteOptions, a2aURL, relayURL, agent string) (remoteWays, error) {
	var w remoteWays
	var err error
	if w.direct, err = resolveA2A(ctx, hc, "the A2A server", a2aURL, mailbox.BindingJSONRPC03, ""); err != nil {
		return w, err
	}
	if w.relay, err = resolveA2A(ctx, hc, "the relay", relayURL, mailbox.BindingJSONRPC03, ""); err != nil {
		return w, err
	}
	if opts.Via == ViaA2A {
		if w.edge, err = resolveA2A(ctx, hc, "the remote agent on the daemon's A2A edge", c.BaseURL()+"/agents/"+agent+"/", mailbox.BindingJSONRPC03, opts.Token); err != nil {
			return w, err
		}
	}
	return w, nil
}

// summarize fills each way's latency and errors and the ratios between
// the ways, and returns the tasks completed through the daemon.
func (rep *RemoteReport) summarize(senders []*remoteSender, relayed, callers []*a2aCaller) (done []string) {
	var remoteLat samples
	for _, sd := range senders {
		remoteLat = append(remoteLat, sd.latency...)
		done = append(done, sd.done...)
		if sd.edge != nil {
			remoteLat = append(remoteLat, sd.edge.latency...)
			done = append(done, sd.edge.done...)
		}
		for k, n := range sd.errors {
			rep.Errors[WayRemote+" "+k] += n
		}
	}
	rep.Remote.Latency = remoteLat.summarize()
	rep.Relay.Latency = latencyOf(WayRelay, relayed, rep.Errors, nil)
	rep.Direct.Latency = latencyOf(WayDirect, callers, rep.Errors, nil)
	if rep.Direct.TasksPerS > 0 {
		rep.Ratio = rep.Remote.TasksPerS / rep.Direct.TasksPerS
		rep.RelayRatio = rep.Relay.TasksPerS / rep.Direct.TasksPerS
	}
	if rep.Relay.TasksPerS > 0 {
		rep.OfRelay = rep.Remote.TasksPerS / rep.Relay.TasksPerS
	}
	return done
}

// runID names one run's agents, so that leftovers of an earlier run
// against the same daemon are never mistaken for this one's.
func runID() string {
	b := make([]byte, 4)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// waitResolved waits until the dispatcher has read the remote's card and
// calls it healthy, so that the first round does not measure that.
func waitResolved(ctx context.Context, c *client.Client, agent string) error {
	deadline := time.Now().Add(resolveTimeout)
	var last string
	for {
		list, err := c.Agents(ctx)
		if err != nil {
			return fmt.Errorf("bench: listing agents to see %s resolved: %w", agent, err)
		}
		for _, a := range list {
			if a.Agent == agent && a.Remote != nil {
				if a.Remote.State == mailbox.RemoteHealthy {
					return nil
				}
				last = a.Remote.State
				if a.Remote.LastError != "" {
					last += ": " + a.Remote.LastError
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bench: the daemon did not resolve the remote agent %s within %s (last state: %q); can the daemon reach this process's A2A server?", agent, resolveTimeout, last)
		}
		t := time.NewTimer(20 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// runRound runs every worker in a loop until d has passed, lets each
// finish the task it is on, and returns the tasks completed and the time
// it all took.
func runRound(ctx context.Context, workers []func(context.Context) bool, d time.Duration) (uint64, time.Duration) {
	var tasks atomic.Uint64
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Go(func() {
			for ctx.Err() == nil && time.Now().Before(deadline) {
				if w(ctx) {
					tasks.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return tasks.Load(), time.Since(start)
}

// remoteSender sends tasks to the remote agent through the daemon, one
// at a time: through its A2A edge (edge set), or natively, draining the
// results. Its fields are its own.
type remoteSender struct {
	edge                   *a2aCaller
	c                      *client.Client
	sender, agent, payload string
	latency                samples
	errors                 map[string]uint64
	// done are the tasks whose ok result was drained: checked against
	// the log after the run.
	done []string
}

// drainWait is how long one drain long-polls for a result; the remote
// answers at once, so a result that takes this long is counted missing.
const drainWait = 20 * time.Second

func (s *remoteSender) fail(ctx context.Context, step string, err error) {
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return
	}
	s.errors[step+": "+errorKind(err)]++
}

func (s *remoteSender) task(ctx context.Context) bool {
	if s.edge != nil {
		return s.edge.task(ctx)
	}
	start := time.Now()
	resp, err := s.c.Send(ctx, mailbox.Task{Sender: s.sender, Recipient: s.agent, IntentText: s.payload})
	if err != nil {
		s.fail(ctx, "send", err)
		return false
	}
	id := resp.TaskID
	for range maxStale {
		got, err := s.c.DrainN(ctx, s.sender, 1, drainWait)
		switch {
		case err != nil:
			s.fail(ctx, "drain", err)
			return false
		case len(got) == 0:
			s.errors["drain: empty"]++
			return false
		case got[0].TaskID != id:
			// A result of an earlier task whose drain gave up.
			s.errors["drain: stale"]++
			continue
		case got[0].Status != mailbox.StatusOK || len(got[0].Content) != 1 || got[0].Content[0].Text != "done":
			s.errors["drain: wrong_result"]++
			return false
		}
		s.latency.add(time.Since(start))
		s.done = append(s.done, id)
		return true
	}
	return false
}

// a2aCaller calls an A2A server with the outbound client, blocking, one
// call at a time, with the message the dispatcher would send: the server
// directly, through the relay, or the remote agent on the daemon's edge.
type a2aCaller struct {
	r       *remote.Client
	payload string
	// answer is the text a completed task's artifact must hold ("":
	// "done", what A2AServer and the bench's workers answer).
	answer  string
	latency samples
	errors  map[string]uint64
	// done are the ids of the tasks completed, for the durability check
	// when the caller calls through the daemon.
	done []string
}

func (d *a2aCaller) task(ctx context.Context) bool {
	start := time.Now()
	msg, err := remote.MessageFor(mailbox.Task{ID: uuid.NewString(), IntentText: d.payload}, nil)
	if err != nil {
		d.errors["send: message"]++
		return false
	}
	t, err := d.r.Send(ctx, msg, true)
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			return false
		}
		kind := "other"
		var re *remote.Error
		if errors.As(err, &re) {
			kind = string(re.Kind)
		}
		d.errors["send: "+kind]++
		return false
	}
	res, final := t.Outcome()
	want := d.answer
	if want == "" {
		want = "done"
	}
	if t.ID == "" || !final || res.Status != mailbox.StatusOK || len(res.Content) != 1 || res.Content[0].Text != want {
		d.errors["send: wrong_result"]++
		return false
	}
	d.latency.add(time.Since(start))
	d.done = append(d.done, t.ID)
	return true
}
