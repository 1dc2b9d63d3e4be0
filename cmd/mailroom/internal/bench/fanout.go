package bench

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/mailbox"
)

// FanoutReport says how the event stream kept up with the load.
type FanoutReport struct {
	Subscribers int `json:"subscribers"`
	// Delivery is the latency from an event's at_ms (when the daemon
	// decided it, before its fsync) to its receipt by a subscriber, over
	// every event every subscriber received; millisecond resolution.
	Delivery Latency `json:"delivery"`
	// EventsPerS is the rate the daemon made events durable at during the
	// load: the rate every subscriber had to keep up with. With
	// --fanout-only, whose subscribers are up before the load starts and
	// after it ends, the load's time is the span between the first and
	// the last event received (LoadS), not the subscribers' whole run.
	EventsPerS float64 `json:"events_per_s"`
	// LoadS is the span, in seconds, from the first event a subscriber
	// received to the last (by their at_ms): how long the load ran.
	LoadS float64 `json:"load_s"`
	// Complete is true when every subscriber received every event with seq
	// in (its snapshot seq, final_seq] exactly once.
	Complete  bool   `json:"complete"`
	FinalSeq  uint64 `json:"final_seq"`
	Missed    uint64 `json:"missed"`
	Repeated  uint64 `json:"repeated"`
	Reconnect uint64 `json:"reconnects"`
	// ReceivedMin and ReceivedMax bound the events one subscriber received.
	ReceivedMin uint64              `json:"received_min"`
	ReceivedMax uint64              `json:"received_max"`
	PerSub      []SubscriberFigures `json:"per_subscriber"`
}

// SubscriberFigures are one subscriber's counts.
type SubscriberFigures struct {
	SnapshotSeq uint64 `json:"snapshot_seq"`
	LastSeq     uint64 `json:"last_seq"`
	Received    uint64 `json:"received"`
	Missed      uint64 `json:"missed"`
	Repeated    uint64 `json:"repeated"`
	Reconnects  uint64 `json:"reconnects"`
	// Snapshots counts snapshots after the first: the daemon sends one
	// instead of the events a far-behind subscriber missed, so the events
	// it covers count as missed.
	Snapshots uint64 `json:"snapshots"`
	// FirstAtMs and LastAtMs are the at_ms of the first and the last event
	// received (0: none).
	FirstAtMs int64 `json:"first_at_ms,omitempty"`
	LastAtMs  int64 `json:"last_at_ms,omitempty"`
}

// subscriber follows the event stream like a console and checks seq
// continuity: from its first snapshot on, each event must be the one after
// the last.
type subscriber struct {
	hist       *msHistogram
	fig        SubscriberFigures
	last       atomic.Uint64 // read by finish while the stream runs
	reconnects atomic.Uint64
	ready      chan struct{} // closed when the first snapshot arrived
	done       chan struct{} // closed when the stream ended
}

type fanout struct {
	subs   []*subscriber
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// connectTimeout bounds how long the subscribers may take to connect and
// receive their first snapshot.
const connectTimeout = 30 * time.Second

// drainTimeout bounds how long, after the load, the subscribers may take
// to receive the last event; what they have not received by then is
// missed.
const drainTimeout = 10 * time.Second

// startFanout connects k subscribers and returns once each has its first
// snapshot, so the load only starts when all of them are listening.
func startFanout(ctx context.Context, c *client.Client, token string, tlsConfig *tls.Config, k int) (*fanout, error) {
	ctx, cancel := context.WithCancel(ctx)
	f := &fanout{cancel: cancel}
	// One connection per subscriber, like k consoles on k machines.
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: k, TLSClientConfig: tlsConfig}}
	for range k {
		s := &subscriber{hist: newMsHistogram(), ready: make(chan struct{}), done: make(chan struct{})}
		f.subs = append(f.subs, s)
		events := lightSubscribe(ctx, hc, c.BaseURL(), token, func() { s.reconnects.Add(1) })
		f.wg.Go(func() { s.follow(events) })
	}
	timeout := time.NewTimer(connectTimeout)
	defer timeout.Stop()
	for i, s := range f.subs {
		select {
		case <-s.ready:
		case <-timeout.C:
			f.stop()
			return nil, fmt.Errorf("bench: subscriber %d of %d did not receive its snapshot within %s", i+1, k, connectTimeout)
		case <-ctx.Done():
			f.stop()
			return nil, ctx.Err()
		}
	}
	return f, nil
}

func (f *fanout) stop() {
	f.cancel()
	f.wg.Wait()
}

