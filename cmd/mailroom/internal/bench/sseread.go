package bench

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/mailroom/mailroom/internal/sse"
	"github.com/mailroom/mailroom/mailbox"
)

// The fan-out subscribers read the same stream, over the same kind of
// connection, as a console; but a console decodes each event and keeps a
// replica, and two hundred of them decoding in this process cost more CPU
// than the daemon serving them, which made the bench measure itself. So
// they decode only what the report needs (id, event type and at_ms) the
// way a load generator reads only status lines, from the daemon's one
// stream reader (internal/sse.Reader); the client's full Subscribe is
// tested on its own. Measured per event of a task_sent stream (issue 22):
// the client's Subscribe 11-45 us and 31 allocations; (issue 38, in one
// of two runs comparing them) the line parser the bench had of its own
// 0.16-0.24 us and 1 allocation, sse.Reader 0.24-0.27 us and 1: a tenth
// of a microsecond, too little to keep a second reader for. What the
// parser saved that does matter, memory, the reader's Keep saves too.

// keepEvent is how much of an event the bench keeps: what the report
// needs is at its head, and two hundred subscribers each holding a copy of
// an opening snapshot of many megabytes would measure the bench's memory.
const keepEvent = 64 << 10

// lightSubscribe follows /a2a/events from a snapshot on, resuming with
// Last-Event-ID after a drop (onDrop is told), until ctx ends. Events carry
// only Seq, Type and AtMs.
func lightSubscribe(ctx context.Context, hc *http.Client, baseURL, token string, onDrop func()) <-chan mailbox.Event {
	out := make(chan mailbox.Event, 64)
	go func() {
		defer close(out)
		var last uint64
		started := false
		for ctx.Err() == nil {
			err := readStream(ctx, hc, baseURL, token, started, last, nil, func(ev mailbox.Event) bool {
				started, last = true, ev.Seq
				select {
				case out <- ev:
					return true
				case <-ctx.Done():
					return false
				}
			})
			if ctx.Err() != nil {
				return
			}
			_ = err // the drop is counted; the reason is the daemon's to log
			onDrop()
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return out
}

// readStream reads one connection of the stream, resuming after last when
// resume is set. Each event's data goes to data when it is not nil (the
// data is only valid during the call), else only its at_ms is read.
func readStream(ctx context.Context, hc *http.Client, baseURL, token string, resume bool, last uint64,
	data func(ev *mailbox.Event, line []byte), emit func(mailbox.Event) bool) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, baseURL+"/a2a/events", nil)
	if err != nil {
		return err
	}
	if resume {
		req.Header.Set("Last-Event-ID", strconv.FormatUint(last, 10))
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("event stream: %s", resp.Status)
	}
	rd := sse.NewReader(resp.Body, keepEvent)
	rd.Keep = keepEvent
	for {
		e, err := rd.Next()
		if err != nil {
			return err
		}
		if e.Type == "" {
			continue
		}
		ev := mailbox.Event{Type: e.Type}
		ev.Seq, _ = strconv.ParseUint(e.ID, 10, 64)
		if data != nil {
			data(&ev, e.Data)
		} else {
			ev.AtMs = atMs(e.Data)
		}
		if !emit(ev) {
			return nil
		}
	}
}

// atMs reads the at_ms field, which the daemon writes second, right after
// seq: {"seq":12,"at_ms":1795373351541,...}.
func atMs(data []byte) int64 {
	i := bytes.Index(data, []byte(`"at_ms":`))
	if i < 0 {
		return 0
	}
	rest := data[i+len(`"at_ms":`):]
	n := 0
	for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	v, _ := strconv.ParseInt(string(rest[:n]), 10, 64)
	return v
}
