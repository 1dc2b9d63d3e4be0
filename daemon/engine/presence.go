package engine

import (
	"context"
	"encoding/json"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mailroom/mailroom/mailbox"
)

// What the agents listing keeps in memory only, beside the durable state:
// when each agent last called the daemon, and the results each posted in
// the last few minutes. Neither is in the log (a poll is not a change to
// the mailbox), so both start empty when the daemon starts.

// ResultWindow is how far back the listing counts posted results.
const ResultWindow = 5 * time.Minute

// DefaultAgentsInterval is how often, at most, the agents listing is pushed
// to the event streams that asked for it.
const DefaultAgentsInterval = time.Second

type presence struct {
	mu       sync.Mutex
	lastSeen map[string]int64
	// polling counts, per agent, its long polls (leases and drains) that
	// wait right now: an agent is seen while one waits, not only when it
	// ends, so a live worker in a 20 s poll never reads as gone.
	polling map[string]int
	results map[string]*resultWindow
	// changed says the listing may differ from the last one pushed: an
	// event settled, an agent called, or a result aged out of the window.
	changed atomic.Bool
}

// resultWindow holds one agent's results of the last ResultWindow, oldest
// first, one entry per millisecond with results.
type resultWindow struct {
	entries []resultCount
}

type resultCount struct {
	atMs      int64
	ok, error int
}

func newPresence() *presence {
	return &presence{lastSeen: make(map[string]int64), polling: make(map[string]int), results: make(map[string]*resultWindow)}
}

// poll records that agent started a long poll at nowMs, which counts as
// seen until it ends; the returned func, called when it ends (with the
// time then), records that too.
func (p *presence) poll(agent string, nowMs int64) (done func(endMs int64)) {
	if agent == "" {
		return func(int64) {}
	}
	p.mu.Lock()
	p.polling[agent]++
	p.lastSeen[agent] = max(p.lastSeen[agent], nowMs)
	p.mu.Unlock()
	p.changed.Store(true)
	return func(endMs int64) {
		p.mu.Lock()
		if p.polling[agent]--; p.polling[agent] <= 0 {
			delete(p.polling, agent)
		}
		p.lastSeen[agent] = max(p.lastSeen[agent], endMs)
		p.mu.Unlock()
		p.changed.Store(true)
	}
}

// seen records that agent called the daemon at nowMs.
func (p *presence) seen(agent string, nowMs int64) {
	if agent == "" {
		return
	}
	p.mu.Lock()
	if p.lastSeen[agent] < nowMs {
		p.lastSeen[agent] = nowMs
		p.changed.Store(true)
	}
	p.mu.Unlock()
}

// settled takes note of a durable event: any event may change the listing,
// and a posted or forced result counts for the agent that held the lease.
func (p *presence) settled(ev mailbox.Event) {
	p.changed.Store(true)
	if ev.Type != mailbox.EventResultPosted && ev.Type != mailbox.EventTaskForceErrored || ev.Result == nil || ev.LeasedTo == "" {
		return
	}
	ok, failed := ev.Result.Status == mailbox.StatusOK, ev.Result.Status == mailbox.StatusError
	if !ok && !failed {
		return // partial results are neither
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.results[ev.LeasedTo]
	if w == nil {
		w = &resultWindow{}
		p.results[ev.LeasedTo] = w
	}
	n := len(w.entries)
	if n == 0 || w.entries[n-1].atMs < ev.AtMs {
		w.entries = append(w.entries, resultCount{atMs: ev.AtMs})
		n++
	}
	// Event times never go backwards in the log, but a clock may: a result
	// stamped earlier than the newest one is counted with it.
	if ok {
		w.entries[n-1].ok++
	} else {
		w.entries[n-1].error++
	}
}

// prune forgets results older than the window at nowMs and says whether it
// forgot any.
func (p *presence) prune(nowMs int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	pruned := false
	for agent, w := range p.results {
		i := 0
		for i < len(w.entries) && !inWindow(w.entries[i].atMs, nowMs) {
			i++
		}
		if i == 0 {
			continue
		}
		pruned = true
		if i == len(w.entries) {
			delete(p.results, agent)
			continue
		}
		w.entries = append(w.entries[:0], w.entries[i:]...)
	}
	return pruned
}

func inWindow(atMs, nowMs int64) bool { return nowMs-atMs < ResultWindow.Milliseconds() }

// fill completes the state's listing at nowMs with what presence holds, and
// adds the agents only presence knows.
func (p *presence) fill(list []mailbox.AgentInfo, nowMs int64) []mailbox.AgentInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	known := make(map[string]bool, len(list))
	for i := range list {
		known[list[i].Agent] = true
		p.complete(&list[i], nowMs)
	}
	extra := false
	add := func(agent string) {
		if !known[agent] {
			known[agent], extra = true, true
			a := mailbox.AgentInfo{Agent: agent}
			p.complete(&a, nowMs)
			list = append(list, a)
		}
	}
	for agent := range p.lastSeen {
		add(agent)
	}
	for agent := range p.results {
		add(agent)
	}
	if extra {
		sort.Slice(list, func(i, j int) bool { return list[i].Agent < list[j].Agent })
	}
	return list
}

