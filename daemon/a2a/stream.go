package a2a

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"
)

// stream serves a task's events as Server-Sent Events: one `data:` line
// per event (the JSON of wrap(event)) with `id:` the log seq of the change
// it shows, until the task finishes or the client goes. The caller has
// refused what it could before the stream opens; an error after that is
// sent as one last event.
func (e *Edge) stream(w http.ResponseWriter, r *http.Request, id string, after *uint64, initial bool, b binding) error {
	rc := http.NewResponseController(w)
	started := false
	start := func() {
		if started {
			return
		}
		started = true
		h := w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
		w.WriteHeader(http.StatusOK)
	}
	defer rc.SetWriteDeadline(time.Time{})
	write := func(b []byte) error {
		if err := rc.SetWriteDeadline(time.Now().Add(e.opts.WriteTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
		return rc.Flush()
	}
	emit := func(ev streamEvent) error {
		start()
		data, err := json.Marshal(b.event(ev))
		if err != nil {
			return err
		}
		buf := make([]byte, 0, len(data)+32)
		buf = append(buf, "id: "...)
		buf = strconv.AppendUint(buf, ev.task.seq, 10)
		buf = append(buf, "\ndata: "...)
		buf = append(buf, data...)
		buf = append(buf, "\n\n"...)
		return write(buf)
	}
	ping := func() error {
		start()
		return write([]byte(": ping\n\n"))
	}
	// Open the stream at once: a client waits for the headers, and a
	// resumed stream may have nothing to say until the task moves.
	start()
	if err := rc.Flush(); err != nil {
		return nil
	}
	err := e.follow(r.Context(), id, after, initial, emit, ping)
	if err == nil || r.Context().Err() != nil {
		return nil
	}
	// The stream has begun: the error goes as a last event the client
	// can read, then the stream ends.
	_ = write(b.failure(rpcErrorFrom(err, "")))
	return nil
}

// writeStreamError answers a stream that failed before it began: an event
// stream holding the error alone.
func writeStreamError(w http.ResponseWriter, b binding, re *rpcError) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b.failure(re))
}

// binding is how one protocol binding writes a stream's events and the
// error that may end it.
type binding struct {
	event   func(streamEvent) any
	failure func(*rpcError) []byte // a whole SSE block
}

// rpcBinding streams JSON-RPC responses to request id: the event as the
// result, an error as the error, the id echoed in both (the JS SDK drops
// an event whose id is not its request's).
func rpcBinding(v string, id json.RawMessage) binding {
	return binding{
		event: func(ev streamEvent) any { return obj{"jsonrpc": "2.0", "id": id, "result": encodeEvent(v, ev)} },
		failure: func(re *rpcError) []byte {
			data, _ := json.Marshal(obj{"jsonrpc": "2.0", "id": id, "error": rpcErrorBody(v, re)})
			return append(append([]byte("data: "), data...), "\n\n"...)
		},
	}
}

// restBinding streams v1.0 StreamResponses; an error is an `event: error`
// block holding a google.rpc.Status, as the JS SDK's REST client reads it.
var restBinding = binding{
	event: func(ev streamEvent) any { return encodeEvent(v10, ev) },
	failure: func(re *rpcError) []byte {
		_, body := restError(re)
		data, _ := json.Marshal(body)
		return append(append([]byte("event: error\ndata: "), data...), "\n\n"...)
	},
}
