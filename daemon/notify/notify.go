// Package notify is the daemon's notifier: while the instance leads, it
// delivers the outbox of push notifications (mailbox/push.go) to their
// webhooks. Each notification is POSTed until its receiver answers 2xx
// (push_delivered), retried with exponential backoff and jitter up to
// MaxAttempts, then dead-lettered (push_dead_lettered). One notification
// per task and config (a line) is in flight at a time, the oldest first,
// so a receiver sees a task's changes in order; an attempt is a goroutine
// of its own while it lasts, and a line waiting out its backoff an entry
// in a heap of retries by when they are due, so a receiver down costs
// memory by the line, not a goroutine. Attempts, their errors and
// the next try are memory only (Status), shown to the operator; a restart
// or a new leader starts the count again and delivers what the outbox
// holds: at least once, every duplicate with the same id. Once a second
// the notifier holds the outbox to its bounds (Options.Bounds): what they
// do not allow, the oldest first, is dropped with push_dropped events by
// mailbox.OutboxPrincipal, audited and replayed like an operator's drop.
package notify

import (
	"bytes"
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mailroom/mailroom/daemon/a2a"
	"github.com/mailroom/mailroom/daemon/engine"
	"github.com/mailroom/mailroom/internal/metrics"
	"github.com/mailroom/mailroom/internal/webhook"
	"github.com/mailroom/mailroom/mailbox"
)

// Headers of a notification's POST.
const (
	// HeaderToken carries the config's token, as the A2A SDKs' senders do.
	HeaderToken = "X-A2A-Notification-Token"
	// HeaderID is the notification's stable id: a receiver drops one it
	// has seen.
	HeaderID = "Mailroom-Notification-Id"
)

// Options tune the notifier; the zero value of each field is its default.
type Options struct {
	Logger *slog.Logger
	// Policy is held to before every POST (the hosts allowed can change
	// with the configuration, a name can resolve elsewhere); nil allows
	// any URL the log holds.
	Policy *webhook.Policy
	// HTTPClient posts the notifications; nil is a client of the
	// notifier's own that follows no redirect.
	HTTPClient *http.Client
	// Timeout bounds one POST (10s).
	Timeout time.Duration
	// RetryMin and RetryMax bound the backoff between attempts (1s, 5m).
	RetryMin, RetryMax time.Duration
	// MaxAttempts is how many attempts a notification gets before it is
	// dead-lettered (8).
	MaxAttempts int
	// Concurrency bounds the POSTs in flight at once (16).
	Concurrency int
	// LeaderPoll is how often the notifier checks whether the instance
	// leads, and looks at the outbox when nothing woke it (1s); it holds
	// the outbox to Bounds as often.
	LeaderPoll time.Duration
	// Bounds bound the outbox: past them the oldest notifications are
	// dropped (push_dropped, by "mailroom", the reason naming the bound);
	// nil is mailbox.DefaultOutboxBounds, a zero field no bound.
	Bounds *mailbox.OutboxBounds
}

// Defaults of Options.
const (
	DefaultMaxAttempts = 8
	DefaultRetryMax    = 5 * time.Minute
)

func (o Options) withDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.Timeout, 10*time.Second)
	def(&o.RetryMin, time.Second)
	def(&o.RetryMax, DefaultRetryMax)
	def(&o.LeaderPoll, time.Second)
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 16
	}
	if o.Bounds == nil {
		b := mailbox.DefaultOutboxBounds()
		o.Bounds = &b
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	return o
}

// Notifier delivers the outbox while the instance leads. Run it once.
type Notifier struct {
	eng *engine.Engine
	o   Options
	log *slog.Logger

	wake chan struct{}
	sem  chan struct{}

	mu sync.Mutex
	// leading is false while another instance delivers.
	leading bool
	// term counts the terms of leading: a retry of an earlier term is
	// not made (the new term starts the count again).
	term uint64
	// active holds the lines (task, config) an attempt is being made on
	// (a goroutine each, at most maxActive); waiting, the lines whose
	// last attempt failed, until their next one is due (due, a heap by
	// time): a line waiting out its backoff costs a small entry, not a
	// goroutine.
	active  map[key]bool
	waiting map[key]*retry
	due     retryHeap
	// attempts holds what is known of each notification being delivered.
	attempts map[string]mailbox.PushAttempt

	stats *stats
}

