package outbound

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	a2aremote "github.com/mailroom/mailroom/daemon/a2a/remote"
	"github.com/mailroom/mailroom/internal/retry"
	"github.com/mailroom/mailroom/mailbox"
)

// remote is one remote agent's loop: it resolves the remote's card,
// recovers the leases the agent holds, leases its tasks while it has room
// and its circuit is closed, and starts a delivery for each.
type remote struct {
	d     *Dispatcher
	agent string

	cancel context.CancelFunc
	done   chan struct{}
	// startedAt is when the loop started: every delivery of an earlier
	// loop of the agent had ended by then.
	startedAt time.Time
	// kick wakes the loop to resolve the card again (a re-registration);
	// free wakes it when a delivery ended.
	kick chan struct{}
	free chan struct{}
	// ready is closed once the card was first resolved: deliveries
	// recovered before wait for it.
	ready chan struct{}
	wg    sync.WaitGroup // the deliveries

	mu      sync.Mutex
	spec    mailbox.RemoteSpec
	client  *a2aremote.Client
	rcard   a2aremote.Card
	state   string
	sinceMs int64
	lastErr string
	// failures counts failed calls in a row; at FailuresToOpen the
	// circuit opens.
	failures    int
	nextProbeMs int64
	deliveries  map[string]*delivery // by lease id
	// stopLeasing ends the long poll for the agent's tasks under way, so
	// that a circuit that opens takes no task after it.
	stopLeasing context.CancelFunc
	// contextKept: a task of this remote came back with the contextId the
	// daemon derived for it (remote.ContextIDFor), so the remote keeps the
	// contextId it is sent, and a list of a context that lacks a task
	// proves the remote never got it.
	contextKept atomic.Bool
	// unverified: the card last read does not verify (require_signed_card,
	// signedcard.go); the circuit stays open until one does.
	unverified bool
}

func newRemote(d *Dispatcher, ra mailbox.RegisteredAgent) *remote {
	return &remote{d: d, agent: ra.Agent, spec: specOf(ra),
		kick: make(chan struct{}, 1), free: make(chan struct{}, 1), done: make(chan struct{}), ready: make(chan struct{}),
		state: mailbox.RemoteResolving, sinceMs: time.Now().UnixMilli(), deliveries: map[string]*delivery{}}
}

// specOf is the agent's remote spec; a concurrency out of range (a log
// written before registration refused "concurrency": 0 would hold it) is
// the default.
func specOf(ra mailbox.RegisteredAgent) mailbox.RemoteSpec {
	spec := *ra.Card.Remote
	if spec.Concurrency < 1 || spec.Concurrency > mailbox.MaxRemoteConcurrency {
		spec.Concurrency = mailbox.DefaultRemoteConcurrency
	}
	return spec
}

// sawContext notes the context id a remote task of mailbox task taskID
// came back with.
func (r *remote) sawContext(taskID, contextID string) {
	if contextID != "" && contextID == a2aremote.ContextIDFor(taskID) {
		r.contextKept.Store(true)
	}
}

// keepsContext reports whether the remote was seen keeping the contextId
// the daemon sends.
func (r *remote) keepsContext() bool { return r.contextKept.Load() }

func (r *remote) start(ctx context.Context) {
	ctx, r.cancel = context.WithCancel(ctx)
	r.startedAt = time.Now()
	go func() {
		defer close(r.done)
		r.run(ctx)
		r.wg.Wait()
	}()
}

// stop ends the loop and its deliveries and waits for them; the notes of
// deliveries left to the operator go with them (another instance, or this
// one again, recovers the leases).
func (r *remote) stop() {
	r.cancel()
	<-r.done
	r.mu.Lock()
	for id := range r.deliveries {
		r.d.o.Notes.Set(id, "")
	}
	r.mu.Unlock()
}

// registered takes the agent's registration as it is now: a changed
// remote spec is resolved again.
func (r *remote) registered(ra mailbox.RegisteredAgent) {
	r.mu.Lock()
	next := specOf(ra)
	changed := next != r.spec
	r.spec = next
	if changed && r.stopLeasing != nil {
		// No task is leased for the old address while the new one is
		// resolved.
		r.stopLeasing()
	}
	r.mu.Unlock()
	if changed {
		notify(r.kick)
	}
}

