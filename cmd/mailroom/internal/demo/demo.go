// Package demo runs synthetic agents against a mailroom daemon so the console
// has something real to show: a planner that delegates work and drains
// results, three workers that lease tasks, take their time, answer ok,
// error, partial or rejected, now and then ask the planner a question
// (which it mostly answers, and sometimes leaves waiting), and now and then
// crash mid-task, leaving a lease to go stale for the operator to repair;
// and an outside A2A caller that sends the workers (registered with cards)
// work through the A2A edge.
package demo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/mailbox"
)

// The demo's agents.
const Planner = "planner@local"

// Workers are the agents the planner delegates to.
var Workers = []string{"worker-a@local", "worker-b@local", "worker-c@local"}

// Options configure the synthetic agents. Zero values take the defaults,
// which keep the console readable: a couple of tasks a second.
type Options struct {
	// Addr is the daemon: host:port or a URL.
	Addr  string
	Token string
	// Seed makes a run repeatable (as far as timing allows).
	Seed int64
	// Rate is how many tasks the planner sends per second (default 2).
	Rate float64
	// MaxQueued: the planner holds off while this many tasks wait in the
	// queue (default 20), so a slow run does not grow without bound.
	MaxQueued int
	// CrashRate is the chance that a worker abandons a leased task without
	// a result (default 0.08; negative means never); its lease goes stale.
	CrashRate float64
	// WorkMin and WorkMax bound how long a task takes (default 300ms-3s).
	WorkMin, WorkMax time.Duration
	// Poll is how long an agent waits before trying again after an error,
	// and the A2A caller between reads of its task (default 400ms); idle
	// workers long-poll instead.
	Poll time.Duration
	// DrainEvery is how often the planner collects its results (default
	// 4s): long enough that the Results pane has something to show.
	DrainEvery time.Duration
	// A2AEvery is how often the A2A caller sends a message through the
	// edge (default 5s; negative: never, and no cards are registered).
	A2AEvery time.Duration
	Logger   *slog.Logger
}

func (o *Options) fill() {
	if o.Rate <= 0 {
		o.Rate = 2
	}
	if o.MaxQueued <= 0 {
		o.MaxQueued = 20
	}
	if o.CrashRate < 0 {
		o.CrashRate = 0
	} else if o.CrashRate == 0 {
		o.CrashRate = 0.08
	}
	if o.WorkMin <= 0 {
		o.WorkMin = 300 * time.Millisecond
	}
	if o.WorkMax < o.WorkMin {
		o.WorkMax = max(o.WorkMin, 3*time.Second)
	}
	if o.Poll <= 0 {
		o.Poll = 400 * time.Millisecond
	}
	if o.DrainEvery <= 0 {
		o.DrainEvery = 4 * time.Second
	}
	if o.A2AEvery == 0 {
		o.A2AEvery = 5 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Run runs the planner and the workers until ctx ends, then returns nil.
// Daemon errors do not stop the agents: they log, wait and try again, as
// real agents riding out a daemon restart would.
func Run(ctx context.Context, opts Options) error {
	opts.fill()
	copts := []client.Option{client.WithTimeout(10 * time.Second)}
	if opts.Token != "" {
		copts = append(copts, client.WithToken(opts.Token))
	}
	c, err := client.New(opts.Addr, copts...)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	start := func(stream uint64, name string, loop func(context.Context, *agent)) {
		a := &agent{name: name, c: c, opts: &opts, log: opts.Logger.With("agent", name),
			rng: rand.New(rand.NewPCG(uint64(opts.Seed), stream))}
		wg.Go(func() { loop(ctx, a) })
	}
	start(0, Planner, plan)
	start(1, Planner, drain)
	for i, w := range Workers {
		start(uint64(i+2), w, work)
	}
	if opts.A2AEvery > 0 {
		start(uint64(len(Workers)+2), A2ACaller, callA2A)
	}
	wg.Wait()
	return nil
}

// agent is one synthetic agent's loop state: its own random source (one
// per goroutine, so a seed gives each agent the same sequence every run).
type agent struct {
	name string
	c    *client.Client
	opts *Options
	log  *slog.Logger
	rng  *rand.Rand
	// The planner's memory: how many idempotent tasks it keyed, and the
	// last one, which it sometimes sends again.
	sent           int
	lastIdempotent *mailbox.Task
}

// wait sleeps for d or until ctx ends; it reports whether to carry on.
func wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// jitter returns d scaled by a random factor in [0.5, 1.5).
func (a *agent) jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.5 + a.rng.Float64()))
}

