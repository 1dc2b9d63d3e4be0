package main

import (
	"bytes"
	"encoding/json"
	"testing"
)

// send --context carries a JSON object to the worker's lease; anything
// else is a usage error naming --context, and nothing is sent.
func TestSendContext(t *testing.T) {
	t.Parallel()
	addr := startDaemon(t)
	id := sendTask(t, addr, "planner@local", "coder@local", "review", "--context", `{"repo":"mailroom","pr":42}`)
	var l struct {
		Task struct {
			ID      string          `json:"id"`
			Context json.RawMessage `json:"context"`
		} `json:"task"`
	}
	mustJSON(t, addr, &l, "lease", "--recipient", "coder@local", "--json")
	var compact bytes.Buffer
	if err := json.Compact(&compact, l.Task.Context); err != nil || l.Task.ID != id || compact.String() != `{"repo":"mailroom","pr":42}` {
		t.Fatalf("leased %s with context %s; want %s with the context sent", l.Task.ID, l.Task.Context, id)
	}
	wantUsage(t, addr, []string{"send", "--from", "p@local", "--to", "c@local", "--intent", "x", "--context", "{repo"}, "--context", "not JSON")
	wantUsage(t, addr, []string{"send", "--from", "p@local", "--to", "c@local", "--intent", "x", "--context", "[1,2]"}, "--context: got an array", "expected a JSON object")
	wantUsage(t, addr, []string{"send", "--from", "p@local", "--to", "c@local", "--intent", "x", "--context", `{"a":1,"a":2}`}, "--context", "twice")
	var empty struct {
		Task *struct{} `json:"task"`
	}
	mustJSON(t, addr, &empty, "lease", "--recipient", "c@local", "--json")
	if empty.Task != nil {
		t.Fatalf("a refused send left a task")
	}
}