func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (r *remote) run(ctx context.Context) {
	log := r.d.log.With("agent", r.agent)
	// The leases the agent holds first, so that the operator sees them
	// (and what recovery makes of them) even while the remote does not
	// answer; they are delivered once its card is read.
	r.recover(ctx)
	for !r.resolve(ctx) {
		if !r.waitProbe(ctx) {
			return
		}
	}
	resolved := time.Now()
	for ctx.Err() == nil {
		select {
		case <-r.kick:
			r.setState(mailbox.RemoteResolving, "")
			r.resolve(ctx)
			resolved = time.Now()
			continue
		default:
		}
		if r.circuitOpen() {
			if r.waitProbe(ctx) {
				r.resolve(ctx)
				resolved = time.Now()
			}
			continue
		}
		if time.Since(resolved) >= r.d.o.ResolveInterval {
			r.resolve(ctx)
			resolved = time.Now()
			continue
		}
		room := r.room()
		if room <= 0 {
			select {
			case <-r.free:
			case <-r.kick:
				notify(r.kick)
			case <-ctx.Done():
			}
			continue
		}
		lctx, stopLeasing := context.WithCancel(ctx)
		r.mu.Lock()
		r.stopLeasing = stopLeasing
		r.mu.Unlock()
		got, err := r.d.mailbox.LeaseN(mailbox.WithPrincipal(lctx, r.agent), r.agent, room, r.d.o.LeaseWait)
		r.mu.Lock()
		r.stopLeasing = nil
		r.mu.Unlock()
		stopLeasing()
		// What was leased is delivered, whatever ended the poll.
		for _, lt := range got {
			r.begin(ctx, lt.Task, lt.Lease, modeSend, "")
		}
		if err != nil && lctx.Err() == nil {
			log.Warn("leasing a remote agent's tasks failed; trying again", "err", err)
			retry.Sleep(ctx, r.d.o.RetryMin)
		}
	}
}

// room is how many more deliveries may start.
func (r *remote) room() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.spec.Concurrency - r.underWay()
}

// underWay counts the deliveries that hold a slot: not those left for
// the operator.
func (r *remote) underWay() int {
	n := 0
	for _, dl := range r.deliveries {
		if !dl.parked() {
			n++
		}
	}
	return n
}

// resolve reads the remote's card and makes the client new deliveries
// use; a failure counts toward the circuit. It re-registers the agent
// when the remote's name, description or skills differ from its card.
func (r *remote) resolve(ctx context.Context) bool {
	r.mu.Lock()
	spec := r.spec
	r.mu.Unlock()
	if r.d.o.CheckURL != nil {
		// A registration an older daemon accepted may name the daemon
		// itself: delivering to it would hold the agent's slots while
		// they wait on themselves.
		if u, err := url.Parse(spec.URL); err == nil {
			if err := r.d.o.CheckURL(u); err != nil {
				r.failed(err)
				r.d.log.Warn("a remote agent's URL is refused; nothing is delivered to it until it is registered again", "agent", r.agent, "url", spec.URL, "err", err)
				return false
			}
		}
	}
	cctx, cancel := context.WithTimeout(ctx, r.d.o.CallTimeout)
	out := r.d.clientFor(r.agent)
	client, card, err := a2aremote.Resolve(cctx, out.hc, a2aremote.SpecOf(spec), r.d.o.Auth[r.agent])
	cancel()
	if err == nil {
		out.resolved(card)
	}
	if err == nil && r.d.o.CheckURL != nil {
		// Nor may the remote's card send the daemon to itself.
		if u, perr := url.Parse(card.Endpoint); perr == nil {
			if cerr := r.d.o.CheckURL(u); cerr != nil {
				err = errors.New("the remote's card names its endpoint " + card.Endpoint + ": " + cerr.Error())
			}
		}
	}
	if err != nil {
		if ctx.Err() == nil {
			if errors.Is(err, a2aremote.ErrCardNotVerified) {
				r.cardNotVerified()
			}
			r.failed(err)
			r.d.log.Warn("resolving a remote agent's card failed", "agent", r.agent, "url", spec.URL, "err", err)
		}
		return false
	}
	r.mu.Lock()
	first := r.client == nil
	r.client, r.rcard, r.unverified = client, card, false
	r.mu.Unlock()
	if first {
		close(r.ready)
	}
	r.answered()
	if first {
		r.d.log.Info("remote agent resolved", "agent", r.agent, "binding", card.Binding, "endpoint", card.Endpoint, "streaming", card.Streaming, "name", card.Name)
		if _, ok := r.d.o.OAuth[r.agent]; card.OAuth != nil && !ok {
			r.d.log.Warn("the remote's card declares OAuth 2.0 client credentials and the agent's remotes entry has no client_id and client_secret: it is called without a token",
				"agent", r.agent, "token_url", card.OAuth.TokenURL)
		}
	}
	r.syncCard(ctx, spec, card)
	return true
}

