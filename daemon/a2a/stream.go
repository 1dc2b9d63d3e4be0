package a2a

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/mailroom/mailroom/internal/served"
	"github.com/mailroom/mailroom/internal/sse"

	"github.com/mailroom/mailroom/daemon/a2a/wire"
)

// stream serves a task's events as Server-Sent Events: one `data:` line
// per event (the JSON of wrap(event)) with `id:` the log seq of the change
// it shows, until the task finishes, its worker asks the caller, or the
// client goes. The caller has refused what it could before the stream
// opens; an error after that is sent as one last event.
func (e *Edge) stream(w http.ResponseWriter, r *http.Request, id string, after *uint64, initial bool, b binding) error {
	// Open the stream at once: a client waits for the headers, and a
	// resumed stream may have nothing to say until the task moves.
	out := sse.Open(w, e.opts.WriteTimeout)
	defer out.Close()
	if err := out.Flush(); err != nil {
		return nil
	}
	emit := func(ev wire.StreamEvent) error {
		data, err := json.Marshal(b.event(ev))
		if err != nil {
			return err
		}
		return out.Write(sse.Block(strconv.FormatUint(ev.Task.Seq, 10), "", data))
	}
	err := e.follow(r.Context(), id, after, initial, emit, out.Ping)
	if err == nil || r.Context().Err() != nil {
		return nil
	}
	// The stream has begun: the error goes as a last event the client
	// can read, then the stream ends.
	_ = out.Write(b.failure(rpcErrorFrom(err, "")))
	return nil
}

// writeStreamError answers a stream that failed before it began: an event
// stream holding the error alone.
func writeStreamError(w http.ResponseWriter, b binding, re *wire.Error) {
	served.RPCError(w, re.Code) // /metrics: the JSON-RPC error answered
	sse.Open(w, 0)
	_, _ = w.Write(b.failure(re))
}

// binding is how one protocol binding writes a stream's events and the
// error that may end it.
type binding struct {
	event   func(wire.StreamEvent) any
	failure func(*wire.Error) []byte // a whole SSE block
}

// rpcBinding streams JSON-RPC responses to request id: the event as the
// result, an error as the error, the id echoed in both (the JS SDK drops
// an event whose id is not its request's).
func rpcBinding(v string, id json.RawMessage) binding {
	return binding{
		event: func(ev wire.StreamEvent) any {
			return obj{"jsonrpc": "2.0", "id": id, "result": wire.EncodeEvent(v, ev)}
		},
		failure: func(re *wire.Error) []byte {
			data, _ := json.Marshal(obj{"jsonrpc": "2.0", "id": id, "error": rpcErrorBody(v, re)})
			return sse.Block("", "", data)
		},
	}
}

// restBinding streams v1.0 StreamResponses; an error is an `event: error`
// block holding a google.rpc.Status, as the JS SDK's REST client reads it.
var restBinding = binding{
	event: func(ev wire.StreamEvent) any { return wire.EncodeEvent(wire.V10, ev) },
	failure: func(re *wire.Error) []byte {
		_, body := restError(re)
		data, _ := json.Marshal(body)
		return sse.Block("", "error", data)
	},
}