type key struct{ task, config string }

// retry is a line's next attempt, due at at.
type retry struct {
	x       mailbox.Notification
	attempt int
	at      time.Time
	term    uint64
}

// retryHeap orders retries by when they are due.
type retryHeap []*retry

func (h retryHeap) Len() int           { return len(h) }
func (h retryHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h retryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *retryHeap) Push(x any)        { *h = append(*h, x.(*retry)) }
func (h *retryHeap) Pop() any {
	old := *h
	r := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return r
}

// New makes a notifier for eng's outbox.
func New(eng *engine.Engine, o Options) *Notifier {
	o = o.withDefaults()
	n := &Notifier{eng: eng, o: o, log: o.Logger, wake: make(chan struct{}, 1), sem: make(chan struct{}, o.Concurrency),
		active: map[key]bool{}, waiting: map[key]*retry{}, attempts: map[string]mailbox.PushAttempt{}, stats: newStats()}
	eng.SetPushStatus(func() mailbox.PushStatus {
		return mailbox.PushStatus{Delivering: n.Leading(), Attempts: n.Status(), Bounds: o.Bounds.View(), Dropped: n.stats.droppedCount()}
	})
	return n
}

// Leading reports whether this instance's notifier delivers (false: it
// stands by while another instance leads).
func (n *Notifier) Leading() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.leading
}

// Status returns what the notifier knows of the notifications it is
// delivering, by id: attempts so far, the last error, the next try.
func (n *Notifier) Status() map[string]mailbox.PushAttempt {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make(map[string]mailbox.PushAttempt, len(n.attempts))
	for id, a := range n.attempts {
		out[id] = a
	}
	return out
}

// Wake makes the notifier look at the outbox now (after an operator's
// retry, say).
func (n *Notifier) Wake() {
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// Run delivers while the instance leads, until ctx ends; it returns once
// every delivery it started has stopped (what was not acknowledged stays
// in the outbox for the next run or leader).
func (n *Notifier) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	timer := time.NewTimer(n.o.LeaderPoll)
	defer timer.Stop()
	var term struct {
		ctx  context.Context
		stop context.CancelFunc
	}
	term.ctx, term.stop = context.WithCancel(ctx)
	defer func() { term.stop() }()
	var trimmed time.Time
	for ctx.Err() == nil {
		if !n.eng.Leading() {
			if n.setLeading(false) {
				// Deliveries under way stop; what they did not finish
				// stays in the outbox for the instance that leads.
				term.stop()
			}
		} else {
			if n.setLeading(true) {
				term.stop()
				term.ctx, term.stop = context.WithCancel(ctx)
				n.log.Info("push notifier on: this instance leads")
				n.follow(term.ctx, &wg)
			}
			if time.Since(trimmed) >= n.o.LeaderPoll {
				n.trim(term.ctx)
				trimmed = time.Now()
			}
			n.startDue(term.ctx, &wg)
			n.scan(term.ctx, &wg)
			// At most one look at the outbox per scanEvery: a busy
			// mailbox wakes the notifier on every change.
			sleep(ctx, scanEvery)
		}
		// Reset drops a tick not taken (Go 1.23's timers).
		timer.Reset(n.nextLook())
		select {
		case <-ctx.Done():
		case <-timer.C:
		case <-n.wake:
		}
	}
}

// nextLook is how long the notifier may sleep: until the first retry is
// due, LeaderPoll at most.
func (n *Notifier) nextLook() time.Duration {
	n.mu.Lock()
	defer n.mu.Unlock()
	d := n.o.LeaderPoll
	if len(n.due) > 0 {
		d = max(0, min(d, time.Until(n.due[0].at)))
	}
	return d
}

// scanEvery spaces the notifier's looks at the outbox.
const scanEvery = 10 * time.Millisecond

// setLeading records whether the instance leads and reports a change.
func (n *Notifier) setLeading(on bool) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	changed := n.leading != on
	n.leading = on
	if changed {
		// A new term (or none): the retries waiting, and what is known
		// of their attempts, are the old term's.
		n.term++
		clear(n.waiting)
		clear(n.attempts)
		n.due = nil
	}
	return changed
}

