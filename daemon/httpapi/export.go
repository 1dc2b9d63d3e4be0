package httpapi

import (
	"net/http"
	"net/url"
)

// The native routes' request reading, for the other dialects served beside
// them (daemon/covenant): the same strictness, and each dialect answers the
// *mailbox.Error these return in its own error shape.

// DecodeBody reads one JSON object into v as the native routes read
// theirs: JSON by its Content-Type, at most 1 MiB, UTF-8, no duplicate
// keys or keys in another case, no unknown fields, one object only. what
// names the object in messages ("a task").
func DecodeBody(w http.ResponseWriter, r *http.Request, v any, what string) error {
	return decodeBody(w, r, v, what)
}

// Query returns r's query parameters, refusing a name not in allowed and a
// name given twice.
func Query(r *http.Request, allowed ...string) (url.Values, error) {
	p, err := parseParams(r, allowed...)
	return url.Values(p), err
}

// NoBody refuses a body on a route that reads none; where says where the
// route's parameters belong.
func NoBody(r *http.Request, where string) error { return noBody(r, where) }
