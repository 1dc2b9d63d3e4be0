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
func (e *Edge) stream(w http.ResponseWriter, r *http.Request, id string, after *uint64, initial bool, wrap func(streamEvent) any) error {
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
		data, err := json.Marshal(wrap(ev))
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
	re := rpcErrorFrom(err, "")
	data, _ := json.Marshal(obj{"jsonrpc": "2.0", "id": nil, "error": rpcErrorBody(re)})
	_ = write(append(append([]byte("data: "), data...), "\n\n"...))
	return nil
}