// syncCard re-registers the agent with the remote's name, description and
// skills when they differ from its card, keeping its remote spec.
//
// The card is read from the registry as it is now, not as this loop last
// heard of it, and left alone when its remote spec is no longer the one
// resolved: an operator's re-registration must not be overwritten with
// the card it replaced (it is resolved next).
func (r *remote) syncCard(ctx context.Context, spec mailbox.RemoteSpec, rc a2aremote.Card) {
	cur, err := r.d.mailbox.Registered(ctx, r.agent)
	if err != nil || cur.Card.Remote == nil || *cur.Card.Remote != spec {
		return
	}
	card := cur.Card
	next := card
	if rc.Name != "" {
		next.Name = rc.Name
	}
	if rc.Description != "" {
		next.Description = rc.Description
	}
	if rc.Version != "" {
		next.Version = rc.Version
	}
	next.Skills = make([]mailbox.AgentSkill, 0, len(rc.Skills))
	for _, s := range rc.Skills {
		next.Skills = append(next.Skills, mailbox.AgentSkill{ID: s.ID, Name: s.Name, Description: s.Description,
			Tags: nonNil(s.Tags), Examples: nonNil(s.Examples)})
	}
	if len(rc.Skills) == 0 && rc.CardURL == "" {
		next.Skills = card.Skills // a legacy remote without a card says nothing of its skills
	}
	if sameCard(card, next) {
		return
	}
	// Only over the registration read above: an operator's made since
	// wins, and the next resolve looks again.
	ra, err := r.d.mailbox.RegisterAgentIf(mailbox.WithPrincipal(ctx, Principal), r.agent, next, cur)
	if mailbox.ErrorCode(err) == mailbox.CodeConflict {
		r.d.log.Info("the agent was registered again while its remote's card was read; the new registration stays", "agent", r.agent)
		return
	}
	if err != nil {
		if ctx.Err() == nil {
			r.d.log.Warn("the remote's card cannot be registered as the agent's; the registered card stays", "agent", r.agent, "err", err)
		}
		return
	}
	r.d.log.Info("remote agent re-registered with its remote's card", "agent", r.agent, "name", ra.Card.Name, "skills", len(ra.Card.Skills))
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func sameCard(a, b mailbox.AgentCard) bool {
	if a.Name != b.Name || a.Description != b.Description || a.Version != b.Version || len(a.Skills) != len(b.Skills) {
		return false
	}
	for i := range a.Skills {
		x, y := a.Skills[i], b.Skills[i]
		if x.ID != y.ID || x.Name != y.Name || x.Description != y.Description || !slices.Equal(x.Tags, y.Tags) || !slices.Equal(x.Examples, y.Examples) {
			return false
		}
	}
	return true
}

// waitProbe waits until the next probe of a failing remote (the backoff
// while failing, the probe interval once its circuit is open), or a
// re-registration. It reports whether ctx is still on.
func (r *remote) waitProbe(ctx context.Context) bool {
	r.mu.Lock()
	wait := time.Until(time.UnixMilli(r.nextProbeMs))
	r.mu.Unlock()
	if wait <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.kick:
	case <-ctx.Done():
	}
	return ctx.Err() == nil
}

// answered records that the remote answered a call: a failing remote is
// healthy again, an open circuit closes.
func (r *remote) answered() {
	r.mu.Lock()
	if r.unverified {
		// Only a card that verifies closes it, not a delivery under way.
		r.mu.Unlock()
		return
	}
	changed := r.state != mailbox.RemoteHealthy
	wasOpen := r.state == mailbox.RemoteCircuitOpen
	r.failures, r.nextProbeMs = 0, 0
	if changed {
		r.state, r.sinceMs, r.lastErr = mailbox.RemoteHealthy, time.Now().UnixMilli(), ""
	}
	r.mu.Unlock()
	if wasOpen {
		r.d.log.Info("remote agent answered its probe: circuit closed", "agent", r.agent)
		notify(r.free)
	}
	if changed {
		r.d.remote.StatusChanged()
	}
}

// failed records a call the remote did not answer: failing, and after
// FailuresToOpen in a row, the circuit opens.
func (r *remote) failed(err error) {
	now := time.Now()
	r.mu.Lock()
	r.failures++
	r.lastErr = err.Error()
	prev := r.state
	switch {
	case r.failures >= r.d.o.FailuresToOpen:
		if r.state != mailbox.RemoteCircuitOpen {
			r.state, r.sinceMs = mailbox.RemoteCircuitOpen, now.UnixMilli()
		}
		r.nextProbeMs = now.Add(r.d.o.ProbeInterval).UnixMilli()
	default:
		if r.state != mailbox.RemoteFailing {
			r.state, r.sinceMs = mailbox.RemoteFailing, now.UnixMilli()
		}
		r.nextProbeMs = now.Add(r.d.retries.After(r.failures)).UnixMilli()
	}
	opened := prev != mailbox.RemoteCircuitOpen && r.state == mailbox.RemoteCircuitOpen
	if opened && r.stopLeasing != nil {
		r.stopLeasing()
	}
	r.mu.Unlock()
	if opened {
		r.d.log.Warn("remote agent keeps failing: circuit open, no task is leased for it until a probe is answered", "agent", r.agent, "failures", r.d.o.FailuresToOpen, "err", err)
	}
	r.d.remote.StatusChanged()
}

