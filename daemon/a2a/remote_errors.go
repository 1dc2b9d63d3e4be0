package a2a

import (
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"
)

// How the outbound client reports what went wrong, so the dispatcher can
// tell apart a remote it could not reach (try again later), a remote that
// said no (do not resend the same thing), and a remote whose answer made
// no sense (a bug on one side; show it to the operator).

// RemoteErrorKind says which of those an error is: unreachable
// (transport), refused, malformed, or unusable.
type RemoteErrorKind string

// Kinds of RemoteError.
const (
	// RemoteTransport: the remote could not be reached or did not answer
	// (connection refused, a timeout, a cut stream, an HTTP 5xx or 429).
	// A request that failed this way may or may not have reached the
	// remote: after a send, the remote may hold the task.
	RemoteTransport RemoteErrorKind = "transport"
	// RemoteRefused: the remote answered with a protocol error (a
	// JSON-RPC error, an HTTP+JSON error status): it did not do what was
	// asked, and asking again the same way gets the same answer.
	RemoteRefused RemoteErrorKind = "refused"
	// RemoteMalformed: the remote answered something that does not parse
	// as the protocol it claims (a card, a task, an event).
	RemoteMalformed RemoteErrorKind = "malformed"
	// RemoteUnusable: the remote's card offers no binding this client
	// speaks (gRPC only, say), or the configuration asks for one it does
	// not have.
	RemoteUnusable RemoteErrorKind = "unusable"
)

// Sentinels for errors.Is. A *RemoteError matches the one its code means.
var (
	// ErrRemoteTaskNotFound: the remote does not know the task (JSON-RPC
	// -32001, HTTP+JSON reason TASK_NOT_FOUND). For a task it had
	// accepted, the remote has lost it (an in-memory task store that
	// restarted).
	ErrRemoteTaskNotFound = errors.New("the remote does not know this task")
	// ErrRemoteUnsupported: the remote does not support the operation
	// (-32004 UnsupportedOperation, -32601 method not found): a legacy
	// server asked for tasks/get, a server that does not continue tasks.
	ErrRemoteUnsupported = errors.New("the remote does not support this operation")
	// ErrRemoteNotCancelable: the task is past canceling (-32002).
	ErrRemoteNotCancelable = errors.New("the remote task cannot be canceled")
	// ErrRemoteInvalidParams: the remote refused the request as invalid
	// (-32602, -32600): the message this client built does not suit it.
	ErrRemoteInvalidParams = errors.New("the remote refused the request as invalid")
)

// RemoteError is every error the outbound client returns (but
// OutboundMessageFor's, which are the daemon's own). A call the caller's
// context ended is a transport error wrapping ctx.Err(), so
// errors.Is(err, context.Canceled) tells it from the remote's failure.
// Its text never holds a credential: excerpts of what the remote sent are
// bounded and scrubbed of the configured secrets.
type RemoteError struct {
	Kind RemoteErrorKind
	// Op is what was asked: "resolve", "message/send", "GetTask",
	// "POST message:send", ...
	Op string
	// Code is the JSON-RPC error code the remote answered with (the
	// HTTP+JSON binding's reason mapped to it), 0 when there is none.
	Code int
	// HTTPStatus is the answer's HTTP status, 0 when none came.
	HTTPStatus int
	// Message says what happened, in words for the operator.
	Message string
	cause   error
}

// Error says what was asked, the kind, the code, and what happened.
func (e *RemoteError) Error() string {
	var b strings.Builder
	b.WriteString("remote ")
	b.WriteString(e.Op)
	b.WriteString(": ")
	b.WriteString(string(e.Kind))
	if e.Code != 0 {
		b.WriteString(" (code " + strconv.Itoa(e.Code) + ")")
	} else if e.HTTPStatus != 0 {
		b.WriteString(" (HTTP " + strconv.Itoa(e.HTTPStatus) + ")")
	}
	b.WriteString(": ")
	b.WriteString(e.Message)
	return b.String()
}

// Unwrap returns the cause of a transport error (a *url.Error, a
// context's error), for errors.Is(err, context.DeadlineExceeded).
func (e *RemoteError) Unwrap() error { return e.cause }

// Is matches the sentinel the error's code means.
func (e *RemoteError) Is(target error) bool {
	switch target {
	case ErrRemoteTaskNotFound:
		return e.Code == codeTaskNotFound
	case ErrRemoteUnsupported:
		return e.Code == codeUnsupported || e.Code == codeMethodNotFound
	case ErrRemoteNotCancelable:
		return e.Code == codeTaskNotCancelable
	case ErrRemoteInvalidParams:
		return e.Code == codeInvalidParams || e.Code == codeInvalidRequest
	}
	return false
}

// Retryable reports whether trying again later may succeed: the remote
// was unreachable or failing, not refusing.
func (e *RemoteError) Retryable() bool { return e.Kind == RemoteTransport }

// RemoteRetryable reports whether err is a RemoteError worth trying again.
func RemoteRetryable(err error) bool {
	var re *RemoteError
	return errors.As(err, &re) && re.Retryable()
}

// RemoteMayHaveReceived reports whether a failed call may have reached
// the remote and been acted on: anything but a connection never made, or
// an answer saying the request was not taken (503, 429). A timeout, a
// connection broken before the answer, or a remote failing with a 5xx may
// all follow work the remote started.
func RemoteMayHaveReceived(err error) bool {
	var re *RemoteError
	if errors.As(err, &re) && (re.HTTPStatus == http.StatusServiceUnavailable || re.HTTPStatus == http.StatusTooManyRequests) {
		return false
	}
	var op *net.OpError
	return !errors.As(err, &op) || op.Op != "dial"
}

// excerptMax bounds how much of a remote's answer an error quotes.
const excerptMax = 200

// excerpt quotes the start of what a remote sent, bounded, on one line,
// with any configured secret replaced.
func (a RemoteAuth) excerpt(b []byte) string {
	s := string(b)
	if len(s) > excerptMax {
		s = s[:excerptMax]
		for !utf8.ValidString(s) && len(s) > 0 {
			s = s[:len(s)-1]
		}
		s += "..."
	}
	return strconv.Quote(a.scrub(s))
}

// scrub replaces the configured secrets in s: a remote that echoes a
// request back in its error must not put a token in the daemon's log.
func (a RemoteAuth) scrub(s string) string {
	for _, secret := range []string{a.Bearer, a.Value} {
		if len(secret) >= 4 {
			s = strings.ReplaceAll(s, secret, "[redacted]")
		}
	}
	return s
}
