package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/mailroom/mailroom/mailbox"
)

// The fan-out subscribers read the same stream, over the same kind of
// connection, as a console; but a console decodes each event and keeps a
// replica, and two hundred of them decoding in this process cost more CPU
// than the daemon serving them, which made the bench measure itself. So
// they parse only what the report needs (id, event type and at_ms) the way
// a load generator reads only status lines; the client's full Subscribe is
// tested on its own. Kept beside the one test reader (internal/sse/ssetest)
// because it was measured (issue 22), per event of a task_sent stream over
// local HTTP: this parser 0.34-0.54 us and 1 allocation, ssetest 0.9-1.7 us
// and 8, the client's Subscribe 11-45 us and 31; at 200 subscribers of a
// few thousand events a second the others would measure the bench.

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
// resume is set. Each event's data line goes to data when it is not nil
// (the line is only valid during the call), else only its at_ms is read.
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
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	var ev mailbox.Event
	for {
		line, err := readLinePrefix(br)
		if err != nil {
			return err
		}
		switch {
		case len(line) == 0: // the blank line ends an event
			if ev.Type != "" && !emit(ev) {
				return nil
			}
			ev = mailbox.Event{}
		case bytes.HasPrefix(line, []byte("id: ")):
			ev.Seq, _ = strconv.ParseUint(string(line[4:]), 10, 64)
		case bytes.HasPrefix(line, []byte("event: ")):
			ev.Type = string(line[7:])
		case bytes.HasPrefix(line, []byte("data: ")) && data != nil:
			data(&ev, line[6:])
		case bytes.HasPrefix(line, []byte("data: ")):
			ev.AtMs = atMs(line[6:])
		}
	}
}

// readLinePrefix returns the next line without its newline, or only its
// first 512 bytes for a line longer than 64 KiB (a snapshot, a task with a
// large intent): the rest is skipped.
func readLinePrefix(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		head := append([]byte(nil), line[:512]...)
		for errors.Is(err, bufio.ErrBufferFull) {
			_, err = br.ReadSlice('\n')
		}
		return head, err
	}
	return bytes.TrimSuffix(line, []byte("\n")), err
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
