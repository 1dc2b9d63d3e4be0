package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/mailroom/mailroom/internal/served"
	"github.com/mailroom/mailroom/internal/sse"
	"github.com/mailroom/mailroom/internal/strictjson"
	"github.com/mailroom/mailroom/mailbox"

	"github.com/mailroom/mailroom/daemon/a2a/wire"
)

// MaxBodyBytes bounds a request body, as on the native routes.
const MaxBodyBytes = mailbox.MaxBodyBytes

// version reads the A2A-Version header: none is v0.3.
func version(r *http.Request) (string, *wire.Error) {
	v := strings.TrimSpace(r.Header.Get("A2A-Version"))
	switch v {
	case "", "0.3", "0.3.0":
		return wire.V03, nil
	case "1.0", "1", "1.0.0":
		return wire.V10, nil
	}
	return "", &wire.Error{Code: wire.CodeVersion, Message: "A2A-Version: got " + strconv.Quote(v) + ", expected 0.3 (or no header) or 1.0"}
}

// readBody reads a JSON body: the content type, the size bound, UTF-8,
// duplicate keys and depth, as the native routes check them.
func readBody(w http.ResponseWriter, r *http.Request) (json.RawMessage, *wire.Error) {
	body, prob := sse.ReadBody(w, r, MaxBodyBytes, jsonOrA2A)
	if prob != nil {
		return nil, problem(prob)
	}
	if !json.Valid(body) {
		return nil, &wire.Error{Code: wire.CodeParse, Message: "request body: not valid JSON"}
	}
	if err := strictjson.CheckValue(body, "", mailbox.MaxValueDepth); err != nil {
		return nil, &wire.Error{Code: wire.CodeInvalidRequest, Message: err.Error()}
	}
	return body, nil
}

// envelope is a JSON-RPC request as read: its id (to echo) and method.
type envelope struct {
	id     json.RawMessage
	method string
	params json.RawMessage
}

// readEnvelope reads a JSON-RPC request object. A refusal comes with the
// id to answer it under: the request's when it could be read, else nil.
func readEnvelope(w http.ResponseWriter, r *http.Request) (envelope, *wire.Error) {
	body, rerr := readBody(w, r)
	if rerr != nil {
		return envelope{}, rerr
	}
	if t := bytes.TrimLeft(body, " \t\r\n"); t[0] == '[' {
		return envelope{}, &wire.Error{Code: wire.CodeInvalidRequest, Message: "batch requests are not supported; send one JSON-RPC request object per HTTP request"}
	}
	var env struct {
		JSONRPC *string          `json:"jsonrpc"`
		ID      json.RawMessage  `json:"id"`
		Method  *string          `json:"method"`
		Params  *json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return envelope{}, &wire.Error{Code: wire.CodeInvalidRequest, Message: "request: expected a JSON-RPC request object {\"jsonrpc\":\"2.0\",\"id\",\"method\",\"params\"}: " + err.Error()}
	}
	if err := checkID(env.ID); err != nil {
		return envelope{}, err
	}
	out := envelope{id: env.ID}
	switch {
	case env.JSONRPC == nil:
		return out, &wire.Error{Code: wire.CodeInvalidRequest, Message: `jsonrpc: missing, expected "2.0"`, Field: "jsonrpc"}
	case *env.JSONRPC != "2.0":
		return out, &wire.Error{Code: wire.CodeInvalidRequest, Message: `jsonrpc: got ` + strconv.Quote(*env.JSONRPC) + `, expected "2.0"`, Field: "jsonrpc"}
	case env.Method == nil || *env.Method == "":
		return out, &wire.Error{Code: wire.CodeInvalidRequest, Message: "method: missing, expected an A2A method such as message/send (v0.3) or SendMessage (v1.0)", Field: "method"}
	case len(env.ID) == 0:
		return out, &wire.Error{Code: wire.CodeInvalidRequest, Message: "id: missing; A2A requests are calls, never notifications, so each needs an id", Field: "id"}
	}
	out.method = *env.Method
	if env.Params != nil {
		out.params = *env.Params
	}
	return out, nil
}