// complete sets a's last-seen time and windowed result counts; p.mu is held.
func (p *presence) complete(a *mailbox.AgentInfo, nowMs int64) {
	// The state knows when the agent last acted (from the log, so across
	// restarts); a poll that found nothing is known here only.
	a.LastSeenMs = max(a.LastSeenMs, p.lastSeen[a.Agent])
	if p.polling[a.Agent] > 0 {
		// Waiting in a long poll: seen now.
		a.Polling, a.LastSeenMs = true, max(a.LastSeenMs, nowMs)
	}
	if w := p.results[a.Agent]; w != nil {
		for _, e := range w.entries {
			if inWindow(e.atMs, nowMs) {
				a.ResultsOK5m += e.ok
				a.ResultsError5m += e.error
			}
		}
	}
}

// Agents lists every agent the durable state knows (as sender, recipient
// or lease holder) or that called the daemon since it started.
func (e *Engine) Agents(ctx context.Context) ([]mailbox.AgentInfo, error) {
	var list []mailbox.AgentInfo
	err := e.read(func() { list = e.agents(e.opts.Now().UnixMilli()) })
	return list, err
}

func (e *Engine) agents(nowMs int64) []mailbox.AgentInfo {
	list, _ := e.agentsAt(nowMs)
	return list
}

// agentsAt is the listing with the seq of the last event it counts. The
// presence figures are filled under the durable state's lock too: settle
// counts an event in them under it, so they count nothing past seq.
func (e *Engine) agentsAt(nowMs int64) ([]mailbox.AgentInfo, uint64) {
	var attempts map[string]mailbox.PushAttempt
	if f := e.pushStatus.Load(); f != nil {
		if st := (*f)(); st.Delivering {
			attempts = st.Attempts
		}
	}
	e.durableMu.RLock()
	list, seq := e.presence.fill(e.durable.Agents(nowMs), nowMs), e.durable.Seq
	if len(attempts) > 0 {
		// A webhook being retried: the notifier's attempts at the
		// notifications the outbox still holds for an agent, not dead.
		failing := map[string]int{}
		for id, at := range attempts {
			if n, ok := e.durable.Notification(id); ok && n.Agent != "" && !n.Dead && at.Attempts > 0 {
				failing[n.Agent]++
			}
		}
		for i := range list {
			list[i].WebhookFailing = failing[list[i].Agent]
		}
	}
	e.durableMu.RUnlock()
	if f := e.remoteStatus.Load(); f != nil {
		for i := range list {
			if list[i].Card != nil && list[i].Card.Remote != nil {
				list[i].Remote = (*f)(list[i].Agent)
			}
		}
	}
	return list, seq
}

// retryingChanged says whether the number of notifications the notifier
// is retrying changed since it last looked: a webhook's retries are its
// memory, not events, so the listing's webhook_failing is looked at here.
func (e *Engine) retryingChanged() bool {
	f := e.pushStatus.Load()
	if f == nil {
		return false
	}
	n := int64(0)
	if st := (*f)(); st.Delivering {
		for _, at := range st.Attempts {
			if at.Attempts > 0 {
				n++
			}
		}
	}
	return e.retrying.Swap(n) != n
}

// seen records a call by agent at the engine's clock.
func (e *Engine) seen(agent string) { e.presence.seen(agent, e.opts.Now().UnixMilli()) }

// polling records a long poll of agent that may wait: agent is seen from
// now until the returned func is called, when the poll ends.
func (e *Engine) polling(agent string, wait time.Duration) func() {
	if wait <= 0 {
		return func() {}
	}
	done := e.presence.poll(agent, e.opts.Now().UnixMilli())
	return func() { done(e.opts.Now().UnixMilli()) }
}

// pushAgents calls pushAgentsNow every interval until stop is closed.
func (e *Engine) pushAgents(interval time.Duration, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			e.pushAgentsNow()
		}
	}
}

// pushAgentsNow, when the listing may have changed since the last push,
// computes it once and offers it to every subscriber that asked for it,
// and says whether it did. A change with nobody asking is not kept: a
// stream that starts later hears of the next one.
func (e *Engine) pushAgentsNow() bool {
	now := e.opts.Now().UnixMilli()
	if e.presence.prune(now) {
		e.presence.changed.Store(true)
	}
	if e.hub.wantsAgents() && e.retryingChanged() {
		e.presence.changed.Store(true)
	}
	if !e.presence.changed.Swap(false) || !e.hub.wantsAgents() {
		return false
	}
	list, seq := e.agentsAt(now)
	// Redacted once here, for every subscriber: the listing goes only to
	// readers, never to anything that calls a webhook.
	up := mailbox.AgentsUpdate{Type: mailbox.EventAgents, AtMs: now, Agents: list, Seq: seq}.Redacted()
	var err error
	if up.Encoded, err = json.Marshal(up); err != nil {
		e.log.Error("the agents listing does not encode", "err", err)
		return false
	}
	e.hub.publishAgents(up)
	return true
}
