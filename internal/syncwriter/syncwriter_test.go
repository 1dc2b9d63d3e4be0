package syncwriter

import (
	"bytes"
	"strings"
	"sync"
	"testing"
)

// TestWritesNeverInterleave: goroutines writing lines through one Writer
// to a bytes.Buffer (not safe for concurrent use) leave every line whole;
// -race sees no race.
func TestWritesNeverInterleave(t *testing.T) {
	var buf bytes.Buffer
	w := New(&buf)
	lines := []string{"aaaaaaaaaaaaaaaa\n", "bbbbbbbbbbbbbbbb\n", "cccccccccccccccc\n"}
	var wg sync.WaitGroup
	for _, line := range lines {
		wg.Go(func() {
			for range 100 {
				if _, err := w.Write([]byte(line)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	got := strings.SplitAfter(buf.String(), "\n")
	got = got[:len(got)-1] // after the last newline
	if len(got) != 300 {
		t.Fatalf("%d lines, want 300", len(got))
	}
	for i, l := range got {
		if l != lines[0] && l != lines[1] && l != lines[2] {
			t.Fatalf("line %d = %q, want one of the lines written whole", i, l)
		}
	}
}
