package bench

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/a2a/remote"
	"github.com/mailroom/mailroom/mailbox"
)

// The A2A path bench (`mailroom bench --a2a`): the path most new users
// take. Callers are A2A clients (remote.Client, the outbound client, with a
// blocking message/send) calling a registered agent's card on the
// daemon's A2A edge, in the binding chosen; the agent's workers lease
// natively and answer at once. In the same run the same client calls an
// A2A server in this process whose executor answers at once (A2AServer):
// what a caller would run without Mailroom. The two ways alternate, round
// by round, so the noise of a shared machine falls on both; their ratio
// and the latency the daemon adds are what its durable path costs an A2A
// caller. Every task answered through the daemon is checked durable: sent,
// leased, answered and delivered, in its event stream.

// A2AReportKind is A2AReport.Kind.
const A2AReportKind = "mailroom_bench_a2a"

// The ways an A2A path bench measures, in the order each round runs them.
const (
	WayMailroom = "mailroom" // the daemon's A2A edge, native workers behind it
	WayServer   = "server"   // an A2A server that answers at once
)

// A2AOptions say what the A2A path bench measures; behind the daemon,
// as many workers answer as there are Senders.
type A2AOptions struct {
	WaysOptions
	// Binding is how the callers speak to the daemon's edge:
	// mailbox.BindingJSONRPC03 (the default) or BindingHTTPJSON10. The
	// server in this process speaks JSON-RPC v0.3.
	Binding string
	// ServerURL, when set, is the A2A server (JSON-RPC v0.3) the callers
	// call directly instead of one in this process: the Go benchmark
	// passes an a2a-go server (the binary links no A2A SDK). ServerEchoes
	// says it answers with the message's own text rather than "done".
	ServerURL    string
	ServerEchoes bool
}

func (o *A2AOptions) fill() error {
	if o.Binding == "" {
		o.Binding = mailbox.BindingJSONRPC03
	}
	if o.Binding != mailbox.BindingJSONRPC03 && o.Binding != mailbox.BindingHTTPJSON10 {
		return fmt.Errorf("bench: binding: got %q, expected %q or %q", o.Binding, mailbox.BindingJSONRPC03, mailbox.BindingHTTPJSON10)
	}
	return o.WaysOptions.fill()
}

// A2AReport is what an A2A path bench measured. Its JSON keys are
// documented in cmd/mailroom/bench.go.
type A2AReport struct {
	WaysHeader        // Kind "mailroom_bench_a2a"
	Binding    string `json:"binding"` // the callers' binding to the daemon's edge
	Agent      string `json:"agent"`   // the agent registered for the run
	A2AURL     string `json:"a2a_url"` // the server called directly

	// Mailroom is through the daemon's edge, Server the server called
	// directly. Ratio is Mailroom's tasks/s over Server's; AddedP50Ms and
	// AddedP99Ms are Mailroom's latency percentiles less Server's.
	Mailroom   WayFigures `json:"mailroom"`
	Server     WayFigures `json:"server"`
	Ratio      float64    `json:"ratio"`
	AddedP50Ms float64    `json:"added_p50_ms"`
	AddedP99Ms float64    `json:"added_p99_ms"`
	WaysResults
}

