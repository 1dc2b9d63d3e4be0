package mailbox

import (
	"reflect"
	"testing"
)

func TestCloseMatches(t *testing.T) {
	known := []string{"coder@local", "reviewer@local", "reviewer@remote", "planner@local", "x@y"}
	for _, c := range []struct {
		name string
		want []string
	}{
		{"reveiwer@local", []string{"reviewer@local"}},
		{"reveiwer", []string{"reviewer@local", "reviewer@remote"}}, // a bare name, mistyped
		{"coder", []string{"coder@local"}},                          // a bare name
		{"codr", []string{"coder@local"}},
		{"plannr@local", []string{"planner@local"}},
		{"zzzzzz", []string{}},
		{"coder@local", []string{}}, // itself is not a match
	} {
		if got := CloseMatches(c.name, known, 5); !reflect.DeepEqual(got, c.want) {
			t.Errorf("CloseMatches(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}
