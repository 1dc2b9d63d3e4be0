package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/mailroom/mailroom/internal/sse"
	"github.com/mailroom/mailroom/mailbox"
)

// The event stream is served from net/http directly rather than with
// github.com/r3labs/sse/v2's server: that server fans each message out with
// blocking channel sends (one stalled client stalls every other), keeps an
// unbounded in-memory replay log beside ours, and overwrites event ids with
// its own counter, while our ids must be log sequence numbers that survive
// restarts. Here each subscriber has the service's bounded buffer, every
// write has a deadline, and replay comes from the durable log.

// maxBatchBytes bounds how much is written between flushes when events
// arrive faster than the subscriber reads; it keeps a burst to a few large
// writes without holding a snapshot-sized buffer per subscriber.
const maxBatchBytes = 256 << 10

func (a *api) events(w http.ResponseWriter, r *http.Request) error {
	p, err := parseParams(r, "last_event_id", "agents")
	if err != nil {
		return err
	}
	after, err := lastEventID(r, p)
	if err != nil {
		return err
	}
	withAgents, err := wantsAgents(p)
	if err != nil {
		return err
	}
	ctx := r.Context()
	sub, err := a.svc.Subscribe(ctx, after)
	if err != nil {
		return err
	}
	defer sub.Close()
	a.streams.Add(1)
	defer a.streams.Add(-1)

	// Each chunk is written under its own deadline (sse.Writer.Write): a
	// subscriber that stops reading ends the stream instead of holding this
	// goroutine.
	w.Header()["Vary"] = varyAuthorization // what a stream shows depends on the token
	out := sse.OpenUnframed(w, a.opts.WriteTimeout)
	defer out.Close()
	if err := out.Write(nil); err != nil { // headers now: the client sees it is connected
		a.log.Info("event stream ended", "err", err)
		return nil
	}
	s := &eventStream{a: a, out: out, sub: sub, events: sub.Events()}
	if after != nil {
		s.sent = *after
	}
	// A nil channel is never ready: a stream that did not ask for the
	// agents listing never carries it.
	if withAgents {
		s.agents = sub.Agents()
	}
	return s.serve(ctx)
}

// eventStream is one subscriber's stream while it lasts.
type eventStream struct {
	a      *api
	out    *sse.Writer
	sub    mailbox.Subscription
	events <-chan *mailbox.Event
	agents <-chan mailbox.AgentsUpdate
	buf    bytes.Buffer
	// sent is the seq of the last event put on the stream. pending is a
	// listing that counts events not sent yet (its Seq is past sent): it
	// waits for them, so it never reaches the client first. This is the
	// one place that keeps the listing behind the events.
	sent    uint64
	pending *mailbox.AgentsUpdate
}

// serve writes the events, the listings and the heartbeats until the
// client goes or the subscription ends.
func (s *eventStream) serve(ctx context.Context) error {
	heartbeat := time.NewTicker(s.a.opts.HeartbeatInterval)
	defer heartbeat.Stop()
	for {
		s.buf.Reset()
		select {
		case <-ctx.Done():
			return nil
		case <-heartbeat.C:
			if err := s.out.Ping(); err != nil {
				s.a.log.Info("event stream ended: write failed", "err", err)
				return nil
			}
			continue
		case ev, ok := <-s.events:
			if !ok {
				s.a.endStream(s.sub.Err())
				return nil
			}
			if !s.a.letGather(ctx) {
				return nil
			}
			if err := appendEvent(&s.buf, ev, &s.sent); err != nil {
				return err
			}
		case up := <-s.agents:
			s.pending = &up
		}
		if ended, err := s.write(); ended || err != nil {
			return err
		}
	}
}

// letGather lets the events of the next few milliseconds gather (in the
// service's bounded buffer) so they leave in one write: with hundreds of
// subscribers, a write per event per subscriber is what the fan-out
// profile spent its time on. It reports false if the client went.
func (a *api) letGather(ctx context.Context) bool {
	d := a.flushDelay()
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	select {
	case <-ctx.Done():
		t.Stop()
		return false
	case <-t.C:
		return true
	}
}

