package a2a

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/mailroom/mailroom/internal/served"
	"github.com/mailroom/mailroom/mailbox"

	"github.com/mailroom/mailroom/daemon/a2a/wire"
)

// rpcErrorFrom turns any error into an A2A error. The mailbox's own
// errors keep their message; anything else is an internal error whose
// text is not shown.
func rpcErrorFrom(err error, _ string) *wire.Error {
	var re *wire.Error
	if errors.As(err, &re) {
		return re
	}
	var me *mailbox.Error
	if !errors.As(err, &me) {
		return &wire.Error{Code: wire.CodeInternal, Message: "internal error; the daemon's log has the details", Status: http.StatusInternalServerError}
	}
	e := &wire.Error{Message: me.Message, Status: mailbox.HTTPStatus(me.Code)}
	if me.Details != nil {
		e.Field = me.Details.Field
	}
	switch me.Code {
	case mailbox.CodeInvalid:
		e.Code, e.Status = wire.CodeInvalidParams, 0
	case mailbox.CodeNotFound:
		e.Code = wire.CodeInvalidRequest
	case mailbox.CodeConflict:
		e.Code, e.Status = wire.CodeInvalidRequest, 0
	case mailbox.CodeUnavailable, mailbox.CodeInternal:
		e.Code = wire.CodeInternal
	default: // unauthorized, forbidden, too large, method not allowed
		e.Code = wire.CodeInvalidRequest
	}
	return e
}

// writeRPCError answers a JSON-RPC request of version v with an error. id
// is the request's id as it came (nil: null).
func writeRPCError(w http.ResponseWriter, r *http.Request, v string, id json.RawMessage, e *wire.Error) {
	if id == nil {
		id = json.RawMessage("null")
	}
	served.RPCError(w, e.Code) // /metrics: the JSON-RPC error answered
	body := obj{"jsonrpc": "2.0", "id": id, "error": rpcErrorBody(v, e)}
	status := e.Status
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
func rpcErrorBody(v string, e *wire.Error) obj {
	b := obj{"code": e.Code, "message": e.Message}
	if v != wire.V10 {
		if e.Field != "" {
			b["data"] = obj{"field": e.Field}
		}
		return b
	}
	var details []obj
	if e.Field != "" {
		details = append(details, obj{"@type": "type.googleapis.com/google.rpc.BadRequest",
			"fieldViolations": []obj{{"field": e.Field, "description": e.Message}}})
	}
	if e.Code >= wire.CodeVersion && e.Code <= wire.CodeTaskNotFound {
		meta := obj{}
		if e.Field != "" {
			meta["field"] = e.Field
		}
		details = append(details, obj{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
			"reason": wire.RESTReasons[e.Code].Reason, "domain": "a2a-protocol.org", "metadata": meta})
	}
	if details != nil {
		b["data"] = details
	}
	return b
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
	status, body := restError(rpcErrorFrom(err, wire.V10))
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="mailroom"`)
	}
	writeAnswer(w, r, status, body)
}

// restError is an error's HTTP status and google.rpc.Status body.
func restError(e *wire.Error) (int, obj) {
	r := wire.RESTReasons[e.Code]
	status, gs := r.Status, r.GRPC
	if e.Status != 0 {
		// A status the error travels with (401, 403, 413, 503, ...)
		// says more than the code's usual one.
		status, gs = e.Status, grpcStatus[e.Status]
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
	if e.Field != "" {
		meta["field"] = e.Field
	}
	reason := r.Reason
	if ar, ok := authReasons[status]; ok {
		reason = ar
	}
	info := obj{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason, "domain": "a2a-protocol.org", "metadata": meta}
	return status, obj{"error": obj{"code": status, "status": gs, "message": e.Message, "details": []obj{info}}}
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

// obj is a JSON object being written.
type obj = map[string]any
