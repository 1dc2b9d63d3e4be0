package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/r3labs/sse/v2"

	"github.com/mailroom/mailroom/internal/retry"
	"github.com/mailroom/mailroom/mailbox"
)

// How Subscribe reconnects: exponential backoff between these bounds, with
// no limit on attempts (a console should outlive any daemon restart), its
// jitter so a restarted daemon is not hit by every console at once.
var reconnect = retry.Backoff{Min: 100 * time.Millisecond, Max: 5 * time.Second}

// maxEventBytes bounds one SSE event. Snapshots carry the whole state and
// can be many MB; r3labs/sse refuses anything over its 64 KiB default.
const maxEventBytes = 256 << 20

var (
	errStreamEnded = errors.New("the daemon ended the event stream")
	errIdle        = errors.New("the event stream went silent (no event or heartbeat); reconnecting")
)

// Subscribe streams the daemon's events to the returned channel, in seq
// order, none missing and none twice, reconnecting by itself until ctx is
// done; then the channel is closed.
//
// fromSeq 0 starts with a snapshot event (the whole state); otherwise the
// stream resumes after fromSeq (the daemon sends a snapshot instead when
// those events were compacted away). After every disconnect it resumes from
// the last delivered event. onState, when not nil, is called from the
// subscription's goroutine on every connect and disconnect.
//
// The SSE wire is read with github.com/r3labs/sse/v2's client, one per
// connection, wrapped in our own loop because on its own it does not
// reconnect after a clean end of stream (issue #147), gives up after 15
// minutes with its default backoff, and resumes from its own stored id. Here
// its retry is disabled (StopBackOff), its buffer raised to maxEventBytes,
// Last-Event-ID is set from what was delivered, and its ResponseValidator
// hook decodes error bodies and watches the body for silence (it drops
// heartbeat comments, so they cannot be seen any other way).
func (c *Client) Subscribe(ctx context.Context, fromSeq uint64, onState func(ConnState)) <-chan mailbox.Event {
	return c.SubscribeWith(ctx, fromSeq, SubscribeOptions{OnState: onState})
}

// SubscribeOptions are what a subscription reports besides its events.
type SubscribeOptions struct {
	// OnState, when not nil, is called on every connect and disconnect.
	OnState func(ConnState)
	// OnAgents, when not nil, asks the daemon for the agents listing too
	// (GET /a2a/events?agents=true) and is called with each one: at most
	// once a second, only after something changed. A listing is no log
	// event: it has no seq and never moves the point the subscription
	// resumes from. The stream opens without one, so read the current
	// listing with Agents after each connect (OnState reports it) and apply
	// these as they come.
	OnAgents func(mailbox.AgentsUpdate)
}

// SubscribeWith is Subscribe with options. The callbacks run on the
// subscription's goroutine, in the order the daemon sent what they report,
// and hold the stream up while they run: hand the value on and return.
func (c *Client) SubscribeWith(ctx context.Context, fromSeq uint64, o SubscribeOptions) <-chan mailbox.Event {
	s := &subscription{c: c, out: make(chan mailbox.Event, 64), onState: o.OnState, onAgents: o.OnAgents, last: fromSeq, resume: fromSeq != 0}
	go s.run(ctx)
	return s.out
}

type subscription struct {
	c        *Client
	out      chan mailbox.Event
	onState  func(ConnState)
	onAgents func(mailbox.AgentsUpdate)
	// last is the seq of the last delivered event; resume says whether
	// there is one (a first event may have seq 0).
	last   uint64
	resume bool
}

func (s *subscription) run(ctx context.Context) {
	defer close(s.out)
	attempt := 0
	for {
		err := s.connect(ctx, func() {
			attempt = 0
			s.report(true, 0, nil)
		})
		if ctx.Err() != nil {
			return
		}
		attempt++
		s.report(false, attempt, err)
		if !retry.Sleep(ctx, reconnect.After(attempt)) {
			return
		}
	}
}

func (s *subscription) report(live bool, attempt int, err error) {
	if s.onState != nil {
		s.onState(ConnState{Live: live, Attempt: attempt, Err: err, LastSeq: s.last, Since: time.Now()})
	}
}

