package sse

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strconv"
)

// Reader reads an event stream as the WHATWG HTML standard interprets one
// (9.2.6, "Interpreting an event stream"): lines end in CRLF, LF or CR; a
// line starting with a colon is a comment; a field's value follows its
// colon, less one space; the data lines of a block are joined by "\n"; a
// blank line dispatches the block, unless it had no data; a stream that
// ends inside a block drops it. It is the one reader of the daemon and its
// tools (the A2A client following a remote, the bench, daemontest), beside
// the one writer; an event larger than the bound it is given is an error,
// so a peer cannot make it buffer without end.
//
// The event it returns is valid until the next call of Next: a reader
// that keeps up with a busy stream allocates nothing per event.
type Reader struct {
	rd  *bufio.Reader
	max int
	// afterCR: the last line ended in CR, so a LF that comes next ends
	// no line of its own.
	afterCR bool
	long    []byte // a line longer than the buffer, gathered
	data    []byte
	typ     []byte
	ev      Event
	lastID  string
	// OnComment, when set, is called with each comment line, less its
	// colon (" ping" of the heartbeat), valid during the call: a proxy
	// passes the heartbeats on.
	OnComment func(text []byte)
	// Keep, when more than 0, keeps only the first Keep bytes of an
	// event's data and of any line, reading the rest and dropping it
	// (Event.Cut says so) instead of refusing the event: for a reader
	// that needs only the head of large events, such as the bench's
	// subscribers, two hundred of which would each hold an opening
	// snapshot of many megabytes.
	Keep int
	cut  bool // the line read was cut at Keep
}

// Event is one dispatched event.
type Event struct {
	// Type is the block's event field, "" when it had none (the
	// standard's "message").
	Type string
	// ID is the block's id field, "" when it had none (LastID keeps the
	// stream's, as the standard does, for a reconnect).
	ID string
	// Data is the block's data lines joined by "\n".
	Data []byte
	// Cut: Data is the first Reader.Keep bytes of a longer event's.
	Cut bool
}

// TooLargeError says an event (its data, or one line) is larger than the
// reader's bound.
type TooLargeError struct{ Max int }

func (e *TooLargeError) Error() string {
	return "an event larger than " + strconv.Itoa(e.Max) + " bytes"
}

// NewReader reads the stream r, refusing an event larger than max bytes.
func NewReader(r io.Reader, max int) *Reader {
	return &Reader{rd: bufio.NewReaderSize(r, 64<<10), max: max}
}

// LastID is the stream's last event id: the id field of the last block
// that had one, dispatched or not, as a reconnect sends it in
// Last-Event-ID.
func (r *Reader) LastID() string { return r.lastID }

// Next returns the next event. At the end of the stream between blocks it
// returns io.EOF, inside one io.ErrUnexpectedEOF; an event past the bound
// is a *TooLargeError.
func (r *Reader) Next() (Event, error) {
	r.data, r.typ = r.data[:0], r.typ[:0]
	hasData, inBlock := false, false
	r.ev.ID, r.ev.Cut = "", false
	for {
		line, err := r.line()
		if err != nil {
			if errors.Is(err, io.EOF) && (inBlock || len(line) > 0) {
				err = io.ErrUnexpectedEOF
			}
			return Event{}, err
		}
		if len(line) == 0 {
			if hasData {
				return r.dispatch(), nil
			}
			r.data, r.typ, inBlock = r.data[:0], r.typ[:0], false
			r.ev.ID, r.ev.Cut = "", false
			continue
		}
		inBlock = true
		if line[0] == ':' {
			if r.OnComment != nil {
				r.OnComment(line[1:])
			}
			continue
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(name) {
		case "data":
			if hasData {
				r.data = append(r.data, '\n')
			}
			if r.Keep > 0 && (r.cut || len(r.data)+len(value) > r.Keep) {
				value, r.ev.Cut = value[:max(0, min(len(value), r.Keep-len(r.data)))], true
			}
			if len(r.data)+len(value) > r.max {
				return Event{}, &TooLargeError{Max: r.max}
			}
			r.data, hasData = append(r.data, value...), true
		case "event":
			r.typ = append(r.typ[:0], value...)
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				r.ev.ID = r.intern(r.ev.ID, value)
				r.lastID = r.ev.ID
			}
		}
	}
}

// dispatch makes the event of the block read.
func (r *Reader) dispatch() Event {
	r.ev.Type = r.intern(r.ev.Type, r.typ)
	r.ev.Data = r.data
	return r.ev
}

// intern returns b as a string, reusing old when it says the same: most
// blocks of a stream repeat the event type of the one before.
func (r *Reader) intern(old string, b []byte) string {
	if old == string(b) {
		return old
	}
	return string(b)
}

// line returns the next line without its end, valid until the next call.
// At the end of the stream it returns what it read of an unended line
// with io.EOF.
func (r *Reader) line() ([]byte, error) {
	if r.afterCR {
		r.afterCR = false
		if b, err := r.rd.Peek(1); err == nil && b[0] == '\n' {
			_, _ = r.rd.Discard(1)
		}
	}
	r.long, r.cut = r.long[:0], false
	limit := r.max + len("data: ")
	if r.Keep > 0 {
		limit = r.Keep + len("data: ")
	}
	for {
		n := r.rd.Buffered()
		if n == 0 {
			if _, err := r.rd.Peek(1); err != nil {
				return r.long, err
			}
			n = r.rd.Buffered()
		}
		buf, _ := r.rd.Peek(n)
		if i := lineEnd(buf); i >= 0 {
			line := buf[:i]
			if len(r.long) > 0 {
				line = append(r.long, line...)
				r.long = line
			}
			r.afterCR = buf[i] == '\r'
			_, _ = r.rd.Discard(i + 1)
			if len(line) > limit {
				if r.Keep == 0 {
					return nil, &TooLargeError{Max: r.max}
				}
				line, r.cut = line[:limit], true
			}
			return line, nil
		}
		switch {
		case len(r.long)+len(buf) <= limit:
			r.long = append(r.long, buf...)
		case r.Keep == 0:
			return nil, &TooLargeError{Max: r.max}
		default:
			// Past what is kept: read on to the line's end, keeping
			// nothing more.
			r.long, r.cut = append(r.long, buf[:max(0, limit-len(r.long))]...), true
		}
		_, _ = r.rd.Discard(len(buf))
	}
}

// lineEnd is the index of the first CR or LF in b, -1 when there is none.
// (Two byte searches cost a fraction of one bytes.IndexAny, which reads a
// set of two byte by byte.)
func lineEnd(b []byte) int {
	i := bytes.IndexByte(b, '\n')
	before := b
	if i >= 0 {
		before = b[:i]
	}
	if j := bytes.IndexByte(before, '\r'); j >= 0 {
		return j
	}
	return i
}