// checkID refuses an id the daemon could not echo so that the client reads
// back the id it sent: anything but a string, null or a number, and a
// number that a reader holding it as a float64 (JavaScript, and most JSON
// readers) would write back otherwise: 1.5e400 (out of range), 1.0, 1e2,
// -0, 9007199254740993. Integers up to 2^53 and plain decimals such as
// 1.5 echo exactly.
func checkID(id json.RawMessage) *wire.Error {
	if len(id) == 0 {
		return nil
	}
	switch id[0] {
	case '"', 'n':
		return nil
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
	default:
		return &wire.Error{Code: wire.CodeInvalidRequest, Message: "id: expected a string, a number or null", Field: "id"}
	}
	s := string(id)
	f, err := strconv.ParseFloat(s, 64)
	a := math.Abs(f)
	if err != nil || (f == 0 && s != "0") || (f != 0 && (a < 1e-7 || a >= 1e21)) || strconv.FormatFloat(f, 'f', -1, 64) != s {
		shown := s
		if len(shown) > 40 {
			shown = shown[:40] + "..."
		}
		return &wire.Error{Code: wire.CodeInvalidRequest, Field: "id",
			Message: "id: got " + shown + ", which would not read back as written; expected a string, null, or a number written as JavaScript writes it (an integer up to 2^53 such as 42, or a plain decimal such as 1.5)"}
	}
	return nil
}

// jsonrpc serves one JSON-RPC request at the base URL.
func (e *Edge) jsonrpc(w http.ResponseWriter, r *http.Request, req request) {
	// Refusals before the version is read are in the form of the version
	// asked for, if it is one.
	form, verr := version(r)
	if verr != nil {
		form = wire.V03
	}
	env, rerr := readEnvelope(w, r)
	if rerr != nil {
		writeRPCError(w, r, form, env.id, rerr)
		return
	}
	id := env.id
	if verr != nil {
		writeRPCError(w, r, form, id, verr)
		return
	}
	v := form
	params := env.params
	if !wire.IsObject(params) {
		writeRPCError(w, r, v, id, &wire.Error{Code: wire.CodeInvalidParams, Message: "params: expected an object", Field: "params"})
		return
	}
	method := env.method
	m, ok := methods[v][method]
	if !ok {
		writeRPCError(w, r, v, id, unknownMethod(v, method))
		return
	}
	served.Method(w, method) // /metrics: a method this server knows
	c := call{edge: e, w: w, r: r, req: req, v: v, id: id, params: params}
	if err := m(&c); err != nil {
		re := rpcErrorFrom(err, v)
		if v == wire.V03 && (method == "message/stream" || method == "tasks/resubscribe") {
			// A v0.3 stream that fails before its first event is still a
			// stream, holding the error as its one event: a2a-go and
			// a2a-js answer so, and clients that read only data: lines
			// (Marie AI's) would otherwise see nothing at all.
			writeStreamError(w, rpcBinding(v, id), re)
			return
		}
		writeRPCError(w, r, v, id, re)
	}
}

// peekID is the id of a JSON-RPC request refused before it was read (the
// agent is not registered, the token is missing): the request's id when
// its body is a request object with an id that can be echoed, else nil.
func peekID(w http.ResponseWriter, r *http.Request) json.RawMessage {
	env, err := readEnvelope(w, r)
	if err != nil && env.id == nil {
		return nil
	}
	return env.id
}

// call is one JSON-RPC call being served.
type call struct {
	edge   *Edge
	w      http.ResponseWriter
	r      *http.Request
	req    request
	v      string
	id     json.RawMessage
	params json.RawMessage
}

func (c *call) ctx() context.Context { return c.r.Context() }

func (c *call) answer(result any) error {
	writeAnswer(c.w, c.r, http.StatusOK, obj{"jsonrpc": "2.0", "id": c.id, "result": result})
	return nil
}

type method func(c *call) error

