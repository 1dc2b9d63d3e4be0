package a2a

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/mailroom/mailroom/internal/served"
	"github.com/mailroom/mailroom/mailbox"
)

// JSON-RPC error codes: the standard ones and A2A's own.
const (
	codeParse             = -32700
	codeInvalidRequest    = -32600
	codeMethodNotFound    = -32601
	codeInvalidParams     = -32602
	codeInternal          = -32603
	codeTaskNotFound      = -32001
	codeTaskNotCancelable = -32002
	codePushNotSupported  = -32003
	codeUnsupported       = -32004
	codeContentType       = -32005
	codeVersion           = -32009
)

// rpcError is an A2A error: a JSON-RPC code and a message that names the
// problem. status, when set, is the HTTP status it travels with (an
// authentication failure is a 401 whatever the binding).
type rpcError struct {
	code   int
	msg    string
	field  string
	status int
}

func (e *rpcError) Error() string { return e.msg }

// rpcErrorFrom turns any error into an A2A error. The mailbox's own
// errors keep their message; anything else is an internal error whose
// text is not shown.
func rpcErrorFrom(err error, _ string) *rpcError {
	var re *rpcError
	if errors.As(err, &re) {
		return re
	}
	var me *mailbox.Error
	if !errors.As(err, &me) {
		return &rpcError{code: codeInternal, msg: "internal error; the daemon's log has the details", status: http.StatusInternalServerError}
	}
	e := &rpcError{msg: me.Message, status: mailbox.HTTPStatus(me.Code)}
	if me.Details != nil {
		e.field = me.Details.Field
	}
	switch me.Code {
	case mailbox.CodeInvalid:
		e.code, e.status = codeInvalidParams, 0
	case mailbox.CodeNotFound:
		e.code = codeInvalidRequest
	case mailbox.CodeConflict:
		e.code, e.status = codeInvalidRequest, 0
	case mailbox.CodeUnavailable, mailbox.CodeInternal:
		e.code = codeInternal
	default: // unauthorized, forbidden, too large, method not allowed
		e.code = codeInvalidRequest
	}
	return e
}

