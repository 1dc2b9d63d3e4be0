package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"

	"github.com/mailroom/mailroom/daemon/a2a/wire"
	"github.com/mailroom/mailroom/internal/sse"
	"github.com/mailroom/mailroom/mailbox"
)

// Following a remote task as it happens: a streaming send, or a
// resubscribe to a task the remote already has. Both read Server-Sent
// Events whose data is, per binding, a JSON-RPC response holding an event
// (v0.3: the event with its kind; v1.0: a StreamResponse) or a bare
// StreamResponse (HTTP+JSON, an error as an `event: error` block).

// Update is one event of a remote task's stream.
type Update struct {
	// Kind is "task", "message", "status" or "artifact".
	Kind string
	// Task is the remote task as known after the event: the stream's
	// events folded together (status replaced, artifacts added or
	// appended to).
	Task Task
	// Final: the task is finished or asks something; the stream ends.
	Final bool
}

// Stream reads a remote task's events. Close it when done.
type Stream struct {
	c    *Client
	op   string
	id   string // the JSON-RPC request's
	v    string
	rest bool
	body io.ReadCloser
	rd   *sse.Reader
	task Task
	done bool
	// first is the first update, read before the stream is handed out so
	// that a refusal sent as the stream's only event is returned by
	// Stream or Resubscribe.
	first *Update
}

// Stream sends msg and follows the task it makes (message/stream,
// SendStreamingMessage, POST message:stream). Only a remote whose card
// says it streams is asked; the legacy dialect never streams. It returns
// once the first event came (some servers send nothing, not even their
// headers, before it), so an error before the first event is returned
// here; errors after that come from Next.
func (c *Client) Stream(ctx context.Context, msg Message) (*Stream, error) {
	v := c.generation()
	if !c.streaming {
		return nil, &Error{Kind: Unusable, Op: "stream", Code: wire.CodeUnsupported, Message: "the remote's card does not say it streams (capabilities.streaming); send and poll instead"}
	}
	m, err := msg.encode(v)
	if err != nil {
		return nil, &Error{Kind: Unusable, Op: "stream", Message: err.Error()}
	}
	if c.binding == mailbox.BindingHTTPJSON10 {
		return c.open(ctx, "POST message:stream", "", http.MethodPost, c.restURL("message:stream"), obj{"message": m})
	}
	method := map[string]string{wire.V03: "message/stream", wire.V10: "SendStreamingMessage"}[v]
	return c.openRPC(ctx, method, obj{"message": m})
}

// Resubscribe follows a task the remote already has (tasks/resubscribe,
// SubscribeToTask, GET tasks/{id}:subscribe). ErrTaskNotFound says
// the remote does not know it, but beware: a2a-go v0.3 answers
// TaskNotFound for a task it has finished (it follows only tasks still
// executing), and other servers refuse a finished task as unsupported, so
// confirm with Get before concluding that the remote lost the task. Like
// Stream, it returns once the first event came.
func (c *Client) Resubscribe(ctx context.Context, taskID string) (*Stream, error) {
	v := c.generation()
	if !c.streaming {
		return nil, &Error{Kind: Unusable, Op: "resubscribe", Code: wire.CodeUnsupported, Message: "the remote's card does not say it streams (capabilities.streaming); poll with Get instead"}
	}
	if c.binding == mailbox.BindingHTTPJSON10 {
		return c.open(ctx, "GET tasks/{id}:subscribe", "", http.MethodGet, c.restURL("tasks/"+url.PathEscape(taskID)+":subscribe"), nil)
	}
	method := map[string]string{wire.V03: "tasks/resubscribe", wire.V10: "SubscribeToTask"}[v]
	return c.openRPC(ctx, method, obj{"id": taskID})
}