// RunA2A measures both ways and reports. It returns an error only when it
// could not measure: the daemon unreachable, the agent not registered, its
// card not resolved.
func RunA2A(ctx context.Context, opts A2AOptions) (A2AReport, error) {
	if err := opts.fill(); err != nil {
		return A2AReport{}, err
	}
	var conns atomic.Uint64 // the connections our own server accepted
	a2aURL := opts.ServerURL
	if a2aURL == "" {
		u, stop, err := serveA2A("127.0.0.1:0", &conns)
		if err != nil {
			return A2AReport{}, fmt.Errorf("bench: the A2A server cannot listen: %w", err)
		}
		defer stop()
		a2aURL = u
	}

	// Callers and workers each keep their connections.
	hc, c, err := opts.connect(2*opts.Senders + 4)
	if err != nil {
		return A2AReport{}, err
	}
	defer hc.CloseIdleConnections()

	agent := "bench-a2a-" + runID() + "@local"
	if _, err := c.RegisterAgent(ctx, agent, mailbox.AgentCard{Name: "Bench", Description: "mailroom bench --a2a: native workers that answer at once",
		Skills: []mailbox.AgentSkill{}}); err != nil {
		return A2AReport{}, fmt.Errorf("bench: registering the agent %s: %w", agent, err)
	}
	defer c.DeregisterAgent(context.WithoutCancel(ctx), agent)

	server, err := resolveA2A(ctx, hc, "the A2A server", a2aURL, mailbox.BindingJSONRPC03, "")
	if err != nil {
		return A2AReport{}, err
	}
	edge, err := resolveA2A(ctx, hc, "the agent's card on the daemon's A2A edge", c.BaseURL()+"/agents/"+agent+"/", opts.Binding, opts.Token)
	if err != nil {
		return A2AReport{}, err
	}

	before, err := scrapeMetrics(ctx, c)
	if err != nil {
		return A2AReport{}, err
	}
	tlog := followLog(ctx, hc, c.BaseURL(), opts.Token, agent, uint64(before[metricLastSeq]), seenServed)
	defer tlog.cancel()

	workers := startWorkers(ctx, c, agent, opts.Senders)
	defer workers.stop()

	viaEdge, direct := opts.callers(edge, server)
	rep := A2AReport{WaysHeader: opts.header(A2AReportKind), Binding: opts.Binding, Agent: agent, A2AURL: a2aURL, WaysResults: WaysResults{Errors: map[string]uint64{}}}
	rep.PerRound = runWays(ctx, &opts.WaysOptions, []way{
		{WayMailroom, tasksOf(viaEdge), &rep.Mailroom},
		{WayServer, tasksOf(direct), &rep.Server},
	}, &conns)
	workers.stop()

	var done []string
	rep.Mailroom.Latency = latencyOf(WayMailroom, viaEdge, rep.Errors, &done)
	rep.Server.Latency = latencyOf(WayServer, direct, rep.Errors, nil)
	workers.errs.Range(func(k, v any) bool {
		rep.Errors[k.(string)] += v.(*atomic.Uint64).Load()
		return true
	})
	if rep.Server.TasksPerS > 0 {
		rep.Ratio = rep.Mailroom.TasksPerS / rep.Server.TasksPerS
	}
	rep.AddedP50Ms = rep.Mailroom.Latency.P50 - rep.Server.Latency.P50
	rep.AddedP99Ms = rep.Mailroom.Latency.P99 - rep.Server.Latency.P99
	if err := rep.settle(ctx, c, before, rep.Mailroom.Tasks, tlog, done); err != nil {
		return A2AReport{}, err
	}
	return rep, nil
}

// callers makes the callers of each way: through the daemon's edge, and
// to the server directly (which echoes the payload when ServerEchoes).
func (opts *A2AOptions) callers(edge, server *remote.Client) (viaEdge, direct []*a2aCaller) {
	payload := strings.Repeat("x", opts.PayloadBytes)
	answer := ""
	if opts.ServerEchoes {
		answer = payload
	}
	for range opts.Senders {
		viaEdge = append(viaEdge, &a2aCaller{r: edge, payload: payload, errors: map[string]uint64{}})
		direct = append(direct, &a2aCaller{r: server, payload: payload, answer: answer, errors: map[string]uint64{}})
	}
	return viaEdge, direct
}

// workers are the agent's native workers: each long-polls a lease for the
// agent and answers it at once, for the whole run (idle, and cheap, in
// the server's rounds).
type workers struct {
	errs   sync.Map // "worker step: kind" -> *atomic.Uint64
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func startWorkers(ctx context.Context, c *client.Client, agent string, n int) *workers {
	ws := &workers{}
	wctx, cancel := context.WithCancel(ctx)
	ws.cancel = cancel
	for range n {
		ws.wg.Go(func() { serveTasks(wctx, c, agent, &ws.errs) })
	}
	return ws
}

// stop stops the workers and waits for them; stopping again does nothing.
func (ws *workers) stop() {
	ws.cancel()
	ws.wg.Wait()
}

// leaseWait is how long a worker's lease long-polls for a task.
const leaseWait = 5 * time.Second

// serveTasks is one of the agent's workers: it leases a task, answers it
// "done" at once, and goes on until ctx ends.
func serveTasks(ctx context.Context, c *client.Client, agent string, errs *sync.Map) {
	count := func(step string, err error) {
		if ctx.Err() != nil {
			return
		}
		v, _ := errs.LoadOrStore("worker "+step+": "+errorKind(err), new(atomic.Uint64))
		v.(*atomic.Uint64).Add(1)
	}
	for ctx.Err() == nil {
		got, err := c.LeaseN(ctx, agent, 1, leaseWait)
		if err != nil {
			count("lease", err)
			select { // not a hot loop against a daemon that refuses
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		for _, lt := range got {
			if err := c.PostResult(ctx, mailbox.Result{TaskID: lt.Task.ID, LeaseID: lt.Lease.LeaseID, Status: mailbox.StatusOK,
				Content: []mailbox.Content{{Type: mailbox.ContentText, Text: "done"}}}); err != nil {
				count("result", err)
			}
		}
	}
}