var methods = map[string]map[string]method{
	wire.V03: {
		"message/send":                        func(c *call) error { return c.send(false) },
		"message/stream":                      func(c *call) error { return c.send(true) },
		"tasks/get":                           (*call).get,
		"tasks/cancel":                        (*call).cancel,
		"tasks/resubscribe":                   (*call).subscribe,
		"tasks/pushNotificationConfig/set":    (*call).pushSet03,
		"tasks/pushNotificationConfig/get":    (*call).pushGet03,
		"tasks/pushNotificationConfig/list":   (*call).pushList03,
		"tasks/pushNotificationConfig/delete": (*call).pushDelete03,
		"agent/getAuthenticatedExtendedCard":  extendedUnsupported,
	},
	wire.V10: {
		"SendMessage":                      func(c *call) error { return c.send(false) },
		"SendStreamingMessage":             func(c *call) error { return c.send(true) },
		"GetTask":                          (*call).get,
		"ListTasks":                        (*call).list,
		"CancelTask":                       (*call).cancel,
		"SubscribeToTask":                  (*call).subscribe,
		"CreateTaskPushNotificationConfig": (*call).pushCreate10,
		"GetTaskPushNotificationConfig":    (*call).pushGet10,
		"ListTaskPushNotificationConfigs":  (*call).pushList10,
		"ListTaskPushNotificationConfig":   (*call).pushList10,
		"DeleteTaskPushNotificationConfig": (*call).pushDelete10,
		"GetExtendedAgentCard":             extendedUnsupported,
	},
}

func unknownMethod(v, m string) *wire.Error {
	other := wire.V10
	if v == wire.V10 {
		other = wire.V03
	}
	if _, ok := methods[other][m]; ok {
		hint := "send it without an A2A-Version header (v0.3)"
		if other == wire.V10 {
			hint = "send it with the header A2A-Version: 1.0"
		}
		return &wire.Error{Code: wire.CodeMethodNotFound, Message: "method: " + strconv.Quote(m) + " is an A2A " + other + " method, but this request is " + v + "; " + hint}
	}
	if m == "tasks/send" {
		return &wire.Error{Code: wire.CodeMethodNotFound, Message: "method: \"tasks/send\" is the pre-0.2 protocol's, which this agent serves at its base URL + rpc (/agents/{agent}/rpc); here, send message/send (v0.3) or SendMessage (v1.0)"}
	}
	return &wire.Error{Code: wire.CodeMethodNotFound, Message: "method: " + strconv.Quote(m) + " is not an A2A " + v + " method this server knows"}
}

func extendedUnsupported(c *call) error {
	return &wire.Error{Code: wire.CodeUnsupported, Message: "this agent has no extended card; its card at .well-known/agent-card.json is the whole card"}
}

// sendRequest is MessageSendParams (v0.3) or SendMessageRequest (v1.0).
type sendRequest struct {
	Message       json.RawMessage `json:"message"`
	Configuration *struct {
		Blocking           *bool    `json:"blocking"`
		ReturnImmediately  *bool    `json:"returnImmediately"`
		HistoryLength      *int     `json:"historyLength"`
		AcceptedOutputMode []string `json:"acceptedOutputModes"`
		// The task's push config, set with it in one unit.
		PushNotificationConfig     json.RawMessage `json:"pushNotificationConfig"`     // v0.3
		TaskPushNotificationConfig json.RawMessage `json:"taskPushNotificationConfig"` // v1.0
	} `json:"configuration"`
	Metadata json.RawMessage `json:"metadata"`
}

// decodeSend decodes a send's params; field prefixes error names.
func decodeSend(v string, raw json.RawMessage, field string) (sendParams, error) {
	var s sendRequest
	if err := wire.StrictUnmarshal(raw, &s, strings.TrimSuffix(field, ".")); err != nil {
		return sendParams{}, err
	}
	if len(s.Message) == 0 || string(s.Message) == "null" {
		return sendParams{}, wire.InvalidParams(field+"message", "expected the message to send", (*string)(nil))
	}
	m, err := wire.DecodeMessage(v, s.Message, field+"message")
	if err != nil {
		return sendParams{}, err
	}
	p := sendParams{version: v, msg: m, raw: s.Message}
	// Both generations block unless told not to (v0.3 blocking: false, as
	// the SDKs' own servers read it; v1.0 returnImmediately: true).
	p.blocking = true
	if cfg := s.Configuration; cfg != nil {
		if v == wire.V03 && cfg.Blocking != nil {
			p.blocking = *cfg.Blocking
		}
		if v == wire.V10 && cfg.ReturnImmediately != nil {
			p.blocking = !*cfg.ReturnImmediately
		}
		if cfg.HistoryLength != nil && *cfg.HistoryLength < 0 {
			return p, wire.InvalidParams(field+"configuration.historyLength", "expected 0 or more", strconv.Itoa(*cfg.HistoryLength))
		}
		p.historyLength = cfg.HistoryLength
		name, raw := "pushNotificationConfig", cfg.PushNotificationConfig
		if v == wire.V10 {
			name, raw = "taskPushNotificationConfig", cfg.TaskPushNotificationConfig
		}
		if len(raw) > 0 && string(raw) != "null" {
			f := field + "configuration." + name
			c, err := decodePushConfig(v, raw, f)
			if err != nil {
				return p, err
			}
			p.push, p.pushField = &c, f
		}
	}
	if len(m.Metadata) > 0 {
		_ = json.Unmarshal(m.Metadata, &p.meta)
	}
	return p, nil
}

