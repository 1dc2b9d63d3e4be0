// Package remote is the outbound client: the daemon calling a remote A2A
// agent, by whichever binding its card offers, through the same neutral
// model the edge serves from (daemon/a2a/wire); it never imports the
// edge. It holds no state about tasks: the dispatcher records what the
// remote accepted and asks again by id.
//
// How a delivery uses it (daemon/outbound's dispatcher): Resolve once (and
// again now and then; a recorded Card makes a client with New); MessageFor
// the leased task; Stream when the remote streams, else Send without
// blocking and Get until Terminal or Interrupted; the first answer that
// names a remote task id is the acceptance to record; Outcome maps the
// end to a result. Errors say whether to try again (Retryable), and
// ErrTaskNotFound from Get means the remote lost an accepted task.
package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/mailroom/mailroom/daemon/a2a/wire"
	"github.com/mailroom/mailroom/mailbox"
)

// MaxBody bounds an answer from a remote (a card, a task, one event
// of a stream).
const MaxBody = 4 << 20

// Client calls one remote agent by one binding. It is safe for concurrent
// use.
type Client struct {
	hc *http.Client
	// auth is held by pointer so that printing a Remote (%+v) shows an
	// address, never the secret.
	auth      *Auth
	binding   string
	endpoint  string
	streaming bool
	ids       atomic.Uint64
}

