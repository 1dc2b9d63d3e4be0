package logstore

import (
	"bytes"
	"fmt"
	"io"
	"runtime"

	"github.com/mailroom/mailroom/mailbox"
)

// Replay is dominated by JSON decoding (about three quarters of a restart
// in the profile), and decoding one line does not depend on another. So
// Load reads lines on one goroutine, decodes chunks of them on every core,
// and hands the events to fn strictly in order; the first damaged line still
// stops the load with its line number and offset, after every event before
// it was passed on, exactly as the sequential reader would.

const loadChunkLines = 512

type loadChunk struct {
	lines   []rawLine
	events  []mailbox.Event
	err     error // damage found by the decoder, or a read error
	decoded chan struct{}
}

func readEventsParallel(p readPart, fn func(mailbox.Event) (more bool, err error)) error {
	workers := runtime.GOMAXPROCS(0)
	if workers < 2 {
		return readEvents(p, fn)
	}
	stop := make(chan struct{})
	defer close(stop)
	ordered := make(chan *loadChunk, 2*workers)
	work := make(chan *loadChunk, 2*workers)

	go func() {
		defer close(ordered)
		defer close(work)
		r := newLineReader(p.f, p.off, p.end, p.line)
		for {
			c := &loadChunk{lines: make([]rawLine, 0, loadChunkLines), decoded: make(chan struct{})}
			eof := false
			for len(c.lines) < loadChunkLines {
				l, err := r.next()
				if err == io.EOF {
					eof = true
					break
				}
				if err != nil {
					c.err = fmt.Errorf("reading %s: %w", p.path, err)
					break
				}
				l.b = bytes.Clone(l.b) // the reader reuses its buffer
				c.lines = append(c.lines, l)
			}
			if len(c.lines) == 0 && c.err == nil {
				return
			}
			// Once sent, the chunk is a worker's: read nothing of it after.
			last := eof || c.err != nil
			for _, ch := range []chan *loadChunk{work, ordered} {
				select {
				case ch <- c:
				case <-stop:
					return
				}
			}
			if last {
				return
			}
		}
	}()
	for range workers {
		go func() {
			for c := range work {
				c.events = make([]mailbox.Event, 0, len(c.lines))
				for _, l := range c.lines {
					ev, err := parseLine(p.path, l)
					if err != nil {
						c.err = err
						break
					}
					c.events = append(c.events, ev)
				}
				c.lines = nil
				close(c.decoded)
			}
		}()
	}
	for c := range ordered {
		<-c.decoded
		for _, ev := range c.events {
			if more, err := fn(ev); err != nil || !more {
				return err
			}
		}
		if c.err != nil {
			return c.err
		}
	}
	return nil
}
