package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mailroom/mailroom/internal/sse"
	"github.com/mailroom/mailroom/internal/strictjson"
	"github.com/mailroom/mailroom/mailbox"
)

// decodeBody reads one JSON object into v. what names the object for
// messages ("a task"). Every refusal says what was wrong and what was
// expected, so a caller can fix the request from the message alone.
func decodeBody(w http.ResponseWriter, r *http.Request, v any, what string) error {
	body, err := readBody(w, r, what)
	if err != nil {
		return err
	}
	return decodeJSON(body, v, what)
}

// readBody reads a request's body for decodeJSON: JSON by its
// Content-Type, within the body limit, not empty, and valid UTF-8.
func readBody(w http.ResponseWriter, r *http.Request, what string) ([]byte, error) {
	body, prob := sse.ReadBody(w, r, mailbox.MaxBodyBytes, jsonUTF8)
	if prob != nil {
		return nil, problem(prob, what)
	}
	return body, nil
}

// jsonUTF8 accepts application/json, in UTF-8 if it names a charset.
func jsonUTF8(mt string, params map[string]string) bool {
	cs, ok := params["charset"]
	return mt == "application/json" && (!ok || strings.EqualFold(cs, "utf-8"))
}

// problem puts a request the shared reader refused in the native routes'
// words; what names the body's object ("a task").
func problem(p *sse.Problem, what string) error {
	switch p.Kind {
	case sse.ContentType:
		return mailbox.Invalidf("Content-Type", "got %q, expected application/json (in UTF-8)", p.Value)
	case sse.TooLarge:
		return &mailbox.Error{Code: mailbox.CodeTooLarge,
			Message: fmt.Sprintf("request body: larger than the limit of %d bytes (1 MiB); send %s with less content", p.Limit, what)}
	case sse.Unreadable:
		return mailbox.Errorf(mailbox.CodeInvalid, "request body: could not be read: %v", p.Err)
	case sse.Empty:
		return mailbox.Errorf(mailbox.CodeInvalid, "request body: empty, expected a JSON object (%s)", what)
	case sse.BadUTF8:
		return mailbox.Errorf(mailbox.CodeInvalid, "request body: invalid UTF-8 at byte offset %d, expected UTF-8 JSON", p.Offset)
	case sse.BadLastEventID:
		return mailbox.Invalidf(p.Field, "got %q, expected the seq of the last event received (a non-negative integer)", p.Value)
	}
	return mailbox.Errorf(mailbox.CodeInvalid, "%v", p)
}

// decodeJSON decodes one JSON object, read and checked for UTF-8 already,
// into v: strictly, refusing what decodeBody says it refuses. A batch's
// items are decoded one by one with it, so one bad item refuses only
// itself.
func decodeJSON(body []byte, v any, what string) error {
	// encoding/json keeps the last of two equal keys, takes "Sender" as
	// sender and decodes values far deeper than any stored copy can be read
	// back; strictjson refuses all three, naming the field. Bytes that are
	// not JSON are left to the decoder, which says where.
	if err := strictjson.Check(body, reflect.TypeOf(v).Elem(), mailbox.MaxValueDepth); err != nil && !strictjson.IsSyntax(err) {
		e := err.(*strictjson.Error)
		return mailbox.Invalid(e.Path, e.Error())
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err, what)
	}
	if _, err := dec.Token(); err != io.EOF {
		return mailbox.Errorf(mailbox.CodeInvalid, "request body: unexpected data after the JSON object at byte offset %d; send exactly one object (%s)", dec.InputOffset(), what)
	}
	return nil
}

// jsonError rewrites encoding/json's errors, which speak of Go types and
// struct names, into messages about the request's fields.
func jsonError(err error, what string) error {
	if e, ok := errors.AsType[*json.SyntaxError](err); ok {
		return mailbox.Errorf(mailbox.CodeInvalid, "request body: invalid JSON at byte offset %d: %s", e.Offset, strings.TrimPrefix(e.Error(), "json: "))
	}
	if e, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		field := e.Field
		if field == "" {
			return mailbox.InvalidBodyf("", "got a JSON %s, expected a JSON object (%s)", e.Value, what)
		}
		return mailbox.Invalidf(field, "got a JSON %s, expected %s", e.Value, describeType(e.Type))
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return mailbox.Errorf(mailbox.CodeInvalid, "request body: the JSON ends early, expected a complete object (%s)", what)
	}
	// DisallowUnknownFields reports `json: unknown field "x"` with no type
	// to match, so the message is the only handle on it.
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		field, uerr := strconv.Unquote(name)
		if uerr != nil {
			field = name
		}
		return mailbox.InvalidBodyf(field, "unknown field %s in %s; check its spelling against the API reference", name, what)
	}
	return mailbox.Errorf(mailbox.CodeInvalid, "request body: %s, expected %s as a JSON object", strings.TrimPrefix(err.Error(), "json: "), what)
}