func (s *subscriber) follow(events <-chan mailbox.Event) {
	defer close(s.done)
	started := false
	for ev := range events {
		now := time.Now().UnixMilli()
		if ev.Type == mailbox.EventSnapshot {
			if !started {
				started = true
				s.fig.SnapshotSeq = ev.Seq
				s.last.Store(ev.Seq)
				close(s.ready)
				continue
			}
			// A later snapshot stands in for events this subscriber did not
			// get one by one.
			s.fig.Snapshots++
			if last := s.last.Load(); ev.Seq > last {
				s.fig.Missed += ev.Seq - last
				s.last.Store(ev.Seq)
			}
			continue
		}
		if !started {
			continue // cannot happen: the client starts from a snapshot
		}
		last := s.last.Load()
		switch {
		case ev.Seq <= last:
			s.fig.Repeated++
			continue
		case ev.Seq > last+1:
			s.fig.Missed += ev.Seq - last - 1
		}
		s.last.Store(ev.Seq)
		s.fig.Received++
		s.hist.add(now - ev.AtMs)
		if s.fig.FirstAtMs == 0 {
			s.fig.FirstAtMs = ev.AtMs
		}
		s.fig.LastAtMs = ev.AtMs
	}
}

// finish waits (bounded) until every subscriber has seen finalSeq, stops
// them and reports.
func (f *fanout) finish(finalSeq uint64) FanoutReport {
	deadline := time.NewTimer(drainTimeout)
	defer deadline.Stop()
	poll := time.NewTicker(10 * time.Millisecond)
	defer poll.Stop()
wait:
	for _, s := range f.subs {
		for s.last.Load() < finalSeq {
			select {
			case <-deadline.C:
				break wait
			case <-s.done:
				continue wait
			case <-poll.C:
			}
		}
	}
	f.stop()

	rep := FanoutReport{Subscribers: len(f.subs), FinalSeq: finalSeq, ReceivedMin: ^uint64(0)}
	all := newMsHistogram()
	for _, s := range f.subs {
		fig := s.fig
		fig.LastSeq = s.last.Load()
		fig.Reconnects = s.reconnects.Load()
		// What never arrived before the stream was stopped is missed too.
		if fig.LastSeq < finalSeq {
			fig.Missed += finalSeq - fig.LastSeq
		}
		rep.Missed += fig.Missed
		rep.Repeated += fig.Repeated
		rep.Reconnect += fig.Reconnects
		rep.ReceivedMin = min(rep.ReceivedMin, fig.Received)
		rep.ReceivedMax = max(rep.ReceivedMax, fig.Received)
		all.merge(s.hist)
		rep.PerSub = append(rep.PerSub, fig)
	}
	rep.Delivery = all.summarize()
	rep.Complete = rep.Missed == 0 && rep.Repeated == 0
	var first, last int64
	for _, fig := range rep.PerSub {
		if fig.FirstAtMs != 0 && (first == 0 || fig.FirstAtMs < first) {
			first = fig.FirstAtMs
		}
		last = max(last, fig.LastAtMs)
	}
	rep.LoadS = float64(last-first) / 1000
	return rep
}

// runFanoutOnly follows the stream with the subscribers for the run's
// duration while another process loads the daemon, then waits for them to
// reach the last event the daemon had made durable by then.
func runFanoutOnly(ctx context.Context, c *client.Client, opts Options, subs *fanout, before scrape, target string, warnings []string) (Report, error) {
	start := time.Now()
	t := time.NewTimer(opts.Duration)
	defer t.Stop()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
run:
	for {
		select {
		case <-t.C:
			break run
		case <-ctx.Done():
			break run
		case <-tick.C:
			if opts.Progress != nil {
				min, max := subs.progress()
				fmt.Fprintf(opts.Progress, "%4.0fs  %d subscribers at seq %d to %d\n", time.Since(start).Seconds(), len(subs.subs), min, max)
			}
		}
	}
	elapsed := time.Since(start)
	after, err := scrapeMetrics(context.WithoutCancel(ctx), c)
	if err != nil {
		return Report{}, err
	}
	rep := Report{Kind: ReportKind, Target: target, DurationS: opts.Duration.Seconds(), ElapsedS: elapsed.Seconds(),
		Warnings: warnings, Errors: map[string]uint64{}, Daemon: daemonDelta(before, after), Batch: 1}
	fr := subs.finish(rep.Daemon.LastSeq)
	// The rate over the load's span, not over the subscribers' whole run,
	// which starts before the load and outlasts it.
	s := elapsed.Seconds()
	if fr.LoadS >= 1 {
		s = fr.LoadS
	}
	if s > 0 {
		fr.EventsPerS = float64(rep.Daemon.EventsAppended) / s
	}
	rep.Fanout = &fr
	return rep, nil
}

// progress is the lowest and highest seq the subscribers have reached.
func (f *fanout) progress() (lo, hi uint64) {
	lo = ^uint64(0)
	for _, s := range f.subs {
		l := s.last.Load()
		lo, hi = min(lo, l), max(hi, l)
	}
	return lo, hi
}