// observe counts a call's answer: a transport failure against the
// remote, anything else (an answer, a refusal) as answered.
func (r *remote) observe(err error) {
	switch {
	case err == nil:
		r.answered()
	case a2aremote.Retryable(err) && !errors.Is(err, context.Canceled):
		r.failed(err)
	default:
		var re *a2aremote.Error
		if errors.As(err, &re) && !re.Retryable() {
			r.answered()
		}
	}
}

func (r *remote) setState(state, lastErr string) {
	r.mu.Lock()
	if r.state != state {
		r.state, r.sinceMs = state, time.Now().UnixMilli()
	}
	r.lastErr = lastErr
	r.mu.Unlock()
	r.d.remote.StatusChanged()
}

func (r *remote) circuitOpen() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state == mailbox.RemoteCircuitOpen
}

func (r *remote) currentClient() *a2aremote.Client {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.client
}

func (r *remote) status() *mailbox.RemoteStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := &mailbox.RemoteStatus{Binding: r.rcard.Binding, Endpoint: r.rcard.Endpoint, State: r.state, SinceMs: r.sinceMs,
		LastError: r.lastErr, InFlight: r.underWay(), Limit: r.spec.Concurrency}
	if r.state == mailbox.RemoteCircuitOpen || r.state == mailbox.RemoteFailing {
		st.NextProbeMs = r.nextProbeMs
	}
	for _, dl := range r.deliveries {
		st.Deliveries = append(st.Deliveries, dl.status())
	}
	slices.SortFunc(st.Deliveries, func(a, b mailbox.DeliveryStatus) int {
		switch {
		case a.TaskID < b.TaskID:
			return -1
		case a.TaskID > b.TaskID:
			return 1
		}
		return 0
	})
	return st
}

// recover picks up the leases the agent holds (a restart, a takeover, a
// loop started again): a task the remote accepted under its lease is
// followed; for one it did not, the remote is asked whether it holds it
// (modeSettle).
func (r *remote) recover(ctx context.Context) {
	q, err := r.d.mailbox.Queue(ctx, mailbox.QueueFilter{State: mailbox.TaskInFlight, Limit: mailbox.MaxLimit})
	if err != nil {
		if ctx.Err() == nil {
			r.d.log.Error("reading a remote agent's leases to recover them failed; they stay for the operator", "agent", r.agent, "err", err)
		}
		return
	}
	var pending []pendingLease
	for _, e := range q.Tasks {
		if e.LeasedTo != r.agent {
			continue
		}
		r.mu.Lock()
		_, known := r.deliveries[e.LeaseID]
		r.mu.Unlock()
		if known {
			continue
		}
		rec, err := r.d.mailbox.Task(ctx, e.Task.ID)
		if err != nil || rec.State != mailbox.TaskInFlight || rec.LeaseID != e.LeaseID {
			continue
		}
		lease := mailbox.Lease{LeaseID: e.LeaseID, Attempt: e.Attempt, LeasedAtMs: e.LeasedAtMs}
		if rec.AcceptedUnder(e.LeaseID) {
			r.sawContext(rec.Task.ID, rec.Remote.ContextID)
			r.d.log.Info("recovering a delivery the remote accepted: following it, never sending it again", "agent", r.agent, "task_id", e.Task.ID, "remote_task_id", rec.Remote.TaskID)
			r.begin(ctx, e.Task, lease, modeFollow, rec.Remote.TaskID)
			continue
		}
		pending = append(pending, pendingLease{e.Task, lease})
	}
	// Whether the remote keeps the contextId it is sent is learnt from
	// the tasks it accepted: those above, and those it finished.
	if !r.keepsContext() {
		for _, rec := range r.d.remote.Results(r.agent) {
			r.sawContext(rec.Task.ID, rec.Remote.ContextID)
		}
	}
	for _, p := range pending {
		r.d.log.Info("recovering a delivery the remote may have received, whose acceptance was never recorded: asking the remote whether it holds it", "agent", r.agent, "task_id", p.task.ID, "lease_id", p.lease.LeaseID)
		r.begin(ctx, p.task, p.lease, modeSettle, "")
	}
}

// pendingLease is a lease recovery settles with the remote.
type pendingLease struct {
	task  mailbox.Task
	lease mailbox.Lease
}
