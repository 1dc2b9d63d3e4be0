// Package golden helps tests compare what the code writes today with the
// golden files that froze a format.
package golden

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Diff describes the first line where got and want differ, or "" when they
// are equal; on a long line (a snapshot is one line) it shows the bytes
// around the first difference.
func Diff(got, want []byte) string {
	if bytes.Equal(got, want) {
		return ""
	}
	gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := 0; ; i++ {
		if i >= len(gl) || i >= len(wl) {
			return fmt.Sprintf("line %d: got %d lines, want %d", i+1, len(gl), len(wl))
		}
		if g, w := gl[i], wl[i]; g != w {
			at := 0
			for at < len(g) && at < len(w) && g[at] == w[at] {
				at++
			}
			return fmt.Sprintf("line %d, byte %d:\n  got:  %s\n  want: %s", i+1, at, around(g, at), around(w, at))
		}
	}
}

// around returns the part of s around byte at.
func around(s string, at int) string {
	const span = 160
	from, to := max(0, at-span), min(len(s), at+span)
	out := s[from:to]
	if from > 0 {
		out = "..." + out
	}
	if to < len(s) {
		out += "..."
	}
	return out
}

// Compare checks got against the golden file at path and returns Diff's
// description of the first difference, "" when they agree. With update it
// writes got to path instead (creating its directory) and returns "".
func Compare(t testing.TB, path string, got []byte, update bool) string {
	t.Helper()
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", path)
		return ""
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it, then read it)", err)
	}
	return Diff(got, want)
}
