package a2a

// The legacy binding: the pre-0.2 A2A dialect some clients still speak
// (gmf_forge_ai_orchestration's A2AClient among them), served for every
// registered agent at /agents/{agent}/rpc. Such a client posts JSON-RPC
// 2.0 `tasks/send` with a task id it chose and a message whose parts are
// {"type":"text","text":...,"data":null}, and reads back a task whose
// status.message is a string (an object makes it fail) and whose
// artifacts' parts are typed the same way. It builds the URL it posts to
// as its endpoint with trailing slashes cut and "/rpc" appended, so a
// client configured with the agent's base URL, or with the card's url
// (the base URL, slash and all), reaches this binding.
//
// A task sent here is an ordinary A2A-origin task (version "legacy"): its
// message is kept verbatim, its worker leases it natively, and the other
// bindings read it like any other.

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/mailroom/mailroom/internal/served"
	"github.com/mailroom/mailroom/mailbox"
)

// legacyPath is the binding's path under an agent's base URL.
const legacyPath = "rpc"

// versionLegacy is the A2A origin version of tasks sent through it.
const versionLegacy = "legacy"

// legacyNamespace makes task ids from (agent, sender, the client's task
// id), so a retry of the same tasks/send is the same task. It is not
// taskNamespace: a legacy task id and a v0.3 messageId that happen to be
// equal name different things.
var legacyNamespace = uuid.MustParse("c0a7f1e2-5d4b-4e8a-9b3c-6c6567616379")

// legacyMethods are the methods the binding serves.
var legacyMethods = map[string]func(e *Edge, ctx context.Context, agent string, params map[string]json.RawMessage) (any, error){
	"tasks/send":   (*Edge).legacySend,
	"tasks/get":    (*Edge).legacyGet,
	"tasks/cancel": (*Edge).legacyCancel,
}