// follow wakes the notifier on every change that may have put a
// notification in the outbox, while ctx lasts.
func (n *Notifier) follow(ctx context.Context, wg *sync.WaitGroup) {
	wg.Go(func() {
		for ctx.Err() == nil {
			sub, err := n.eng.SubscribeInternal(ctx, nil)
			if err != nil {
				sleep(ctx, n.o.LeaderPoll)
				continue
			}
			// The subscription starts now, without a snapshot: look at
			// the outbox as it is, then at every change.
			n.Wake()
			for ev := range sub.Events() {
				if ev.TaskID != "" || ev.Type == mailbox.EventSnapshot {
					n.Wake()
				}
			}
			sub.Close()
		}
	})
}

// maxActive bounds the lines an attempt is being made on at once, each a
// goroutine (its POST bounded again by Options.Concurrency): a look at an
// outbox of many lines starts the oldest, and the others as these end.
func (n *Notifier) maxActive() int { return 4 * n.o.Concurrency }

// scan starts an attempt for every line (task, config) with a pending
// notification and none under way or waiting: its oldest, the oldest
// lines first, up to maxActive. It asks the state for those heads alone
// (engine.OutboxHeads), not for a copy of the outbox.
func (n *Notifier) scan(ctx context.Context, wg *sync.WaitGroup) {
	heads, pending, dead, err := n.eng.OutboxHeads(ctx, func(task, config string) bool {
		n.mu.Lock()
		defer n.mu.Unlock()
		k := key{task, config}
		return n.active[k] || n.waiting[k] != nil
	})
	if err != nil {
		return
	}
	n.stats.gauges(pending, dead)
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, head := range heads {
		if len(n.active) >= n.maxActive() {
			return
		}
		k := key{head.TaskID, head.ConfigID}
		if n.active[k] || n.waiting[k] != nil {
			continue // started since the look
		}
		n.start(ctx, wg, head, 1)
	}
}

// startDue starts the retries that are due, up to maxActive.
func (n *Notifier) startDue(ctx context.Context, wg *sync.WaitGroup) {
	n.mu.Lock()
	defer n.mu.Unlock()
	now := time.Now()
	for len(n.due) > 0 && !n.due[0].at.After(now) && len(n.active) < n.maxActive() {
		r := heap.Pop(&n.due).(*retry)
		k := key{r.x.TaskID, r.x.ConfigID}
		if n.waiting[k] != r {
			continue
		}
		delete(n.waiting, k)
		if r.term != n.term {
			delete(n.attempts, r.x.ID)
			continue
		}
		n.start(ctx, wg, r.x, r.attempt)
	}
}

// start makes attempt number attempt at x, the head of its line, in a
// goroutine of its own; failed with attempts left, the line waits for its
// retry (due), else it is free for its next notification. The caller
// holds n.mu.
func (n *Notifier) start(ctx context.Context, wg *sync.WaitGroup, x mailbox.Notification, attempt int) {
	k := key{x.TaskID, x.ConfigID}
	n.active[k] = true
	term := n.term
	wg.Go(func() {
		again, wait := n.try(ctx, x, attempt)
		n.mu.Lock()
		delete(n.active, k)
		if again && term == n.term && ctx.Err() == nil {
			r := &retry{x: x, attempt: attempt + 1, at: time.Now().Add(wait), term: term}
			n.waiting[k] = r
			heap.Push(&n.due, r)
		} else {
			// What is known of its attempts goes with the delivery: the
			// next one (another run, another leader) starts the count
			// again.
			delete(n.attempts, x.ID)
		}
		n.mu.Unlock()
		n.Wake()
	})
}

// trimBatch is how many drops one decision of the bounds makes.
const trimBatch = 1000

// trim holds the outbox to the bounds: the leader drops what they do not
// allow (engine.TrimOutbox), a batch at a time.
func (n *Notifier) trim(ctx context.Context) {
	for ctx.Err() == nil {
		dropped, err := n.eng.TrimOutbox(ctx, *n.o.Bounds, trimBatch)
		n.stats.dropped(dropped)
		if err != nil {
			n.log.Warn("push outbox: dropping what its bounds do not allow failed; tried again later", "err", err)
			return
		}
		if dropped < trimBatch {
			return
		}
	}
}

