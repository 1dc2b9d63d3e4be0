// Package sse is the daemon's one Server-Sent Events writer, its one
// reader (reader.go: the A2A client following a remote, the bench,
// daemontest), and the small request-side helpers both of its HTTP edges
// share (daemon/httpapi's native routes and event stream, daemon/a2a's
// JSON-RPC and HTTP+JSON bindings): opening a stream, writing blocks with
// an id, comments and heartbeats under per-write deadlines, reading a JSON
// request body and a Last-Event-ID. A refusal is a typed *Problem, which each edge maps to its
// own error shape (a mailbox.Error, an A2A rpcError), so the checks are
// written once and the messages stay each edge's own.
//
// It imports only the standard library.
package sse

import (
	"bytes"
	"errors"
	"net/http"
	"time"
)

// WriteChunk is how much is written under one write deadline: a
// subscriber that stops reading (its socket buffer full) ends the stream
// instead of holding the writing goroutine, while a slow but moving one
// can still take a snapshot of many megabytes.
const WriteChunk = 64 << 10

// Ping is the heartbeat: an SSE comment, which readers ignore, so that
// idle streams are not cut by proxies and dead peers are noticed.
var Ping = []byte(": ping\n\n")

// Writer writes one event stream. Open makes it; every Write is flushed.
type Writer struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

// Open sets the event-stream headers and sends the 200 status (not yet
// flushed: Write(nil) or Flush sends the headers at once). Each later
// write has timeout as its deadline; call Close when the stream ends.
func Open(w http.ResponseWriter, timeout time.Duration) *Writer {
	return open(w, timeout, false)
}

// OpenUnframed is Open for a stream that lasts as long as its client
// stays: over HTTP/1.1 its body is the raw event bytes, without chunked
// framing, and the connection closes when the stream ends (what net/http
// does for "Transfer-Encoding: identity", the setup the SSE specification
// recommends). Chunked framing cost each flush two or three write calls
// (the chunk's header and body parted at net/http's 4 KiB buffer, then its
// two-byte trailer) where this costs one, and cost each reader as much
// again: with 500 subscribers the writes were a third of the daemon's CPU.
// HTTP/2 ignores the header; its frames are its own.
func OpenUnframed(w http.ResponseWriter, timeout time.Duration) *Writer {
	return open(w, timeout, true)
}

func open(w http.ResponseWriter, timeout time.Duration, unframed bool) *Writer {
	h := w.Header()
	if unframed {
		h.Set("Transfer-Encoding", "identity")
	}
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	// Proxies such as nginx buffer responses unless told otherwise, which
	// would hold events back until the buffer fills.
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	return &Writer{w: w, rc: http.NewResponseController(w), timeout: timeout}
}

// Write sends buf in chunks of WriteChunk, each under its own write
// deadline, then flushes. Write(nil) flushes the headers under a deadline.
func (s *Writer) Write(buf []byte) error {
	for {
		if err := s.rc.SetWriteDeadline(time.Now().Add(s.timeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return err
		}
		n := min(len(buf), WriteChunk)
		if _, err := s.w.Write(buf[:n]); err != nil {
			return err
		}
		if buf = buf[n:]; len(buf) == 0 {
			return s.rc.Flush()
		}
	}
}

// Flush sends what was written (or the headers) without a new deadline.
func (s *Writer) Flush() error { return s.rc.Flush() }

// Ping writes the heartbeat comment.
func (s *Writer) Ping() error { return s.Write(Ping) }

// Close clears the write deadline: it outlives the handler on a
// kept-alive connection, and the next request on the connection must not
// be cut short.
func (s *Writer) Close() { _ = s.rc.SetWriteDeadline(time.Time{}) }

// AppendBlock writes one SSE block to buf: an id line unless id is "" (a
// block without one leaves the reader's Last-Event-ID as it was), an event
// line unless typ is "", and data as one line. data must hold no newline:
// JSON from encoding/json never does (it escapes every newline inside
// strings).
func AppendBlock(buf *bytes.Buffer, id, typ string, data []byte) {
	if id != "" {
		buf.WriteString("id: ")
		buf.WriteString(id)
		buf.WriteString("\n")
	}
	if typ != "" { // the event stream's case: as few writes as before
		buf.WriteString("event: ")
		buf.WriteString(typ)
		buf.WriteString("\ndata: ")
	} else {
		buf.WriteString("data: ")
	}
	buf.Write(data)
	buf.WriteString("\n\n")
}

// Block returns one SSE block as AppendBlock writes it.
func Block(id, typ string, data []byte) []byte {
	var buf bytes.Buffer
	buf.Grow(len(id) + len(typ) + len(data) + 24)
	AppendBlock(&buf, id, typ, data)
	return buf.Bytes()
}