// legacy serves one JSON-RPC request at /agents/{agent}/rpc. Every answer,
// a refusal too, is a JSON-RPC response, which is the only shape such a
// client reads.
func (e *Edge) legacy(w http.ResponseWriter, r *http.Request, req request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		writeRPCError(w, r, v03, nil, &rpcError{code: codeInvalidRequest, status: http.StatusMethodNotAllowed,
			msg: r.Method + " " + r.URL.Path + ": the legacy tasks/send binding takes JSON-RPC requests by POST"})
		return
	}
	// A refusal before the request is decoded still echoes its id, which
	// a client matches answers by.
	refuse := func(err error) {
		var id json.RawMessage
		if body, rerr := readBody(w, r); rerr == nil {
			id, _, _, _ = decodeLegacyEnvelope(body)
		}
		writeRPCError(w, r, v03, id, rpcErrorFrom(err, v03))
	}
	ctx := r.Context()
	if _, err := e.svc.Registered(ctx, req.agent); err != nil {
		refuse(err)
		return
	}
	if e.opts.Authenticate != nil {
		actx, err := e.opts.Authenticate(r)
		if err != nil {
			refuse(err)
			return
		}
		ctx = actx
	}
	body, rerr := readBody(w, r)
	if rerr != nil {
		writeRPCError(w, r, v03, nil, rerr)
		return
	}
	id, method, params, rerr := decodeLegacyEnvelope(body)
	if rerr != nil {
		writeRPCError(w, r, v03, id, rerr)
		return
	}
	served.Method(w, method) // /metrics: a method the binding serves
	result, err := legacyMethods[method](e, ctx, req.agent, params)
	if err != nil {
		writeRPCError(w, r, v03, id, rpcErrorFrom(err, v03))
		return
	}
	writeAnswer(w, r, http.StatusOK, map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

// decodeLegacyEnvelope reads the JSON-RPC envelope: its id (as it came, to
// echo), a method the binding serves, and params as an object's fields.
func decodeLegacyEnvelope(body []byte) (json.RawMessage, string, map[string]json.RawMessage, *rpcError) {
	if t := bytes.TrimLeft(body, " \t\r\n"); t[0] != '{' {
		return nil, "", nil, &rpcError{code: codeInvalidRequest, msg: "request: expected one JSON-RPC request object {\"jsonrpc\":\"2.0\",\"id\",\"method\",\"params\"}; batches are not supported"}
	}
	var env struct {
		JSONRPC *string          `json:"jsonrpc"`
		ID      json.RawMessage  `json:"id"`
		Method  *string          `json:"method"`
		Params  *json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, "", nil, &rpcError{code: codeInvalidRequest, msg: "request: expected a JSON-RPC request object {\"jsonrpc\":\"2.0\",\"id\",\"method\",\"params\"}: " + err.Error()}
	}
	id := env.ID
	if len(id) > 0 {
		switch id[0] {
		case '"', 'n':
		case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			// Echoed as it came, so it must be a number its client can
			// read back: a finite double.
			if _, err := strconv.ParseFloat(string(id), 64); err != nil {
				return nil, "", nil, &rpcError{code: codeInvalidRequest, msg: "id: got " + legacyShort(id) + ", expected a string, or a number within a double's range", field: "id"}
			}
		default:
			return nil, "", nil, &rpcError{code: codeInvalidRequest, msg: "id: got " + legacyShort(id) + ", expected a string, a number or null", field: "id"}
		}
	}
	switch {
	case env.JSONRPC == nil:
		return id, "", nil, &rpcError{code: codeInvalidRequest, msg: `jsonrpc: missing, expected "2.0"`, field: "jsonrpc"}
	case *env.JSONRPC != "2.0":
		return id, "", nil, &rpcError{code: codeInvalidRequest, msg: "jsonrpc: got " + strconv.Quote(*env.JSONRPC) + `, expected "2.0"`, field: "jsonrpc"}
	case len(id) == 0:
		return nil, "", nil, &rpcError{code: codeInvalidRequest, msg: "id: missing; each request is a call and needs an id to answer it by", field: "id"}
	case env.Method == nil || *env.Method == "":
		return id, "", nil, &rpcError{code: codeInvalidRequest, msg: "method: missing, expected tasks/send, tasks/get or tasks/cancel", field: "method"}
	}
	method := *env.Method
	if _, ok := legacyMethods[method]; !ok {
		return id, "", nil, &rpcError{code: codeMethodNotFound, field: "method",
			msg: "method: got " + strconv.Quote(method) + ", expected tasks/send, tasks/get or tasks/cancel (the legacy binding at /rpc); the agent's base URL serves A2A v0.3 and v1.0"}
	}
	var raw json.RawMessage
	if env.Params != nil {
		raw = *env.Params
	}
	params, err := legacyObject(raw, "params")
	if err != nil {
		return id, "", nil, err.(*rpcError)
	}
	return id, method, params, nil
}

// legacySend is tasks/send: the message becomes a task for the agent (or
// a retry finds the task it already made), and the call blocks like a
// blocking message/send, answering the task as it then stands.
func (e *Edge) legacySend(ctx context.Context, agent string, params map[string]json.RawMessage) (any, error) {
	if raw, ok := params["pushNotification"]; ok && string(raw) != "null" {
		return nil, &rpcError{code: codePushNotSupported, field: "params.pushNotification",
			msg: "params.pushNotification: the pre-0.2 dialect takes no push notifications here; tasks/send answers when the task finishes, and tasks/get reads it later (or send message/send at the agent's base URL with configuration.pushNotificationConfig)"}
	}
	if err := legacyKnown(params, "params", "id", "sessionId", "message", "historyLength", "acceptedOutputModes", "pushNotification"); err != nil {
		return nil, err
	}
	clientID, err := legacyID(params, "params.id")
	if err != nil {
		return nil, err
	}
	if _, err := legacyOptionalNumber(params, "params.historyLength"); err != nil {
		return nil, err
	}
	if raw, ok := params["acceptedOutputModes"]; ok && string(raw) != "null" {
		var modes []string
		if json.Unmarshal(raw, &modes) != nil {
			return nil, legacyInvalid("params.acceptedOutputModes", "got "+legacyShort(raw)+", expected an array of media types such as \"text/plain\"")
		}
	}
	sessionID, err := legacyOptionalID(params, "params.sessionId")
	if err != nil {
		return nil, err
	}
	rawMsg, ok := params["message"]
	if !ok || string(rawMsg) == "null" {
		return nil, legacyInvalid("params.message", "missing, expected the message to send {\"role\":\"user\",\"parts\":[{\"type\":\"text\",\"text\":...}]}")
	}
	m, meta, err := decodeLegacyMessage(rawMsg, "params.message")
	if err != nil {
		return nil, err
	}
	if !legacyHasContent(m) {
		return nil, legacyInvalid("params.message.parts", "no text and no data, expected at least one text part with text or one data part")
	}
	m.messageID = clientID
	sender := e.caller(ctx, meta)
	if sessionID == "" {
		sessionID = uuid.NewString()
	}
	id, err := e.legacyContinue(ctx, agent, legacyTaskID(agent, sender, clientID), m, rawMsg, clientID)
	if err != nil {
		return nil, err
	}
	if id == "" {
		id, err = e.enqueue(ctx, legacyTaskID(agent, sender, clientID), sender, agent, m, sendParams{meta: meta},
			&mailbox.A2AOrigin{Version: versionLegacy, MessageID: clientID, ContextID: sessionID, Message: rawMsg})
		if err != nil {
			return nil, err
		}
	}
	tv, err := e.wait(ctx, agent, id, nil)
	if err != nil {
		return nil, err
	}
	out := legacyTask(tv, clientID)
	if !terminal(tv.state) && tv.statusMessage == nil {
		// gmf's client reports a task that did not complete by its status
		// message; say why this one has not, and how to read it later.
		out["status"].(map[string]any)["message"] = "the task is " + tv.state + ": it did not finish within the blocking timeout (" +
			e.opts.BlockingTimeout.String() + "); read it later with tasks/get {\"id\":" + strconv.Quote(clientID) + "}"
	}
	return out, nil
}

// legacyContinue is a tasks/send naming a task the caller already sent:
// the dialect's way to answer the question its worker asked. It returns
// the task's id once answered, or "" when there is no such task (the
// tasks/send sends one). The message the task was sent with, or an
// answer already given, sent again is a retry: nothing changes. Any other
// message answers the task, or is refused when the task is not waiting on
// its caller.
func (e *Edge) legacyContinue(ctx context.Context, agent, id string, m message, raw json.RawMessage, clientID string) (string, error) {
	if _, err := e.feed.Task(ctx, id); mailbox.ErrorCode(err) == mailbox.CodeNotFound {
		return "", nil
	}
	rec, err := e.read(ctx, agent, id)
	if err != nil {
		return "", legacyNotFoundAs(err, clientID, agent)
	}
	if sameJSON(rec.Task.A2A.Message, raw) {
		return rec.Task.ID, nil
	}
	for _, t := range rec.Task.Turns {
		if t.Role == mailbox.RoleSender && t.A2A != nil && t.A2A.Version == versionLegacy && sameJSON(t.A2A.Message, raw) {
			return rec.Task.ID, nil
		}
	}
	_, _, err = e.answer(ctx, rec, replyContent(m), &mailbox.A2AOrigin{Version: versionLegacy, MessageID: clientID, ContextID: rec.Task.A2A.ContextID, Message: raw},
		"params.id", "send tasks/send with a new id")
	return rec.Task.ID, err
}

// legacyGet is tasks/get.
func (e *Edge) legacyGet(ctx context.Context, agent string, params map[string]json.RawMessage) (any, error) {
	if err := legacyKnown(params, "params", "id", "historyLength", "metadata"); err != nil {
		return nil, err
	}
	rec, askedID, err := e.legacyResolve(ctx, agent, params)
	if err != nil {
		return nil, err
	}
	tv, err := e.get(ctx, agent, rec.Task.ID, nil)
	if err != nil {
		return nil, legacyNotFoundAs(err, askedID, agent)
	}
	return legacyTask(tv, legacyIDOf(rec)), nil
}

// legacyCancel is tasks/cancel.
func (e *Edge) legacyCancel(ctx context.Context, agent string, params map[string]json.RawMessage) (any, error) {
	if err := legacyKnown(params, "params", "id", "metadata"); err != nil {
		return nil, err
	}
	rec, askedID, err := e.legacyResolve(ctx, agent, params)
	if err != nil {
		return nil, err
	}
	tv, err := e.cancel(ctx, agent, rec.Task.ID)
	if err != nil {
		return nil, legacyNotFoundAs(err, askedID, agent)
	}
	return legacyTask(tv, legacyIDOf(rec)), nil
}

// legacyResolve finds the task a get or cancel names: the id a tasks/send
// chose (the caller's own: the task id is derived from it), or a mailbox
// task id. Either way only an A2A task whose recipient is the agent is
// found; any other is TaskNotFound, as if it did not exist. Whether the
// caller may read or cancel it is the guard's to say afterwards.
func (e *Edge) legacyResolve(ctx context.Context, agent string, params map[string]json.RawMessage) (mailbox.TaskRecord, string, error) {
	id, err := legacyID(params, "params.id")
	if err != nil {
		return mailbox.TaskRecord{}, "", err
	}
	if _, err := legacyOptionalNumber(params, "params.historyLength"); err != nil {
		return mailbox.TaskRecord{}, "", err
	}
	var meta map[string]json.RawMessage
	if raw, ok := params["metadata"]; ok && string(raw) != "null" {
		if meta, err = legacyObject(raw, "params.metadata"); err != nil {
			return mailbox.TaskRecord{}, "", err
		}
	}
	candidates := []string{legacyTaskID(agent, e.caller(ctx, meta), id)}
	if u, err := uuid.Parse(id); err == nil && len(id) == 36 {
		candidates = append(candidates, u.String())
	}
	for _, c := range candidates {
		rec, err := e.feed.Task(ctx, c)
		if err != nil {
			if mailbox.ErrorCode(err) == mailbox.CodeNotFound {
				continue
			}
			return rec, id, err
		}
		if rec.Task.A2A != nil && (rec.Task.Recipient == agent || rec.SentTo == agent) {
			return rec, id, nil
		}
	}
	return mailbox.TaskRecord{}, id, legacyTaskNotFound(id, agent)
}

// legacyNotFoundAs keeps a task that went away between the lookup and the
// read (forgotten) a TaskNotFound under the id the caller gave.
func legacyNotFoundAs(err error, id, agent string) error {
	if re, ok := err.(*rpcError); ok && re.code == codeTaskNotFound {
		return legacyTaskNotFound(id, agent)
	}
	return err
}

func legacyTaskNotFound(id, agent string) *rpcError {
	return &rpcError{code: codeTaskNotFound, field: "params.id",
		msg: "params.id: task " + strconv.Quote(id) + " not found for agent " + agent + ": it was never sent to this agent by this caller, or finished long ago and was forgotten"}
}

func legacyTaskID(agent, sender, clientID string) string {
	return uuid.NewSHA1(legacyNamespace, []byte(agent+"\x00"+sender+"\x00"+clientID)).String()
}

// legacyIDOf is the id a task has in this dialect: the id its tasks/send
// chose, or for a task sent another way its mailbox id.
func legacyIDOf(rec mailbox.TaskRecord) string {
	if o := rec.Task.A2A; o != nil && o.Version == versionLegacy {
		return o.MessageID
	}
	return rec.Task.ID
}

// legacyTask encodes a task as the dialect's clients parse it: status
// .message a string or null, artifacts' parts {type, text, data} with data
// an object or null, metadata always an object (carrying the mailbox's
// task id, which mailroom and the console name the task by).
func legacyTask(tv taskView, id string) map[string]any {
	var statusMsg any
	if tv.statusMessage != nil {
		var texts []string
		for _, p := range tv.statusMessage.parts {
			if p.kind == "text" {
				texts = append(texts, p.text)
			}
		}
		statusMsg = strings.Join(texts, "\n")
	}
	artifacts := make([]map[string]any, 0, len(tv.artifacts))
	for _, a := range tv.artifacts {
		parts := make([]map[string]any, 0, len(a.parts))
		for _, p := range a.parts {
			switch p.kind {
			case "text":
				parts = append(parts, map[string]any{"type": "text", "text": p.text, "data": nil})
			case "data":
				parts = append(parts, map[string]any{"type": "data", "text": nil, "data": p.data})
			}
		}
		artifacts = append(artifacts, map[string]any{"name": a.name, "parts": parts})
	}
	mr := map[string]any{"task_id": tv.id}
	if m, ok := tv.metadata["mailroom"].(map[string]any); ok {
		for k, v := range m {
			mr[k] = v
		}
	}
	return map[string]any{
		"id":        id,
		"sessionId": tv.contextID,
		"status":    map[string]any{"state": tv.state, "message": statusMsg, "timestamp": tv.timestamp.Format(time.RFC3339Nano)},
		"artifacts": artifacts,
		"metadata":  map[string]any{"mailroom": mr},
	}
}

// decodeLegacyMessage decodes a dialect message {role, parts, metadata}
// into the neutral model, with its metadata's fields. Other keys, in the
// message or its parts, are accepted as the dialect's own receiver
// accepts them: the message is kept verbatim, so they read back exactly.
func decodeLegacyMessage(raw json.RawMessage, field string) (message, map[string]json.RawMessage, error) {
	fields, err := legacyObject(raw, field)
	if err != nil {
		return message{}, nil, err
	}
	m := message{role: "user"}
	if r, ok := fields["role"]; ok && string(r) != "null" {
		var role string
		if json.Unmarshal(r, &role) != nil || (role != "user" && role != "agent") {
			return message{}, nil, legacyInvalid(field+".role", "got "+string(r)+", expected \"user\" or \"agent\"")
		}
		m.role = role
	}
	var meta map[string]json.RawMessage
	if r, ok := fields["metadata"]; ok && string(r) != "null" {
		if meta, err = legacyObject(r, field+".metadata"); err != nil {
			return message{}, nil, err
		}
		m.metadata = r
	}
	var parts []json.RawMessage
	r, ok := fields["parts"]
	if !ok || string(r) == "null" {
		return message{}, nil, legacyInvalid(field+".parts", "missing, expected an array of parts such as {\"type\":\"text\",\"text\":\"...\"}")
	}
	if json.Unmarshal(r, &parts) != nil {
		return message{}, nil, legacyInvalid(field+".parts", "got "+legacyShort(r)+", expected an array of parts")
	}
	if len(parts) == 0 {
		return message{}, nil, legacyInvalid(field+".parts", "got an empty array, expected at least one part")
	}
	for i, raw := range parts {
		p, err := decodeLegacyPart(raw, field+".parts["+strconv.Itoa(i)+"]")
		if err != nil {
			return message{}, nil, err
		}
		m.parts = append(m.parts, p)
	}
	return m, meta, nil
}

// decodeLegacyPart decodes {type, text, data, metadata}: a text part has
// text, a data part an object as data; the other field may be null.
func decodeLegacyPart(raw json.RawMessage, field string) (part, error) {
	fields, err := legacyObject(raw, field)
	if err != nil {
		return part{}, err
	}
	var p part
	typ, ok := fields["type"]
	if !ok || json.Unmarshal(typ, &p.kind) != nil || (p.kind != "text" && p.kind != "data") {
		got := "missing"
		if ok {
			got = "got " + legacyShort(typ)
		}
		return part{}, legacyInvalid(field+".type", got+", expected \"text\" or \"data\" (file parts are not served by the legacy binding)")
	}
	if md, ok := fields["metadata"]; ok && string(md) != "null" {
		if _, err := legacyObject(md, field+".metadata"); err != nil {
			return part{}, err
		}
		p.metadata = md
	}
	text, hasText := fields["text"]
	data, hasData := fields["data"]
	hasText = hasText && string(text) != "null"
	hasData = hasData && string(data) != "null"
	switch p.kind {
	case "text":
		if !hasText || json.Unmarshal(text, &p.text) != nil {
			got := "missing"
			if hasText {
				got = "got " + legacyShort(text)
			}
			return part{}, legacyInvalid(field+".text", got+", expected a string (a text part carries text)")
		}
		if hasData {
			return part{}, legacyInvalid(field+".data", "got "+legacyShort(data)+", expected null in a text part")
		}
	case "data":
		if !hasData {
			return part{}, legacyInvalid(field+".data", "missing, expected an object (a data part carries data)")
		}
		if _, err := legacyObject(data, field+".data"); err != nil {
			return part{}, err
		}
		if hasText {
			return part{}, legacyInvalid(field+".text", "got "+legacyShort(text)+", expected null in a data part")
		}
		p.data = data
	}
	return p, nil
}

func legacyHasContent(m message) bool {
	for _, p := range m.parts {
		if p.kind == "data" || strings.TrimSpace(p.text) != "" {
			return true
		}
	}
	return false
}

// legacyID reads a required id: a non-blank string of at most
// mailbox.MaxA2AIDBytes bytes.
func legacyID(fields map[string]json.RawMessage, field string) (string, error) {
	raw, ok := fields[lastKey(field)]
	if !ok || string(raw) == "null" {
		return "", legacyInvalid(field, "missing, expected the task's id (tasks/send: one the client chose, such as a UUID)")
	}
	return legacyIDValue(raw, field)
}

func legacyOptionalID(fields map[string]json.RawMessage, field string) (string, error) {
	raw, ok := fields[lastKey(field)]
	if !ok || string(raw) == "null" {
		return "", nil
	}
	return legacyIDValue(raw, field)
}

func legacyIDValue(raw json.RawMessage, field string) (string, error) {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", legacyInvalid(field, "got "+legacyShort(raw)+", expected a string")
	}
	switch {
	case strings.TrimSpace(s) == "":
		return "", legacyInvalid(field, "got "+strconv.Quote(s)+", expected a non-blank id")
	case len(s) > mailbox.MaxA2AIDBytes:
		return "", legacyInvalid(field, "got "+strconv.Itoa(len(s))+" bytes, expected at most "+strconv.Itoa(mailbox.MaxA2AIDBytes))
	case !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return "", legacyInvalid(field, "got "+strconv.Quote(s)+", expected an id without control characters")
	}
	return s, nil
}

