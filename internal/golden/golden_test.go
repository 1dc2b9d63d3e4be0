package golden

import (
	"strings"
	"testing"
)

func TestDiff(t *testing.T) {
	if d := Diff([]byte("a\nb\n"), []byte("a\nb\n")); d != "" {
		t.Fatalf("equal inputs: %q", d)
	}
	if d := Diff([]byte("a\nbxc\n"), []byte("a\nbyc\n")); !strings.HasPrefix(d, "line 2, byte 1:") || !strings.Contains(d, "got:  bxc") || !strings.Contains(d, "want: byc") {
		t.Fatalf("one changed byte: %q", d)
	}
	if d := Diff([]byte("a"), []byte("a\nb")); d != "line 2: got 1 lines, want 2" {
		t.Fatalf("a missing line: %q", d)
	}
	long := strings.Repeat("x", 1000)
	if d := Diff([]byte(long+"1"+long), []byte(long+"2"+long)); !strings.Contains(d, "byte 1000") || len(d) > 800 {
		t.Fatalf("a long line is cut around the difference: %d bytes: %.100q", len(d), d)
	}
}