// write adds the events ready now, and the pending listing once every
// event it counts is sent, to what serve put in buf, and writes it in one
// chunk; ended reports that the stream is over.
func (s *eventStream) write() (ended bool, err error) {
	open, err := gather(&s.buf, s.events, &s.sent)
	if err != nil {
		return true, err
	}
	if s.pending != nil && s.pending.Seq <= s.sent {
		if err := appendAgents(&s.buf, *s.pending); err != nil {
			return true, err
		}
		s.pending = nil
	}
	if s.buf.Len() == 0 && open {
		return false, nil // a listing waiting for its events
	}
	if err := s.out.Write(s.buf.Bytes()); err != nil {
		s.a.log.Info("event stream ended: write failed", "err", err)
		return true, nil
	}
	if s.buf.Cap() > 4*maxBatchBytes {
		// A snapshot grew the buffer; do not keep megabytes per idle
		// subscriber for the life of its stream.
		s.buf = bytes.Buffer{}
	}
	if !open {
		s.a.endStream(s.sub.Err())
		return true, nil
	}
	return false, nil
}

// endStream logs why the service closed a subscription. A slow subscriber
// is simply disconnected: its client reconnects with Last-Event-ID and
// catches up from the log.
func (a *api) endStream(err error) {
	switch {
	case err == nil:
	case errors.Is(err, mailbox.ErrSlowSubscriber):
		a.log.Info("event stream cut: subscriber fell behind", "err", err)
	default:
		a.log.Warn("event stream ended by the service", "err", err)
	}
}

// gather appends the events already waiting, up to maxBatchBytes, so a
// burst costs one flush instead of one per event. open is false when the
// subscription ended.
func gather(buf *bytes.Buffer, events <-chan *mailbox.Event, sent *uint64) (open bool, err error) {
	for buf.Len() < maxBatchBytes {
		select {
		case ev, ok := <-events:
			if !ok {
				return false, nil
			}
			if err := appendEvent(buf, ev, sent); err != nil {
				return true, err
			}
		default:
			return true, nil
		}
	}
	return true, nil
}

// appendEvent writes one log event (or snapshot) as an SSE block whose id
// is its seq, and notes the seq in *sent. An event carrying a secret (a
// push config, a webhook, a snapshot holding either) is written redacted
// (mailbox.Event.Redacted), encoded again rather than its log bytes.
func appendEvent(buf *bytes.Buffer, shared *mailbox.Event, sent *uint64) error {
	ev := shared.Redacted() // a copy when it has secrets; shared is never written
	data := ev.Encoded
	if data == nil {
		// Only here is ev boxed for the encoder: boxing it for every event
		// of every subscriber (a copy on the heap each) was a quarter of
		// the fan-out profile at 500 subscribers.
		var err error
		if data, err = json.Marshal(ev); err != nil {
			return err
		}
	}
	sse.AppendBlock(buf, strconv.FormatUint(ev.Seq, 10), ev.Type, data)
	*sent = ev.Seq
	return nil
}

// encodedOnce returns the JSON its producer made once for every subscriber,
// or encodes v when there is none.
func encodedOnce(encoded []byte, v any) ([]byte, error) {
	if encoded != nil {
		return encoded, nil
	}
	return json.Marshal(v)
}

// lastEventID reads where a subscriber resumes: the Last-Event-ID header
// (what EventSource and our client send) or ?last_event_id= (for tools
// that cannot set headers). nil means start with a snapshot.
func lastEventID(r *http.Request, p params) (*uint64, error) {
	after, prob := sse.LastEventID(r)
	if after == nil && prob == nil {
		q, ok := p.get("last_event_id")
		if !ok {
			return nil, nil
		}
		after, prob = sse.ParseID("last_event_id", q)
	}
	if prob != nil {
		return nil, problem(prob, "")
	}
	return after, nil
}
