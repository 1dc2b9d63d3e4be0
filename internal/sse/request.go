package sse

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Kind says what was wrong with a request.
type Kind int

const (
	// ContentType: the Content-Type is not one the edge accepts (Value).
	ContentType Kind = iota + 1
	// TooLarge: the body is over Limit bytes.
	TooLarge
	// Unreadable: the body could not be read (Err).
	Unreadable
	// Empty: the body is empty or only white space.
	Empty
	// BadUTF8: the body is not UTF-8; it stops being so at byte Offset.
	BadUTF8
	// BadLastEventID: the resume point named Field is not a seq (Value).
	BadLastEventID
)

// Problem is a refused request, for the edge to put in its own words.
type Problem struct {
	Kind   Kind
	Field  string // BadLastEventID: the header's or parameter's name
	Value  string // ContentType, BadLastEventID: what was sent
	Limit  int64  // TooLarge
	Offset int    // BadUTF8
	Err    error  // Unreadable
}

func (p *Problem) Error() string {
	switch p.Kind {
	case ContentType:
		return fmt.Sprintf("Content-Type: got %q", p.Value)
	case TooLarge:
		return fmt.Sprintf("request body: larger than the limit of %d bytes", p.Limit)
	case Unreadable:
		return "request body: could not be read: " + p.Err.Error()
	case Empty:
		return "request body: empty"
	case BadUTF8:
		return fmt.Sprintf("request body: invalid UTF-8 at byte offset %d", p.Offset)
	case BadLastEventID:
		return fmt.Sprintf("%s: got %q, expected a seq", p.Field, p.Value)
	}
	return "bad request"
}

// ReadBody reads a request's body: its Content-Type, when it has one,
// passing accept (given the media type and its parameters), at most limit
// bytes, not empty, and valid UTF-8.
func ReadBody(w http.ResponseWriter, r *http.Request, limit int64, accept func(mediaType string, params map[string]string) bool) ([]byte, *Problem) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, params, err := mime.ParseMediaType(ct)
		if err != nil || !accept(mt, params) {
			return nil, &Problem{Kind: ContentType, Value: ct}
		}
	}
	body, err := readAll(http.MaxBytesReader(w, r.Body, limit), r.ContentLength, limit)
	if err != nil {
		if mbe, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, &Problem{Kind: TooLarge, Limit: mbe.Limit}
		}
		return nil, &Problem{Kind: Unreadable, Err: err}
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, &Problem{Kind: Empty}
	}
	// encoding/json would quietly turn invalid UTF-8 into U+FFFD, storing
	// text the client never sent.
	if !utf8.Valid(body) {
		return nil, &Problem{Kind: BadUTF8, Offset: firstInvalidUTF8(body)}
	}
	return body, nil
}

// readAll reads r whole, into a buffer sized by the request's
// Content-Length when it gives one within the limit, rather than growing
// one from 512 bytes.
func readAll(r io.Reader, length, limit int64) ([]byte, error) {
	if length <= 0 || length > limit {
		return io.ReadAll(r)
	}
	buf := bytes.NewBuffer(make([]byte, 0, length+1)) // +1: ReadFrom reads until EOF
	_, err := buf.ReadFrom(r)
	return buf.Bytes(), err
}

// firstInvalidUTF8 finds where b stops being UTF-8; ReadBody asks only
// after utf8.Valid, much the faster, has said it does not.
func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// HeaderLastEventID is where EventSource and our client say where a
// stream resumes.
const HeaderLastEventID = "Last-Event-ID"

// LastEventID reads the Last-Event-ID header: nil when there is none (or
// it is blank).
func LastEventID(r *http.Request) (*uint64, *Problem) {
	v := r.Header.Get(HeaderLastEventID)
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	return ParseID(HeaderLastEventID, v)
}

// ParseID reads a resume point given as field (a header or a parameter):
// the seq of the last event received, a non-negative integer.
func ParseID(field, v string) (*uint64, *Problem) {
	v = strings.TrimSpace(v)
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return nil, &Problem{Kind: BadLastEventID, Field: field, Value: v}
	}
	return &n, nil
}
