package logstore

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// rawLine is one line of a segment as it lies on disk.
type rawLine struct {
	b          []byte // without the newline; valid until the next read
	off        int64  // byte offset of its first byte
	num        int    // line number, from 1
	terminated bool   // ended in a newline
}

// end returns the offset just past the line and its newline.
func (l rawLine) end() int64 {
	if l.terminated {
		return l.off + int64(len(l.b)) + 1
	}
	return l.off + int64(len(l.b))
}

// lineReader reads a segment's lines between two offsets, counting lines
// and offsets so that every complaint can name where it is.
type lineReader struct {
	br   *bufio.Reader
	off  int64
	num  int
	long []byte
}

// newLineReader reads f from off (the start of line num) up to end.
func newLineReader(f io.ReaderAt, off, end int64, num int) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(io.NewSectionReader(f, off, end-off), 64<<10), off: off, num: num}
}

// next returns the next line, or io.EOF after the last.
func (r *lineReader) next() (rawLine, error) {
	chunk, err := r.br.ReadSlice('\n')
	b := chunk
	if errors.Is(err, bufio.ErrBufferFull) {
		// A line longer than the buffer: gather it.
		r.long = append(r.long[:0], chunk...)
		for errors.Is(err, bufio.ErrBufferFull) {
			chunk, err = r.br.ReadSlice('\n')
			r.long = append(r.long, chunk...)
		}
		b = r.long
	}
	switch {
	case err == io.EOF && len(b) == 0:
		return rawLine{}, io.EOF
	case err != nil && err != io.EOF:
		return rawLine{}, err
	}
	l := rawLine{b: b, off: r.off, num: r.num}
	if l.terminated = bytes.HasSuffix(b, []byte("\n")); l.terminated {
		l.b = b[:len(b)-1]
	}
	r.off = l.end()
	r.num++
	return l, nil
}