// trouble logs a daemon error unless it is just the demo stopping.
func (a *agent) trouble(ctx context.Context, doing string, err error) {
	if ctx.Err() == nil {
		a.log.Warn("demo agent: "+doing+" failed; retrying", "err", err)
	}
}

// plan is the planner's sending loop: a few tasks a second, held back while
// the queue is full.
func plan(ctx context.Context, a *agent) {
	every := time.Duration(float64(time.Second) / a.opts.Rate)
	var recent []string // ids the planner may name as a parent
	for wait(ctx, a.jitter(every)) {
		view, err := a.c.Queue(ctx, mailbox.QueueFilter{State: mailbox.TaskQueued, Limit: a.opts.MaxQueued})
		if err != nil {
			a.trouble(ctx, "checking the queue", err)
			continue
		}
		if len(view.Tasks) >= a.opts.MaxQueued {
			continue
		}
		t := a.newTask(time.Now(), recent)
		out, err := a.c.Send(ctx, t)
		if err != nil {
			a.trouble(ctx, "sending a task", err)
			continue
		}
		a.log.Debug("demo planner sent a task", "task", out.TaskID, "to", t.Recipient, "kind", t.Kind(), "deduplicated", out.Deduplicated)
		if recent = append(recent, out.TaskID); len(recent) > 16 {
			recent = recent[1:]
		}
	}
}

// drain is the planner taking its results back, every few seconds, all
// that are waiting. A worker's question is answered at once, but one in
// five is forgotten: it waits for an operator to notice.
func drain(ctx context.Context, a *agent) {
	for wait(ctx, a.jitter(a.opts.DrainEvery)) {
		for {
			r, err := a.c.Drain(ctx, Planner)
			if err != nil {
				a.trouble(ctx, "draining results", err)
				break
			}
			if r == nil {
				break
			}
			a.log.Debug("demo planner drained a result", "task", r.TaskID, "status", r.Status, "forced", r.Forced, "replayed", r.Replayed)
			if mailbox.Asks(r.Status) && a.rng.IntN(5) > 0 {
				a.reply(ctx, *r)
			}
		}
	}
}

// longPoll is how long an idle worker's lease waits for a task: a
// waiting worker costs the daemon nothing, and gets a task the moment it
// is sent.
const longPoll = 10 * time.Second

// work is one worker: lease (waiting for work when there is none), take a
// while, answer; sometimes crash.
func work(ctx context.Context, a *agent) {
	for ctx.Err() == nil {
		leases, err := a.c.LeaseN(ctx, a.name, 1, longPoll)
		if err != nil {
			a.trouble(ctx, "leasing", err)
			wait(ctx, a.jitter(a.opts.Poll))
			continue
		}
		if len(leases) == 0 {
			continue
		}
		task, lease := &leases[0].Task, &leases[0].Lease
		span := a.opts.WorkMax - a.opts.WorkMin
		took := a.opts.WorkMin + time.Duration(a.rng.Int64N(int64(span)+1))
		if !wait(ctx, took) {
			return
		}
		if a.rng.Float64() < a.opts.CrashRate {
			// The worker dies with the lease held: nobody will ever post a
			// result under it, so it goes stale until an operator repairs it.
			a.log.Info("demo worker crashed mid-task; its lease is abandoned", "task", task.ID, "lease", lease.LeaseID)
			wait(ctx, a.jitter(4*a.opts.Poll)) // restarting
			continue
		}
		r := a.answer(task, lease)
		if err := a.c.PostResult(ctx, r); err != nil {
			if errors.Is(err, mailbox.ErrConflict) {
				// An operator requeued or force-errored the task meanwhile;
				// the daemon refuses this late result, as it should.
				a.log.Info("demo worker's late result was refused", "task", task.ID, "err", err)
				continue
			}
			a.trouble(ctx, "posting a result", err)
		}
	}
}

