// Package testlog holds what tests use to read back the log lines that
// goroutines of the code under test write.
package testlog

import (
	"bytes"
	"log/slog"
	"sync"
)

// Buffer collects writes from any number of goroutines and reads them back
// whole; the zero value is ready to use. Hand it to slog.NewTextHandler or
// as a process's stderr.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Logger writes text records of every level, debug included, to b.
func (b *Buffer) Logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