// describeType says in JSON terms what a Go field accepts.
func describeType(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "a JSON " + t.Kind().String()
}

// params are a request's query parameters, checked against the names its
// route accepts: a misspelt filter such as "recipent" must not silently
// turn a per-recipient lease into a global one.
type params url.Values

func parseParams(r *http.Request, allowed ...string) (params, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, mailbox.Errorf(mailbox.CodeInvalid, "query: %q is not a valid URL query: %v", r.URL.RawQuery, err)
	}
	for name, vs := range q {
		if !slices.Contains(allowed, name) {
			expect := "no query parameters"
			if len(allowed) > 0 {
				expect = "only " + strings.Join(allowed, ", ")
			}
			return nil, mailbox.Invalidf(name, "unknown query parameter, expected %s", expect)
		}
		if len(vs) > 1 {
			return nil, mailbox.Invalidf(name, "given %d times, expected once", len(vs))
		}
	}
	return params(q), nil
}

func (p params) get(name string) (string, bool) {
	vs, ok := p[name]
	if !ok {
		return "", false
	}
	return vs[0], true
}

// agent returns an agent-id parameter, "" when absent. Present but empty is
// refused: an empty shell variable must not mean "any agent". The service
// checks the id itself.
func (p params) agent(name string) (string, error) {
	v, ok := p.get(name)
	if ok && v == "" {
		return "", mailbox.Invalidf(name, "got \"\", expected an agent id such as planner@local; omit the parameter for any agent")
	}
	return v, nil
}

// limit returns the limit parameter, 0 (the service's default) when absent.
// The service checks its range.
func (p params) limit() (int, error) {
	v, ok := p.get("limit")
	if !ok {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, mailbox.Invalidf("limit", "got %q, expected an integer from 1 to %d", v, mailbox.MaxLimit)
	}
	return n, nil
}

// millis returns a duration parameter in milliseconds, nil when absent. The
// service checks its range.
func (p params) millis(name string) (*int64, error) {
	v, ok := p.get(name)
	if !ok {
		return nil, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil, mailbox.Invalidf(name, "got %q, expected milliseconds from 0 to %d (100 years)", v, mailbox.MaxDurationMs)
	}
	return &n, nil
}

// batch reads a long poll's max and wait_ms: max (1 when absent, and
// given says whether it was) and the wait (0 when absent). The service
// checks their ranges.
func (p params) batch(most int) (n int, given bool, wait time.Duration, err error) {
	n = 1
	if v, ok := p.get("max"); ok {
		if n, err = strconv.Atoi(v); err != nil || n < 1 || n > most {
			return 0, false, 0, mailbox.Invalidf("max", "got %q, expected an integer from 1 to %d (the daemon's batch_max)", v, most)
		}
		given = true
	}
	if v, ok := p.get("wait_ms"); ok {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, false, 0, mailbox.Invalidf("wait_ms", "got %q, expected milliseconds from 0 to %d (20 s)", v, mailbox.MaxWaitMs)
		}
		if ms < 0 || ms > mailbox.MaxWaitMs {
			return 0, false, 0, mailbox.Invalidf("wait_ms", "got %d, expected 0 to %d (20 s)", ms, mailbox.MaxWaitMs)
		}
		wait = time.Duration(ms) * time.Millisecond
	}
	return n, given, wait, nil
}

// noBody refuses a request body on a route that reads none, so that a
// parameter put in the body instead of the query is not silently ignored
// (a lease "for planner@local" would lease for every agent). where says
// where the route's parameters belong.
func noBody(r *http.Request, where string) error {
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	const most = 4096 // of white space, which some clients send for "nothing"
	body, err := io.ReadAll(io.LimitReader(r.Body, most+1))
	if err != nil {
		return mailbox.Errorf(mailbox.CodeInvalid, "request body: could not be read: %v", err)
	}
	if len(body) > most || len(bytes.TrimSpace(body)) > 0 {
		return mailbox.Errorf(mailbox.CodeInvalid, "request body: %s %s takes no body; %s", r.Method, r.URL.Path, where)
	}
	return nil
}