// try makes attempt number attempt at notification x and records what
// came of it: acknowledged (push_delivered), or failed with its attempts
// run out (push_dead_lettered), or failed with attempts left: again, after
// wait. A retry of a notification no longer pending (dropped, its config
// deleted) is not made. When ctx ends first it stays pending for whoever
// delivers next.
func (n *Notifier) try(ctx context.Context, x mailbox.Notification, attempt int) (again bool, wait time.Duration) {
	if attempt > 1 && !n.stillPending(ctx, x.ID) {
		return false, 0
	}
	err := n.post(ctx, x)
	if ctx.Err() != nil {
		return false, 0
	}
	if err == nil {
		n.stats.delivered(time.Since(time.UnixMilli(x.CreatedAtMs)))
		if rerr := n.eng.PushDelivered(ctx, x.ID, attempt); rerr != nil && mailbox.ErrorCode(rerr) != mailbox.CodeNotFound && mailbox.ErrorCode(rerr) != mailbox.CodeConflict {
			// Unknown whether it was recorded: it may be posted again,
			// with the same id.
			n.log.Warn("push notification delivered but not recorded; it may be delivered again", "notification", x.ID, "err", rerr)
		}
		return false, 0
	}
	n.stats.failed()
	if attempt >= n.o.MaxAttempts {
		if rerr := n.eng.PushDeadLettered(ctx, x.ID, attempt, err.Error()); rerr != nil && ctx.Err() == nil {
			n.log.Warn("push notification: its dead letter could not be recorded; it stays pending", "notification", x.ID, "err", rerr)
		} else if rerr == nil {
			n.stats.deadLettered()
		}
		return false, 0
	}
	wait = jitter(backoffAfter(attempt, n.o.RetryMin, n.o.RetryMax))
	n.mu.Lock()
	n.attempts[x.ID] = mailbox.PushAttempt{Attempts: attempt, LastError: err.Error(), NextTryMs: time.Now().Add(wait).UnixMilli()}
	n.mu.Unlock()
	n.log.Info("push notification failed; retrying", "notification", x.ID, "task_id", x.TaskID, "attempt", attempt, "in", wait.Round(time.Millisecond), "err", err)
	return true, wait
}

// stillPending reports whether notification id is still to be delivered
// (an operator may have dropped it, the bounds too, or its config been
// deleted).
func (n *Notifier) stillPending(ctx context.Context, id string) bool {
	ok, err := n.eng.NotificationPending(ctx, id)
	return ok || err != nil
}

// post makes one attempt: nil when the receiver answered 2xx.
func (n *Notifier) post(ctx context.Context, x mailbox.Notification) error {
	rec, err := n.eng.Task(ctx, x.TaskID)
	if err != nil {
		return fmt.Errorf("reading task %s: %s", x.TaskID, mailbox.ErrorMessage(err))
	}
	var cfg *mailbox.PushConfig
	var body []byte
	contentType := "application/json"
	if x.Agent != "" {
		// A native sender's webhook: a result is waiting for it.
		reg, err := n.eng.Registered(ctx, x.Agent)
		if err != nil || reg.Card.Webhook == nil {
			return fmt.Errorf("%s has no webhook any more", x.Agent)
		}
		c := reg.Card.Webhook.Config()
		cfg, body = &c, resultWaiting(rec, x)
	} else {
		for _, c := range rec.Push {
			if c.ID == x.ConfigID {
				cfg = &c
				break
			}
		}
		if cfg == nil {
			return fmt.Errorf("task %s has no push config %q any more", x.TaskID, x.ConfigID)
		}
		body, contentType = a2a.PushBody(rec, x.Seq)
	}
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return fmt.Errorf("webhook URL %q: %v", cfg.URL, err)
	}
	if n.o.Policy != nil {
		if err := n.o.Policy.Check("url", u); err != nil {
			return err
		}
	}
	select {
	case n.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-n.sem }()
	cctx, cancel := context.WithTimeout(ctx, n.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, http.MethodPost, cfg.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set(HeaderID, x.ID)
	if cfg.Token != "" {
		req.Header.Set(HeaderToken, cfg.Token)
	}
	if a := cfg.Authentication; a != nil && a.Credentials != "" {
		for _, s := range a.Schemes {
			if strings.EqualFold(s, "bearer") {
				req.Header.Set("Authorization", "Bearer "+a.Credentials)
				break
			}
		}
	}
	resp, err := n.o.HTTPClient.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("POST %s: %v", u.Redacted(), err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s: %s", u.Redacted(), resp.Status)
	}
	return nil
}

