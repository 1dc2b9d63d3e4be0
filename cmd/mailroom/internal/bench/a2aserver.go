package bench

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// A2AServer is a small A2A server (JSON-RPC binding, protocol v0.3) whose
// executor answers every message at once: the remote agent `mailroom bench
// --remote` delivers to, so that what is measured is the daemon's path and
// not an agent's work. It is written here, on net/http, because the binary
// links no A2A SDK (the SDKs are test dependencies only).
//
// It serves the agent card at /.well-known/agent-card.json (and the older
// /.well-known/agent.json), and JSON-RPC at / with message/send (a new task,
// completed with one text artifact "done", whether the caller blocks or
// not; a resent messageId gets the task it made before), tasks/get and
// tasks/cancel (a completed task is not cancelable). Streaming, push
// notifications and continuations of a task are not offered, and the card
// says so. Tasks are kept in memory, the newest a2aKeepTasks of them.
type A2AServer struct {
	mux *http.ServeMux
	seq atomic.Uint64

	mu     sync.Mutex
	tasks  map[string]*a2aTask
	byMsg  map[string]string // messageId to task id
	order  []string          // task ids, oldest first, for eviction
	oldest int               // index in order of the oldest kept task
}

// a2aKeepTasks bounds the tasks kept for tasks/get: a long run at a few
// thousand tasks a second would otherwise grow without end.
const a2aKeepTasks = 200_000

// a2aMaxBody bounds a request body; the bench's payloads are at most 512 KiB.
const a2aMaxBody = 4 << 20

// a2aTask is a task as the server answers it: its JSON, made once.
type a2aTask struct {
	id, messageID string
	encoded       json.RawMessage
}

// NewA2AServer returns a server with an empty task store.
func NewA2AServer() *A2AServer {
	s := &A2AServer{mux: http.NewServeMux(), tasks: map[string]*a2aTask{}, byMsg: map[string]string{}}
	s.mux.HandleFunc("GET /.well-known/agent-card.json", s.card)
	s.mux.HandleFunc("GET /.well-known/agent.json", s.card)
	s.mux.HandleFunc("POST /{$}", s.rpc)
	return s
}

// A2A error codes of v0.3 (JSON-RPC's own and the protocol's).
const (
	rpcParseError        = -32700
	rpcInvalidRequest    = -32600
	rpcMethodNotFound    = -32601
	rpcInvalidParams     = -32602
	rpcTaskNotFound      = -32001
	rpcTaskNotCancelable = -32002
	rpcUnsupported       = -32004
	rpcContentType       = -32005
)

type rpcFault struct {
	code int
	msg  string
}

func (e *rpcFault) Error() string { return e.msg }

func fault(code int, msg string) *rpcFault { return &rpcFault{code, msg} }