// connect runs one connection until it ends and says why.
func (s *subscription) connect(ctx context.Context, onLive func()) error {
	connCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	var q url.Values
	if s.onAgents != nil {
		q = url.Values{"agents": {"true"}}
	}
	sc := sse.NewClient(s.c.url("/a2a/events", q), sse.ClientMaxBufferSize(maxEventBytes))
	sc.Connection = s.c.stream
	sc.ReconnectStrategy = noRetry{}
	if s.c.token != "" {
		sc.Headers["Authorization"] = "Bearer " + s.c.token
	}
	if s.resume {
		sc.Headers["Last-Event-ID"] = strconv.FormatUint(s.last, 10)
	}
	var watch *idleWatch
	sc.ResponseValidator = func(_ *sse.Client, resp *http.Response) error {
		// r3labs leaves the body open when the validator refuses it.
		if resp.StatusCode != http.StatusOK {
			defer resp.Body.Close()
			return s.c.refusal(resp)
		}
		if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
			resp.Body.Close()
			return fmt.Errorf("the daemon answered Content-Type %q, expected text/event-stream (is %s a mailroom daemon?)", resp.Header.Get("Content-Type"), s.c.addr)
		}
		watch = newIdleWatch(resp.Body, s.c.idle, cancel)
		resp.Body = watch
		onLive()
		return nil
	}

	err := sc.SubscribeWithContext(connCtx, "", func(msg *sse.Event) {
		if connCtx.Err() != nil {
			return // this connection is being abandoned; deliver nothing more
		}
		if cause := s.handle(connCtx, msg, watch); cause != nil {
			cancel(cause)
		}
	})
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if cause := context.Cause(connCtx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	if err != nil {
		if _, ok := errors.AsType[*mailbox.Error](err); ok {
			return err
		}
		return s.c.transportError(connCtx, err)
	}
	return errStreamEnded
}

// handle delivers one SSE message, or returns why the connection must be
// dropped (a damaged or out-of-order event: reconnecting from the last
// delivered seq repairs both).
func (s *subscription) handle(ctx context.Context, msg *sse.Event, watch *idleWatch) error {
	if len(msg.Data) == 0 {
		return nil // a block without data (such as retry:) carries no event
	}
	if string(msg.Event) == mailbox.EventAgents {
		// No id of its own (r3labs fills in the last one): it is no log
		// event, and the resume point stays where it is.
		return s.agents(msg, watch)
	}
	var ev mailbox.Event
	if err := json.Unmarshal(msg.Data, &ev); err != nil {
		return fmt.Errorf("undecodable event with id %q: %w", msg.ID, err)
	}
	if id := strconv.FormatUint(ev.Seq, 10); string(msg.ID) != id {
		return fmt.Errorf("event id %q does not match its seq %s", msg.ID, id)
	}
	if ev.Type != mailbox.EventSnapshot && s.resume {
		if ev.Seq <= s.last {
			return nil // already delivered before a reconnect
		}
		if ev.Seq != s.last+1 {
			return fmt.Errorf("event stream skipped from seq %d to %d; resuming from %d", s.last, ev.Seq, s.last)
		}
	}
	// The caller may be slow to take events; that is not the daemon going
	// silent, so the idle watch pauses meanwhile.
	watch.busy.Store(true)
	defer watch.idle()
	select {
	case s.out <- ev:
	case <-ctx.Done():
		return nil
	}
	s.last, s.resume = ev.Seq, true
	return nil
}

// agents hands an agents listing to OnAgents.
func (s *subscription) agents(msg *sse.Event, watch *idleWatch) error {
	if s.onAgents == nil {
		return nil // not asked for; a daemon sends none then
	}
	var up mailbox.AgentsUpdate
	if err := json.Unmarshal(msg.Data, &up); err != nil {
		return fmt.Errorf("undecodable agents listing: %w", err)
	}
	watch.busy.Store(true)
	defer watch.idle()
	s.onAgents(up)
	return nil
}

// idleWatch wraps an event stream's body and cancels the connection when
// nothing at all (not even a heartbeat) arrives for d.
type idleWatch struct {
	io.ReadCloser
	d    time.Duration
	t    *time.Timer
	busy atomic.Bool
}

func newIdleWatch(body io.ReadCloser, d time.Duration, cancel context.CancelCauseFunc) *idleWatch {
	w := &idleWatch{ReadCloser: body, d: d}
	// Armed only once w.t is set, so the callback never sees it unset.
	w.t = time.AfterFunc(time.Duration(math.MaxInt64), func() {
		if w.busy.Load() {
			w.t.Reset(w.d)
			return
		}
		cancel(errIdle)
	})
	w.t.Reset(d)
	return w
}

func (w *idleWatch) Read(p []byte) (int, error) {
	n, err := w.ReadCloser.Read(p)
	if n > 0 {
		w.t.Reset(w.d)
	}
	return n, err
}

func (w *idleWatch) idle() {
	w.busy.Store(false)
	w.t.Reset(w.d)
}

func (w *idleWatch) Close() error {
	w.t.Stop()
	return w.ReadCloser.Close()
}

// noRetry is r3labs' reconnect strategy that never retries: run reconnects
// itself, resuming from the last seq it delivered. It is r3labs'
// BackOff interface met without naming the backoff package's types.
type noRetry struct{}

// NextBackOff says stop (the backoff package's Stop is -1).
func (noRetry) NextBackOff() time.Duration { return -1 }

func (noRetry) Reset() {}
