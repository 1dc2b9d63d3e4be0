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

	"github.com/mailroom/mailroom/daemon/a2a/wire"
)

// legacyPath is the binding's path under an agent's base URL.
const legacyPath = "rpc"

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
		writeRPCError(w, r, wire.V03, nil, &wire.Error{Code: wire.CodeInvalidRequest, Status: http.StatusMethodNotAllowed,
			Message: r.Method + " " + r.URL.Path + ": the legacy tasks/send binding takes JSON-RPC requests by POST"})
		return
	}
	// A refusal before the request is decoded still echoes its id, which
	// a client matches answers by.
	refuse := func(err error) {
		var id json.RawMessage
		if body, rerr := readBody(w, r); rerr == nil {
			id, _, _, _ = decodeLegacyEnvelope(body)
		}
		writeRPCError(w, r, wire.V03, id, rpcErrorFrom(err, wire.V03))
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
		writeRPCError(w, r, wire.V03, nil, rerr)
		return
	}
	id, method, params, rerr := decodeLegacyEnvelope(body)
	if rerr != nil {
		writeRPCError(w, r, wire.V03, id, rerr)
		return
	}
	served.Method(w, method) // /metrics: a method the binding serves
	result, err := legacyMethods[method](e, ctx, req.agent, params)
	if err != nil {
		writeRPCError(w, r, wire.V03, id, rpcErrorFrom(err, wire.V03))
		return
	}
	writeAnswer(w, r, http.StatusOK, map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

// decodeLegacyEnvelope reads the JSON-RPC envelope: its id (as it came, to
// echo), a method the binding serves, and params as an object's fields.
func decodeLegacyEnvelope(body []byte) (json.RawMessage, string, map[string]json.RawMessage, *wire.Error) {
	if t := bytes.TrimLeft(body, " \t\r\n"); t[0] != '{' {
		return nil, "", nil, &wire.Error{Code: wire.CodeInvalidRequest, Message: "request: expected one JSON-RPC request object {\"jsonrpc\":\"2.0\",\"id\",\"method\",\"params\"}; batches are not supported"}
	}
	var env struct {
		JSONRPC *string          `json:"jsonrpc"`
		ID      json.RawMessage  `json:"id"`
		Method  *string          `json:"method"`
		Params  *json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, "", nil, &wire.Error{Code: wire.CodeInvalidRequest, Message: "request: expected a JSON-RPC request object {\"jsonrpc\":\"2.0\",\"id\",\"method\",\"params\"}: " + err.Error()}
	}
	id := env.ID
	if len(id) > 0 {
		switch id[0] {
		case '"', 'n':
		case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			// Echoed as it came, so it must be a number its client can
			// read back: a finite double.
			if _, err := strconv.ParseFloat(string(id), 64); err != nil {
				return nil, "", nil, &wire.Error{Code: wire.CodeInvalidRequest, Message: "id: got " + wire.LegacyShort(id) + ", expected a string, or a number within a double's range", Field: "id"}
			}
		default:
			return nil, "", nil, &wire.Error{Code: wire.CodeInvalidRequest, Message: "id: got " + wire.LegacyShort(id) + ", expected a string, a number or null", Field: "id"}
		}
	}
	switch {
	case env.JSONRPC == nil:
		return id, "", nil, &wire.Error{Code: wire.CodeInvalidRequest, Message: `jsonrpc: missing, expected "2.0"`, Field: "jsonrpc"}
	case *env.JSONRPC != "2.0":
		return id, "", nil, &wire.Error{Code: wire.CodeInvalidRequest, Message: "jsonrpc: got " + strconv.Quote(*env.JSONRPC) + `, expected "2.0"`, Field: "jsonrpc"}
	case len(id) == 0:
		return nil, "", nil, &wire.Error{Code: wire.CodeInvalidRequest, Message: "id: missing; each request is a call and needs an id to answer it by", Field: "id"}
	case env.Method == nil || *env.Method == "":
		return id, "", nil, &wire.Error{Code: wire.CodeInvalidRequest, Message: "method: missing, expected tasks/send, tasks/get or tasks/cancel", Field: "method"}
	}
	method := *env.Method
	if _, ok := legacyMethods[method]; !ok {
		return id, "", nil, &wire.Error{Code: wire.CodeMethodNotFound, Field: "method",
			Message: "method: got " + strconv.Quote(method) + ", expected tasks/send, tasks/get or tasks/cancel (the legacy binding at /rpc); the agent's base URL serves A2A v0.3 and v1.0"}
	}
	var raw json.RawMessage
	if env.Params != nil {
		raw = *env.Params
	}
	params, err := wire.LegacyObject(raw, "params")
	if err != nil {
		return id, "", nil, err.(*wire.Error)
	}
	return id, method, params, nil
}

// legacySend is tasks/send: the message becomes a task for the agent (or
// a retry finds the task it already made), and the call blocks like a
// blocking message/send, answering the task as it then stands.
func (e *Edge) legacySend(ctx context.Context, agent string, params map[string]json.RawMessage) (any, error) {
	if raw, ok := params["pushNotification"]; ok && string(raw) != "null" {
		return nil, &wire.Error{Code: wire.CodePushNotSupported, Field: "params.pushNotification",
			Message: "params.pushNotification: the pre-0.2 dialect takes no push notifications here; tasks/send answers when the task finishes, and tasks/get reads it later (or send message/send at the agent's base URL with configuration.pushNotificationConfig)"}
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
			return nil, wire.LegacyInvalid("params.acceptedOutputModes", "got "+wire.LegacyShort(raw)+", expected an array of media types such as \"text/plain\"")
		}
	}
	sessionID, err := legacyOptionalID(params, "params.sessionId")
	if err != nil {
		return nil, err
	}
	rawMsg, ok := params["message"]
	if !ok || string(rawMsg) == "null" {
		return nil, wire.LegacyInvalid("params.message", "missing, expected the message to send {\"role\":\"user\",\"parts\":[{\"type\":\"text\",\"text\":...}]}")
	}
	m, meta, err := wire.DecodeLegacyMessage(rawMsg, "params.message")
	if err != nil {
		return nil, err
	}
	if !legacyHasContent(m) {
		return nil, wire.LegacyInvalid("params.message.parts", "no text and no data, expected at least one text part with text or one data part")
	}
	m.MessageID = clientID
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
			&mailbox.A2AOrigin{Version: wire.VersionLegacy, MessageID: clientID, ContextID: sessionID, Message: rawMsg})
		if err != nil {
			return nil, err
		}
	}
	tv, err := e.wait(ctx, agent, id, nil)
	if err != nil {
		return nil, err
	}
	out := legacyTask(tv, clientID)
	if !wire.Terminal(tv.State) && tv.StatusMessage == nil {
		// gmf's client reports a task that did not complete by its status
		// message; say why this one has not, and how to read it later.
		out["status"].(map[string]any)["message"] = "the task is " + tv.State + ": it did not finish within the blocking timeout (" +
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
func (e *Edge) legacyContinue(ctx context.Context, agent, id string, m wire.Message, raw json.RawMessage, clientID string) (string, error) {
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
		if t.Role == mailbox.RoleSender && t.A2A != nil && t.A2A.Version == wire.VersionLegacy && sameJSON(t.A2A.Message, raw) {
			return rec.Task.ID, nil
		}
	}
	_, _, err = e.answer(ctx, rec, replyContent(m), &mailbox.A2AOrigin{Version: wire.VersionLegacy, MessageID: clientID, ContextID: rec.Task.A2A.ContextID, Message: raw},
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
		if meta, err = wire.LegacyObject(raw, "params.metadata"); err != nil {
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
	if re, ok := err.(*wire.Error); ok && re.Code == wire.CodeTaskNotFound {
		return legacyTaskNotFound(id, agent)
	}
	return err
}

func legacyTaskNotFound(id, agent string) *wire.Error {
	return &wire.Error{Code: wire.CodeTaskNotFound, Field: "params.id",
		Message: "params.id: task " + strconv.Quote(id) + " not found for agent " + agent + ": it was never sent to this agent by this caller, or finished long ago and was forgotten"}
}

func legacyTaskID(agent, sender, clientID string) string {
	return uuid.NewSHA1(legacyNamespace, []byte(agent+"\x00"+sender+"\x00"+clientID)).String()
}

// legacyIDOf is the id a task has in this dialect: the id its tasks/send
// chose, or for a task sent another way its mailbox id.
func legacyIDOf(rec mailbox.TaskRecord) string {
	if o := rec.Task.A2A; o != nil && o.Version == wire.VersionLegacy {
		return o.MessageID
	}
	return rec.Task.ID
}

// legacyTask encodes a task as the dialect's clients parse it: status
// .message a string or null, artifacts' parts {type, text, data} with data
// an object or null, metadata always an object (carrying the mailbox's
// task id, which mailroom and the console name the task by).
func legacyTask(tv wire.TaskView, id string) map[string]any {
	var statusMsg any
	if tv.StatusMessage != nil {
		var texts []string
		for _, p := range tv.StatusMessage.Parts {
			if p.Kind == "text" {
				texts = append(texts, p.Text)
			}
		}
		statusMsg = strings.Join(texts, "\n")
	}
	artifacts := make([]map[string]any, 0, len(tv.Artifacts))
	for _, a := range tv.Artifacts {
		parts := make([]map[string]any, 0, len(a.Parts))
		for _, p := range a.Parts {
			switch p.Kind {
			case "text":
				parts = append(parts, map[string]any{"type": "text", "text": p.Text, "data": nil})
			case "data":
				parts = append(parts, map[string]any{"type": "data", "text": nil, "data": p.Data})
			}
		}
		artifacts = append(artifacts, map[string]any{"name": a.Name, "parts": parts})
	}
	mr := map[string]any{"task_id": tv.ID}
	if m, ok := tv.Metadata["mailroom"].(map[string]any); ok {
		for k, v := range m {
			mr[k] = v
		}
	}
	return map[string]any{
		"id":        id,
		"sessionId": tv.ContextID,
		"status":    map[string]any{"state": tv.State, "message": statusMsg, "timestamp": tv.Timestamp.Format(time.RFC3339Nano)},
		"artifacts": artifacts,
		"metadata":  map[string]any{"mailroom": mr},
	}
}

func legacyHasContent(m wire.Message) bool {
	for _, p := range m.Parts {
		if p.Kind == "data" || strings.TrimSpace(p.Text) != "" {
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
		return "", wire.LegacyInvalid(field, "missing, expected the task's id (tasks/send: one the client chose, such as a UUID)")
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
		return "", wire.LegacyInvalid(field, "got "+wire.LegacyShort(raw)+", expected a string")
	}
	switch {
	case strings.TrimSpace(s) == "":
		return "", wire.LegacyInvalid(field, "got "+strconv.Quote(s)+", expected a non-blank id")
	case len(s) > mailbox.MaxA2AIDBytes:
		return "", wire.LegacyInvalid(field, "got "+strconv.Itoa(len(s))+" bytes, expected at most "+strconv.Itoa(mailbox.MaxA2AIDBytes))
	case !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return "", wire.LegacyInvalid(field, "got "+strconv.Quote(s)+", expected an id without control characters")
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
		return 0, wire.LegacyInvalid(field, "got "+wire.LegacyShort(raw)+", expected a non-negative integer or null")
	}
	return n, nil
}

// lastKey is the key a field's path ends in: "id" of "params.id".
func lastKey(field string) string { return field[strings.LastIndexByte(field, '.')+1:] }

// legacyKnown refuses a field the dialect does not have, naming it.
func legacyKnown(fields map[string]json.RawMessage, field string, known ...string) error {
	for k := range fields {
		found := false
		for _, n := range known {
			found = found || k == n
		}
		if !found {
			return wire.LegacyInvalid(field+"."+k, "unknown field; expected only "+strings.Join(known, ", "))
		}
	}
	return nil
}