// ResultWaiting is what a native sender's webhook is posted: a result is
// waiting for it (drain it with results/next), its task and status.
type ResultWaiting struct {
	Kind         string `json:"kind"`
	Notification string `json:"notification"`
	TaskID       string `json:"task_id"`
	Sender       string `json:"sender"`
	Recipient    string `json:"recipient"`
	Event        string `json:"event"`
	Status       string `json:"status,omitempty"`
	Seq          uint64 `json:"seq"`
}

// KindResultWaiting is ResultWaiting's kind.
const KindResultWaiting = "a2a_result_waiting"

func resultWaiting(rec mailbox.TaskRecord, x mailbox.Notification) []byte {
	w := ResultWaiting{Kind: KindResultWaiting, Notification: x.ID, TaskID: rec.Task.ID, Sender: rec.Task.Sender, Recipient: rec.Task.Recipient, Event: x.Event, Seq: x.Seq}
	for _, h := range rec.History {
		if h.Seq == x.Seq {
			w.Status = h.Status
		}
	}
	b, _ := json.Marshal(w)
	return b
}

// backoffAfter is the wait after the attempt-th failed attempt: RetryMin,
// doubling with each failure, never more than RetryMax.
func backoffAfter(attempt int, least, most time.Duration) time.Duration {
	d := least
	for i := 1; i < attempt && d < most; i++ {
		d *= 2
	}
	return min(d, most)
}

// jitter is d give or take a fifth.
func jitter(d time.Duration) time.Duration {
	return d - d/5 + time.Duration(rand.Int64N(int64(d/5)*2+1))
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// WriteMetrics writes the notifier's figures to /metrics.
func (n *Notifier) WriteMetrics(w *metrics.Writer) { n.stats.write(w) }

type stats struct {
	mu            sync.Mutex
	outcomes      map[string]float64
	latency       *metrics.Histogram
	pending, dead int
	drops         float64
}

func newStats() *stats {
	return &stats{outcomes: map[string]float64{"delivered": 0, "failed": 0, "dead_lettered": 0},
		latency: metrics.NewHistogram(0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 1800, 3600)}
}

func (s *stats) delivered(since time.Duration) {
	s.mu.Lock()
	s.outcomes["delivered"]++
	s.mu.Unlock()
	s.latency.Observe(since.Seconds())
}

func (s *stats) failed() {
	s.mu.Lock()
	s.outcomes["failed"]++
	s.mu.Unlock()
}

func (s *stats) deadLettered() {
	s.mu.Lock()
	s.outcomes["dead_lettered"]++
	s.mu.Unlock()
}

func (s *stats) dropped(n int) {
	if n > 0 {
		s.mu.Lock()
		s.drops += float64(n)
		s.mu.Unlock()
	}
}

func (s *stats) droppedCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return int(s.drops)
}

func (s *stats) gauges(pending, dead int) {
	s.mu.Lock()
	s.pending, s.dead = pending, dead
	s.mu.Unlock()
}

func (s *stats) write(w *metrics.Writer) {
	s.mu.Lock()
	samples := make([]metrics.Labeled, 0, len(s.outcomes))
	for o, v := range s.outcomes {
		samples = append(samples, metrics.Labeled{Labels: [][2]string{{"outcome", o}}, Value: v})
	}
	pending, dead, drops := s.pending, s.dead, s.drops
	s.mu.Unlock()
	sort.Slice(samples, func(i, j int) bool { return samples[i].Labels[0][1] < samples[j].Labels[0][1] })
	w.LabeledCounter("mailroom_push_notifications_total", "Push notification attempts by outcome: delivered (the receiver answered 2xx), failed (retried), dead_lettered (retries ran out).", samples)
	w.Histogram("mailroom_push_delivery_seconds", "Time from a change to its push notification acknowledged by the receiver.", s.latency)
	w.Gauge("mailroom_push_pending", "Push notifications in the outbox waiting for delivery, as this instance's notifier last saw it.", float64(pending))
	w.Gauge("mailroom_push_dead_letters", "Push notifications dead-lettered: their retries ran out; an operator retries or drops them.", float64(dead))
	w.Counter("mailroom_push_dropped_total", "Push notifications this instance dropped because the outbox passed a bound (push_outbox_per_receiver, push_outbox_max, push_dead_retention).", drops)
}