func legacyOptionalNumber(fields map[string]json.RawMessage, field string) (int, error) {
	raw, ok := fields[lastKey(field)]
	if !ok || string(raw) == "null" {
		return 0, nil
	}
	var n int
	if json.Unmarshal(raw, &n) != nil || n < 0 {
		return 0, legacyInvalid(field, "got "+legacyShort(raw)+", expected a non-negative integer or null")
	}
	return n, nil
}

// lastKey is the key a field's path ends in: "id" of "params.id".
func lastKey(field string) string { return field[strings.LastIndexByte(field, '.')+1:] }

// legacyObject reads a JSON object's fields.
func legacyObject(raw json.RawMessage, field string) (map[string]json.RawMessage, error) {
	var fields map[string]json.RawMessage
	if t := bytes.TrimLeft(raw, " \t\r\n"); len(t) == 0 || t[0] != '{' || json.Unmarshal(raw, &fields) != nil {
		got := "missing"
		if len(raw) > 0 {
			got = "got " + legacyShort(raw)
		}
		return nil, legacyInvalid(field, got+", expected an object")
	}
	return fields, nil
}

// legacyKnown refuses a field the dialect does not have, naming it.
func legacyKnown(fields map[string]json.RawMessage, field string, known ...string) error {
	for k := range fields {
		found := false
		for _, n := range known {
			found = found || k == n
		}
		if !found {
			return legacyInvalid(field+"."+k, "unknown field; expected only "+strings.Join(known, ", "))
		}
	}
	return nil
}

func legacyInvalid(field, want string) *rpcError {
	return &rpcError{code: codeInvalidParams, field: field, msg: field + ": " + want}
}

// legacyShort quotes a JSON value in an error, cut to a readable length.
func legacyShort(raw json.RawMessage) string {
	s := string(bytes.TrimSpace(raw))
	if len(s) > 64 {
		s = strings.ToValidUTF8(s[:64], "") + "..."
	}
	return s
}

// legacyOrigin decodes a legacy task's message for the other bindings'
// history; nil when it cannot be (it was checked when sent).
func legacyOrigin(o *mailbox.A2AOrigin) *message {
	m, _, err := decodeLegacyMessage(o.Message, "message")
	if err != nil {
		return nil
	}
	m.messageID, m.contextID = o.MessageID, o.ContextID
	return &m
}