// ServeHTTP serves the card and the JSON-RPC endpoint; anything else is
// 404, and another method 405.
func (s *A2AServer) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// card serves the agent card; its url is where the request came, so the
// card is right behind any address the server listens on.
func (s *A2AServer) card(w http.ResponseWriter, r *http.Request) {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	card := map[string]any{
		"name":               "bench-echo",
		"description":        "mailroom bench's in-process A2A agent: answers every message at once",
		"url":                scheme + "://" + r.Host + "/",
		"version":            "1.0.0",
		"protocolVersion":    "0.3.0",
		"preferredTransport": "JSONRPC",
		"capabilities":       map[string]any{"streaming": false, "pushNotifications": false, "stateTransitionHistory": false},
		"defaultInputModes":  []string{"text/plain", "application/json"},
		"defaultOutputModes": []string{"text/plain"},
		"skills": []map[string]any{{"id": "echo", "name": "echo", "description": "answers done at once",
			"tags": []string{"bench"}}},
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(card)
}

// rpcRequest is a JSON-RPC request as read: the id is kept raw to be
// echoed as sent (a string or a number).
type rpcRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

func (s *A2AServer) rpc(w http.ResponseWriter, r *http.Request) {
	if ct := r.Header.Get("Content-Type"); ct != "" && !isJSONType(ct) {
		writeRPC(w, nil, nil, fault(rpcContentType, "content type "+strconv.Quote(ct)+" is not supported; expected application/json"))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, a2aMaxBody))
	if err != nil {
		writeRPC(w, nil, nil, fault(rpcInvalidRequest, "reading the request: "+err.Error()))
		return
	}
	var req rpcRequest
	if !json.Valid(body) {
		writeRPC(w, nil, nil, fault(rpcParseError, "the request is not JSON"))
		return
	}
	if err := json.Unmarshal(body, &req); err != nil {
		// Valid JSON that is not one request object (a batch, which A2A
		// does not use, or a field of the wrong type).
		writeRPC(w, nil, nil, fault(rpcInvalidRequest, "the request is not a JSON-RPC request object: "+err.Error()))
		return
	}
	if !validID(req.ID) {
		writeRPC(w, nil, nil, fault(rpcInvalidRequest, "id: expected a string or a number"))
		return
	}
	if req.JSONRPC != "2.0" || req.Method == "" {
		writeRPC(w, req.ID, nil, fault(rpcInvalidRequest, `expected "jsonrpc": "2.0" and a method`))
		return
	}
	var result json.RawMessage
	var f *rpcFault
	switch req.Method {
	case "message/send":
		result, f = s.send(req.Params)
	case "tasks/get":
		result, f = s.get(req.Params)
	case "tasks/cancel":
		result, f = s.cancel(req.Params)
	case "message/stream", "tasks/resubscribe", "tasks/pushNotificationConfig/set", "tasks/pushNotificationConfig/get",
		"tasks/pushNotificationConfig/list", "tasks/pushNotificationConfig/delete", "agent/getAuthenticatedExtendedCard":
		f = fault(rpcUnsupported, req.Method+" is not supported by this agent (its card offers no streaming, push notifications or extended card)")
	default:
		f = fault(rpcMethodNotFound, "method "+strconv.Quote(req.Method)+" not found")
	}
	writeRPC(w, req.ID, result, f)
}

func isJSONType(ct string) bool {
	for i := 0; i < len(ct); i++ {
		if ct[i] == ';' {
			ct = ct[:i]
			break
		}
	}
	return ct == "application/json" || ct == "application/a2a+json"
}

// validID: a request must have an id (A2A has no notifications), a string
// or a number.
func validID(id json.RawMessage) bool {
	if len(id) == 0 {
		return false
	}
	switch id[0] {
	case '"':
		var s string
		return json.Unmarshal(id, &s) == nil
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		var n json.Number
		return json.Unmarshal(id, &n) == nil
	}
	return false
}

func writeRPC(w http.ResponseWriter, id, result json.RawMessage, f *rpcFault) {
	if id == nil {
		id = json.RawMessage("null")
	}
	var out any
	if f != nil {
		out = struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   map[string]any  `json:"error"`
		}{"2.0", id, map[string]any{"code": f.code, "message": f.msg}}
	} else {
		out = struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Result  json.RawMessage `json:"result"`
		}{"2.0", id, result}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}

// wireMessage is a v0.3 message, as far as the server reads it.
type wireMessage struct {
	Kind      string            `json:"kind"`
	Role      string            `json:"role"`
	MessageID string            `json:"messageId"`
	TaskID    string            `json:"taskId"`
	ContextID string            `json:"contextId"`
	Parts     []json.RawMessage `json:"parts"`
}

func (m wireMessage) check() *rpcFault {
	switch {
	case m.Kind != "" && m.Kind != "message":
		return fault(rpcInvalidParams, `params.message.kind: expected "message"`)
	case m.Role != "user" && m.Role != "agent":
		return fault(rpcInvalidParams, `params.message.role: expected "user" or "agent"`)
	case m.MessageID == "":
		return fault(rpcInvalidParams, "params.message.messageId: expected a non-empty id")
	case len(m.Parts) == 0:
		return fault(rpcInvalidParams, "params.message.parts: expected at least one part")
	}
	for i, raw := range m.Parts {
		var p struct {
			Kind string          `json:"kind"`
			Text *string         `json:"text"`
			Data json.RawMessage `json:"data"`
			File json.RawMessage `json:"file"`
		}
		field := "params.message.parts[" + strconv.Itoa(i) + "]"
		if json.Unmarshal(raw, &p) != nil {
			return fault(rpcInvalidParams, field+": expected a part object")
		}
		ok := (p.Kind == "text" && p.Text != nil) || (p.Kind == "data" && len(p.Data) > 0 && p.Data[0] == '{') ||
			(p.Kind == "file" && len(p.File) > 0 && p.File[0] == '{')
		if !ok {
			return fault(rpcInvalidParams, field+`: expected a "text" part with text, a "data" part with an object or a "file" part with a file`)
		}
	}
	return nil
}

