// Package ssetest is the one small event-stream reader for tests and
// tools that check the wire itself (ids, event lines, heartbeats, the
// exact bytes). Code that wants the events as a subscriber does uses the
// client's subscription (client.Subscribe); the daemon and its tools read
// a stream with sse.Reader.
//
// The reader is strict: it refuses what sse.Writer never writes (a line
// other than a comment, id, event or one data line; a stream cut inside a
// block), so a test reading through it also checks the framing.
package ssetest

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// Block is one block of an event stream as it appears on the wire.
type Block struct {
	ID, Event, Data string
	// Comment says the block had a comment line (": ping").
	Comment bool
	// Raw is the block's id, event and data lines as they came, each
	// with its newline, without comments and the blank line that ends it.
	Raw string
}

// Heartbeat says the block is nothing but a comment.
func (b Block) Heartbeat() bool { return b.Raw == "" }

// Reader reads blocks from an event stream.
type Reader struct{ rd *bufio.Reader }

// NewReader reads the stream r (a response body).
func NewReader(r io.Reader) *Reader { return &Reader{rd: bufio.NewReaderSize(r, 1<<20)} }

// Next reads the next block, heartbeats included. At the end of the
// stream between blocks it returns io.EOF.
func (r *Reader) Next() (Block, error) {
	var b Block
	var raw strings.Builder
	hasData := false
	for {
		line, err := r.rd.ReadString('\n')
		if err != nil {
			if err == io.EOF && line == "" && raw.Len() == 0 && !b.Comment {
				return b, io.EOF
			}
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return b, fmt.Errorf("reading the event stream after %q: %w", raw.String(), err)
		}
		field := strings.TrimSuffix(line, "\n")
		switch {
		case field == "":
			b.Raw = raw.String()
			return b, nil
		case strings.HasPrefix(field, ":"):
			b.Comment = true
			continue
		case strings.HasPrefix(field, "id: "):
			b.ID = field[len("id: "):]
		case strings.HasPrefix(field, "event: "):
			b.Event = field[len("event: "):]
		case strings.HasPrefix(field, "data: "):
			if hasData {
				return b, fmt.Errorf("event %q has more than one data line", b.ID)
			}
			b.Data, hasData = field[len("data: "):], true
		default:
			return b, fmt.Errorf("unexpected line %q in the event stream", field)
		}
		raw.WriteString(line)
	}
}

// NextEvent reads the next block that is not a heartbeat.
func (r *Reader) NextEvent() (Block, error) {
	for {
		b, err := r.Next()
		if err != nil || !b.Heartbeat() {
			return b, err
		}
	}
}
