package mailbox

import (
	"errors"
	"fmt"
	"net/http"
)

// Error codes. They are part of the wire: every error body carries one.
const (
	CodeInvalid      = "invalid"
	CodeNotFound     = "not_found"
	CodeConflict     = "conflict"
	CodeUnauthorized = "unauthorized"
	CodeForbidden    = "forbidden"
	CodeTooLarge     = "too_large"
	CodeUnavailable  = "unavailable"
	CodeInternal     = "internal"
	// CodeMethodNotAllowed answers a known path called with the wrong method.
	CodeMethodNotAllowed = "method_not_allowed"
)

// The retry hint of a shared mailbox's 503. An instance that cannot stand
// behind an answer because the lead changed (it lost the lead, a forwarded
// write reached an instance that no longer leads, an election is under
// way) answers 503 unavailable with HeaderRetry: RetryLeaderChanged and
// Retry-After: 1: nothing was changed, so the request may be sent again
// as it was. A 503 without it (a full disk, a forward whose outcome is
// unknown) is not retried automatically.
const (
	HeaderRetry        = "Mailroom-Retry"
	RetryLeaderChanged = "leader-changed"
)

// codeStatus is the one table mapping error codes to HTTP statuses; the
// server uses it to answer and the client uses it to recognise answers.
var codeStatus = map[string]int{
	CodeInvalid:      http.StatusBadRequest,
	CodeNotFound:     http.StatusNotFound,
	CodeConflict:     http.StatusConflict,
	CodeUnauthorized: http.StatusUnauthorized,
	CodeForbidden:    http.StatusForbidden,
	CodeTooLarge:     http.StatusRequestEntityTooLarge,
	CodeUnavailable:  http.StatusServiceUnavailable,
	CodeInternal:     http.StatusInternalServerError,

	CodeMethodNotAllowed: http.StatusMethodNotAllowed,
}

// HTTPStatus returns the HTTP status for an error code (500 for unknown codes).
func HTTPStatus(code string) int {
	if s, ok := codeStatus[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// CodeForStatus returns the error code that HTTPStatus maps to status, or
// CodeInternal when no code does.
func CodeForStatus(status int) string {
	for c, s := range codeStatus {
		if s == status {
			return c
		}
	}
	return CodeInternal
}

// ErrorDetails carries the machine-readable facts behind an error. Only the
// fields that apply are set.
type ErrorDetails struct {
	Field string `json:"field,omitempty"`
	// Lease-guard conflicts: which lease the caller saw and which is current.
	ExpectedLeaseID string `json:"expected_lease_id,omitempty"`
	ActualLeaseID   string `json:"actual_lease_id,omitempty"`
	LeasedTo        string `json:"leased_to,omitempty"`
	LeasedAtMs      int64  `json:"leased_at_ms,omitempty"`
	// Queued-task guard conflicts (command.queued_for): the recipient the
	// caller saw and the one the task is queued for now.
	ExpectedRecipient string `json:"expected_recipient,omitempty"`
	ActualRecipient   string `json:"actual_recipient,omitempty"`
	Attempt           int    `json:"attempt,omitempty"`
	// TaskState is the task's current state when a request did not fit it.
	TaskState string `json:"task_state,omitempty"`
	// Capability is the capability a forbidden request lacked.
	Capability string `json:"capability,omitempty"`
	// Retry, on an unavailable answer, says the request changed nothing
	// and may be sent again as it is, and why: "leader-changed".
	Retry string `json:"retry,omitempty"`
}

// Error is the application error: a code, a message for people that names the
// field, the value and what was expected, and optional details. Anything that
// is not an *Error is reported to callers as internal and logged, never shown raw.
type Error struct {
	Code    string        `json:"code"`
	Message string        `json:"message"`
	Details *ErrorDetails `json:"details,omitempty"`
	// private, on a lease conflict, is the message for a caller who may
	// not learn the current lease (see HideLease).
	private string
}

// HideLease returns err as a caller who neither holds the current lease it
// names nor may repair it must see it: without the current lease id, its
// holder and when it was taken, which are what a caller would need to post
// a result under someone else's lease. Anything else is returned as it is.
func HideLease(err error, viewer string) error {
	var e *Error
	if !errors.As(err, &e) || e.Details == nil || e.Details.ActualLeaseID == "" || e.Details.LeasedTo == viewer {
		return err
	}
	d := *e.Details
	d.ActualLeaseID, d.LeasedTo, d.LeasedAtMs = "", "", 0
	msg := e.private
	if msg == "" {
		msg = e.Message
	}
	return &Error{Code: e.Code, Message: msg, Details: &d}
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Is makes errors.Is(err, mailbox.ErrConflict) true for every conflict.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Message == "" && t.Code == e.Code
}

// Sentinels for errors.Is; compare codes only.
var (
	ErrInvalid      = &Error{Code: CodeInvalid}
	ErrNotFound     = &Error{Code: CodeNotFound}
	ErrConflict     = &Error{Code: CodeConflict}
	ErrUnauthorized = &Error{Code: CodeUnauthorized}
	ErrTooLarge     = &Error{Code: CodeTooLarge}
	ErrUnavailable  = &Error{Code: CodeUnavailable}
)

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Invalidf returns an invalid-input error about field, whose message is
// the field's name, ": " and the formatted text (what was got, what was
// expected), so a message always starts with the field it is about.
func Invalidf(field, format string, args ...any) *Error {
	msg := fmt.Sprintf(format, args...)
	if field != "" {
		msg = field + ": " + msg
	}
	return Invalid(field, msg)
}

// InvalidBodyf returns an invalid-input error about the request body as a
// whole ("request body: " and the formatted text), naming field, if any,
// as the part it is about.
func InvalidBodyf(field, format string, args ...any) *Error {
	return Invalid(field, "request body: "+fmt.Sprintf(format, args...))
}

// Invalid returns an invalid-input error about field with message as it
// is: for a message made elsewhere that names its field already (a
// decoder's error, a config key's refusal).
func Invalid(field, message string) *Error {
	return &Error{Code: CodeInvalid, Message: message, Details: &ErrorDetails{Field: field}}
}

// ErrorCode returns the code of an application error, or CodeInternal.
func ErrorCode(err error) string {
	var e *Error
	if err == nil {
		return ""
	} else if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// ErrorMessage returns the message of an application error, or a generic
// message for anything else so internal details never leak to callers.
func ErrorMessage(err error) string {
	var e *Error
	if err == nil {
		return ""
	} else if errors.As(err, &e) {
		return e.Message
	}
	return "internal error; see the daemon log"
}