// send answers message/send: the executor answers at once, so the task is
// completed before the answer, blocking or not.
func (s *A2AServer) send(params json.RawMessage) (json.RawMessage, *rpcFault) {
	var p struct {
		Message       *wireMessage    `json:"message"`
		Configuration json.RawMessage `json:"configuration"`
	}
	if len(params) == 0 || json.Unmarshal(params, &p) != nil || p.Message == nil {
		return nil, fault(rpcInvalidParams, "params: expected {message, configuration}")
	}
	m := *p.Message
	if f := m.check(); f != nil {
		return nil, f
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if m.TaskID != "" {
		// Every task is completed at once: there is nothing to continue.
		if _, ok := s.tasks[m.TaskID]; !ok {
			return nil, fault(rpcTaskNotFound, "task "+strconv.Quote(m.TaskID)+" not found")
		}
		return nil, fault(rpcUnsupported, "task "+strconv.Quote(m.TaskID)+" is completed: it takes no more messages")
	}
	if id, ok := s.byMsg[m.MessageID]; ok {
		if t, ok := s.tasks[id]; ok {
			return t.encoded, nil // a resend of the same message: the same task
		}
	}
	n := s.seq.Add(1)
	id := "bench-task-" + strconv.FormatUint(n, 10)
	ctxID := m.ContextID
	if ctxID == "" {
		ctxID = "bench-ctx-" + strconv.FormatUint(n, 10)
	}
	m.TaskID, m.ContextID, m.Kind = id, ctxID, "message"
	history, err := json.Marshal([]wireMessage{m})
	if err != nil {
		return nil, fault(rpcInvalidParams, "params.message: "+err.Error())
	}
	task := map[string]any{
		"kind":      "task",
		"id":        id,
		"contextId": ctxID,
		"status":    map[string]any{"state": "completed", "timestamp": time.Now().UTC().Format("2006-01-02T15:04:05.000Z")},
		"artifacts": []any{map[string]any{"artifactId": "answer", "name": "answer", "parts": []any{map[string]any{"kind": "text", "text": "done"}}}},
		"history":   json.RawMessage(history),
	}
	encoded, err := json.Marshal(task)
	if err != nil {
		return nil, fault(rpcInvalidParams, "params.message: "+err.Error())
	}
	s.keep(&a2aTask{id: id, messageID: m.MessageID, encoded: encoded})
	return encoded, nil
}

// keep stores t, forgetting the oldest task past a2aKeepTasks. Called
// with mu held.
func (s *A2AServer) keep(t *a2aTask) {
	s.tasks[t.id] = t
	s.byMsg[t.messageID] = t.id
	s.order = append(s.order, t.id)
	for len(s.order)-s.oldest > a2aKeepTasks {
		old := s.tasks[s.order[s.oldest]]
		delete(s.tasks, old.id)
		delete(s.byMsg, old.messageID)
		s.order[s.oldest] = ""
		s.oldest++
	}
	if s.oldest > a2aKeepTasks {
		s.order = append([]string(nil), s.order[s.oldest:]...)
		s.oldest = 0
	}
}

func (s *A2AServer) lookup(params json.RawMessage) (*a2aTask, *rpcFault) {
	var p struct {
		ID string `json:"id"`
	}
	if len(params) == 0 || json.Unmarshal(params, &p) != nil || p.ID == "" {
		return nil, fault(rpcInvalidParams, "params.id: expected the task's id")
	}
	s.mu.Lock()
	t, ok := s.tasks[p.ID]
	s.mu.Unlock()
	if !ok {
		return nil, fault(rpcTaskNotFound, "task "+strconv.Quote(p.ID)+" not found")
	}
	return t, nil
}

func (s *A2AServer) get(params json.RawMessage) (json.RawMessage, *rpcFault) {
	t, f := s.lookup(params)
	if f != nil {
		return nil, f
	}
	return t.encoded, nil
}

// cancel answers tasks/cancel: every task is completed, so none can be.
func (s *A2AServer) cancel(params json.RawMessage) (json.RawMessage, *rpcFault) {
	t, f := s.lookup(params)
	if f != nil {
		return nil, f
	}
	return nil, fault(rpcTaskNotCancelable, "task "+strconv.Quote(t.id)+" is completed and cannot be canceled")
}