// reply is the planner answering a worker's question.
func (a *agent) reply(ctx context.Context, q mailbox.PendingResult) {
	answer := answers[a.rng.IntN(len(answers))]
	if q.Status == mailbox.StatusAuthRequired {
		answer = "logged in; try again"
	}
	_, err := a.c.Reply(ctx, mailbox.Reply{TaskID: q.TaskID, Sender: Planner, Content: []mailbox.Content{{Type: mailbox.ContentText, Text: answer}}})
	if err != nil && !errors.Is(err, mailbox.ErrConflict) {
		a.trouble(ctx, "answering a question", err)
	}
}

var (
	questions = []string{"which branch should I base this on?", "the spec says two things; which one wins?", "may I drop the old table?"}
	answers   = []string{"use main", "the newer one", "yes, it is backed up", "no, keep it for now"}
)

// answer makes a worker's result: mostly ok, some errors, some partial,
// a few refusals; on a task's first turn it sometimes asks the planner a
// question instead, and once answered it finishes saying so.
func (a *agent) answer(t *mailbox.Task, l *mailbox.Lease) mailbox.Result {
	r := mailbox.Result{TaskID: t.ID, LeaseID: l.LeaseID}
	if len(t.Turns) > 0 {
		last := t.Turns[len(t.Turns)-1]
		r.Status = mailbox.StatusOK
		r.Content = []mailbox.Content{{Type: mailbox.ContentText, Text: fmt.Sprintf("%s done by %s as told (%q)", t.Kind(), a.name, contentText(last.Content))}}
		return r
	}
	if t.Covenant == nil && t.A2A == nil && a.rng.IntN(100) < 8 {
		r.Status = mailbox.StatusInputRequired
		if a.rng.IntN(4) == 0 {
			r.Status = mailbox.StatusAuthRequired
			r.Content = []mailbox.Content{{Type: mailbox.ContentText, Text: "the repository needs a login: sign in at https://git.example.test/login"}}
			return r
		}
		r.Content = []mailbox.Content{{Type: mailbox.ContentText, Text: questions[a.rng.IntN(len(questions))]}}
		return r
	}
	switch n := a.rng.IntN(100); {
	case n < 3:
		r.Status = mailbox.StatusRejected
		r.Content = []mailbox.Content{}
		r.ErrorMessage = "not something " + a.name + " does"
	case n < 72:
		r.Status = mailbox.StatusOK
		r.Content = []mailbox.Content{{Type: mailbox.ContentText, Text: fmt.Sprintf("%s done by %s (attempt %d)", t.Kind(), a.name, l.Attempt)}}
	case n < 86:
		r.Status = mailbox.StatusPartial
		r.Content = []mailbox.Content{{Type: mailbox.ContentText, Text: "first half only"}}
		r.ErrorMessage = partialReasons[a.rng.IntN(len(partialReasons))]
	default:
		r.Status = mailbox.StatusError
		r.Content = []mailbox.Content{}
		r.ErrorMessage = errorReasons[a.rng.IntN(len(errorReasons))]
	}
	return r
}

// contentText is the text parts of content, joined.
func contentText(cs []mailbox.Content) string {
	s := ""
	for _, c := range cs {
		if c.Type == mailbox.ContentText {
			s += c.Text
		}
	}
	return s
}
