package wire

import "net/http"

// A2A's errors as they travel: the JSON-RPC codes, the standard ones and
// A2A's own, and for each code the HTTP status, google.rpc.Code and
// ErrorInfo reason the HTTP+JSON binding spells it with. The edge answers
// with them; the client reads a remote's answer back into them.

// JSON-RPC error codes: the standard ones and A2A's own.
const (
	CodeParse             = -32700
	CodeInvalidRequest    = -32600
	CodeMethodNotFound    = -32601
	CodeInvalidParams     = -32602
	CodeInternal          = -32603
	CodeTaskNotFound      = -32001
	CodeTaskNotCancelable = -32002
	CodePushNotSupported  = -32003
	CodeUnsupported       = -32004
	CodeContentType       = -32005
	CodeVersion           = -32009
)

// Error is an A2A error: a JSON-RPC code and a message that names the
// problem. status, when set, is the HTTP status it travels with (an
// authentication failure is a 401 whatever the binding).
type Error struct {
	Code    int
	Message string
	Field   string
	Status  int
}

func (e *Error) Error() string { return e.Message }

// REST errors: the google.rpc.Status shape, with an ErrorInfo whose reason
// the v1.0 SDKs map to their typed errors.

// RESTReason is how the HTTP+JSON binding spells an error code.
type RESTReason struct {
	Status int
	GRPC   string
	Reason string
}

var RESTReasons = map[int]RESTReason{
	CodeParse:             {http.StatusBadRequest, "INVALID_ARGUMENT", "PARSE_ERROR"},
	CodeInvalidRequest:    {http.StatusBadRequest, "INVALID_ARGUMENT", "INVALID_REQUEST"},
	CodeMethodNotFound:    {http.StatusNotFound, "NOT_FOUND", "METHOD_NOT_FOUND"},
	CodeInvalidParams:     {http.StatusBadRequest, "INVALID_ARGUMENT", "INVALID_PARAMS"},
	CodeInternal:          {http.StatusInternalServerError, "INTERNAL", "INTERNAL_ERROR"},
	CodeTaskNotFound:      {http.StatusNotFound, "NOT_FOUND", "TASK_NOT_FOUND"},
	CodeTaskNotCancelable: {http.StatusBadRequest, "FAILED_PRECONDITION", "TASK_NOT_CANCELABLE"}, // spec 5.4: 400, not 409
	CodePushNotSupported:  {http.StatusBadRequest, "UNIMPLEMENTED", "PUSH_NOTIFICATION_NOT_SUPPORTED"},
	CodeUnsupported:       {http.StatusBadRequest, "UNIMPLEMENTED", "UNSUPPORTED_OPERATION"},
	CodeContentType:       {http.StatusUnsupportedMediaType, "INVALID_ARGUMENT", "CONTENT_TYPE_NOT_SUPPORTED"},
	CodeVersion:           {http.StatusBadRequest, "UNIMPLEMENTED", "VERSION_NOT_SUPPORTED"},
}

// Content types of answers. A JSON answer (a success or an error, in any
// binding: JSON-RPC v1.0 and v0.3, HTTP+JSON, the legacy dialect) is one
// of the two JSON media types A2A speaks, whichever the request accepts
// (answerType); streams are text/event-stream, the card application/json.
const (
	ContentTypeJSON = "application/json"
	ContentTypeA2A  = "application/a2a+json"
)