// writeRPCError answers a JSON-RPC request of version v with an error. id
// is the request's id as it came (nil: null).
func writeRPCError(w http.ResponseWriter, r *http.Request, v string, id json.RawMessage, e *rpcError) {
	if id == nil {
		id = json.RawMessage("null")
	}
	served.RPCError(w, e.code) // /metrics: the JSON-RPC error answered
	body := obj{"jsonrpc": "2.0", "id": id, "error": rpcErrorBody(v, e)}
	status := e.status
	if status == 0 {
		status = http.StatusOK
	}
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="mailroom"`)
	}
	writeAnswer(w, r, status, body)
}

// rpcErrorBody is the JSON-RPC error object of version v. In v0.3 data is
// an object or absent (a2a-go v0.3 fails on any other shape); in v1.0 it is
// an array of typed objects, as the spec says: a google.rpc.BadRequest
// naming the field of an invalid request, a google.rpc.ErrorInfo with the
// reason of an A2A error.
func rpcErrorBody(v string, e *rpcError) obj {
	b := obj{"code": e.code, "message": e.msg}
	if v != v10 {
		if e.field != "" {
			b["data"] = obj{"field": e.field}
		}
		return b
	}
	var details []obj
	if e.field != "" {
		details = append(details, obj{"@type": "type.googleapis.com/google.rpc.BadRequest",
			"fieldViolations": []obj{{"field": e.field, "description": e.msg}}})
	}
	if e.code >= codeVersion && e.code <= codeTaskNotFound {
		meta := obj{}
		if e.field != "" {
			meta["field"] = e.field
		}
		details = append(details, obj{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
			"reason": restReasons[e.code].reason, "domain": "a2a-protocol.org", "metadata": meta})
	}
	if details != nil {
		b["data"] = details
	}
	return b
}

// REST errors: the google.rpc.Status shape, with an ErrorInfo whose reason
// the v1.0 SDKs map to their typed errors.

var restReasons = map[int]struct {
	status int
	grpc   string
	reason string
}{
	codeParse:             {http.StatusBadRequest, "INVALID_ARGUMENT", "PARSE_ERROR"},
	codeInvalidRequest:    {http.StatusBadRequest, "INVALID_ARGUMENT", "INVALID_REQUEST"},
	codeMethodNotFound:    {http.StatusNotFound, "NOT_FOUND", "METHOD_NOT_FOUND"},
	codeInvalidParams:     {http.StatusBadRequest, "INVALID_ARGUMENT", "INVALID_PARAMS"},
	codeInternal:          {http.StatusInternalServerError, "INTERNAL", "INTERNAL_ERROR"},
	codeTaskNotFound:      {http.StatusNotFound, "NOT_FOUND", "TASK_NOT_FOUND"},
	codeTaskNotCancelable: {http.StatusBadRequest, "FAILED_PRECONDITION", "TASK_NOT_CANCELABLE"}, // spec 5.4: 400, not 409
	codePushNotSupported:  {http.StatusBadRequest, "UNIMPLEMENTED", "PUSH_NOTIFICATION_NOT_SUPPORTED"},
	codeUnsupported:       {http.StatusBadRequest, "UNIMPLEMENTED", "UNSUPPORTED_OPERATION"},
	codeContentType:       {http.StatusUnsupportedMediaType, "INVALID_ARGUMENT", "CONTENT_TYPE_NOT_SUPPORTED"},
	codeVersion:           {http.StatusBadRequest, "UNIMPLEMENTED", "VERSION_NOT_SUPPORTED"},
}

// authReasons are the ErrorInfo reasons of a refused token (401) and a
// refused right (403), whatever the error's code: the reasons a2a-go v2's
// server gives them, which its client maps to its typed Unauthenticated
// and Unauthorized errors.
var authReasons = map[int]string{http.StatusUnauthorized: "UNAUTHENTICATED", http.StatusForbidden: "UNAUTHORIZED"}

// grpcStatus names the google.rpc.Code of every status an error travels
// with; a status missing here would be answered as a 500.
var grpcStatus = map[int]string{
	http.StatusBadRequest:            "INVALID_ARGUMENT",
	http.StatusUnsupportedMediaType:  "INVALID_ARGUMENT",
	http.StatusUnauthorized:          "UNAUTHENTICATED",
	http.StatusForbidden:             "PERMISSION_DENIED",
	http.StatusNotFound:              "NOT_FOUND",
	http.StatusMethodNotAllowed:      "UNIMPLEMENTED",
	http.StatusConflict:              "FAILED_PRECONDITION",
	http.StatusRequestEntityTooLarge: "INVALID_ARGUMENT",
	http.StatusServiceUnavailable:    "UNAVAILABLE",
	http.StatusInternalServerError:   "INTERNAL",
}

// writeRESTError answers an HTTP+JSON request (or one outside any
// binding) with an error, in the JSON media type the request accepts
// (answerType).
func writeRESTError(w http.ResponseWriter, r *http.Request, err error) {
	status, body := restError(rpcErrorFrom(err, v10))
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="mailroom"`)
	}
	writeAnswer(w, r, status, body)
}

// restError is an error's HTTP status and google.rpc.Status body.
func restError(e *rpcError) (int, obj) {
	r := restReasons[e.code]
	status, gs := r.status, r.grpc
	if e.status != 0 {
		// A status the error travels with (401, 403, 413, 503, ...)
		// says more than the code's usual one.
		status, gs = e.status, grpcStatus[e.status]
	}
	switch {
	case status == 0:
		status, gs = http.StatusInternalServerError, "INTERNAL"
	case gs == "" && status < 500:
		// A refusal keeps its status whatever it is: only the daemon's
		// own failure may be a 5xx.
		gs = "INVALID_ARGUMENT"
	case gs == "":
		gs = "INTERNAL"
	}
	meta := obj{}
	if e.field != "" {
		meta["field"] = e.field
	}
	reason := r.reason
	if ar, ok := authReasons[status]; ok {
		reason = ar
	}
	info := obj{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason, "domain": "a2a-protocol.org", "metadata": meta}
	return status, obj{"error": obj{"code": status, "status": gs, "message": e.msg, "details": []obj{info}}}
}

func writeJSONAs(w http.ResponseWriter, status int, ctype string, v any) {
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Cache-Control", "no-store")
	h.Add("Vary", "Authorization") // what a token may see: never cached for another
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}