func (c *Client) openRPC(ctx context.Context, method string, params any) (*Stream, error) {
	id := c.nextID()
	body, err := json.Marshal(obj{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return nil, &Error{Kind: Unusable, Op: method, Message: "encoding the request: " + err.Error()}
	}
	return c.open(ctx, method, id, http.MethodPost, c.endpoint, body)
}

// open starts a stream; body is the request's JSON (a value to encode,
// or bytes already encoded, or nil), id the JSON-RPC request's ("" for
// HTTP+JSON).
func (c *Client) open(ctx context.Context, op, id, method, u string, body any) (*Stream, error) {
	var data []byte
	switch b := body.(type) {
	case nil:
	case []byte:
		data = b
	default:
		var err error
		if data, err = json.Marshal(b); err != nil {
			return nil, &Error{Kind: Unusable, Op: op, Message: "encoding the request: " + err.Error()}
		}
	}
	resp, err := c.do(ctx, op, method, u, data, true)
	if err != nil {
		return nil, err
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt != "text/event-stream" {
		// A refusal before the stream began comes as a plain answer.
		defer resp.Body.Close()
		raw, err := c.read(op, resp)
		if err != nil {
			return nil, err
		}
		if c.binding == mailbox.BindingHTTPJSON10 || resp.StatusCode >= 300 {
			if resp.StatusCode < 300 {
				return nil, &Error{Kind: Malformed, Op: op, HTTPStatus: resp.StatusCode, Message: "expected an event stream (text/event-stream), got " + strconv.Quote(mt) + "; the answer began " + c.auth.excerpt(raw)}
			}
			return nil, c.statusError(op, resp.StatusCode, raw)
		}
		if _, err := c.rpcResult(op, id, resp.StatusCode, raw); err != nil {
			return nil, err
		}
		return nil, &Error{Kind: Malformed, Op: op, HTTPStatus: resp.StatusCode, Message: "expected an event stream (text/event-stream), got " + strconv.Quote(mt) + "; the answer began " + c.auth.excerpt(raw)}
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		raw, _ := c.read(op, resp)
		return nil, c.statusError(op, resp.StatusCode, raw)
	}
	s := &Stream{c: c, op: op, id: id, v: c.generation(), rest: c.binding == mailbox.BindingHTTPJSON10, body: resp.Body, rd: sse.NewReader(resp.Body, MaxBody)}
	first, err := s.Next()
	if err != nil {
		_ = s.body.Close()
		return nil, err
	}
	s.first = &first
	return s, nil
}

// Next returns the next update. After the final one, and at the end of a
// stream that ended cleanly after it, it returns io.EOF; a stream that
// ends before its task finished is a transport error (follow the task
// again with Resubscribe or Get).
func (s *Stream) Next() (Update, error) {
	if u := s.first; u != nil {
		s.first = nil
		return *u, nil
	}
	if s.done {
		return Update{}, io.EOF
	}
	for {
		typ, data, err := s.block()
		if err != nil {
			s.done = true
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return Update{}, &Error{Kind: Transport, Op: s.op, Message: "the stream ended before the task finished or asked anything", cause: io.ErrUnexpectedEOF}
			}
			var re *Error
			if errors.As(err, &re) {
				return Update{}, err
			}
			return Update{}, &Error{Kind: Transport, Op: s.op, Message: "reading the stream: " + s.c.auth.scrub(err.Error()), cause: err}
		}
		if len(bytes.TrimSpace(data)) == 0 {
			continue
		}
		raw := json.RawMessage(data)
		if s.rest && typ == "error" {
			s.done = true
			// The block is a google.rpc.Status whose code is the HTTP
			// status the error would have had: a 5xx is the remote
			// failing, anything else a refusal.
			var g struct {
				Error struct {
					Code int `json:"code"`
				} `json:"error"`
			}
			_ = json.Unmarshal(data, &g)
			e := s.c.statusError(s.op, g.Error.Code, data).(*Error)
			if e.Kind == Transport && g.Error.Code < 500 {
				e.Kind = Refused
			}
			return Update{}, e
		}
		if !s.rest {
			if raw, err = s.c.rpcResult(s.op, s.id, http.StatusOK, data); err != nil {
				s.done = true
				return Update{}, err
			}
		}
		ev, err := decodeRemoteEvent(s.v, raw, "event")
		if err != nil {
			s.done = true
			return Update{}, &Error{Kind: Malformed, Op: s.op, Message: s.c.auth.scrub(err.Error()) + "; the event began " + s.c.auth.excerpt(raw)}
		}
		s.task = ev.apply(s.task)
		if ev.final {
			s.done = true
		}
		return Update{Kind: ev.kind, Task: s.task, Final: ev.final}, nil
	}
}

// Close ends the stream.
func (s *Stream) Close() error {
	s.done = true
	return s.body.Close()
}

// block reads the next event: its type and its data lines joined, bounded
// by MaxBody.
func (s *Stream) block() (typ string, data []byte, err error) {
	ev, err := s.rd.Next()
	var tl *sse.TooLargeError
	if errors.As(err, &tl) {
		return "", nil, &Error{Kind: Malformed, Op: s.op, Message: "an event larger than " + strconv.Itoa(MaxBody>>20) + " MiB"}
	}
	return ev.Type, ev.Data, err
}