func (c *call) send(stream bool) error {
	p, err := decodeSend(c.v, c.params, "params.")
	if err != nil {
		return err
	}
	if !stream {
		tv, _, err := c.edge.send(c.ctx(), c.req.agent, p)
		if err != nil {
			return err
		}
		return c.answer(sendResult(c.v, tv))
	}
	p.blocking = false
	tv, from, err := c.edge.send(c.ctx(), c.req.agent, p)
	if err != nil {
		return err
	}
	// From the message on: the task as it was sent (or answered), then
	// every change.
	return c.edge.stream(c.w, c.r, tv.ID, &from, true, rpcBinding(c.v, c.id))
}

// sendResult is a send's answer: v0.3 the Task itself, v1.0 {"task": Task}.
func sendResult(v string, tv wire.TaskView) any {
	if v == wire.V03 {
		return wire.EncodeTask(v, tv, true)
	}
	return obj{"task": wire.EncodeTask(v, tv, true)}
}

// idParams is TaskQueryParams / TaskIdParams (v0.3) or GetTaskRequest,
// CancelTaskRequest, SubscribeToTaskRequest (v1.0).
type idParams struct {
	ID            *string `json:"id"`
	HistoryLength *int    `json:"historyLength"`
}

func (c *call) taskID() (idParams, error) {
	var p idParams
	if err := wire.StrictUnmarshal(c.params, &p, "params"); err != nil {
		return p, err
	}
	if p.ID == nil || *p.ID == "" {
		return p, wire.InvalidParams("params.id", "expected the task's id", p.ID)
	}
	if p.HistoryLength != nil && *p.HistoryLength < 0 {
		return p, wire.InvalidParams("params.historyLength", "expected 0 or more", strconv.Itoa(*p.HistoryLength))
	}
	return p, nil
}

func (c *call) get() error {
	p, err := c.taskID()
	if err != nil {
		return err
	}
	tv, err := c.edge.get(c.ctx(), c.req.agent, *p.ID, p.HistoryLength)
	if err != nil {
		return err
	}
	return c.answer(wire.EncodeTask(c.v, tv, true))
}

func (c *call) cancel() error {
	p, err := c.taskID()
	if err != nil {
		return err
	}
	tv, err := c.edge.cancel(c.ctx(), c.req.agent, *p.ID)
	if err != nil {
		return err
	}
	return c.answer(wire.EncodeTask(c.v, tv, true))
}

func (c *call) subscribe() error {
	p, err := c.taskID()
	if err != nil {
		return err
	}
	resume, err := lastEventID(c.r)
	if err != nil {
		return err
	}
	rec, err := c.edge.read(c.ctx(), c.req.agent, *p.ID)
	if err != nil {
		return err
	}
	if resume == nil && c.v == wire.V10 && wire.Terminal(wire.View(rec, nil).State) {
		return &wire.Error{Code: wire.CodeUnsupported, Message: "task " + *p.ID + " has finished (" + wire.View(rec, nil).State + "); read it with GetTask instead of subscribing"}
	}
	return c.edge.stream(c.w, c.r, rec.Task.ID, resume, resume == nil, rpcBinding(c.v, c.id))
}

// listRequest is ListTasksRequest (v1.0).
type listRequest struct {
	ContextID        string `json:"contextId"`
	Status           string `json:"status"`
	PageSize         *int   `json:"pageSize"`
	PageToken        string `json:"pageToken"`
	HistoryLength    *int   `json:"historyLength"`
	IncludeArtifacts *bool  `json:"includeArtifacts"`
}

