// Package syncwriter lets goroutines share one io.Writer: the progress
// lines and retry notices of many workers going to one stderr.
package syncwriter

import (
	"io"
	"sync"
)

// Writer hands each Write whole to the writer underneath, one at a time,
// so the lines of two goroutines never interleave and a writer that is
// not safe for concurrent use (a bytes.Buffer, a test's stderr) may be
// shared.
type Writer struct {
	mu sync.Mutex
	w  io.Writer
}

// New returns a Writer in front of w.
func New(w io.Writer) *Writer { return &Writer{w: w} }

func (s *Writer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