// New makes a client from what Resolve found (or the
// dispatcher recorded): card.Binding, card.Endpoint and card.Streaming.
// hc may be nil (http.DefaultClient).
func New(hc *http.Client, card Card, auth Auth) (*Client, error) {
	switch card.Binding {
	case mailbox.BindingJSONRPC03, mailbox.BindingJSONRPC10, mailbox.BindingHTTPJSON10, mailbox.BindingLegacy:
	default:
		return nil, &Error{Kind: Unusable, Op: "resolve", Message: "binding " + strconv.Quote(card.Binding) + " is not one this client speaks"}
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Client{hc: hc, auth: &auth, binding: card.Binding, endpoint: card.Endpoint, streaming: card.Streaming && card.Binding != mailbox.BindingLegacy}, nil
}

// Binding is the binding the remote is called by.
func (c *Client) Binding() string { return c.binding }

// Streaming reports whether the remote streams (its card said so).
func (c *Client) Streaming() bool { return c.streaming }

// generation is the protocol generation of the binding. While the card is
// read (no binding yet) it is v1.0: a server that serves both generations'
// cards by A2A-Version then shows its v1.0 one, which lists every
// interface.
func (c *Client) generation() string {
	switch c.binding {
	case mailbox.BindingJSONRPC03:
		return wire.V03
	case mailbox.BindingLegacy:
		return wire.VersionLegacy
	}
	return wire.V10
}

// Send delivers msg. blocking asks the remote to answer only when the task
// is finished or asks something (a remote may answer sooner anyway); the
// legacy dialect always blocks. A remote that answers with a message
// rather than a task gives a completed Task with Direct set.
//
// A transport error means the remote may or may not hold the task: the
// message id makes a resend safe only with a remote that dedupes on it.
func (c *Client) Send(ctx context.Context, msg Message, blocking bool) (Task, error) {
	v := c.generation()
	m, err := msg.encode(v)
	if err != nil {
		return Task{}, &Error{Kind: Unusable, Op: "send", Message: err.Error()}
	}
	switch c.binding {
	case mailbox.BindingLegacy:
		id := msg.TaskID
		if id == "" {
			id = msg.MessageID
		}
		raw, err := c.rpc(ctx, "tasks/send", obj{"id": id, "message": m})
		if err != nil {
			return Task{}, err
		}
		t, err := decodeRemoteTask(wire.VersionLegacy, raw, "result")
		return c.task(raw, "tasks/send", t, err)
	case mailbox.BindingHTTPJSON10:
		raw, err := c.rest(ctx, http.MethodPost, "message:send", sendBody(v, m, blocking))
		if err != nil {
			return Task{}, err
		}
		t, err := decodeSendResult(v, raw, "answer")
		return c.task(raw, "POST message:send", t, err)
	}
	method := map[string]string{wire.V03: "message/send", wire.V10: "SendMessage"}[v]
	raw, err := c.rpc(ctx, method, sendBody(v, m, blocking))
	if err != nil {
		return Task{}, err
	}
	t, err := decodeSendResult(v, raw, "result")
	return c.task(raw, method, t, err)
}

func sendBody(v string, m any, blocking bool) obj {
	cfg := obj{"blocking": blocking}
	if v == wire.V10 {
		cfg = obj{"returnImmediately": !blocking}
	}
	return obj{"message": m, "configuration": cfg}
}

// Get reads the remote task taskID. ErrTaskNotFound says the remote
// does not know it.
func (c *Client) Get(ctx context.Context, taskID string) (Task, error) {
	v := c.generation()
	switch c.binding {
	case mailbox.BindingHTTPJSON10:
		raw, err := c.rest(ctx, http.MethodGet, "tasks/"+url.PathEscape(taskID), nil)
		if err != nil {
			return Task{}, err
		}
		t, err := decodeRemoteTask(v, raw, "answer")
		return c.task(raw, "GET tasks/{id}", t, err)
	}
	method := map[string]string{wire.V03: "tasks/get", wire.V10: "GetTask", wire.VersionLegacy: "tasks/get"}[v]
	raw, err := c.rpc(ctx, method, obj{"id": taskID})
	if err != nil {
		return Task{}, err
	}
	t, err := decodeRemoteTask(v, raw, "result")
	return c.task(raw, method, t, err)
}

// Cancel asks the remote to cancel taskID and returns the task as it
// answers. ErrNotCancelable says it is past that.
func (c *Client) Cancel(ctx context.Context, taskID string) (Task, error) {
	v := c.generation()
	switch c.binding {
	case mailbox.BindingHTTPJSON10:
		raw, err := c.rest(ctx, http.MethodPost, "tasks/"+url.PathEscape(taskID)+":cancel", obj{"id": taskID})
		if err != nil {
			return Task{}, err
		}
		t, err := decodeRemoteTask(v, raw, "answer")
		return c.task(raw, "POST tasks/{id}:cancel", t, err)
	}
	method := map[string]string{wire.V03: "tasks/cancel", wire.V10: "CancelTask", wire.VersionLegacy: "tasks/cancel"}[v]
	raw, err := c.rpc(ctx, method, obj{"id": taskID})
	if err != nil {
		return Task{}, err
	}
	t, err := decodeRemoteTask(v, raw, "result")
	return c.task(raw, method, t, err)
}

// task wraps a decoding error as a malformed answer, quoting it.
func (c *Client) task(raw json.RawMessage, op string, t Task, err error) (Task, error) {
	if err != nil {
		return Task{}, &Error{Kind: Malformed, Op: op, Message: c.auth.scrub(err.Error()) + "; the answer began " + c.auth.excerpt(raw)}
	}
	return t, nil
}

// rpc makes one JSON-RPC call at the endpoint (the legacy one at
// {base}/rpc) and returns its result.
func (c *Client) rpc(ctx context.Context, method string, params any) (json.RawMessage, error) {
	id := c.nextID()
	body, err := json.Marshal(obj{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return nil, &Error{Kind: Unusable, Op: method, Message: "encoding the request: " + err.Error()}
	}
	resp, err := c.do(ctx, method, http.MethodPost, c.rpcURL(), body, false)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := c.read(method, resp)
	if err != nil {
		return nil, err
	}
	return c.rpcResult(method, id, resp.StatusCode, data)
}

func (c *Client) nextID() string { return "mailroom-" + strconv.FormatUint(c.ids.Add(1), 10) }

func (c *Client) rpcURL() string {
	if c.binding == mailbox.BindingLegacy {
		return strings.TrimRight(c.endpoint, "/") + "/rpc"
	}
	return c.endpoint
}

// rpcResult reads a JSON-RPC response to the request id ("": any): its
// result, or its error as a refusal. An answer to another request is
// malformed (a null id is not: servers answer so what they could not
// read).
func (c *Client) rpcResult(op, id string, status int, data []byte) (json.RawMessage, error) {
	var env struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if !wire.IsObject(data) || json.Unmarshal(data, &env) != nil {
		if status >= 400 {
			return nil, c.statusError(op, status, data)
		}
		return nil, &Error{Kind: Malformed, Op: op, HTTPStatus: status, Message: "expected a JSON-RPC response object; the answer began " + c.auth.excerpt(data)}
	}
	if id != "" && len(env.ID) > 0 && string(env.ID) != "null" {
		var got string
		if json.Unmarshal(env.ID, &got) != nil || got != id {
			return nil, &Error{Kind: Malformed, Op: op, HTTPStatus: status, Message: "the answer is to request " + c.auth.excerpt(env.ID) + ", not to this one (" + id + ")"}
		}
	}
	if env.Error != nil {
		kind := Refused
		if status >= 500 && env.Error.Code == wire.CodeInternal {
			kind = Transport
		}
		return nil, &Error{Kind: kind, Op: op, Code: env.Error.Code, HTTPStatus: status, Message: c.auth.scrub(bounded(env.Error.Message))}
	}
	if status >= 400 {
		return nil, c.statusError(op, status, data)
	}
	if len(env.Result) == 0 || string(env.Result) == "null" {
		return nil, &Error{Kind: Malformed, Op: op, HTTPStatus: status, Message: "a JSON-RPC response with neither result nor error; the answer began " + c.auth.excerpt(data)}
	}
	return env.Result, nil
}

// rest makes one HTTP+JSON call: path is under the endpoint, body nil
// for a GET.
func (c *Client) rest(ctx context.Context, method, path string, body any) (json.RawMessage, error) {
	op := method + " " + path
	var data []byte
	if body != nil {
		var err error
		if data, err = json.Marshal(body); err != nil {
			return nil, &Error{Kind: Unusable, Op: op, Message: "encoding the request: " + err.Error()}
		}
	}
	resp, err := c.do(ctx, op, method, c.restURL(path), data, false)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := c.read(op, resp)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 {
		return nil, c.statusError(op, resp.StatusCode, raw)
	}
	return raw, nil
}

func (c *Client) restURL(path string) string {
	return strings.TrimRight(c.endpoint, "/") + "/" + path
}

// statusError reads an HTTP error answer: a google.rpc.Status with an
// ErrorInfo reason (HTTP+JSON), a JSON-RPC error, or anything else (a
// proxy's page). 5xx and 429 are transport errors: the remote is failing,
// not refusing.
func (c *Client) statusError(op string, status int, data []byte) error {
	e := &Error{Kind: Refused, Op: op, HTTPStatus: status}
	if status >= 500 || status == http.StatusTooManyRequests {
		e.Kind = Transport
	}
	var g struct {
		Error *struct {
			Message string `json:"message"`
			Status  string `json:"status"`
			Details []struct {
				Reason string `json:"reason"`
			} `json:"details"`
		} `json:"error"`
	}
	if wire.IsObject(data) && json.Unmarshal(data, &g) == nil && g.Error != nil {
		e.Message = c.auth.scrub(bounded(g.Error.Message))
		for _, d := range g.Error.Details {
			for code, r := range wire.RESTReasons {
				if d.Reason != "" && d.Reason == r.Reason {
					e.Code = code
				}
			}
		}
		if e.Message == "" {
			e.Message = "HTTP " + strconv.Itoa(status) + " " + g.Error.Status
		}
		return e
	}
	var rpc struct {
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if wire.IsObject(data) && json.Unmarshal(data, &rpc) == nil && rpc.Error != nil && rpc.Error.Code != 0 {
		e.Code, e.Message = rpc.Error.Code, c.auth.scrub(bounded(rpc.Error.Message))
		return e
	}
	e.Message = "HTTP " + strconv.Itoa(status) + " " + http.StatusText(status) + "; the answer began " + c.auth.excerpt(data)
	return e
}

// bounded cuts a remote's error message to a line's length.
func bounded(s string) string {
	if len(s) > 500 {
		s = s[:500] + "..."
	}
	return s
}

// do sends one request with the credentials and the headers of the
// binding. A failure to get an answer is a transport error; the caller's
// own context ending is returned as is, wrapped.
func (c *Client) do(ctx context.Context, op, method, u string, body []byte, stream bool) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, &Error{Kind: Unusable, Op: op, Message: "the URL " + strconv.Quote(redactURL(u)) + " cannot be requested"}
	}
	if body != nil {
		req.Header.Set("Content-Type", wire.ContentTypeJSON)
	}
	req.Header.Set("Accept", wire.ContentTypeJSON)
	if stream {
		req.Header.Set("Accept", "text/event-stream")
	}
	if c.generation() == wire.V10 {
		req.Header.Set("A2A-Version", wire.V10)
	}
	c.auth.apply(req.Header)
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, &Error{Kind: Transport, Op: op, Message: "gave up waiting: " + ctx.Err().Error(), cause: ctx.Err()}
		}
		var ue *url.Error
		msg := err.Error()
		if errors.As(err, &ue) {
			msg = ue.Op + " " + redactURL(ue.URL) + ": " + ue.Err.Error()
		}
		if remedy := tlsRemedy(err); remedy != "" {
			msg += " (" + remedy + ")"
		}
		return nil, &Error{Kind: Transport, Op: op, Message: c.auth.scrub(msg), cause: err}
	}
	return resp, nil
}

// read reads a whole answer, bounded.
func (c *Client) read(op string, resp *http.Response) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxBody+1))
	if err != nil {
		return nil, &Error{Kind: Transport, Op: op, HTTPStatus: resp.StatusCode, Message: "reading the answer: " + c.auth.scrub(err.Error()), cause: err}
	}
	if len(data) > MaxBody {
		return nil, &Error{Kind: Malformed, Op: op, HTTPStatus: resp.StatusCode, Message: "the answer is larger than " + strconv.Itoa(MaxBody>>20) + " MiB"}
	}
	return data, nil
}

// get reads a URL (a card).
func (c *Client) get(ctx context.Context, op, u string) ([]byte, error) {
	resp, err := c.do(ctx, op, http.MethodGet, u, nil, false)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := c.read(op, resp)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		e := c.statusError(op, resp.StatusCode, data).(*Error)
		e.Message = redactURL(u) + ": " + e.Message
		return nil, e
	}
	return data, nil
}

// obj is a JSON object being written.
type obj = map[string]any