func (lr listRequest) decode(field string) (listParams, bool, error) {
	p := listParams{contextID: lr.ContextID, pageToken: lr.PageToken, historyLength: lr.HistoryLength}
	if lr.Status != "" && lr.Status != "TASK_STATE_UNSPECIFIED" {
		if p.state = wire.State10(lr.Status); p.state == "" {
			return p, false, wire.InvalidParams(field+"status", "expected a task state such as TASK_STATE_WORKING", lr.Status)
		}
	}
	if lr.PageSize != nil {
		if *lr.PageSize < 1 || *lr.PageSize > mailbox.MaxAgentTasksPage {
			return p, false, wire.InvalidParams(field+"pageSize", "expected 1 to "+strconv.Itoa(mailbox.MaxAgentTasksPage), strconv.Itoa(*lr.PageSize))
		}
		p.pageSize = *lr.PageSize
	}
	if lr.HistoryLength != nil && *lr.HistoryLength < 0 {
		return p, false, wire.InvalidParams(field+"historyLength", "expected 0 or more", strconv.Itoa(*lr.HistoryLength))
	}
	return p, lr.IncludeArtifacts != nil && *lr.IncludeArtifacts, nil
}

func (c *call) list() error {
	var lr listRequest
	if err := wire.StrictUnmarshal(c.params, &lr, "params"); err != nil {
		return err
	}
	p, arts, err := lr.decode("params.")
	if err != nil {
		return err
	}
	res, err := c.edge.listAnswer(c.ctx(), c.req.agent, p, arts)
	if err != nil {
		return err
	}
	return c.answer(res)
}

// listAnswer is ListTasksResponse.
func (e *Edge) listAnswer(ctx context.Context, agent string, p listParams, artifacts bool) (obj, error) {
	tasks, next, total, err := e.list(ctx, agent, p)
	if err != nil {
		return nil, err
	}
	out := make([]obj, len(tasks))
	for i, tv := range tasks {
		out[i] = wire.EncodeTask(wire.V10, tv, artifacts)
	}
	size := p.pageSize
	if size == 0 {
		size = mailbox.DefaultAgentTasksPage
	}
	return obj{"tasks": out, "nextPageToken": next, "pageSize": size, "totalSize": total}, nil
}

// lastEventID reads a resumed stream's Last-Event-ID.
func lastEventID(r *http.Request) (*uint64, error) {
	after, prob := sse.LastEventID(r)
	if prob != nil {
		return nil, problem(prob)
	}
	return after, nil
}

// jsonOrA2A accepts the JSON media types the A2A bindings are sent as.
func jsonOrA2A(mt string, _ map[string]string) bool {
	return mt == "application/json" || mt == "application/a2a+json"
}

// problem puts a request the shared reader refused in the edge's words.
func problem(p *sse.Problem) *wire.Error {
	switch p.Kind {
	case sse.ContentType:
		return &wire.Error{Code: wire.CodeContentType, Message: "Content-Type: got " + strconv.Quote(p.Value) + ", expected application/json", Status: http.StatusUnsupportedMediaType}
	case sse.TooLarge:
		return &wire.Error{Code: wire.CodeInvalidRequest, Message: "request body: larger than the limit of " + strconv.FormatInt(p.Limit, 10) + " bytes (1 MiB); send a smaller message (large files belong behind a url part)", Status: http.StatusRequestEntityTooLarge}
	case sse.Unreadable:
		return &wire.Error{Code: wire.CodeParse, Message: "request body: could not be read: " + p.Err.Error()}
	case sse.Empty:
		return &wire.Error{Code: wire.CodeParse, Message: "request body: empty, expected a JSON-RPC request object"}
	case sse.BadUTF8:
		return &wire.Error{Code: wire.CodeParse, Message: "request body: invalid UTF-8, expected UTF-8 JSON"}
	case sse.BadLastEventID:
		return &wire.Error{Code: wire.CodeInvalidRequest, Message: p.Field + ": got " + strconv.Quote(p.Value) + ", expected the id of the last event received (a number)", Field: p.Field}
	}
	return &wire.Error{Code: wire.CodeInvalidRequest, Message: p.Error()}
}
