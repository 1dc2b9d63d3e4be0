package remote

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mailroom/mailroom/daemon/a2a/wire"
)

// How the outbound client reports what went wrong, so the dispatcher can
// tell apart a remote it could not reach (try again later), a remote that
// said no (do not resend the same thing), and a remote whose answer made
// no sense (a bug on one side; show it to the operator).

// ErrorKind says which of those an error is: unreachable
// (transport), refused, malformed, or unusable.
type ErrorKind string

// Kinds of Error.
const (
	// RemoteTransport: the remote could not be reached or did not answer
	// (connection refused, a timeout, a cut stream, an HTTP 5xx or 429).
	// A request that failed this way may or may not have reached the
	// remote: after a send, the remote may hold the task.
	Transport ErrorKind = "transport"
	// RemoteRefused: the remote answered with a protocol error (a
	// JSON-RPC error, an HTTP+JSON error status): it did not do what was
	// asked, and asking again the same way gets the same answer.
	Refused ErrorKind = "refused"
	// RemoteMalformed: the remote answered something that does not parse
	// as the protocol it claims (a card, a task, an event).
	Malformed ErrorKind = "malformed"
	// RemoteUnusable: the remote's card offers no binding this client
	// speaks (gRPC only, say), or the configuration asks for one it does
	// not have.
	Unusable ErrorKind = "unusable"
)

// Sentinels for errors.Is. A *Error matches the one its code means.
var (
	// ErrTaskNotFound: the remote does not know the task (JSON-RPC
	// -32001, HTTP+JSON reason TASK_NOT_FOUND). For a task it had
	// accepted, the remote has lost it (an in-memory task store that
	// restarted).
	ErrTaskNotFound = errors.New("the remote does not know this task")
	// ErrUnsupported: the remote does not support the operation
	// (-32004 UnsupportedOperation, -32601 method not found): a legacy
	// server asked for tasks/get, a server that does not continue tasks.
	ErrUnsupported = errors.New("the remote does not support this operation")
	// ErrNotCancelable: the task is past canceling (-32002).
	ErrNotCancelable = errors.New("the remote task cannot be canceled")
	// ErrInvalidParams: the remote refused the request as invalid
	// (-32602, -32600): the message this client built does not suit it.
	ErrInvalidParams = errors.New("the remote refused the request as invalid")
)

// Error is every error the outbound client returns (but
// MessageFor's, which are the daemon's own). A call the caller's
// context ended is a transport error wrapping ctx.Err(), so
// errors.Is(err, context.Canceled) tells it from the remote's failure.
// Its text never holds a credential: excerpts of what the remote sent are
// bounded and scrubbed of the configured secrets.
type Error struct {
	Kind ErrorKind
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
func (e *Error) Error() string {
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
func (e *Error) Unwrap() error { return e.cause }

// Is matches the sentinel the error's code means.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrTaskNotFound:
		return e.Code == wire.CodeTaskNotFound
	case ErrUnsupported:
		return e.Code == wire.CodeUnsupported || e.Code == wire.CodeMethodNotFound
	case ErrNotCancelable:
		return e.Code == wire.CodeTaskNotCancelable
	case ErrInvalidParams:
		return e.Code == wire.CodeInvalidParams || e.Code == wire.CodeInvalidRequest
	}
	return false
}

// Retryable reports whether trying again later may succeed: the remote
// was unreachable or failing, not refusing.
func (e *Error) Retryable() bool { return e.Kind == Transport }

// Retryable reports whether err is a Error worth trying again.
func Retryable(err error) bool {
	var re *Error
	return errors.As(err, &re) && re.Retryable()
}

// ErrNotSent is matched (errors.Is) by the error of a request that was
// never sent: a transport that could not get the OAuth token it goes
// with, say.
var ErrNotSent = errors.New("the request was not sent")

// MayHaveReceived reports whether a failed call may have reached
// the remote and been acted on: anything but a connection never made, a
// TLS handshake either side refused (the request is never read), a
// request never sent (ErrNotSent), or an answer saying the request was
// not taken (503, 429). A timeout, a connection broken before the answer,
// or a remote failing with a 5xx may all follow work the remote started.
func MayHaveReceived(err error) bool {
	var re *Error
	if errors.As(err, &re) && (re.HTTPStatus == http.StatusServiceUnavailable || re.HTTPStatus == http.StatusTooManyRequests) {
		return false
	}
	if errors.Is(err, ErrNotSent) || handshakeRefused(err) {
		return false
	}
	var op *net.OpError
	return !errors.As(err, &op) || op.Op != "dial"
}

// handshakeRefused reports a TLS handshake that failed: this side refused
// the remote's certificate, or the remote ended the handshake with an
// alert (crypto/tls returns it as a *net.OpError "remote error"; over TLS
// 1.3 a refused client certificate arrives after the request was written,
// but the remote's TLS refused it before anything read it).
func handshakeRefused(err error) bool {
	if _, ok := errors.AsType[*tls.CertificateVerificationError](err); ok {
		return true
	}
	if _, ok := errors.AsType[x509.UnknownAuthorityError](err); ok {
		return true
	}
	if _, ok := errors.AsType[x509.HostnameError](err); ok {
		return true
	}
	if _, ok := errors.AsType[x509.CertificateInvalidError](err); ok {
		return true
	}
	op, ok := errors.AsType[*net.OpError](err)
	return ok && op.Op == "remote error" && op.Err != nil && strings.HasPrefix(op.Err.Error(), "tls: ")
}

// excerptMax bounds how much of a remote's answer an error quotes.
const excerptMax = 200

// excerpt quotes the start of what a remote sent, bounded, on one line,
// with any configured secret replaced.
func (a Auth) excerpt(b []byte) string {
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
func (a Auth) scrub(s string) string {
	for _, secret := range []string{a.Bearer, a.Value} {
		if len(secret) >= 4 {
			s = strings.ReplaceAll(s, secret, "[redacted]")
		}
	}
	return s
}
